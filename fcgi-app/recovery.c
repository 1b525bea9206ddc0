#include "recovery.h"

#include "create.h"
#include "log.h"
#include "worktree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
		if (session_worktree_path(cfg->base_dir, name, issue, wt, sizeof(wt)) < 0 ||
		    worktree_remote_url(wt, url, sizeof(url), NULL) < 0 ||
		    worktree_parse_url(url, owner, sizeof(owner), name, sizeof(name)) < 0)
			return -EINVAL;
	}
	if (session_init(s, cfg->base_dir, owner, name, issue) < 0)
		return -EINVAL;
	/* Sessions made before issue 8 keep the name they had ('_' not yet '+'). */
	if (!session_tmux_name_valid(s->id, ti->name))
		return -EINVAL;
	snprintf(s->tmux_name, sizeof(s->tmux_name), "%.*s", (int)sizeof(s->tmux_name) - 1,
		 ti->name);
	s->state = SESSION_RUNNING;
	s->launched = ours;
	if (ours) {
		struct tm tm;

		if (strlen(ti->meta.agent_session) == SESSION_UUID_LEN)
			snprintf(s->agent_session_id, sizeof(s->agent_session_id), "%s",
				 ti->meta.agent_session);
		session_mode_parse(ti->meta.mode, &s->mode);
		snprintf(s->prompt, sizeof(s->prompt), "%s", ti->meta.prompt);
		memset(&tm, 0, sizeof(tm));
		if (strptime(ti->meta.created, "%Y-%m-%dT%H:%M:%SZ", &tm) != NULL)
			s->created_at = (int64_t)timegm(&tm);
	}
	if (ti->activity > 0)
		s->last_activity = ti->activity;
	return 0;
}

/* Brings one existing record in line with tmux. Returns true when it changed. */
static bool recovery_fix_record(const struct app *app, struct session *s,
				const struct tmux_info *ti)
{
	if (s->state == SESSION_CREATING) {
		if (create_worker_alive(app, s->id) != 0)
			return false;
		if (ti != NULL) {
			s->state = SESSION_RUNNING;
			s->launched = true;
			return true;
		}
		s->state = SESSION_FAILED;
		snprintf(s->error, sizeof(s->error),
			 "creation was interrupted: its worker exited before finishing");
		return true;
	}
	if (ti == NULL) {
		if (s->state == SESSION_FAILED)
			return false;
		s->state = SESSION_FAILED;
		snprintf(s->error, sizeof(s->error),
			 "tmux session %s is gone (the agent's session ended or the tmux server "
			 "was restarted)",
			 s->tmux_name);
		return true;
	}
	if (s->state == SESSION_FAILED || s->state == SESSION_STOPPING) {
		s->state = s->clients > 0 ? SESSION_ATTACHED : SESSION_RUNNING;
		s->error[0] = '\0';
		return true;
	}
	if (ti->activity > s->last_activity) {
		s->last_activity = ti->activity;
		return true;
	}
	return false;
}

static void recovery_record(const struct app *app, const char *id, const struct tmux_info *ti)
{
	struct session *s = malloc(sizeof(*s));
	struct cause cause = {{0}};
	/* May create the record from tmux; store_unlock_session drops the lock file if not. */
	int fd = s != NULL ? store_lock_create(&app->store, id) : -ENOMEM, r;

	if (fd < 0)
		goto out;
	r = store_read(&app->store, id, s, &cause);
	/* The tmux list is older than the lock: a DELETE or a worker may have acted since. Ask tmux
	 * again before creating or failing a record. */
	if ((r == -ENOENT && ti != NULL) || (r == 0 && ti == NULL)) {
		if (tmux_has_session(&app->tmux, r == 0 ? s->tmux_name : ti->name) != (ti != NULL))
			goto out;
	}
	if (r == -ENOENT && ti != NULL) {
		if (recovery_from_tmux(app, ti, s) < 0 || strcmp(s->id, id) != 0)
			goto out;
		if (store_write(&app->store, s, &cause) == 0)
			log_info("recovered session %s from tmux", id);
		/* An older tool's session gets our id, which every later tmux call checks; only
		 * while it carries none. */
		if (ti->meta.id[0] == '\0')
			tmux_set_option(&app->tmux, ti->name, "", "@agentd_id", id, NULL);
	} else if (r == 0 && recovery_fix_record(app, s, ti)) {
		if (store_write(&app->store, s, &cause) == 0 && s->state == SESSION_FAILED)
			log_warn("session %s: %s", id, s->error);
	}
out:
	store_unlock_session(&app->store, id, fd);
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
	struct tmux_info *ti = NULL;
	struct session *recs = NULL;
	size_t nt = 0, nr = 0;
	int r;

	r = tmux_list(&app->tmux, &ti, &nt, cause);
	if (r < 0)
		return r;
	for (size_t i = 0; i < nt; i++) {
		const char *id = recovery_tmux_id(&ti[i]);

		if (id != NULL)
			recovery_record(app, id, &ti[i]);
	}
	r = store_list(&app->store, &recs, &nr);
	if (r < 0) {
		cause_set(cause, "cannot list records: %s", strerror(-r));
		goto out;
	}
	for (size_t i = 0; i < nr; i++)
		if (recovery_find_tmux(ti, nt, recs[i].tmux_name, recs[i].id) == NULL)
			recovery_record(app, recs[i].id, NULL);
out:
	/* Records may have been removed by hand: the list view must not outlive them. */
	store_rebuild_view(&app->store);
	free(recs);
	free(ti);
	return r;
}
