#include "cagecmd.h"

#include "claude.h"
#include "fsutil.h"
#include "gitrepo.h"
#include "hostproto.h"
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CAGECMD_BIN        "agentd-cage"
#define CAGECMD_BIN_REL    "../cage/agentd-cage" /* in a build tree, beside fcgi-app/ */
#define CAGECMD_HOMES_MODE 0711                  /* root's: each HOME is 0700 and its own */

/* agentd-cage beside agentd-api (installed) or in the build tree's cage/. */
static int cagecmd_bin(const struct app *app, char *out, size_t len)
{
	static const char *const rel[] = {CAGECMD_BIN, CAGECMD_BIN_REL};
	char dir[CONFIG_PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", app->self_exe);
	slash = strrchr(dir, '/');
	if (slash != NULL)
		*slash = '\0';
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++)
		if (snprintf(out, len, "%s/%s", dir, rel[i]) < (int)len && access(out, X_OK) == 0)
			return 0;
	return -ENOENT;
}

bool cagecmd_enabled(const struct app *app, char *why, size_t whylen)
{
	char path[CONFIG_PATH_MAX];

	if (!app->agent.switch_user) {
		snprintf(why, whylen, "the daemons run as the agent user %s, without root",
			 app->agent.name);
		return false;
	}
	if (strcmp(app->cfg->cage, "off") == 0) {
		snprintf(why, whylen, "AGENTD_CAGE=off");
		return false;
	}
	if (cagecmd_bin(app, path, sizeof(path)) < 0) {
		snprintf(why, whylen, "agentd-cage is not installed beside agentd-api");
		return false;
	}
	if (proc_which(CAGE_BWRAP_DEFAULT, path, sizeof(path)) < 0) {
		snprintf(why, whylen, "bwrap (Debian package bubblewrap) is not on PATH");
		return false;
	}
	return true;
}

static int cagecmd_home_path(const struct app *app, const char *id, char *out, size_t len)
{
	int n = snprintf(out, len, "%s/%s", app->cfg->homes_dir, id);

	return !session_id_valid(id) ? -EINVAL : n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Runs argv, as root; 0 when it ran and exited 0. */
static int cagecmd_run(char *const *argv, struct cause *cause)
{
	struct proc_opts opts = {.envp = NULL, .cwd = "/", .keep_fd = -1};
	char out[512];
	int st = 0, r = proc_run(argv, &opts, out, sizeof(out), &st);

	if (r < 0)
		return cause_fail(cause, -r, "cannot run %s: %s", argv[0], strerror(-r));
	if (st != 0)
		return cause_fail(cause, EIO, "%s failed: %s", argv[0], out);
	return 0;
}

int cagecmd_home(const struct app *app, const struct session *s, char *home, size_t len,
		 struct cause *cause)
{
	const char *tpl = app->cfg->agent_home_template[0] != '\0' ? app->cfg->agent_home_template
								   : app->agent.home;
	char tmp[CONFIG_PATH_MAX + 16], owner[40];
	struct stat st;
	int r;

	if ((r = cagecmd_home_path(app, s->id, home, len)) < 0)
		return cause_fail(cause, -r, "the session's HOME path is too long");
	if (lstat(home, &st) == 0)
		return S_ISDIR(st.st_mode)
			   ? 0
			   : cause_fail(cause, EEXIST, "%s is not a directory", home);
	if ((r = fsutil_mkdir_p(app->cfg->homes_dir)) < 0 ||
	    chmod(app->cfg->homes_dir, CAGECMD_HOMES_MODE) < 0)
		return cause_fail(cause, r < 0 ? -r : errno, "cannot make %s: %s",
				  app->cfg->homes_dir, strerror(r < 0 ? -r : errno));
	/* Made aside and renamed: a HOME that exists is a whole one. */
	snprintf(tmp, sizeof(tmp), "%s.new", home);
	fsutil_rm_tree(tmp);
	if (stat(tpl, &st) == 0 && S_ISDIR(st.st_mode)) {
		char *cp[] = {"cp", "-a", "-T", "--", (char *)tpl, tmp, NULL};

		if ((r = cagecmd_run(cp, cause)) < 0)
			goto fail;
	} else if (mkdir(tmp, 0700) < 0) {
		r = cause_fail(cause, errno, "cannot make %s: %s", tmp, strerror(errno));
		goto fail;
	}
	snprintf(owner, sizeof(owner), "%u:%u", (unsigned)app->agent.uid, (unsigned)app->agent.gid);
	{
		char *chown[] = {"chown", "-R", "-h", "--", owner, tmp, NULL};

		if ((r = cagecmd_run(chown, cause)) < 0)
			goto fail;
	}
	if (chmod(tmp, 0700) < 0 || rename(tmp, home) < 0) {
		r = cause_fail(cause, errno, "cannot make %s: %s", home, strerror(errno));
		goto fail;
	}
	return 0;
fail:
	fsutil_rm_tree(tmp);
	return r;
}

int cagecmd_remove_home(const struct app *app, const char *id)
{
	char home[CONFIG_PATH_MAX];
	int r = cagecmd_home_path(app, id, home, sizeof(home));

	return r < 0 ? r : fsutil_rm_tree(home);
}

/*
 * The host's directory (runtime or state agents/<id>, from the join function), made as agentd-host
 * makes it (0750, the agent's, group inherited from agents/), so that it can be bound before the
 * host runs. Its path without the trailing slash goes into out.
 */
static int cagecmd_host_dir(const struct app *app, const char *id,
			    int (*join)(const struct config *, const char *, const char *, char *,
					size_t),
			    char *out, size_t len)
{
	size_t n;

	if (join(app->cfg, id, "", out, len) < 0)
		return -ENAMETOOLONG;
	n = strlen(out);
	while (n > 1 && out[n - 1] == '/')
		out[--n] = '\0';
	if (mkdir(out, 0750) < 0) {
		if (errno != EEXIST)
			return -errno;
		return 0;
	}
	return lchown(out, app->agent.uid, (gid_t)-1) < 0 ? -errno : 0;
}

/* Adds "opt path" with path kept in c. */
static int cagecmd_path(struct cagecmd *c, size_t *np, const char *opt, const char *path)
{
	if (*np >= CAGECMD_PATHS || c->n + 2 > CAGECMD_PREFIX)
		return -E2BIG;
	snprintf(c->paths[*np], sizeof(c->paths[*np]), "%s", path);
	c->words[c->n++] = (char *)opt;
	c->words[c->n++] = c->paths[(*np)++];
	return 0;
}

int cagecmd_build(const struct app *app, const struct session *s, enum session_mode mode,
		  char *const *argv, struct cagecmd *c, char **out, size_t outmax,
		  struct cause *cause)
{
	const struct config *cfg = app->cfg;
	char path[CONFIG_PATH_MAX], bin[CONFIG_PATH_MAX];
	size_t np = 0, argc = 0;
	int r;

	c->n = 0;
	if ((r = cagecmd_home(app, s, c->home, sizeof(c->home), cause)) < 0)
		return r;
	if ((r = cagecmd_bin(app, bin, sizeof(bin))) < 0)
		return cause_fail(cause, ENOENT, "agentd-cage is not installed beside agentd-api");
	snprintf(c->uid, sizeof(c->uid), "%u", (unsigned)app->agent.uid);
	snprintf(c->gid, sizeof(c->gid), "%u", (unsigned)app->agent.gid);
	/* bin is kept in paths[0]: the first word must outlive this call too. */
	snprintf(c->paths[np++], sizeof(c->paths[0]), "%s", bin);
	c->words[c->n++] = c->paths[0];
	c->words[c->n++] = "--uid";
	c->words[c->n++] = c->uid;
	c->words[c->n++] = "--gid";
	c->words[c->n++] = c->gid;
	c->words[c->n++] = "--user";
	c->words[c->n++] = (char *)app->agent.name;
	c->words[c->n++] = "--home";
	c->words[c->n++] = c->home;
	c->words[c->n++] = "--chdir";
	c->words[c->n++] = (char *)s->worktree;
	/* Its share of the machine (sessioncg.h): the cgroup agentd-api made, joined before the
	 * cage drops privileges, so that the agent and all it forks start inside. */
	if (app->cgroups.mode != CGROUP_NONE) {
		snprintf(c->cgroup, sizeof(c->cgroup), "%s/%s", cfg->cgroup_parent, s->id);
		c->words[c->n++] = "--cgroup";
		c->words[c->n++] = c->cgroup;
	}
	if (cfg->secrets_dir[0] != '\0') {
		c->words[c->n++] = "--secrets";
		c->words[c->n++] = (char *)cfg->secrets_dir;
	}
	/* Hidden: every session's worktree and bare clone, every HOME, the daemons' state and
	 * runtime dirs, the secrets, and the agent user's shared HOME. */
	r = cagecmd_path(c, &np, "--hide", cfg->base_dir);
	if (r == 0)
		r = cagecmd_path(c, &np, "--hide", cfg->homes_dir);
	if (r == 0)
		r = cagecmd_path(c, &np, "--hide", cfg->state_dir);
	if (r == 0)
		r = cagecmd_path(c, &np, "--hide", cfg->runtime_dir);
	if (r == 0 && cfg->secrets_dir[0] != '\0')
		r = cagecmd_path(c, &np, "--hide", cfg->secrets_dir);
	if (r == 0)
		r = cagecmd_path(c, &np, "--hide", app->agent.home);
	/* Bound back: its worktree, the bare clone its commits go to, and what its claude needs. */
	if (r == 0)
		r = cagecmd_path(c, &np, "--bind", s->worktree);
	if (r == 0 && worktree_bare_path(cfg->base_dir, s->owner, s->name, path, sizeof(path)) == 0)
		r = cagecmd_path(c, &np, "--bind", path);
	if (r == 0 && mode == SESSION_TERMINAL) {
		if (config_runtime_path(cfg, "hooks.sock", path, sizeof(path)) == 0)
			r = cagecmd_path(c, &np, "--ro", path);
		if (r == 0 &&
		    config_runtime_path(cfg, CLAUDE_SETTINGS_NAME, path, sizeof(path)) == 0)
			r = cagecmd_path(c, &np, "--ro", path);
	} else if (r == 0) {
		if ((r = cagecmd_host_dir(app, s->id, hostproto_path, path, sizeof(path))) < 0)
			return cause_fail(cause, -r, "cannot make %s: %s", path, strerror(-r));
		r = cagecmd_path(c, &np, "--bind", path);
		if (r == 0 && (r = cagecmd_host_dir(app, s->id, hostproto_state_path, path,
						    sizeof(path))) < 0)
			return cause_fail(cause, -r, "cannot make %s: %s", path, strerror(-r));
		if (r == 0)
			r = cagecmd_path(c, &np, "--bind", path);
	}
	if (r < 0)
		return cause_fail(cause, -r, "the cage's command line is too long");
	c->words[c->n++] = "--";
	while (argv[argc] != NULL)
		argc++;
	if (c->n + argc > outmax)
		return cause_fail(cause, E2BIG, "the cage's command line is too long");
	for (size_t i = 0; i < c->n; i++)
		out[i] = c->words[i];
	for (size_t i = 0; i < argc; i++)
		out[c->n + i] = argv[i];
	out[c->n + argc] = NULL;
	return 0;
}
