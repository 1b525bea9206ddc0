/*
 * Who the agents are. claude (in a terminal pane) and agentd-host with its claude (in a
 * structured pane) run as an unprivileged user, AGENTD_AGENT_USER, while agentd-api,
 * agentd-bridge and the tmux server stay the daemons' user (root): an agent then cannot read the
 * token store, write the records or connect to the daemons' and tmux's sockets. What follows
 * from it, here:
 *  - the pane's command: setpriv --reuid --regid --init-groups -- argv (util-linux; argv, no
 *    shell). The environment passes unchanged, so the agent's is still exactly AGENTD_AGENT_ENV's,
 *    with HOME the agent's home (agentuser_home_word);
 *  - the filesystem identity of the daemons' own work in the agents' files (bare clones,
 *    worktrees, transcripts in HOME): the calling thread's fsuid/fsgid (agentuser_fs_enter), so
 *    everything agentd-api makes there is the agent's and it can do there what the agent can,
 *    no more; git's and libgit2's owner checks see the agent's own repositories;
 *  - the owner a host socket must have for agentd-bridge to talk to it (agentd-host runs as the
 *    agent, so a socket of anyone else at that path is not a host).
 * When the daemons already run as the agent user (no root), nothing switches: a deployment
 * without root, whose agents are not contained.
 */
#ifndef AGENTD_AGENTUSER_H
#define AGENTD_AGENTUSER_H

#include "cause.h"
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define AGENTUSER_PREFIX_WORDS 5           /* setpriv --reuid=U --regid=G --init-groups -- */
#define AGENTUSER_PWBUF_MAX    (64 * 1024) /* getpwnam_r's buffer, grown up to this */

struct agent_user {
	char name[CONFIG_USER_MAX + 1];
	char home[CONFIG_PATH_MAX]; /* AGENTD_AGENT_HOME, or the passwd entry's */
	uid_t uid;
	gid_t gid;
	/* The daemons run as root and the agents as uid/gid: panes drop to them, the daemons' work
	 * in the agents' files runs with them. false: the daemons are the agent user themselves. */
	bool switch_user;
	char setpriv[CONFIG_PATH_MAX]; /* the setpriv found on PATH (switch_user only) */
	char reuid[32];                /* "--reuid=<uid>" */
	char regid[32];                /* "--regid=<gid>" */
};

/*
 * Looks the agent user up (cfg->agent_user) and fills out. Returns 0, or a negative errno with
 * cause set:
 *   -ENOENT  no such user (deploy/up and agentd-tmux.service create it), or no setpriv on PATH;
 *   -EPERM   the user is root (uid 0), or the daemons run as another user that is not root and
 *            so cannot switch;
 *   -EINVAL  its home and AGENTD_STATE_DIR or AGENTD_RUNTIME_DIR overlap (the agent owns its
 *            HOME: the token store or the records would be its), or the home is not absolute;
 *   -EIO     the user database cannot be read.
 */
int agentuser_resolve(const struct config *cfg, struct agent_user *out, struct cause *cause);

/*
 * Writes the pane's command into out (room for outmax words plus the NULL): argv itself, or, when
 * au->switch_user, setpriv --reuid=<uid> --regid=<gid> --init-groups -- argv. The words point
 * into au and argv (borrowed). setpriv keeps the environment (no --reset-env) and runs argv with
 * execvp, with no shell. Returns 0, or -E2BIG when it does not fit.
 */
int agentuser_command(const struct agent_user *au, char *const *argv, char **out, size_t outmax);

/* Writes "HOME=<au->home>" into out. Returns 0 or -ENAMETOOLONG. */
int agentuser_home_word(const struct agent_user *au, char *out, size_t outlen);

/* The filesystem identity a thread had before agentuser_fs_enter. */
struct agentuser_fs {
	bool active;
	uid_t fsuid;
	gid_t fsgid;
};

/*
 * Gives the calling thread (only it: fsuid is per thread on Linux) the agent's filesystem
 * identity until agentuser_fs_leave: files it creates are the agent's, and access is checked as
 * the agent's (root's file capabilities are off meanwhile). Nothing changes unless
 * au->switch_user. Spawned programs are not affected (exec resets the fsuid to the euid).
 * Returns 0, or -EPERM when the kernel refused (no CAP_SETUID/CAP_SETGID); saved is then inactive.
 */
int agentuser_fs_enter(const struct agent_user *au, struct agentuser_fs *saved);

/* Gives the thread back the identity saved held (nothing when it is inactive). */
void agentuser_fs_leave(struct agentuser_fs *saved);

#endif
