#include "cagecmd.h"

#include "claude.h"
#include "fsutil.h"
#include "gitrepo.h"
#include "gitstore.h"
#include "hookproto.h"
#include "hostproto.h"
#include "log.h"
#include "proc.h"

#include "cageuid.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#define CAGECMD_BIN        "agentd-cage"
#define CAGECMD_BIN_REL    "../cage/agentd-cage" /* in a build tree, beside fcgi-app/ */
#define CAGECMD_HOMES_MODE 0711                  /* the agent's: each HOME is 0700 in it */
/* The homes and base dirs when sessions have uids of their own: each uid makes its own entry
 * there, none lists them, and the sticky bit keeps it from removing or renaming another's. */
#define CAGECMD_SHARED_MODE 01733
#define CAGECMD_REPO_MODE   0750 /* a session repository: its uid's, the agent user's group reads */
#define CAGECMD_WHY_MAX     256  /* a sentence saying why sessions are not caged */

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

const char *cagecmd_git_home(const struct app *app)
{
	char why[CAGECMD_WHY_MAX];

	return cagecmd_enabled(app, why, sizeof(why)) ? NULL : app->agent.home;
}

static int cagecmd_home_path(const struct app *app, const char *id, char *out, size_t len);

void cagecmd_user(const struct app *app, uint32_t uid, struct agent_user *out)
{
	*out = app->agent;
	if (uid == 0 || !app->agent.switch_user)
		return;
	/* The gid stays the agent user's: what agentd-api makes for the session is of that group,
	 * so the daemons' reads as the agent user (listings, diffs) pass through the group, and no
	 * other session's uid (whose one group is its own) does. */
	out->uid = uid;
	cageuid_name(uid, out->name, sizeof(out->name));
	snprintf(out->reuid, sizeof(out->reuid), "--reuid=%u", (unsigned)uid);
}

int cagecmd_uid_take(const struct app *app, struct session *s, struct cause *cause)
{
	const struct cageuid_dirs dirs = {CAGEUID_REGISTRY, CAGEUID_USERDB};
	char home[CONFIG_PATH_MAX], why[8];
	uid_t lo, hi, uid;
	int r;

	if (!cagecmd_enabled(app, why, sizeof(why)))
		return 0;
	if (cageuid_parse_range(app->cfg->session_uids, &lo, &hi) < 0 ||
	    cagecmd_home_path(app, s->id, home, sizeof(home)) < 0)
		return cause_fail(cause, EINVAL, "AGENTD_SESSION_UIDS or the HOME path is bad");
	if (s->uid != 0) {
		/* Its files are that uid's: the session gets it back or does not run. */
		return cageuid_claim(&dirs, s->uid, app->cfg->state_dir, s->id, home, cause);
	}
	if ((r = cageuid_alloc(&dirs, lo, hi, app->cfg->state_dir, s->id, home, &uid, cause)) < 0)
		return r;
	s->uid = uid;
	return 0;
}

int cagecmd_uid_release(const struct app *app, const char *id, uint32_t uid, const char *repo)
{
	const struct cageuid_dirs dirs = {CAGEUID_REGISTRY, CAGEUID_USERDB};
	char home[CONFIG_PATH_MAX];
	struct stat st;

	if (uid == 0 || cagecmd_home_path(app, id, home, sizeof(home)) < 0)
		return 0;
	/* A kept repository or HOME is still the uid's: the session made again gets it back. */
	if ((lstat(home, &st) == 0 && st.st_uid == uid) ||
	    (repo != NULL && lstat(repo, &st) == 0 && st.st_uid == uid))
		return 0;
	return cageuid_release(&dirs, uid, app->cfg->state_dir, id);
}

uint32_t cagecmd_owner_uid(const struct app *app, const char *path)
{
	uid_t lo, hi;
	struct stat st;

	if (!app->agent.switch_user || lstat(path, &st) < 0 ||
	    cageuid_parse_range(app->cfg->session_uids, &lo, &hi) < 0)
		return 0;
	return st.st_uid >= lo && st.st_uid <= hi ? (uint32_t)st.st_uid : 0;
}

int cagecmd_shared_dir(const struct app *app, const char *dir, struct cause *cause)
{
	struct agentuser_fs fs;
	struct stat st;
	int r = 0;

	if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == app->agent.uid &&
	    (st.st_mode & 07777) == CAGECMD_SHARED_MODE)
		return 0;
	if ((r = fsutil_mkdir_p(dir)) < 0 || lstat(dir, &st) < 0 ||
	    (st.st_uid != app->agent.uid && lchown(dir, app->agent.uid, app->agent.gid) < 0))
		goto fail;
	/* As its owner: under the systemd unit agentd-api has no CAP_FOWNER. */
	if ((r = agentuser_fs_enter(&app->agent, &fs)) < 0)
		goto fail;
	r = chmod(dir, CAGECMD_SHARED_MODE) < 0 ? -errno : 0;
	agentuser_fs_leave(&fs);
	if (r == 0)
		return 0;
fail:
	r = r < 0 ? -r : errno;
	return cause_fail(cause, r, "cannot make %s the agent's, mode %o: %s", dir,
			  CAGECMD_SHARED_MODE, strerror(r));
}

/* What a session uid finds at a path it is to use: its own directory, or nothing. Returns 0
 * (absent), 1 (its own directory) or -EEXIST (another owner's, or not a directory: a uid that
 * could reach the shared dir put it there first). */
static int cagecmd_own(const struct agent_user *au, const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return 0;
	return S_ISDIR(st.st_mode) && st.st_uid == au->uid ? 1 : -EEXIST;
}

int cagecmd_repo_check(const struct app *app, const struct session *s, struct cause *cause)
{
	struct agent_user au;

	cagecmd_user(app, s->uid, &au);
	if (s->uid != 0 && cagecmd_own(&au, s->worktree) < 0)
		return cause_fail(cause, EEXIST, "%s exists and is not uid %u's", s->worktree,
				  (unsigned)s->uid);
	return 0;
}

int cagecmd_repo_mode(const struct app *app, const struct session *s)
{
	return s->uid != 0 && chmod(s->worktree, CAGECMD_REPO_MODE) < 0 ? -errno : 0;
}

static int cagecmd_home_path(const struct app *app, const char *id, char *out, size_t len)
{
	int n = snprintf(out, len, "%s/%s", app->cfg->homes_dir, id);

	return !session_id_valid(id) ? -EINVAL : n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/*
 * What of the template a new HOME never gets: claude's transcripts and per-conversation state
 * (the template is often the agent user's shared HOME, where every earlier session's are), and
 * claude's installed versions (bound back read-only where claude runs from, see
 * cagecmd_expose; hundreds of megabytes a copy).
 */
/* Not copied into a session's HOME: claude's transcripts and installed versions, the other
 * sessions' CLI homes (an uncaged session's codex or opencode conversations live in the agent's
 * HOME), and caches (a package manager's can hold gigabytes; each session fills its own). */
static const char *const cagecmd_home_skip[] = {
    ".claude/projects",
    ".claude/todos",
    ".claude/shell-snapshots",
    ".claude/history.jsonl",
    ".local/share/claude",
    ".agentd-agents",
    ".cache",
    ".npm",
};

/*
 * AGENTD_HOMES_DIR: the agent's (mode 0711), so that the HOMEs in it are made and removed with
 * the agent's file identity alone. The systemd units' tmpfiles.d makes it so; under deploy/up and
 * in the tests agentd-api (root, with every capability) makes it or gives it to the agent here.
 */
static int cagecmd_homes_dir(const struct app *app, struct cause *cause)
{
	const char *dir = app->cfg->homes_dir;
	struct stat st;
	int r;

	if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == app->agent.uid)
		return 0;
	if ((r = fsutil_mkdir_p(dir)) < 0 ||
	    (app->agent.switch_user && lchown(dir, app->agent.uid, app->agent.gid) < 0) ||
	    chmod(dir, CAGECMD_HOMES_MODE) < 0) {
		r = r < 0 ? -r : errno;
		return cause_fail(cause, r, "cannot make %s the agent's: %s", dir, strerror(r));
	}
	return 0;
}

/* The two sides of a HOME's copy: the template read as the agent user, the HOME written as the
 * session's uid (the fsgid, the agent user's, is the same for both). */
struct cagecmd_sides {
	uid_t reader, writer;
};

static void cagecmd_side(void *ctx, bool writing)
{
	const struct cagecmd_sides *c = ctx;

	setfsuid(writing ? c->writer : c->reader);
}

int cagecmd_home(const struct app *app, const struct session *s, char *home, size_t len,
		 struct cause *cause)
{
	struct agent_user au;
	struct cagecmd_sides ids;
	struct fsutil_sides sides = {cagecmd_side, &ids};
	struct agentuser_fs fs;
	const char *tpl = app->cfg->agent_home_template[0] != '\0' ? app->cfg->agent_home_template
								   : app->agent.home;
	char tmp[CONFIG_PATH_MAX + 16];
	struct stat st;
	int r;

	cagecmd_user(app, s->uid, &au);
	ids.reader = app->agent.uid;
	ids.writer = au.uid;
	if ((r = cagecmd_home_path(app, s->id, home, len)) < 0)
		return cause_fail(cause, -r, "the session's HOME path is too long");
	if (lstat(home, &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			return cause_fail(cause, EEXIST, "%s is not a directory", home);
		if (s->uid != 0 && st.st_uid != au.uid)
			return cause_fail(cause, EEXIST, "%s is not uid %u's", home,
					  (unsigned)s->uid);
		return 0;
	}
	if ((r = s->uid != 0 ? cagecmd_shared_dir(app, app->cfg->homes_dir, cause)
			     : cagecmd_homes_dir(app, cause)) < 0)
		return r;
	/* Made aside and renamed: a HOME that exists is a whole one. Everything here runs with the
	 * session's file identity (under the systemd unit agentd-api has no CAP_CHOWN, CAP_FOWNER
	 * or CAP_DAC_OVERRIDE, and cannot run setpriv: root touches the agents' files only as their
	 * owner), but the template is read as the agent user reads it, and its links are copied as
	 * links, never followed (the template may be the agent user's own HOME). */
	if ((r = agentuser_fs_enter(&au, &fs)) < 0)
		return cause_fail(cause, -r, "cannot take the session's file identity");
	snprintf(tmp, sizeof(tmp), "%s.new", home);
	fsutil_rm_tree(tmp);
	if (mkdir(tmp, 0700) < 0) {
		r = cause_fail(cause, errno, "cannot make %s: %s", tmp, strerror(errno));
		goto fail;
	}
	/* The template is read as the agent user reads it, whoever the HOME is for. */
	cagecmd_side(&ids, false);
	r = stat(tpl, &st) == 0 && S_ISDIR(st.st_mode);
	cagecmd_side(&ids, true);
	if (r && (r = fsutil_copy_tree_as(tpl, tmp, cagecmd_home_skip,
					  sizeof(cagecmd_home_skip) / sizeof(cagecmd_home_skip[0]),
					  &sides)) < 0) {
		r = cause_fail(cause, -r, "cannot copy the HOME template %s: %s", tpl,
			       strerror(-r));
		goto fail;
	}
	cagecmd_side(&ids, true);
	if (chmod(tmp, 0700) < 0 || rename(tmp, home) < 0) {
		r = cause_fail(cause, errno, "cannot make %s: %s", home, strerror(errno));
		goto fail;
	}
	agentuser_fs_leave(&fs);
	return 0;
fail:
	cagecmd_side(&ids, true);
	fsutil_rm_tree(tmp);
	agentuser_fs_leave(&fs);
	return r;
}

int cagecmd_remove_home(const struct app *app, const char *id, uint32_t uid)
{
	char home[CONFIG_PATH_MAX];
	struct agent_user au;
	struct agentuser_fs fs;
	int r = cagecmd_home_path(app, id, home, sizeof(home));

	cagecmd_user(app, uid, &au);
	if (r < 0 || (r = agentuser_fs_enter(&au, &fs)) < 0)
		return r;
	r = fsutil_rm_tree(home);
	agentuser_fs_leave(&fs);
	return r;
}

/*
 * The host's directory (runtime or state agents/<id>, from the join function), made as agentd-host
 * makes it (0750, the agent's, group inherited from agents/), so that it can be bound before the
 * host runs. Its path without the trailing slash goes into out.
 */
static int cagecmd_host_dir(const struct app *app, const struct session *s,
			    int (*join)(const struct config *, const char *, const char *, char *,
					size_t),
			    char *out, size_t len)
{
	struct agent_user au;
	struct agentuser_fs fs;
	size_t n;
	int r;

	cagecmd_user(app, s->uid, &au);
	if (join(app->cfg, s->id, "", out, len) < 0)
		return -ENAMETOOLONG;
	n = strlen(out);
	while (n > 1 && out[n - 1] == '/')
		out[--n] = '\0';
	/* With the agent's file identity: agents/ is the agent's (setgid, group root), and under
	 * the systemd unit agentd-api may not write or chown there as root. */
	if ((r = agentuser_fs_enter(&au, &fs)) < 0)
		return r;
	r = mkdir(out, 0750) < 0 && errno != EEXIST ? -errno : 0;
	agentuser_fs_leave(&fs);
	/* A session uid's own (agents/ is open to every uid for that): one made by another uid
	 * first would let it listen as this session's host. */
	if (r == 0 && s->uid != 0 && cagecmd_own(&au, out) != 1)
		r = -EEXIST;
	return r;
}

/* Whether path lies in a directory the cage hides (c->words[0..n) hold "--hide DIR" pairs) or in
 * the cage's own /tmp and /var/tmp. */
static bool cagecmd_hidden(const struct cagecmd *c, const char *path)
{
	static const char *const own[] = {"/tmp", "/var/tmp"};

	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		size_t n = strlen(own[i]);

		if (strncmp(path, own[i], n) == 0 && path[n] == '/')
			return true;
	}
	for (size_t i = 0; i + 1 < c->n; i++) {
		size_t n = strlen(c->words[i + 1]);

		if (strcmp(c->words[i], "--hide") == 0 && strncmp(path, c->words[i + 1], n) == 0 &&
		    path[n] == '/')
			return true;
	}
	return false;
}

/* Adds "opt path" with path kept in c. */
static int cagecmd_path(struct cagecmd *c, size_t *np, const char *opt, const char *path)
{
	if (*np >= CAGECMD_PATHS || c->n + 2 > CAGECMD_PREFIX)
		return -E2BIG;
	/* A path cut short would bind something else into the cage: refuse it. */
	if (snprintf(c->paths[*np], sizeof(c->paths[*np]), "%s", path) >=
	    (int)sizeof(c->paths[*np]))
		return -ENAMETOOLONG;
	c->words[c->n++] = (char *)opt;
	c->words[c->n++] = c->paths[(*np)++];
	return 0;
}

/* "--ro <dir of real>" when real is hidden in the cage (and that dir is not bound already). */
static int cagecmd_expose_one(struct cagecmd *c, size_t *np, const char *real)
{
	char dir[CONFIG_PATH_MAX];
	char *slash;

	if (!cagecmd_hidden(c, real))
		return 0;
	snprintf(dir, sizeof(dir), "%s", real);
	slash = strrchr(dir, '/');
	if (slash == NULL || slash == dir)
		return 0;
	*slash = '\0';
	for (size_t i = 0; i < *np; i++)
		if (strcmp(c->paths[i], dir) == 0)
			return 0;
	return cagecmd_path(c, np, "--ro", dir);
}

/*
 * The git the session's repository needs beyond itself. A repository of the store layout borrows
 * the store's objects (its alternates), read-only: the store lies in the hidden state dir, and
 * its refs, config and hooks stay out of view. A worktree of a shared bare clone (a session made
 * before the store layout) needs the clone writable: its refs and objects are there.
 */
static int cagecmd_git(const struct app *app, const struct session *s, struct cagecmd *c,
		       size_t *np)
{
	const struct config *cfg = app->cfg;
	char repo[CONFIG_PATH_MAX], path[CONFIG_PATH_MAX];
	struct agentuser_fs fs;
	bool store;

	/* The alternates file is the agent's: read with its identity. */
	if (agentuser_fs_enter(&app->agent, &fs) < 0)
		return 0;
	store = cfg->git_store_dir[0] != '\0' &&
		gitstore_is_session(cfg->git_store_dir, s->owner, s->name, s->worktree);
	agentuser_fs_leave(&fs);
	if (store) {
		if (gitstore_path(cfg->git_store_dir, s->owner, s->name, repo, sizeof(repo)) < 0 ||
		    snprintf(path, sizeof(path), "%s/objects", repo) >= (int)sizeof(path))
			return -E2BIG;
		return cagecmd_path(c, np, "--ro", path);
	}
	if (worktree_bare_path(cfg->base_dir, s->owner, s->name, path, sizeof(path)) == 0 &&
	    access(path, F_OK) == 0)
		return cagecmd_path(c, np, "--bind", path);
	return 0;
}

static int cagecmd_expose(const struct app *app, struct cagecmd *c, size_t *np,
			  enum session_mode mode, const char *exe)
{
	char found[CONFIG_PATH_MAX], real[PATH_MAX];
	struct agentuser_fs fs;
	int r;

	c->claude[0] = '\0';
	/* Looked up as the agent, as create_check_programs does: its PATH, its permissions. */
	if (agentuser_fs_enter(&app->agent, &fs) < 0)
		return 0;
	r = proc_which(exe, found, sizeof(found));
	agentuser_fs_leave(&fs);
	if (r == 0 && realpath(found, real) != NULL && strlen(real) < sizeof(c->claude) &&
	    cagecmd_hidden(c, real)) {
		memcpy(c->claude, real, strlen(real) + 1); /* fits: checked above */
		if ((r = cagecmd_expose_one(c, np, real)) < 0)
			return r;
	}
	if (mode == SESSION_STRUCTURED && realpath(app->host_bin, real) != NULL &&
	    (r = cagecmd_expose_one(c, np, real)) < 0)
		return r;
	if (mode == SESSION_TERMINAL && app->hook_bin[0] != '\0' &&
	    (r = cagecmd_expose_one(c, np, app->hook_bin)) < 0)
		return r;
	return 0;
}

int cagecmd_build(const struct app *app, const struct session *s, enum session_mode mode,
		  char *const *argv, struct cagecmd *c, char **out, size_t outmax,
		  struct cause *cause)
{
	const struct config *cfg = app->cfg;
	char path[CONFIG_PATH_MAX], bin[CONFIG_PATH_MAX];
	size_t np = 0, argc = 0;
	const char *exe;
	int r;

	c->n = 0;
	if ((r = cagecmd_home(app, s, c->home, sizeof(c->home), cause)) < 0)
		return r;
	if ((r = cagecmd_bin(app, bin, sizeof(bin))) < 0)
		return cause_fail(cause, ENOENT, "agentd-cage is not installed beside agentd-api");
	cagecmd_user(app, s->uid, &c->user);
	/* A session uid runs with its own group of the same number, as published (cageuid.h). */
	snprintf(c->uid, sizeof(c->uid), "%u", (unsigned)c->user.uid);
	snprintf(c->gid, sizeof(c->gid), "%u",
		 (unsigned)(s->uid != 0 ? (gid_t)s->uid : app->agent.gid));
	/* bin is kept in paths[0]: the first word must outlive this call too. */
	snprintf(c->paths[np++], sizeof(c->paths[0]), "%s", bin);
	c->words[c->n++] = c->paths[0];
	c->words[c->n++] = "--uid";
	c->words[c->n++] = c->uid;
	c->words[c->n++] = "--gid";
	c->words[c->n++] = c->gid;
	c->words[c->n++] = "--user";
	c->words[c->n++] = c->user.name;
	c->words[c->n++] = "--home";
	c->words[c->n++] = c->home;
	c->words[c->n++] = "--chdir";
	c->words[c->n++] = (char *)s->worktree;
	/* The session's cgroups (sessioncg_create makes them before the pane starts): joined by
	 * agentd-cage as root, so everything the agent forks is counted and cannot leave. */
	if (app->cgroups.mode != CGROUP_NONE && app->cgroups.systemd) {
		/* systemd's units instead (sdunit.h): agentd-cage asks for the session's scope. */
		c->words[c->n++] = "--systemd";
		c->words[c->n++] = (char *)s->id;
	} else if (app->cgroups.mode != CGROUP_NONE) {
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
	/* Bound back: its repository (or worktree and the bare clone its commits go to), and what
	 * its claude needs. */
	if (r == 0)
		r = cagecmd_path(c, &np, "--bind", s->worktree);
	if (r == 0)
		r = cagecmd_git(app, s, c, &np);
	if (r == 0 && mode == SESSION_TERMINAL) {
		/* The socket's directory, not the socket: a bind holds the inode of what it binds,
		 * and a restarted bridge makes its socket anew in the same directory. Made here
		 * when the bridge has not yet (after a reboot agentd-api brings sessions back
		 * first): the bridge's later socket then appears in it. */
		if (config_runtime_path(cfg, HOOKPROTO_SOCKET_DIR, path, sizeof(path)) == 0) {
			if (mkdir(path, HOOKPROTO_SOCKET_DIR_MODE) < 0 && errno != EEXIST)
				log_warn("cannot make %s: %s", path, strerror(errno));
			r = cagecmd_path(c, &np, "--ro-try", path);
		}
		if (r == 0 &&
		    config_runtime_path(cfg, CLAUDE_SETTINGS_NAME, path, sizeof(path)) == 0)
			r = cagecmd_path(c, &np, "--ro", path);
	} else if (r == 0) {
		if ((r = cagecmd_host_dir(app, s, hostproto_path, path, sizeof(path))) < 0)
			return cause_fail(cause, -r, "cannot make %s: %s", path, strerror(-r));
		r = cagecmd_path(c, &np, "--bind", path);
		if (r == 0 &&
		    (r = cagecmd_host_dir(app, s, hostproto_state_path, path, sizeof(path))) < 0)
			return cause_fail(cause, -r, "cannot make %s: %s", path, strerror(-r));
		if (r == 0)
			r = cagecmd_path(c, &np, "--bind", path);
	}
	/* Programs the agent runs from a hidden place (claude installed in the agent user's HOME,
	 * ~/.local/bin/claude -> ~/.local/share/claude/versions/X; a build tree in /tmp): their
	 * directory is bound back read-only, and claude is run by its real path. */
	/* The agent's executable: the pane's first word in terminal mode (claude or another
	 * agent's CLI), claude after agentd-host's "--" in structured mode. */
	exe = mode == SESSION_TERMINAL && argv[0] != NULL ? argv[0] : app->cfg->claude;
	if (r == 0)
		r = cagecmd_expose(app, c, &np, mode, exe);
	if (r < 0)
		return cause_fail(cause, -r, "the cage's command line is too long");
	c->words[c->n++] = "--";
	while (argv[argc] != NULL)
		argc++;
	if (c->n + argc > outmax)
		return cause_fail(cause, E2BIG, "the cage's command line is too long");
	for (size_t i = 0; i < c->n; i++)
		out[i] = c->words[i];
	for (size_t i = 0; i < argc; i++) {
		out[c->n + i] = argv[i];
		/* claude's word: argv[0] in a terminal pane, the word after agentd-host's "--". */
		if (c->claude[0] != '\0' && strcmp(argv[i], exe) == 0 &&
		    (i == 0 || (mode == SESSION_STRUCTURED && strcmp(argv[i - 1], "--") == 0)))
			out[c->n + i] = c->claude;
	}
	out[c->n + argc] = NULL;
	return 0;
}
