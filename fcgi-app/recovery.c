#include "recovery.h"

#include "boot.h"
#include "create.h"
#include "gitrepo.h"
#include "isotime.h"
#include "log.h"
#include "policies.h"
#include "proc.h"
#include "sessioncg.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The tmux session of record id: named name and not carrying another id (an older tool's
 * session carries none). */
static const struct tmux_info *recovery_find_tmux(const struct tmux_info *ti, size_t n,
						  const char *name, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(ti[i].name, name) == 0 &&
		    (ti[i].meta.id[0] == '\0' || strcmp(ti[i].meta.id, id) == 0))
			return &ti[i];
	return NULL;
}

/* Builds a record from a tmux session. Returns 0, or -EINVAL when it is not ours to manage. */
static int recovery_from_tmux(const struct app *app, const struct tmux_info *ti, struct session *s)
{
	const struct config *cfg = app->cfg;
	char owner[64], name[SESSION_NAME_MAX + 1], url[WORKTREE_URL_MAX], wt[SESSION_PATH_MAX];
	long issue;
	bool ours = ti->meta.id[0] != '\0';

	if (ours) {
		snprintf(owner, sizeof(owner), "%s", ti->meta.owner);
		snprintf(name, sizeof(name), "%s", ti->meta.repo);
		issue = strtol(ti->meta.issue, NULL, 10);
	} else {
		/* An older tool's session: "<name>-<issue>", owner from the worktree's remote. */
		const char *dash = strrchr(ti->name, '-');

		if (dash == NULL || !session_id_valid(ti->name))
			return -EINVAL;
		snprintf(name, sizeof(name), "%.*s", (int)(dash - ti->name), ti->name);
		issue = strtol(dash + 1, NULL, 10);
		struct agentuser_fs fs;
		int r = -EINVAL;

		/* The worktree is the agent user's: read as it. */
		if (session_worktree_path(cfg->base_dir, name, issue, wt, sizeof(wt)) == 0 &&
		    agentuser_fs_enter(&app->agent, &fs) == 0) {
			r = worktree_remote_url(wt, url, sizeof(url), NULL);
			agentuser_fs_leave(&fs);
		}
		if (r < 0 || worktree_parse_url(url, owner, sizeof(owner), name, sizeof(name)) < 0)
			return -EINVAL;
	}
	if (session_init(s, cfg->base_dir, owner, name, issue) < 0)
		return -EINVAL;
	/* Sessions named before the '+' separator keep the name they had ('_' not yet '+'). */
	if (!session_tmux_name_valid(s->id, ti->name))
		return -EINVAL;
	snprintf(s->tmux_name, sizeof(s->tmux_name), "%.*s", (int)sizeof(s->tmux_name) - 1,
		 ti->name);
	s->state = SESSION_RUNNING;
	s->launched = ours;
	if (ours) {
		if (strlen(ti->meta.agent_session) == SESSION_UUID_LEN)
			snprintf(s->agent_session_id, sizeof(s->agent_session_id), "%s",
				 ti->meta.agent_session);
		session_mode_parse(ti->meta.mode, &s->mode);
		snprintf(s->prompt, sizeof(s->prompt), "%s", ti->meta.prompt);
		/* The creation time create.c wrote (isotime): kept when it reads back. */
		(void)isotime_parse(ti->meta.created, &s->created_at);
	}
	if (ti->activity > 0)
		s->last_activity = ti->activity;
	return 0;
}

/*
 * Whether the tmux server the records were brought in line with is gone (boot.h), asked once per
 * pass and only when a record has no tmux session: *gone is -1 until then.
 */
static bool recovery_server_gone(const struct app *app, int *gone)
{
	if (*gone < 0)
		*gone = boot_server_changed(app);
	return *gone == 1;
}

/* The record of a session whose tmux session is gone. One that was running when its whole
 * server went comes back with the next server (boot.h): its error says so. */
static void recovery_set_lost(const struct app *app, struct session *s, int *gone)
{
	bool running = s->state == SESSION_RUNNING || s->state == SESSION_ATTACHED;

	s->state = SESSION_LOST;
	if (running && recovery_server_gone(app, gone)) {
		snprintf(s->error, sizeof(s->error), "%s", BOOT_LOST_WITH_SERVER);
		return;
	}
	snprintf(s->error, sizeof(s->error),
		 "tmux session %s is gone (killed outside agentd, or the tmux server stopped)",
		 s->tmux_name);
}

/* Running, attached or exited as tmux says: a dead pane is exited, a live one runs. A pane
 * whose process is a zombie tmux has not reaped is dead too (its terminal may stay open while a
 * child of the agent holds it). Returns true when s changed. */
static bool recovery_follow_pane(const struct app *app, struct session *s,
				 const struct tmux_info *ti)
{
	int code = ti->dead_status, sig = ti->dead_signal, ws, r = -ESRCH;
	bool dead = ti->pane_dead;

	if (!dead || (code < 0 && sig <= 0))
		r = proc_zombie_status(ti->pane_pid, ti->server_pid, &ws);
	if (r == 0) {
		dead = true;
		code = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
		sig = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
	} else if (r == -EACCES) {
		/* A caged pane's process ended and the kernel keeps its status from us (proc.h):
		 * tmux's own wait tells it. SIGCHLD makes tmux reap now (tmux 3.3a may wait for its
		 * next child otherwise); its pane-died hook then brings the next pass. Judged now,
		 * the pane would read "exited 0" (or "unknown"). */
		if (ti->server_pid > 0)
			kill((pid_t)ti->server_pid, SIGCHLD);
		return false;
	}
	if (dead) {
		if (s->state == SESSION_EXITED)
			return false;
		/* Neither tmux nor the kernel can tell: exitStatus reads SESSION_EXIT_MAX. */
		session_set_exited(s, code, sig,
				   ti->dead_time > 0 ? ti->dead_time : (int64_t)time(NULL));
		/* The OOM killer's SIGKILL, as the pane saw it or as a wrapper's 128 + 9, with a
		 * kill counted in the session's cgroup (made anew at each launch). */
		if ((sig == SIGKILL || (sig <= 0 && code == 128 + SIGKILL)) &&
		    sessioncg_oom(app, s->id))
			s->exit_reason = SESSION_EXIT_OOM;
		return true;
	}
	if (s->state == SESSION_RUNNING || s->state == SESSION_ATTACHED)
		return false;
	/* Respawned behind our back (or a failed/lost record whose tmux session is back). */
	s->state = s->clients > 0 ? SESSION_ATTACHED : SESSION_RUNNING;
	s->error[0] = '\0';
	return true;
}

/* Brings one existing record in line with tmux (ti: its tmux session, NULL when there is none).
 * Returns true when it changed. */
static bool recovery_fix_record(const struct app *app, struct session *s,
				const struct tmux_info *ti, int *gone)
{
	bool changed = false;

	if (s->state == SESSION_CREATING) {
		if (create_worker_alive(app, s->id) != 0)
			return false;
		if (ti == NULL) {
			s->state = SESSION_FAILED;
			snprintf(s->error, sizeof(s->error),
				 "creation was interrupted: its worker exited before finishing");
			return true;
		}
		s->state = SESSION_RUNNING;
		s->launched = true;
		changed = true;
	}
	if (ti == NULL) {
		/* A stopping record is DELETE's (which holds the lock while it works): one seen
		 * here is a DELETE that died after killing tmux. */
		if (s->state == SESSION_FAILED || s->state == SESSION_LOST)
			return changed;
		recovery_set_lost(app, s, gone);
		return true;
	}
	if (recovery_follow_pane(app, s, ti))
		changed = true;
	if (ti->activity > s->last_activity) {
		s->last_activity = ti->activity;
		changed = true;
	}
	return changed;
}

static void recovery_record(const struct app *app, const char *id, const struct tmux_info *ti,
			    int *gone, int64_t *wake_ms)
{
	struct session *s = malloc(sizeof(*s)), *before = malloc(sizeof(*before));
	struct tmux_info *now = malloc(sizeof(*now));
	struct cause cause = {{0}};
	bool changed;
	/* May create the record from tmux; store_unlock_session drops the lock file if not. */
	int fd = s != NULL && before != NULL && now != NULL ? store_lock_create(&app->store, id)
							    : -ENOMEM;
	int r;

	if (fd < 0)
		goto out;
	r = store_read(&app->store, id, s, &cause);
	if (r == -ENOENT && ti != NULL) {
		/* The tmux list is older than the lock: a DELETE may have acted since. */
		if (tmux_has_session(&app->tmux, ti->name) != 1)
			goto out;
		if (recovery_from_tmux(app, ti, s) < 0 || strcmp(s->id, id) != 0)
			goto out;
		recovery_follow_pane(app, s, ti);
		if (store_write(&app->store, s, &cause) == 0)
			log_info("recovered session %s from tmux (%s)", id,
				 session_state_name(s->state));
		/* An older tool's session gets our id, which every later tmux call checks; only
		 * while it carries none. */
		if (ti->meta.id[0] == '\0')
			tmux_set_option(&app->tmux, ti->name, "", "@agentd_id", id, NULL);
		goto out;
	}
	if (r < 0)
		goto out;
	*before = *s;
	changed = recovery_fix_record(app, s, ti, gone);
	if (changed && s->state != before->state) {
		/* The tmux list is older than the lock: a DELETE, a restart or a mode switch may
		 * have acted since. The state is decided on what tmux says now. */
		int has = tmux_pane_state(&app->tmux, before->tmux_name, now);

		if (has < 0)
			goto out;
		/* A tmux session of that name that carries another id is not this session's. */
		if (has == 1 && now->meta.id[0] != '\0' && strcmp(now->meta.id, id) != 0)
			has = 0;
		*s = *before;
		if (has == 1)
			now->activity = ti != NULL ? ti->activity : 0;
		changed = recovery_fix_record(app, s, has == 1 ? now : NULL, gone);
	}
	/* Restarts and timeouts (policies.h), decided on the state just found. */
	if (policies_apply(app, s, before, wake_ms))
		changed = true;
	if (!changed)
		goto out;
	if (store_write(&app->store, s, &cause) < 0) {
		log_warn("session %s: cannot write its record: %s", id, cause.msg);
		goto out;
	}
	if (s->state != before->state) {
		char msg[SESSION_ERROR_MAX + 128];

		if (session_unavailable(s, msg, sizeof(msg)) != NULL)
			log_warn("session %s: %s", id, msg);
		else
			log_info("session %s is %s", id, session_state_name(s->state));
	}
out:
	store_unlock_session(&app->store, id, fd);
	free(now);
	free(before);
	free(s);
}

/* The record id a tmux session belongs to, or NULL when it is not an agent session. */
static const char *recovery_tmux_id(const struct tmux_info *ti)
{
	if (ti->meta.id[0] != '\0')
		return session_id_valid(ti->meta.id) ? ti->meta.id : NULL;
	return session_id_valid(ti->name) ? ti->name : NULL;
}

int recovery_run(const struct app *app, struct cause *cause)
{
	return recovery_pass(app, NULL, NULL, NULL, cause);
}

int recovery_pass(const struct app *app, struct tmux_info **list, size_t *n, int64_t *wake_ms,
		  struct cause *cause)
{
	int64_t wake = 0;

	struct tmux_info *ti = NULL;
	struct session *recs = NULL;
	size_t nt = 0, nr = 0;
	int r, gone = -1;

	if (list != NULL) {
		*list = NULL;
		*n = 0;
	}
	r = tmux_list(&app->tmux, &ti, &nt, cause);
	if (r < 0)
		return r;
	for (size_t i = 0; i < nt; i++) {
		const char *id = recovery_tmux_id(&ti[i]);

		if (id != NULL)
			recovery_record(app, id, &ti[i], &gone, &wake);
	}
	r = store_list(&app->store, &recs, &nr);
	if (r < 0) {
		cause_set(cause, "cannot list records: %s", strerror(-r));
		goto out;
	}
	for (size_t i = 0; i < nr; i++)
		if (recovery_find_tmux(ti, nt, recs[i].tmux_name, recs[i].id) == NULL)
			recovery_record(app, recs[i].id, NULL, &gone, &wake);
out:
	/* Records may have been removed by hand: the list view must not outlive them. */
	store_rebuild_view(&app->store);
	free(recs);
	if (wake_ms != NULL)
		*wake_ms = wake;
	if (list != NULL) {
		*list = ti;
		*n = nt;
	} else {
		free(ti);
	}
	return r;
}
