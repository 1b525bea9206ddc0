/*
 * The sessions' cgroups, as agentd-api and its creation worker make, read and remove them.
 */
#include "sessioncg.h"

#include "cagecmd.h"
#include "log.h"

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

void sessioncg_init(struct app *app, struct cause *note)
{
	const struct config *cfg = app->cfg;
	struct cause c = {{0}};
	const char *dir;

	/* systemd owns the tree where it is PID 1: it moves processes out of cgroups it did not
	 * make, and stopping a unit kills every cgroup below it. A transient scope per session is
	 * the home there (docs/DESIGN.md "Cages"), not made yet. */
	if (sd_booted() > 0) {
		app->cgroups.mode = CGROUP_NONE;
		cause_set(note, "sessions have no cgroups of their own (no share of the machine): "
				"systemd is PID 1 and transient scopes are not made yet");
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
	if (cgroup_populated(&app->cgroups, app->cfg->cgroup_parent, s->id) == 0)
		cgroup_remove(&app->cgroups, app->cfg->cgroup_parent, s->id);
	return cgroup_create(&app->cgroups, app->cfg->cgroup_parent, s->id, &l, cause);
}

void sessioncg_remove(const struct app *app, const char *id)
{
	int r;

	if (app->cgroups.mode == CGROUP_NONE)
		return;
	r = cgroup_remove(&app->cgroups, app->cfg->cgroup_parent, id);
	if (r < 0)
		log_warn("session %s: cannot remove its cgroup %s/%s: %s", id,
			 app->cfg->cgroup_parent, id, strerror(-r));
}

void sessioncg_add_usage(const struct app *app, const char *id, json_object *o)
{
	struct cgroup_usage u;
	char secs[32];
	json_object *j;

	if (o == NULL || app->cgroups.mode == CGROUP_NONE ||
	    cgroup_usage(&app->cgroups, app->cfg->cgroup_parent, id, &u) < 0)
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

	return app->cgroups.mode != CGROUP_NONE &&
	       cgroup_usage(&app->cgroups, app->cfg->cgroup_parent, id, &u) == 0 && u.oom_kills > 0;
}
