/*
 * A caged session's pane command (docs/DESIGN.md "Cages"): agentd-cage with the session's view,
 * wrapped around claude's (or agentd-host's) argv, in place of setpriv. Caging applies when the
 * daemons are root (they switch to the agent user), AGENTD_CAGE is not "off", and agentd-cage
 * (beside agentd-api) and bwrap (on PATH) are there.
 *
 * The agent's identity is still the agent user's: the session's own uid (core/cageuid.h) needs a
 * repository of its own per session, which the shared bare clone is not. What cages it meanwhile
 * is the mount and pid namespace: other sessions' worktrees and HOMEs, the token store, the
 * records, the event log and the daemons' runtime dirs are empty tmpfs in its view, and no other
 * session's process is in its pid namespace (kill, ptrace and /proc/<pid>/environ find nothing).
 */
#ifndef AGENTD_CAGECMD_H
#define AGENTD_CAGECMD_H

#include "app.h"
#include "cage.h"
#include "session.h"

#define CAGECMD_PATHS  16 /* hide and bind paths of one session: see cagecmd_build */
#define CAGECMD_PREFIX (16 + 2 * 2 * CAGECMD_PATHS) /* agentd-cage's words before claude's */

struct cagecmd {
	char paths[CAGECMD_PATHS][CONFIG_PATH_MAX];
	char home[CONFIG_PATH_MAX];
	char uid[16], gid[16];
	char cgroup[2 * CGROUP_NAME_MAX + 2]; /* PARENT/SESSION */
	char
	    claude[CONFIG_PATH_MAX]; /* the agent's real path, when its own is hidden in the cage */
	char *words[CAGECMD_PREFIX];
	size_t n;
};

/* Whether sessions are caged here; why not in why (for the start's log line). */
bool cagecmd_enabled(const struct app *app, char *why, size_t whylen);

/*
 * The session's HOME, <AGENTD_HOMES_DIR>/<id>: made on first use as a copy of
 * AGENTD_AGENT_HOME_TEMPLATE (or the agent's HOME), the agent user's. Returns 0 or -errno with
 * cause.
 */
int cagecmd_home(const struct app *app, const struct session *s, char *home, size_t len,
		 struct cause *cause);

/*
 * Writes into out the pane command for s in mode: agentd-cage's words then argv (NULL-ended, at
 * most outmax words plus the NULL). c holds the words' text and must outlive out. Returns 0 or
 * -errno with cause.
 */
int cagecmd_build(const struct app *app, const struct session *s, enum session_mode mode,
		  char *const *argv, struct cagecmd *c, char **out, size_t outmax,
		  struct cause *cause);

/* Removes the session's HOME (delete without keepHome). Returns 0 or -errno. */
int cagecmd_remove_home(const struct app *app, const char *id);

#endif
