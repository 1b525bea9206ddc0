#include "app.h"

#include "cagecmd.h"
#include "hostproto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define APP_AGENTS_DIR_MODE 02750 /* setgid: the hosts' sockets get our group */
/* Caged, each session's uid makes its own agents/<id> (its host's socket is its own): o+wx, and
 * sticky so that no uid removes or renames another's; still not listed. */
#define APP_AGENTS_DIR_CAGED_MODE 03733

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
	clock_gettime(CLOCK_MONOTONIC, &app->started);
	if ((r = store_init(&app->store, cfg->state_dir, cfg->runtime_dir, cause)) < 0)
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
	return agentuser_resolve(cfg, &app->agent, cause);
}

/* Lets the agent user search dir (o+x, no listing) and makes dir/agents its, group ours, mode
 * 2750. Returns 0 or -errno with cause. */
static int app_agents_dir(const struct app *app, const char *dir, const char *path,
			  struct cause *cause)
{
	const struct agent_user *au = &app->agent;
	char why[8];
	mode_t mode = cagecmd_enabled(app, why, sizeof(why)) ? APP_AGENTS_DIR_CAGED_MODE
							     : APP_AGENTS_DIR_MODE;
	struct stat st;
	int fd, r = 0;

	if (au->switch_user) {
		if (stat(dir, &st) < 0)
			return cause_fail(cause, errno, "cannot stat %s: %s", dir, strerror(errno));
		if (!(st.st_mode & S_IXOTH) && chmod(dir, (st.st_mode & 07777) | S_IXOTH) < 0)
			return cause_fail(cause, errno, "cannot let %s search %s (chmod o+x): %s",
					  au->name, dir, strerror(errno));
	}
	if (mkdir(path, 0750) < 0 && errno != EEXIST)
		return cause_fail(cause, errno, "cannot create %s: %s", path, strerror(errno));
	/* O_NOFOLLOW: the directory above is ours, but never chown what a link points at. */
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return cause_fail(cause, errno, "cannot open %s: %s", path, strerror(errno));
	/* Only what differs: without CAP_CHOWN (agentd-api.service) even an unchanged owner of
	 * another user's directory is refused, and the unit's tmpfiles.d made it right. */
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (((au->switch_user && st.st_uid != au->uid) || st.st_gid != getegid()) &&
		 fchown(fd, au->switch_user ? au->uid : (uid_t)-1, getegid()) < 0)
		r = -errno;
	else if ((st.st_mode & 07777) != mode &&
		 (st.st_mode & 07777) != APP_AGENTS_DIR_CAGED_MODE && fchmod(fd, mode) < 0)
		r = -errno;
	if (r < 0)
		cause_set(cause, "cannot give %s to %s: %s", path, au->name, strerror(-r));
	close(fd);
	return r;
}

int app_prepare_agents_dir(const struct app *app, struct cause *cause)
{
	char path[CONFIG_PATH_MAX];
	int r;

	/* The hosts' sockets in the runtime dir, their event logs in the state dir. */
	if (hostproto_dir(app->cfg, path, sizeof(path)) < 0)
		return cause_fail(cause, ENAMETOOLONG, "the runtime directory path is too long");
	if ((r = app_agents_dir(app, app->cfg->runtime_dir, path, cause)) < 0)
		return r;
	if (hostproto_state_dir(app->cfg, path, sizeof(path)) < 0)
		return cause_fail(cause, ENAMETOOLONG, "the state directory path is too long");
	return app_agents_dir(app, app->cfg->state_dir, path, cause);
}
