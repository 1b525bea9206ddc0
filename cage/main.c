/*
 * agentd-cage: the command of a caged session's tmux pane. The tmux server (root) forks the pane,
 * so this runs as root, and does, in order (core/cage.h says why each): join the session's
 * cgroups, read the secrets into the environment, set HOME/USER/LOGNAME, drop to the session's
 * uid/gid, and exec bubblewrap with the session's view of the filesystem around the agent's
 * command. Every failure is one line on stderr (the pane shows it) and exit status 126, as a shell
 * says for a command that cannot run.
 */
#include "cage.h"
#include "cageseccomp.h"
#include "cgroup.h"
#include "proc.h"
#include "sdunit.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define CAGE_EXIT_FAIL 126

static int cage_fail(const char *what, const char *why)
{
	fprintf(stderr, "agentd-cage: %s: %s\n", what, why);
	return CAGE_EXIT_FAIL;
}

/* Joins PARENT/SESSION (the last '/' splits them) in every hierarchy cgroup_probe finds. */
static int cage_join(const char *spec)
{
	char parent[CGROUP_PATH_MAX];
	struct cgroup_tree t;
	struct cause c = {{0}};
	const char *slash = strrchr(spec, '/');
	int r;

	if (slash == NULL || slash == spec || (size_t)(slash - spec) >= sizeof(parent))
		return -EINVAL;
	memcpy(parent, spec, (size_t)(slash - spec));
	parent[slash - spec] = '\0';
	if ((r = cgroup_probe(NULL, &t, &c)) < 0)
		return r;
	return cgroup_join(&t, parent, slash + 1);
}

/* Moves this process into the session's scope (in its slice, which agentd-api made with the
 * limits) where systemd is PID 1: systemd's units, not cgroups of our own (sdunit.h). */
static int cage_scope(const char *id, struct cause *c)
{
	char slice[SDUNIT_NAME_MAX], scope[SDUNIT_NAME_MAX];
	sd_bus *bus = NULL;
	int r;

	if ((r = sdunit_slice_name(id, slice, sizeof(slice))) < 0 ||
	    (r = sdunit_scope_name(id, scope, sizeof(scope))) < 0)
		return cause_fail(c, -r, "no unit name for %s", id);
	if ((r = sdunit_open(&bus, c)) == 0)
		r = sdunit_scope_join(bus, scope, slice, c);
	/* Closed before the drop: the agent never holds root's connection to systemd. */
	sd_bus_flush_close_unref(bus);
	return r;
}

/* For good: no way back to root (the saved ids too), and root's groups gone. */
static int cage_drop(uid_t uid, gid_t gid)
{
	uid_t ru, eu, su;

	if (setgroups(1, &gid) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		return -errno;
	if (getresuid(&ru, &eu, &su) < 0 || ru != uid || eu != uid || su != uid)
		return -EPERM;
	/* Nothing the agent runs gains privileges (setuid binaries, file capabilities). */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	return 0;
}

/*
 * Keeps only the hidden paths that exist (looked at as root, before the drop): bwrap cannot make
 * a mount point for a missing one under the read-only /, and what is not there needs no hiding
 * (the secrets directory of a host that has none).
 */
static void cage_hide_existing(struct cage_opts *o)
{
	struct stat st;
	size_t kept = 0;

	for (size_t i = 0; i < o->nhide; i++)
		if (lstat(o->hide[i], &st) == 0)
			o->hide[kept++] = o->hide[i];
	o->nhide = kept;
}

int main(int argc, char **argv)
{
	char *bargv[CAGE_FIXED_WORDS + 3 * 4 * CAGE_PATHS_MAX + 3 + CAGE_ARGV_MAX + 1];
	char bwrap[PATH_MAX];
	struct cage_secrets secrets = {{0}, 0};
	struct cage_opts o;
	struct cause c = {{0}};
	int r;

	if (cage_parse(argc, argv, &o, &c) < 0)
		return cage_fail("usage", c.msg);
	if (geteuid() != 0)
		return cage_fail("start", "must run as root (it is the pane's command)");
	if (o.cgroup != NULL && (r = cage_join(o.cgroup)) < 0)
		return cage_fail(o.cgroup, strerror(-r));
	if (o.systemd != NULL && cage_scope(o.systemd, &c) < 0)
		return cage_fail("the session's systemd scope", c.msg);
	/* Found as root, before the drop: the path is then fixed, not the agent's PATH's. */
	if ((r = proc_which(o.bwrap, bwrap, sizeof(bwrap))) < 0)
		return cage_fail("bubblewrap (bwrap) is not installed", strerror(-r));
	if (cage_secrets_read(o.secrets, &secrets, &c) < 0)
		return cage_fail("secrets", c.msg);
	/* putenv keeps the word itself: the buffers live as long as this process, then exec. */
	for (size_t i = 0; i < secrets.n; i++)
		if (putenv(secrets.words[i]) != 0)
			return cage_fail("secrets", strerror(errno));
	if (setenv("HOME", o.home, 1) < 0 || setenv("USER", o.user, 1) < 0 ||
	    setenv("LOGNAME", o.user, 1) < 0)
		return cage_fail("environment", strerror(errno));
	cage_hide_existing(&o);
	if ((r = cage_drop(o.uid, o.gid)) < 0)
		return cage_fail("cannot drop to the session's uid", strerror(-r));
	/* Left open across exec: bwrap reads it and loads it before it execs the agent. */
	if ((r = cage_seccomp_fd(&c)) < 0)
		return cage_fail("seccomp", c.msg);
	cage_set_seccomp(&o, r);
	if ((r = cage_bwrap_argv(&o, bwrap, bargv, sizeof(bargv) / sizeof(bargv[0]) - 1)) < 0)
		return cage_fail("bwrap's command line", strerror(-r));
	execv(bwrap, bargv);
	return cage_fail(bwrap, strerror(errno));
}
