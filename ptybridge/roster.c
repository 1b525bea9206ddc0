#include "roster.h"

#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>

struct roster_entry {
	struct roster *roster;
	LIST_ENTRY(roster_entry) link;
	char id[SESSION_ID_MAX + 1];
	int clients;         /* loop thread: this bridge's clients now */
	int written_clients; /* the count in the record after the last write */
	int64_t activity;    /* last output seen */
	int64_t activity_written;
	bool activity_dirty;
	struct roster_attention att; /* the hub's latest facts */
	bool att_dirty;
	bool inflight;
	/* Snapshot for the write in flight: touched by the pool thread only while inflight. */
	uv_work_t work;
	int job_clients;
	int64_t job_activity;
	bool job_has_att;
	struct roster_attention job_att;
};

struct roster {
	uv_loop_t *loop;
	const struct store *store;
	LIST_HEAD(, roster_entry) entries;
	unsigned inflight;
};

struct roster *roster_create(uv_loop_t *loop, const struct store *st)
{
	struct roster *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->loop = loop;
	r->store = st;
	LIST_INIT(&r->entries);
	return r;
}

void roster_destroy(struct roster *r)
{
	struct roster_entry *e;

	if (r == NULL)
		return;
	while ((e = LIST_FIRST(&r->entries)) != NULL) {
		LIST_REMOVE(e, link);
		free(e);
	}
	free(r);
}

bool roster_busy(const struct roster *r)
{
	return r->inflight > 0;
}

/* The read-modify-write of one record, in a pool thread. */
static void roster_work(uv_work_t *req)
{
	struct roster_entry *e = req->data;
	const struct store *st = e->roster->store;
	struct cause cause = {{0}};
	struct session_cost more;
	struct session s;
	int fd, r;

	fd = store_lock(st, e->id);
	if (fd < 0) {
		if (fd != -ENOENT) /* deleted: nothing to update */
			log_error("cannot lock session %s: %s", e->id, strerror(-fd));
		return;
	}
	r = store_read(st, e->id, &s, &cause);
	if (r == 0) {
		s.clients = e->job_clients;
		/* Only running ⇄ attached is ours; creating, failed and stopping belong to the API.
		 */
		if (s.state == SESSION_RUNNING || s.state == SESSION_ATTACHED)
			s.state = s.clients > 0 ? SESSION_ATTACHED : SESSION_RUNNING;
		if (e->job_activity > s.last_activity)
			s.last_activity = e->job_activity;
		if (e->job_has_att) {
			s.activity = e->job_att.activity;
			s.activity_at = e->job_att.activity_at;
			s.n_pending = e->job_att.n_pending;
			memcpy(s.pending, e->job_att.pending, sizeof(s.pending));
			s.pending_launch = e->job_att.pending_launch;
			s.host_event = e->job_att.host_event;
			/* What the hub added since is the cost of today (GET /usage). */
			cost_delta(&e->job_att.cost, &s.cost, &more);
			cost_days_add(&s.days, (int64_t)time(NULL), &more);
			s.cost = e->job_att.cost;
		}
		r = store_write(st, &s, &cause);
	}
	store_unlock(fd);
	if (r < 0 && r != -ENOENT)
		log_error("cannot update session %s: %s", e->id,
			  cause.msg[0] ? cause.msg : strerror(-r));
}

static void roster_kick(struct roster_entry *e);

static void roster_after(uv_work_t *req, int status)
{
	struct roster_entry *e = req->data;

	e->inflight = false;
	e->roster->inflight--;
	e->written_clients = e->job_clients;
	roster_kick(e);
}

/* Starts a write if the record lags behind, or forgets an entry that has nothing left to do. */
static void roster_kick(struct roster_entry *e)
{
	struct roster *r = e->roster;

	if (e->inflight)
		return;
	if (e->clients == e->written_clients && !e->activity_dirty && !e->att_dirty) {
		if (e->clients == 0) {
			LIST_REMOVE(e, link);
			free(e);
		}
		return;
	}
	e->job_clients = e->clients;
	e->job_activity = e->activity;
	e->activity_written = e->activity;
	e->activity_dirty = false;
	e->job_has_att = e->att_dirty;
	if (e->att_dirty)
		e->job_att = e->att;
	e->att_dirty = false;
	e->work.data = e;
	if (uv_queue_work(r->loop, &e->work, roster_work, roster_after) < 0) {
		log_error("cannot queue the record update of session %s", e->id);
		e->written_clients = e->clients;
		return;
	}
	e->inflight = true;
	r->inflight++;
}

static struct roster_entry *roster_find(const struct roster *r, const char *id)
{
	struct roster_entry *e;

	LIST_FOREACH(e, &r->entries, link)
	if (strcmp(e->id, id) == 0)
		return e;
	return NULL;
}

/* The entry of id, made when missing; written_clients of a new one as given. */
static struct roster_entry *roster_get(struct roster *r, const char *id, int written_clients)
{
	struct roster_entry *e = roster_find(r, id);

	if (e == NULL) {
		e = calloc(1, sizeof(*e));
		if (e == NULL)
			return NULL;
		e->roster = r;
		snprintf(e->id, sizeof(e->id), "%s", id);
		e->written_clients = written_clients;
		LIST_INSERT_HEAD(&r->entries, e, link);
	}
	return e;
}

int roster_set_attention(struct roster *r, const char *id, const struct roster_attention *a)
{
	/* No clients here: the record's count (0, or what roster_reset made it) stays right. */
	struct roster_entry *e = roster_get(r, id, 0);

	if (e == NULL)
		return -ENOMEM;
	e->att = *a;
	e->att_dirty = true;
	roster_kick(e);
	return 0;
}

struct roster_entry *roster_attach(struct roster *r, const char *id)
{
	/* Unknown: the first write always happens, so the record leaves "running". */
	struct roster_entry *e = roster_get(r, id, -1);

	if (e == NULL)
		return NULL;
	e->clients++;
	roster_kick(e);
	return e;
}

void roster_detach(struct roster_entry *e)
{
	if (e->clients > 0)
		e->clients--;
	roster_kick(e);
}

void roster_activity(struct roster_entry *e, int64_t now)
{
	e->activity = now;
	if (now - e->activity_written >= ROSTER_ACTIVITY_INTERVAL) {
		e->activity_dirty = true;
		roster_kick(e);
	}
}

int roster_clients(const struct roster *r, const char *id)
{
	const struct roster_entry *e = roster_find(r, id);

	return e != NULL ? e->clients : 0;
}

int roster_reset(const struct store *st)
{
	struct session *all = NULL;
	size_t n = 0;
	int r = store_list(st, &all, &n);

	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct cause cause = {{0}};
		struct session s;
		int fd;

		if (all[i].clients == 0 && all[i].state != SESSION_ATTACHED)
			continue;
		fd = store_lock(st, all[i].id);
		if (fd < 0)
			continue;
		if (store_read(st, all[i].id, &s, &cause) == 0 &&
		    (s.clients != 0 || s.state == SESSION_ATTACHED)) {
			s.clients = 0;
			if (s.state == SESSION_ATTACHED)
				s.state = SESSION_RUNNING;
			if (store_write(st, &s, &cause) < 0)
				log_error("cannot reset session %s: %s", s.id, cause.msg);
			else
				log_info(
				    "session %s: reset the client count a previous bridge left",
				    s.id);
		}
		store_unlock(fd);
	}
	free(all);
	return 0;
}
