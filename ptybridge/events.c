#include "events_int.h"

#include "conn.h"
#include "eventnames.h"
#include "evlog.h"
#include "fsutil.h"
#include "hostproto.h"
#include "http.h"
#include "jsontext.h"
#include "log.h"
#include "session.h"
#include "sse.h"
#include "store.h"
#include "ws.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Members of a session object that move without a change anyone waits for. */
static const char *const events_ignored[] = {"updatedAt", "lastActivity", "rev"};

/* ---- session objects -------------------------------------------------------------------- */

static bool events_ignored_key(const char *key)
{
	for (size_t i = 0; i < sizeof(events_ignored) / sizeof(events_ignored[0]); i++)
		if (strcmp(key, events_ignored[i]) == 0)
			return true;
	return false;
}

/* True when every member of a but the ignored ones is in b with an equal value. */
static bool events_covers(json_object *a, json_object *b)
{
	json_object_object_foreach(a, key, val)
	{
		json_object *other;

		if (events_ignored_key(key))
			continue;
		if (!json_object_object_get_ex(b, key, &other) || !json_object_equal(val, other))
			return false;
	}
	return true;
}

bool events_session_changed(json_object *a, json_object *b)
{
	if (a == NULL || b == NULL)
		return true;
	return !events_covers(a, b) || !events_covers(b, a);
}

/* ---- the log ---------------------------------------------------------------------------- */

/* The file holding a client's position of generation gen, or NULL when it was rotated away. */
const struct evlog *events_file(const struct events *ev, unsigned gen)
{
	if (gen == ev->gen)
		return &ev->log;
	if (gen + 1 == ev->gen && ev->old.fd >= 0)
		return &ev->old;
	return NULL;
}

/* Makes room for a line of len bytes: rotates a log that would pass its bound. */
static void events_rotate_for(struct events *ev, size_t len)
{
	int r;

	if (ev->log.end == 0 || (uint64_t)ev->log.end + len <= ev->b->opt.events_log_max)
		return;
	r = evlog_rotate(&ev->log, &ev->old, ev->path, ev->old_path);
	if (r < 0) {
		log_error("cannot rotate %s: %s (it grows on)", ev->path, strerror(-r));
		return;
	}
	ev->gen++;
	ev->old_first = ev->first;
	ev->first = 0;
}

int64_t events_publish(struct events *ev, const char *name, json_object *data)
{
	struct evlog_batch *bt = NULL;
	const char *text;
	size_t len;
	int64_t id = -EINVAL;
	struct evclient *cl, *next;
	int r;

	if (!json_object_is_type(data, json_type_object) ||
	    !hostproto_event_name_valid(name, strlen(name)))
		goto out;
	text = json_object_to_json_string_length(data, EVENTS_JSON_OUT, &len);
	id = -EMSGSIZE;
	if (text == NULL || len > EVENTS_DATA_MAX)
		goto out;
	events_rotate_for(ev, len + HOSTPROTO_EVENT_HEAD_MAX);
	id = -ENOMEM;
	bt = evlog_batch_new();
	if (bt == NULL)
		goto out;
	id = evlog_batch_add(&ev->log, bt, name, text, len);
	if (id < 0)
		goto out;
	r = evlog_batch_write(&ev->log, bt);
	if (r < 0) {
		id = r;
		goto out;
	}
	if (ev->first == 0)
		ev->first = (uint64_t)id;
	stats_event(&ev->b->stats, name);
	for (cl = LIST_FIRST(&ev->clients); cl != NULL; cl = next) {
		const struct evlog_entry *e = &bt->ev[0];

		next = LIST_NEXT(cl, link);
		if (!cl->live)
			continue; /* catching up: it reads this one from the log */
		if (evclient_behind(cl)) {
			/* From here on it catches up from the log, from this event. */
			cl->live = false;
			cl->gen = ev->gen;
			cl->offset = bt->at + (off_t)e->off;
			continue;
		}
		evclient_send_line(cl, bt->data + e->off, e->len - 1);
		conn_flush(&cl->c);
	}
out:
	if (id < 0)
		log_error("event %s lost: %s", name, strerror((int)-id));
	evlog_batch_unref(bt);
	json_object_put(data);
	return id;
}

/* Applies one logged `session` event to the map of known sessions. */
static void events_replay_session(struct events *ev, const struct hostproto_event *e)
{
	json_object *data = jsontext_parse(e->data, e->data_len, JSON_TOKENER_DEFAULT_DEPTH, NULL);
	json_object *change, *session, *id;

	if (json_object_object_get_ex(data, "change", &change) &&
	    json_object_object_get_ex(data, "session", &session) &&
	    json_object_object_get_ex(session, "id", &id) &&
	    json_object_is_type(id, json_type_string)) {
		if (strcmp(json_object_get_string(change), "deleted") == 0)
			json_object_object_del(ev->known, json_object_get_string(id));
		else
			json_object_object_add(ev->known, json_object_get_string(id),
					       json_object_get(session));
	}
	json_object_put(data);
}

/* Rebuilds the map of known sessions from the `session` events of one file. */
static int events_replay_file(struct events *ev, const struct evlog *file)
{
	off_t at = 0;

	while (at < file->end) {
		struct evlog_batch *bt = NULL;
		int r = evlog_read(file, at, EVENTS_REPLAY_CHUNK, &bt);

		if (r < 0)
			return r;
		if (bt->len == 0) {
			evlog_batch_unref(bt);
			break;
		}
		for (size_t i = 0; i < bt->n; i++) {
			struct hostproto_event e;
			const struct evlog_entry *en = &bt->ev[i];

			if (en->id != 0 &&
			    hostproto_event_parse(bt->data + en->off, en->len - 1, &e) == 0 &&
			    e.name_len == strlen(EV_SESSION) &&
			    memcmp(e.name, EV_SESSION, e.name_len) == 0)
				events_replay_session(ev, &e);
		}
		at += (off_t)bt->len;
		evlog_batch_unref(bt);
	}
	return 0;
}

/* ---- records ---------------------------------------------------------------------------- */

/* Publishes a `session` event for id: change, and obj (consumed). */
static void events_publish_session(struct events *ev, const char *change, json_object *obj)
{
	json_object *data = json_object_new_object();

	if (data == NULL) {
		json_object_put(obj);
		log_error("session event lost: out of memory");
		return;
	}
	json_object_object_add(data, "change", json_object_new_string(change));
	json_object_object_add(data, "session", obj);
	events_publish(ev, EV_SESSION, data);
}

/* The pull request of a session changed (opened, merged, closed, its checks): a `pr` event of
 * its own, so a client that notifies ("CI failed on acme/widgets#12") need not diff sessions. */
static void events_publish_pr(struct events *ev, const struct session *s, json_object *last,
			      json_object *obj)
{
	json_object *was = NULL, *now = NULL, *data, *repo;

	if (last != NULL)
		json_object_object_get_ex(last, "pr", &was);
	if (!json_object_object_get_ex(obj, "pr", &now) || json_object_equal(was, now))
		return;
	if ((data = json_object_new_object()) == NULL ||
	    (repo = json_object_new_object()) == NULL) {
		json_object_put(data);
		log_error("session %s: its pr event is lost: out of memory", s->id);
		return;
	}
	json_object_object_add(data, "session", json_object_new_string(s->id));
	json_object_object_add(repo, "owner", json_object_new_string(s->owner));
	json_object_object_add(repo, "name", json_object_new_string(s->name));
	json_object_object_add(data, "repo", repo);
	json_object_object_add(data, "pr", json_object_get(now));
	if (was != NULL)
		json_object_object_add(data, "previous", json_object_get(was));
	json_object_object_add(data, "finished", json_object_new_boolean(session_finished(&s->pr)));
	events_publish(ev, EV_PR, data);
}

/* The record of session s was read: publishes what changed since the last one seen. */
static void events_record_seen(struct events *ev, const struct session *s)
{
	json_object *obj = session_to_json(s, false), *last = NULL;
	bool known = json_object_object_get_ex(ev->known, s->id, &last);

	if (obj == NULL) {
		log_error("session %s: its event is lost: out of memory", s->id);
		return;
	}
	if (events_session_changed(last, obj)) {
		events_publish_session(ev, known ? "updated" : "created", json_object_get(obj));
		events_publish_pr(ev, s, last, obj);
	}
	/* The latest object is kept even when only ignored members moved: snapshots are fresh. */
	json_object_object_add(ev->known, s->id, obj);
	/* This watch is also the hub's view of the records (it subscribes to structured hosts,
	 * withdraws on a mode switch); it takes a record seen again as no change. */
	if (ev->on_record != NULL)
		ev->on_record(ev->on_record_ctx, s->id, s);
}

/* Session id has no record any more: publishes its deletion with the last object seen. */
static void events_record_gone(struct events *ev, const char *id)
{
	json_object *last;

	if (ev->on_record != NULL)
		ev->on_record(ev->on_record_ctx, id, NULL);
	struct cause cause = {{0}};
	struct session gone;
	json_object *obj;

	if (!json_object_object_get_ex(ev->known, id, &last)) {
		store_forget_gone(&ev->b->store, id);
		return;
	}
	/* A DELETE leaves the record as it ended (stopping, with who deleted it) as <id>.gone:
	 * published rather than the last one seen, which may be older. */
	obj = store_read_gone(&ev->b->store, id, &gone, &cause) == 0 ? session_to_json(&gone, false)
								     : NULL;
	events_publish_session(ev, "deleted", obj != NULL ? obj : json_object_get(last));
	json_object_object_del(ev->known, id);
	/* Published: the .gone record has served (it would otherwise stay for every id ever). */
	store_forget_gone(&ev->b->store, id);
}

/* A .gone record of a session this bridge never knew (created and deleted while no bridge ran):
 * nothing to publish. */
static void events_stale_gone(void *ctx, const char *id)
{
	struct events *ev = ctx;
	struct cause cause = {{0}};
	struct session s;

	if (!json_object_object_get_ex(ev->known, id, NULL) &&
	    store_read(&ev->b->store, id, &s, &cause) == -ENOENT)
		store_forget_gone(&ev->b->store, id);
}

/* Reads the record of id again (a notification named it). */
static void events_record(struct events *ev, const char *id)
{
	struct cause cause = {{0}};
	struct session s;
	int r = store_read(&ev->b->store, id, &s, &cause);

	if (r == 0)
		events_record_seen(ev, &s);
	else if (r == -ENOENT)
		events_record_gone(ev, id);
	else
		log_warn("session %s: cannot read its record: %s", id, cause.msg);
}

/* Compares every record with the known sessions (at start, and as inotify's safety net). */
static int events_rescan(struct events *ev)
{
	struct session *all = NULL;
	size_t n = 0;
	json_object *seen;
	int r = store_list(&ev->b->store, &all, &n);

	if (r < 0)
		return r;
	seen = json_object_new_object();
	if (seen == NULL) {
		free(all);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		events_record_seen(ev, &all[i]);
		json_object_object_add(seen, all[i].id, NULL);
	}
	/* Deleting while iterating the map is not allowed: collect first. */
	{
		json_object *gone = json_object_new_array();

		json_object_object_foreach(ev->known, key, val)
		{
			(void)val;
			if (!json_object_object_get_ex(seen, key, NULL))
				json_object_array_add(gone, json_object_new_string(key));
		}
		for (size_t i = 0; i < json_object_array_length(gone); i++)
			events_record_gone(
			    ev, json_object_get_string(json_object_array_get_idx(gone, i)));
		json_object_put(gone);
	}
	store_gone_each(&ev->b->store, events_stale_gone, ev);
	json_object_put(seen);
	free(all);
	return 0;
}

static void events_on_record(uv_fs_event_t *handle, const char *filename, int events, int status)
{
	struct events *ev = handle->data;
	char id[SESSION_ID_MAX + 1];
	size_t n = filename != NULL ? strlen(filename) : 0, sn = strlen(EVENTS_RECORD);

	/* Records are <id>.json, replaced by a rename (store.h); the rest are locks, temp files
	 * and the structured sessions' directories. */
	if (status < 0 || n <= sn || n - sn > SESSION_ID_MAX ||
	    strcmp(filename + n - sn, EVENTS_RECORD) != 0)
		return;
	memcpy(id, filename, n - sn);
	id[n - sn] = '\0';
	if (session_id_valid(id))
		events_record(ev, id);
}

static void events_on_rescan(uv_timer_t *t)
{
	struct events *ev = t->data;
	int r = events_rescan(ev);

	if (r < 0)
		log_warn("cannot list the session records: %s", strerror(-r));
}

/* ---- open and close --------------------------------------------------------------------- */

static void events_free(struct events *ev)
{
	evlog_close(&ev->log);
	evlog_close(&ev->old);
	json_object_put(ev->known);
	free(ev);
}

static void events_handle_closed(uv_handle_t *h)
{
	struct events *ev = h->data;

	if (--ev->handles == 0)
		events_free(ev);
}

/* The log an older version kept in the runtime dir moves to the state dir once (both files, the
 * older first), so ids go on; a log the state dir has already is never replaced. */
static void events_migrate(struct bridge *b, const struct events *ev)
{
	const char *const leaves[] = {EVENTS_LOG_OLD_NAME, EVENTS_LOG_NAME};
	const char *const to[] = {ev->old_path, ev->path};

	if (access(ev->path, F_OK) == 0 || access(ev->old_path, F_OK) == 0)
		return;
	for (size_t i = 0; i < 2; i++) {
		char from[CONFIG_PATH_MAX];
		int r;

		if (config_runtime_path(b->cfg, leaves[i], from, sizeof(from)) < 0 ||
		    access(from, F_OK) < 0)
			continue;
		r = fsutil_move(from, to[i]);
		if (r < 0)
			log_warn("cannot move %s to %s: %s", from, to[i], strerror(-r));
		else
			log_info("moved %s to %s (it outlives a reboot there)", from, to[i]);
	}
}

int events_open(struct bridge *b, events_record_fn on_record, void *ctx, struct cause *cause)
{
	struct events *ev = calloc(1, sizeof(*ev));
	int r;

	if (ev == NULL)
		return cause_fail(cause, ENOMEM, "out of memory");
	ev->b = b;
	ev->on_record = on_record;
	ev->on_record_ctx = ctx;
	ev->log.fd = ev->old.fd = -1;
	LIST_INIT(&ev->clients);
	ev->known = json_object_new_object();
	if (ev->known == NULL) {
		r = cause_fail(cause, ENOMEM, "out of memory");
		goto fail;
	}
	if (config_state_path(b->cfg, EVENTS_LOG_NAME, ev->path, sizeof(ev->path)) < 0 ||
	    config_state_path(b->cfg, EVENTS_LOG_OLD_NAME, ev->old_path, sizeof(ev->old_path)) <
		0) {
		r = cause_fail(cause, ENAMETOOLONG, "state directory path is too long");
		goto fail;
	}
	events_migrate(b, ev);
	r = evlog_open(&ev->log, ev->path);
	if (r < 0) {
		r = cause_fail(cause, -r, "cannot open %s: %s", ev->path, strerror(-r));
		goto fail;
	}
	r = evlog_open_read(&ev->old, ev->old_path);
	if (r < 0 && r != -ENOENT) {
		r = cause_fail(cause, -r, "cannot open %s: %s", ev->old_path, strerror(-r));
		goto fail;
	}
	/* Ids go on from the last one either file holds (a crash may have come between the
	 * rotation's rename and the first event of the new file). */
	if (ev->log.last_id < ev->old.last_id && ev->old.fd >= 0)
		ev->log.last_id = ev->old.last_id;
	ev->first = evlog_first_id(&ev->log);
	ev->old_first = ev->old.fd >= 0 ? evlog_first_id(&ev->old) : 0;
	if ((ev->old.fd >= 0 && (r = events_replay_file(ev, &ev->old)) < 0) ||
	    (r = events_replay_file(ev, &ev->log)) < 0) {
		r = cause_fail(cause, -r, "cannot read %s: %s", ev->path, strerror(-r));
		goto fail;
	}
	/* Watched first, then compared: a change between the two is not missed. */
	uv_fs_event_init(b->loop, &ev->watch);
	uv_timer_init(b->loop, &ev->rescan);
	ev->watch.data = ev->rescan.data = ev;
	ev->handles = 2;
	r = uv_fs_event_start(&ev->watch, events_on_record, b->store.dir, 0);
	if (r < 0)
		log_warn("cannot watch %s (%s): records are compared every %d ms", b->store.dir,
			 uv_strerror(r), EVENTS_RESCAN_MS);
	uv_timer_start(&ev->rescan, events_on_rescan, EVENTS_RESCAN_MS, EVENTS_RESCAN_MS);
	b->events = ev;
	r = events_rescan(ev);
	if (r < 0)
		log_warn("cannot list the session records: %s", strerror(-r));
	log_info("events: %s from id %llu", ev->path, (unsigned long long)ev->log.last_id);
	return 0;
fail:
	events_free(ev);
	return r;
}

void events_close(struct bridge *b)
{
	struct events *ev = b->events;

	if (ev == NULL)
		return;
	b->events = NULL;
	uv_close((uv_handle_t *)&ev->watch, events_handle_closed);
	uv_close((uv_handle_t *)&ev->rescan, events_handle_closed);
}
