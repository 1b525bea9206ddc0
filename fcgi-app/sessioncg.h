/*
 * A session's share of the machine as agentd-api sees it: the cgroup (core/cgroup.h) made before
 * its pane starts with the limits its record holds, read for the API's "usage", asked whether
 * the memory limit ended its agent (exitReason "oom"), and removed with the session.
 */
#ifndef AGENTD_SESSIONCG_H
#define AGENTD_SESSIONCG_H

#include "app.h"
#include "session.h"

#include <json-c/json.h>

/*
 * Probes the host's cgroups into app->cgroups and decides whether sessions get their own: not
 * without cgroups, nor when a base directory is not ours to write (not root): then app->cgroups
 * is CGROUP_NONE and sessions run as before. note gets one sentence for the start's log line.
 */
void sessioncg_init(struct app *app, struct cause *note);

/* The configured limits: the default of a new session and the most one may ask for. */
struct cgroup_limits sessioncg_max(const struct config *cfg);

/*
 * Makes s's cgroup with its limits (a record without limits gets the configured ones). One that
 * exists with no process left (the agent exited; a restart) is made anew, so that its peak and
 * OOM counters are this launch's. 0 without cgroups; -errno with cause.
 */
int sessioncg_create(const struct app *app, const struct session *s, struct cause *cause);

/* Kills what is left in the session's cgroup and removes it; failures are logged. */
void sessioncg_remove(const struct app *app, const char *id);

/* Adds "usage" {memoryBytes, memoryPeakBytes, cpuSeconds, tasks} to o when the session has a
 * cgroup. */
void sessioncg_add_usage(const struct app *app, const char *id, json_object *o);

/* Reads the usage of the session's cgroup into u. -ENOENT when the host gives sessions none
 * (CGROUP_NONE) or this one has none now; then its processes are only in /proc. */
int sessioncg_usage(const struct app *app, const char *id, struct cgroup_usage *u);

/* True when the kernel killed a process of the session's cgroup for its memory limit. */
bool sessioncg_oom(const struct app *app, const char *id);

#endif
