#include "agentuser.h"

#include "proc.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <unistd.h>

/* realpath of p when it exists, else p without trailing slashes: what two paths are compared as.
 */
static void agentuser_canon(const char *p, char *out, size_t outlen)
{
	char buf[PATH_MAX];
	size_t n;

	/* A resolved path that does not fit is not used (a cut path would compare wrong). */
	if (realpath(p, buf) != NULL && (n = strlen(buf)) < outlen) {
		memcpy(out, buf, n + 1);
		return;
	}
	snprintf(out, outlen, "%s", p);
	n = strlen(out);
	while (n > 1 && out[n - 1] == '/')
		out[--n] = '\0';
}

/* Whether path a is b or lies below it. */
static bool agentuser_within(const char *a, const char *b)
{
	size_t n = strlen(b);

	if (strcmp(b, "/") == 0)
		return true;
	return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '/');
}

/* Refuses a home that holds, or lies in, a directory of the daemons (what, named key). */
static int agentuser_apart(const char *home, const char *dir, const char *key, struct cause *cause)
{
	char h[CONFIG_PATH_MAX], d[CONFIG_PATH_MAX];

	agentuser_canon(home, h, sizeof(h));
	agentuser_canon(dir, d, sizeof(d));
	if (agentuser_within(d, h) || agentuser_within(h, d))
		return cause_fail(
		    cause, EINVAL,
		    "the agent's HOME %s and %s %s overlap: the agent owns its HOME, "
		    "so it must not hold the daemons' files (give the agent user "
		    "another home, e.g. usermod -d /home/USER, or set AGENTD_AGENT_HOME)",
		    home, key, dir);
	return 0;
}

/* getpwnam_r into a buffer grown as needed (caller frees *buf). */
static int agentuser_lookup(const char *name, struct passwd *pw, char **buf, struct cause *cause)
{
	struct passwd *found = NULL;
	size_t len = 1024;
	int e;

	for (;;) {
		char *nb = realloc(*buf, len);

		if (nb == NULL)
			return cause_fail(cause, ENOMEM, "out of memory");
		*buf = nb;
		e = getpwnam_r(name, pw, *buf, len, &found);
		if (e != ERANGE || len >= AGENTUSER_PWBUF_MAX)
			break;
		len *= 2;
	}
	if (e != 0)
		return cause_fail(cause, EIO, "cannot read the user database for %s: %s", name,
				  strerror(e));
	if (found == NULL)
		return cause_fail(cause, ENOENT,
				  "the agent user %s does not exist (deploy/up and "
				  "agentd-tmux.service create it; AGENTD_AGENT_USER names it)",
				  name);
	return 0;
}

int agentuser_resolve(const struct config *cfg, struct agent_user *out, struct cause *cause)
{
	struct passwd pw;
	char *buf = NULL;
	uid_t me = geteuid();
	int r;

	memset(out, 0, sizeof(*out));
	if ((r = agentuser_lookup(cfg->agent_user, &pw, &buf, cause)) < 0)
		goto out;
	snprintf(out->name, sizeof(out->name), "%s", cfg->agent_user);
	out->uid = pw.pw_uid;
	out->gid = pw.pw_gid;
	if (snprintf(out->home, sizeof(out->home), "%s",
		     cfg->agent_home[0] != '\0' ? cfg->agent_home : pw.pw_dir) >=
	    (int)sizeof(out->home)) {
		r = cause_fail(cause, ENAMETOOLONG, "the agent's home directory is too long");
		goto out;
	}
	if (out->uid == 0) {
		r = cause_fail(cause, EPERM,
			       "the agent user %s is root (uid 0): agents must run as an "
			       "unprivileged user (AGENTD_AGENT_USER)",
			       out->name);
		goto out;
	}
	if (out->home[0] != '/') {
		r = cause_fail(cause, EINVAL,
			       "the agent user %s has no absolute home directory (%s)", out->name,
			       out->home);
		goto out;
	}
	if ((r = agentuser_apart(out->home, cfg->state_dir, "AGENTD_STATE_DIR", cause)) < 0 ||
	    (r = agentuser_apart(out->home, cfg->runtime_dir, "AGENTD_RUNTIME_DIR", cause)) < 0)
		goto out;
	if (me == out->uid) {
		out->switch_user = false; /* the daemons are the agent user: nothing to switch */
		r = 0;
		goto out;
	}
	if (me != 0) {
		r = cause_fail(cause, EPERM,
			       "the daemons run as uid %u, which cannot start agents as %s: run "
			       "them as root, or set AGENTD_AGENT_USER to their own user (the "
			       "agents are then not contained)",
			       (unsigned)me, out->name);
		goto out;
	}
	out->switch_user = true;
	snprintf(out->reuid, sizeof(out->reuid), "--reuid=%u", (unsigned)out->uid);
	snprintf(out->regid, sizeof(out->regid), "--regid=%u", (unsigned)out->gid);
	if ((r = proc_which("setpriv", out->setpriv, sizeof(out->setpriv))) < 0)
		r = cause_fail(cause, -r,
			       "setpriv (util-linux), which starts the agents as %s, is not on "
			       "PATH: %s",
			       out->name, strerror(-r));
out:
	free(buf);
	return r;
}

int agentuser_command(const struct agent_user *au, char *const *argv, char **out, size_t outmax)
{
	size_t n = 0, argc = 0;

	while (argv[argc] != NULL)
		argc++;
	if (argc + (au->switch_user ? AGENTUSER_PREFIX_WORDS : 0) > outmax)
		return -E2BIG;
	if (au->switch_user) {
		/* No --reset-env: the pane's environment is already exactly the agent's. Numbers,
		 * not the name: nothing to look up again. --init-groups: the user's groups, none
		 * of root's. */
		out[n++] = (char *)au->setpriv;
		out[n++] = (char *)au->reuid;
		out[n++] = (char *)au->regid;
		out[n++] = "--init-groups";
		out[n++] = "--";
	}
	for (size_t i = 0; i < argc; i++)
		out[n++] = argv[i];
	out[n] = NULL;
	return 0;
}

int agentuser_home_word(const struct agent_user *au, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "HOME=%s", au->home);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

int agentuser_fs_enter(const struct agent_user *au, struct agentuser_fs *saved)
{
	saved->active = false;
	if (!au->switch_user)
		return 0;
	/* setfsuid answers the previous value whether or not it changed anything: asking again
	 * (with an invalid id, which changes nothing) tells what it is now. */
	saved->fsgid = (gid_t)setfsgid(au->gid);
	if ((gid_t)setfsgid((gid_t)-1) != au->gid)
		return -EPERM;
	saved->fsuid = (uid_t)setfsuid(au->uid);
	if ((uid_t)setfsuid((uid_t)-1) != au->uid) {
		setfsgid(saved->fsgid);
		return -EPERM;
	}
	saved->active = true;
	return 0;
}

void agentuser_fs_leave(struct agentuser_fs *saved)
{
	if (!saved->active)
		return;
	setfsuid(saved->fsuid);
	setfsgid(saved->fsgid);
	saved->active = false;
}
