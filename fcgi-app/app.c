#include "app.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Installed, agentd-host sits beside agentd-api; in a build tree it is in ../host/. */
static void app_find_host(struct app *app)
{
	static const char *const rel[] = {"agentd-host", "../host/agentd-host"};
	char dir[CONFIG_PATH_MAX];
	char *slash;

	if (app->cfg->host[0] != '\0') {
		snprintf(app->host_bin, sizeof(app->host_bin), "%s", app->cfg->host);
		return;
	}
	snprintf(dir, sizeof(dir), "%s", app->self_exe);
	slash = strrchr(dir, '/');
	if (slash != NULL)
		*slash = '\0';
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		if (snprintf(app->host_bin, sizeof(app->host_bin), "%s/%s", dir, rel[i]) <
			(int)sizeof(app->host_bin) &&
		    access(app->host_bin, X_OK) == 0)
			return;
	}
	snprintf(app->host_bin, sizeof(app->host_bin), "agentd-host");
}

/* agentd-hook likewise, in ../agent-hook/ of a build tree. claude runs it from the settings by
 * its absolute path (the agent's PATH is not ours): "" when there is none. */
static void app_find_hook(struct app *app)
{
	static const char *const rel[] = {"agentd-hook", "../agent-hook/agentd-hook"};
	char dir[CONFIG_PATH_MAX];
	char *slash;

	if (app->cfg->hook[0] != '\0') {
		snprintf(app->hook_bin, sizeof(app->hook_bin), "%s", app->cfg->hook);
		return;
	}
	snprintf(dir, sizeof(dir), "%s", app->self_exe);
	slash = strrchr(dir, '/');
	if (slash != NULL)
		*slash = '\0';
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		char path[CONFIG_PATH_MAX * 2], *real;

		if (snprintf(path, sizeof(path), "%s/%s", dir, rel[i]) >= (int)sizeof(path) ||
		    access(path, X_OK) < 0 || (real = realpath(path, NULL)) == NULL)
			continue;
		/* Without "..": the settings take only plain paths. */
		if (strlen(real) < sizeof(app->hook_bin)) {
			memcpy(app->hook_bin, real, strlen(real) + 1);
			free(real);
			return;
		}
		free(real);
	}
	app->hook_bin[0] = '\0';
}

int app_init(struct app *app, const struct config *cfg, struct cause *cause)
{
	ssize_t n;
	int r;

	memset(app, 0, sizeof(*app));
	app->cfg = cfg;
	if ((r = store_init(&app->store, cfg->runtime_dir, cause)) < 0)
		return r;
	if ((r = tmux_init(&app->tmux, cfg)) < 0)
		return cause_fail(cause, r, "tmux paths are too long");
	n = readlink("/proc/self/exe", app->self_exe, sizeof(app->self_exe) - 1);
	if (n < 0)
		return cause_fail(cause, errno, "cannot find my own executable: %s",
				  strerror(errno));
	app->self_exe[n] = '\0';
	app_find_host(app);
	app_find_hook(app);
	return 0;
}
