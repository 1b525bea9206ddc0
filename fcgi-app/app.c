#include "app.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

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
	return 0;
}
