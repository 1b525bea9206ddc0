/*
 * sdunit: a session's share of the machine where systemd is PID 1, as systemd's own units, asked
 * for over its D-Bus API (sd-bus; no systemd-run, no shell).
 *
 * systemd owns the cgroup tree where it runs: it may move processes out of cgroups it did not
 * make, and stopping a unit kills every cgroup below its own. So a session gets two units:
 *   - a transient slice, agentd-sessions-<id>.slice (under agentd-sessions.slice, so its cgroup
 *     is agentd.slice/agentd-sessions.slice/<slice>), made by agentd-api before the pane starts,
 *     with the session's limits (MemoryMax, MemorySwapMax 0, CPUQuotaPerSecUSec, TasksMax). It
 *     outlives its agent: the OOM count and the peak stay readable after the pane died, as a
 *     cgroup of our own does under deploy/up;
 *   - a transient scope in it, agentd-session-<id>.scope, asked for by agentd-cage (root) with
 *     its own pid, which waits until it is inside before it drops privileges and execs the agent.
 *     The scope asks for no controller of its own (accounting off): under cgroup v1 its
 *     processes then sit in the slice's memory cgroup, where the kernel counts the OOM kill (v1
 *     counts it only in the victim's own cgroup, and systemd removes an emptied scope's at once).
 * Returns are 0 or a negative errno; where a struct cause is taken it says why for a person.
 */
#ifndef AGENTD_SDUNIT_H
#define AGENTD_SDUNIT_H

#include "cause.h"
#include "cgroup.h"

#include <stddef.h>
#include <systemd/sd-bus.h>

/* systemd's own bound on a unit name (UNIT_NAME_MAX). */
#define SDUNIT_NAME_MAX 256
/* The slice every session's slice goes under, and its cgroup path below a hierarchy's root
 * (systemd nests slices by the dashes of their names). */
#define SDUNIT_PARENT_SLICE  "agentd-sessions.slice"
#define SDUNIT_PARENT_CGROUP "agentd.slice/agentd-sessions.slice"
/* How long a bus call may take: systemd answers in milliseconds, but a request thread must not
 * hang on a manager that is busy (a daemon-reload). */
#define SDUNIT_CALL_USEC (10ULL * 1000000ULL)
/* How long agentd-cage waits to be moved into its scope, and DELETE for a slice to stop: a
 * start or stop job runs at the manager's next turn; a killed agent is reaped in milliseconds. */
#define SDUNIT_WAIT_MS 5000

/*
 * The session's slice ("agentd-sessions-<id>.slice", with '-' and other characters systemd
 * reserves escaped as \xNN, so the id adds no level) and scope ("agentd-session-<id>.scope").
 * -EINVAL for an id that cannot be a unit name's part, -ENAMETOOLONG.
 */
int sdunit_slice_name(const char *id, char *out, size_t len);
int sdunit_scope_name(const char *id, char *out, size_t len);

/* Connects to systemd: its private socket (root, no dbus-daemon needed), else the system bus. */
int sdunit_open(sd_bus **out, struct cause *c);

/* 1 when the unit is active (or activating, reloading, deactivating), 0 when it is inactive,
 * failed or unknown, -errno when systemd cannot be asked. */
int sdunit_active(sd_bus *bus, const char *unit);

/*
 * Starts the session's slice with the limits l (0: none); one that is active already gets them
 * written again (a running session's mode switch).
 */
int sdunit_slice_start(sd_bus *bus, const char *slice, const struct cgroup_limits *l,
		       struct cause *c);

/*
 * Puts the calling process into the scope (made in slice, or joined when it exists) and waits
 * until the kernel says it is inside, so that everything it forks and execs afterwards is.
 */
int sdunit_scope_join(sd_bus *bus, const char *scope, const char *slice, struct cause *c);

/* SIGKILLs every process of the unit and stops it; waits (at most SDUNIT_WAIT_MS) until it is no
 * longer active. A unit that does not run is 0; -ETIMEDOUT when it would not stop. */
int sdunit_stop(sd_bus *bus, const char *unit, struct cause *c);

#endif
