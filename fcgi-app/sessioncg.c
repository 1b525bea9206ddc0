/*
 * The sessions' cgroups, as agentd-api and its creation worker make, read and remove them.
 */
#include "sessioncg.h"

#include "cagecmd.h"
#include "log.h"
#include "sdunit.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

/* Whether every base directory a session's cgroup goes under can take a new directory. */
static const char *sessioncg_unwritable(const struct cgroup_tree *t)
{
	for (size_t i = 0; t->mode == CGROUP_V1 && i < t->n_v1; i++)
		if (access(t->v1[i].dir, W_OK) < 0)
			return t->v1[i].dir;
	if (t->unified[0] != '\0' && access(t->unified, W_OK) < 0)
		return t->unified;
	return NULL;
}

/* Makes and removes a cgroup with the configured limits under the parent, so that a host where
 * sessions could not get theirs is known at start, not at each creation. The name can be no
 * session's: an id ends in "-<issue>". */
static int sessioncg_trial(const struct app *app, struct cause *c)
{
	struct cgroup_limits max = sessioncg_max(app->cfg);
	char name[32];
	int r;

	snprintf(name, sizeof(name), "probe.%ld", (long)getpid());
	r = cgroup_create(&app->cgroups, app->cfg->cgroup_parent, name, &max, c);
	cgroup_remove(&app->cgroups, app->cfg->cgroup_parent, name);
	return r;
}

/* Where the session's cgroup is, as cgroup.h names it: PARENT/SESSION under each base. */
static int sessioncg_where(const struct app *app, const char *id, const char **parent,
			   char *session, size_t len)
{
	if (app->cgroups.systemd) {
		*parent = SDUNIT_PARENT_CGROUP;
		return sdunit_slice_name(id, session, len);
	}
	*parent = app->cfg->cgroup_parent;
	return snprintf(session, len, "%s", id) < (int)len ? 0 : -ENAMETOOLONG;
}

/* What the host's hierarchies cannot enforce of the limits, for the start's log line. */
static const char *sessioncg_unenforced(const struct cgroup_tree *t, char *buf, size_t len)
{
	unsigned have = t->mode == CGROUP_V2 ? t->v2_controllers : 0;

	for (size_t i = 0; t->mode == CGROUP_V1 && i < t->n_v1; i++)
		have |= t->v1[i].controllers;
	snprintf(buf, len, "%s%s%s", (have & CGROUP_C_MEMORY) ? "" : " memory",
		 (have & CGROUP_C_CPU) ? "" : " CPU", (have & CGROUP_C_PIDS) ? "" : " tasks");
	return buf;
}

/*
 * Where systemd is PID 1 it owns the tree: it moves processes out of cgroups it did not make,
 * and stopping a unit kills every cgroup below it (sessions under agentd-api's cgroup would die
 * with a restart of agentd-api). Each session gets units of its own there (sdunit.h), and a trial
 * slice with the configured limits, started and stopped here, says at start whether systemd
 * makes them. The limits a hierarchy lacks are systemd's to skip: said in the log line.
 */
static void sessioncg_init_systemd(struct app *app, struct cause *note)
{
	const struct config *cfg = app->cfg;
	struct cgroup_limits max = sessioncg_max(cfg);
	struct cause c = {{0}};
	char probe[32], slice[SDUNIT_NAME_MAX], missing[32];
	sd_bus *bus = NULL;
	int r;

	if (cgroup_probe_root(NULL, &app->cgroups, &c) < 0 || app->cgroups.mode == CGROUP_NONE) {
		app->cgroups.mode = CGROUP_NONE;
		cause_set(note,
			  "sessions have no cgroups of their own (no share of the machine): "
			  "systemd is PID 1 but %s",
			  c.msg[0] != '\0' ? c.msg : "no cgroup filesystem is mounted");
		return;
	}
	app->cgroups.systemd = true;
	snprintf(probe, sizeof(probe), "probe.%ld", (long)getpid());
	r = sdunit_slice_name(probe, slice, sizeof(slice));
	if (r == 0)
		r = sdunit_open(&bus, &c);
	if (r == 0 && (r = sdunit_slice_start(bus, slice, &max, &c)) == 0)
		r = sdunit_stop(bus, slice, &c);
	sd_bus_flush_close_unref(bus);
	if (r < 0) {
		app->cgroups.mode = CGROUP_NONE;
		cause_set(note,
			  "sessions have no cgroups of their own (no share of the machine): "
			  "systemd is PID 1 and will not make their units: %s",
			  c.msg[0] != '\0' ? c.msg : strerror(-r));
		return;
	}
	sessioncg_unenforced(&app->cgroups, missing, sizeof(missing));
	cause_set(note,
		  "sessions get systemd units (a slice each under %s, %s): memory %llu MiB, %.3g "
		  "CPUs, %d tasks unless a session asks for less%s%s",
		  SDUNIT_PARENT_SLICE, app->cgroups.mode == CGROUP_V2 ? "cgroup v2" : "cgroup v1",
		  (unsigned long long)(cfg->session_memory_max >> 20),
		  cfg->session_cpu_milli / 1000.0, cfg->session_tasks_max,
		  missing[0] != '\0' ? "; this host's cgroups cannot enforce:" : "", missing);
}

void sessioncg_init(struct app *app, struct cause *note)
{
	const struct config *cfg = app->cfg;
	struct cause c = {{0}};
	const char *dir;

	if (sd_booted() > 0) {
		sessioncg_init_systemd(app, note);
		return;
	}

	/* Only agentd-cage joins a pane to its session's cgroup: an uncaged pane would leave the
	 * cgroup empty, and its usage would read as zeros. */
	if (!cagecmd_enabled(app, c.msg, sizeof(c.msg))) {
		app->cgroups.mode = CGROUP_NONE;
		cause_set(
		    note,
		    "sessions have no cgroups of their own (no share of the machine): they are "
		    "not caged (%s)",
		    c.msg);
		return;
	}
	if (cgroup_probe(NULL, &app->cgroups, &c) < 0) {
		app->cgroups.mode = CGROUP_NONE;
		cause_set(note,
			  "sessions have no cgroups of their own (no share of the machine): %s",
			  c.msg);
		return;
	}
	if (app->cgroups.mode == CGROUP_NONE) {
		cause_set(note, "sessions have no cgroups of their own (no share of the machine): "
				"no cgroup filesystem is mounted");
		return;
	}
	if ((dir = sessioncg_unwritable(&app->cgroups)) != NULL) {
		cause_set(note,
			  "sessions have no cgroups of their own (no share of the machine): %s is "
			  "not ours to write (agentd-api is not root)",
			  dir);
		app->cgroups.mode = CGROUP_NONE;
		return;
	}
	if (sessioncg_trial(app, &c) < 0) {
		cause_set(note,
			  "sessions have no cgroups of their own (no share of the machine): %s",
			  c.msg);
		app->cgroups.mode = CGROUP_NONE;
		return;
	}
	cause_set(note,
		  "sessions get cgroups under %s (%s): memory %llu MiB, %.3g CPUs, %d tasks "
		  "unless a session asks for less",
		  cfg->cgroup_parent,
		  app->cgroups.mode == CGROUP_V2    ? "cgroup v2"
		  : app->cgroups.unified[0] != '\0' ? "cgroup v1 and the unified tree"
						    : "cgroup v1",
		  (unsigned long long)(cfg->session_memory_max >> 20),
		  cfg->session_cpu_milli / 1000.0, cfg->session_tasks_max);
}

struct cgroup_limits sessioncg_max(const struct config *cfg)
{
	return (struct cgroup_limits){.memory_max = cfg->session_memory_max,
				      .cpu_milli = cfg->session_cpu_milli,
				      .tasks_max = (uint32_t)cfg->session_tasks_max};
}

/* The session's slice with its limits. One whose scope ended (the agent exited; a restart) is
 * stopped and started anew, so that its peak and OOM counters are this launch's. */
static int sessioncg_create_units(const struct app *app, const char *id,
				  const struct cgroup_limits *l, struct cause *cause)
{
	char slice[SDUNIT_NAME_MAX], scope[SDUNIT_NAME_MAX];
	sd_bus *bus = NULL;
	int r;

	if ((r = sdunit_slice_name(id, slice, sizeof(slice))) < 0 ||
	    (r = sdunit_scope_name(id, scope, sizeof(scope))) < 0)
		return cause_fail(cause, -r, "session %s: no unit name: %s", id, strerror(-r));
	if ((r = sdunit_open(&bus, cause)) < 0)
		return r;
	if (sdunit_active(bus, scope) == 0)
		sdunit_stop(bus, slice, NULL);
	r = sdunit_slice_start(bus, slice, l, cause);
	sd_bus_flush_close_unref(bus);
	return r;
}

int sessioncg_create(const struct app *app, const struct session *s, struct cause *cause)
{
	struct cgroup_limits l = s->limits;
	struct cgroup_limits max = sessioncg_max(app->cfg);

	if (app->cgroups.mode == CGROUP_NONE)
		return 0;
	/* A record from before limits existed has none: the configured ones apply. */
	if (l.memory_max == 0)
		l.memory_max = max.memory_max;
	if (l.cpu_milli == 0)
		l.cpu_milli = max.cpu_milli;
	if (l.tasks_max == 0)
		l.tasks_max = max.tasks_max;
	if (app->cgroups.systemd)
		return sessioncg_create_units(app, s->id, &l, cause);
	if (cgroup_populated(&app->cgroups, app->cfg->cgroup_parent, s->id) == 0)
		cgroup_remove(&app->cgroups, app->cfg->cgroup_parent, s->id);
	return cgroup_create(&app->cgroups, app->cfg->cgroup_parent, s->id, &l, cause);
}

void sessioncg_remove(const struct app *app, const char *id)
{
	int r;

	if (app->cgroups.mode == CGROUP_NONE)
		return;
	if (app->cgroups.systemd) {
		char slice[SDUNIT_NAME_MAX];
		struct cause c = {{0}};
		sd_bus *bus = NULL;

		/* Stopping the slice stops the scope in it: every process of the session. */
		if ((r = sdunit_slice_name(id, slice, sizeof(slice))) == 0 &&
		    (r = sdunit_open(&bus, &c)) == 0)
			r = sdunit_stop(bus, slice, &c);
		sd_bus_flush_close_unref(bus);
		if (r < 0)
			log_warn("session %s: cannot stop its unit %s: %s", id, slice,
				 c.msg[0] != '\0' ? c.msg : strerror(-r));
		return;
	}
	r = cgroup_remove(&app->cgroups, app->cfg->cgroup_parent, id);
	if (r < 0)
		log_warn("session %s: cannot remove its cgroup %s/%s: %s", id,
			 app->cfg->cgroup_parent, id, strerror(-r));
}

int sessioncg_usage(const struct app *app, const char *id, struct cgroup_usage *u)
{
	const char *parent;
	char session[CGROUP_NAME_MAX + 1];
	int r;

	memset(u, 0, sizeof(*u));
	if (app->cgroups.mode == CGROUP_NONE)
		return -ENOENT;
	if ((r = sessioncg_where(app, id, &parent, session, sizeof(session))) < 0)
		return r;
	return cgroup_usage(&app->cgroups, parent, session, u);
}

void sessioncg_add_usage(const struct app *app, const char *id, json_object *o)
{
	struct cgroup_usage u;
	char secs[32];
	json_object *j;

	if (o == NULL || sessioncg_usage(app, id, &u) < 0)
		return;
	j = json_object_new_object();
	json_object_object_add(j, "memoryBytes", json_object_new_int64((int64_t)u.memory_bytes));
	json_object_object_add(j, "memoryPeakBytes",
			       json_object_new_int64((int64_t)u.memory_peak_bytes));
	/* Written from its digits (microseconds): json-c prints a double with 17 of them. */
	snprintf(secs, sizeof(secs), "%" PRIu64 ".%06" PRIu64, u.cpu_usec / 1000000,
		 u.cpu_usec % 1000000);
	json_object_object_add(j, "cpuSeconds", json_object_new_double_s(u.cpu_usec / 1e6, secs));
	json_object_object_add(j, "tasks", json_object_new_int64(u.tasks));
	json_object_object_add(o, "usage", j);
}

bool sessioncg_oom(const struct app *app, const char *id)
{
	struct cgroup_usage u;

	return sessioncg_usage(app, id, &u) == 0 && u.oom_kills > 0;
}
