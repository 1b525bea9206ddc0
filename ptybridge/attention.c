#include "attention_int.h"

#include "eventnames.h"
#include "events.h"
#include "hostsock.h"
#include "log.h"
#include "roster.h"
#include "session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>
#include <unistd.h>

/* ---- the session's facts, and where they go -------------------------------------------- */

static unsigned att_pending_count(const struct att_session *s)
{
	unsigned n = 0;

	for (size_t i = 0; i < ATT_PENDING_MAX; i++)
		n += s->req[i].used && s->req[i].decision == NULL;
	return n;
}

/* Mirrors s into its record (coalesced by the roster). */
static void att_write(struct att_session *s)
{
	struct roster_attention ra;

	memset(&ra, 0, sizeof(ra));
	ra.activity = s->activity;
	ra.activity_at = s->activity_at;
	ra.host_event = s->host_event;
	ra.cost = s->cost;
	ra.pending_launch = s->launch;
	for (size_t i = 0; i < ATT_PENDING_MAX && ra.n_pending < SESSION_PENDING_MAX; i++) {
		const struct att_request *q = &s->req[i];
		struct session_pending *p = &ra.pending[ra.n_pending];

		if (!q->used || q->decision != NULL)
			continue;
		memcpy(p->request_id, q->request_id, sizeof(p->request_id));
		memcpy(p->tool_name, q->tool_name, sizeof(p->tool_name));
		memcpy(p->description, q->description, sizeof(p->description));
		ra.n_pending++;
	}
	if (roster_set_attention(s->a->b->roster, s->id, &ra) < 0)
		log_error("session %s: cannot record its activity: out of memory", s->id);
}

/* Sets the activity (waiting whenever a request is pending) and writes the record if it
 * changed or force. */
void att_set(struct att_session *s, enum session_activity act, bool force)
{
	if (att_pending_count(s) > 0 || s->tui_asks)
		act = SESSION_WAITING;
	else if (act == SESSION_WAITING)
		act = SESSION_WORKING; /* nothing left to wait for: the turn goes on */
	if (act == SESSION_IDLE)
		s->bootstrap = false;
	if (act != s->activity) {
		s->activity = act;
		s->activity_at = att_now_ms();
		force = true;
	}
	if (force)
		att_write(s);
}

/* Publishes an event about session s on /events (data consumed). */
void att_publish(struct att_session *s, const char *name, json_object *data)
{
	struct events *ev = s->a->b->events;

	if (data == NULL)
		return;
	json_object_object_add(data, "session", json_object_new_string(s->id));
	if (ev == NULL) {
		json_object_put(data);
		return;
	}
	events_publish(ev, name, data);
}

struct att_request *att_find(struct att_session *s, const char *request_id)
{
	for (size_t i = 0; i < ATT_PENDING_MAX; i++)
		if (s->req[i].used && strcmp(s->req[i].request_id, request_id) == 0)
			return &s->req[i];
	return NULL;
}

const struct att_answered *att_was_answered(const struct att_session *s, const char *request_id)
{
	for (size_t i = 0; i < ATT_ANSWERED_MAX; i++)
		if (s->answered[i].request_id[0] != '\0' &&
		    strcmp(s->answered[i].request_id, request_id) == 0)
			return &s->answered[i];
	return NULL;
}

struct att_request *att_add(struct att_session *s, const char *request_id, const char *tool_name,
			    const char *description)
{
	for (size_t i = 0; i < ATT_PENDING_MAX; i++) {
		struct att_request *q = &s->req[i];

		if (q->used)
			continue;
		memset(q, 0, sizeof(*q));
		q->used = true;
		session_copy_cut(q->request_id, sizeof(q->request_id), request_id);
		session_copy_cut(q->tool_name, sizeof(q->tool_name), tool_name ? tool_name : "");
		session_copy_cut(q->description, sizeof(q->description),
				 description ? description : "");
		return q;
	}
	log_error("session %s: more than %d permission requests pending; %s is not listed", s->id,
		  ATT_PENDING_MAX, request_id);
	return NULL;
}

/* Forgets q, remembering who ended it. */
void att_drop(struct att_session *s, struct att_request *q, const char *by)
{
	struct att_answered *a = &s->answered[s->answered_next];

	memcpy(a->request_id, q->request_id, sizeof(a->request_id));
	session_copy_cut(a->by, sizeof(a->by), by);
	a->withdrawn = false;
	s->answered_next = (s->answered_next + 1) % ATT_ANSWERED_MAX;
	json_object_put(q->decision);
	json_object_put(q->input);
	memset(q, 0, sizeof(*q));
}

/* q ended without an answer from anyone (its agent or hook went away): a waiting hook learns
 * it, and /events says so. */
static void att_withdraw(struct att_session *s, struct att_request *q, const char *why)
{
	attention_decided_fn fn = q->fn;
	void *arg = q->arg;
	json_object *ev = json_object_new_object();

	if (ev != NULL) {
		json_object_object_add(ev, "requestId", json_object_new_string(q->request_id));
		json_object_object_add(ev, "behavior", json_object_new_string("withdrawn"));
		json_object_object_add(ev, "by", json_object_new_string(why));
	}
	att_drop(s, q, why);
	s->answered[(s->answered_next + ATT_ANSWERED_MAX - 1) % ATT_ANSWERED_MAX].withdrawn = true;
	if (fn != NULL)
		fn(arg, NULL);
	att_publish(s, EV_PERMISSION_RESOLVED, ev);
}

void att_withdraw_all(struct att_session *s, const char *why)
{
	for (size_t i = 0; i < ATT_PENDING_MAX; i++)
		if (s->req[i].used)
			att_withdraw(s, &s->req[i], why);
}

/* ---- structured sessions: the host's events --------------------------------------------- */

const char *att_str(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static void att_host_permission(struct att_session *s, json_object *data)
{
	const char *rid = att_str(data, "requestId");
	struct att_request *known;

	if (rid == NULL || !hostproto_request_id_valid(rid) || att_was_answered(s, rid) != NULL)
		return;
	if ((known = att_find(s, rid)) != NULL) {
		known->orphan_until = 0; /* the host still has it */
		return;
	}
	if (att_add(s, rid, att_str(data, "toolName"), att_str(data, "description")) == NULL)
		return;
	att_set(s, SESSION_WAITING, true);
	att_publish(s, EV_PERMISSION, json_object_get(data));
}

static void att_host_resolved(struct att_session *s, json_object *data)
{
	const char *rid = att_str(data, "requestId"), *by = att_str(data, "by");
	struct att_request *q = rid != NULL ? att_find(s, rid) : NULL;

	if (q == NULL)
		return;
	att_drop(s, q, by != NULL ? by : "client");
	att_set(s, SESSION_WORKING, true);
	att_publish(s, EV_PERMISSION_RESOLVED, json_object_get(data));
}

/* A turn's result on /events: its text cut to ATT_RESULT_TEXT_MAX, usage and cost. */
static void att_host_result(struct att_session *s, json_object *data)
{
	static const char *const keep[] = {"subtype",          "is_error", "num_turns",
					   "duration_ms",      "usage",    "total_cost_usd",
					   "queued_turn_count"};
	json_object *ev = json_object_new_object(), *v;
	const char *text = att_str(data, "result");

	if (ev == NULL)
		return;
	/* Counted once: a result at or before host_event never gets here, and the sum is written
	 * with the new host_event (att_set below). */
	session_cost_add(&s->cost, data);
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (json_object_object_get_ex(data, keep[i], &v))
			json_object_object_add(ev, keep[i], json_object_get(v));
	if (text != NULL) {
		char cut[ATT_RESULT_TEXT_MAX + 1];

		session_copy_cut(cut, sizeof(cut), text);
		json_object_object_add(ev, "result", json_object_new_string(cut));
		json_object_object_add(ev, "truncated",
				       json_object_new_boolean(strlen(cut) < strlen(text)));
	}
	/* Prompts claude queued run next: the agent goes on working. */
	att_set(s,
		json_object_object_get_ex(data, "queued_turn_count", &v) &&
			json_object_get_int64(v) > 0
		    ? SESSION_WORKING
		    : SESSION_IDLE,
		true);
	att_publish(s, EV_RESULT, ev);
}

/* The JSON text of len bytes (not NUL-terminated), or NULL. */
static json_object *att_parse(const char *text, size_t len)
{
	json_tokener *tok = json_tokener_new_ex(HOOKPROTO_DEPTH);
	json_object *o;

	if (tok == NULL || len > INT32_MAX) {
		json_tokener_free(tok);
		return NULL;
	}
	o = json_tokener_parse_ex(tok, text, (int)len);
	if (o != NULL && json_tokener_get_parse_end(tok) != len) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

/* One event of the host (id, name, data). Only what changes attention is looked at. */
static void att_host_event(struct att_session *s, const struct hostproto_event *ev)
{
	static const char *const names[] = {EV_PERMISSION, EV_PERMISSION_RESOLVED, EV_RESULT,
					    EV_EXIT, EV_QUEUED};
	json_object *data = NULL;
	size_t k;

	for (k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (ev->name_len == strlen(names[k]) &&
		    memcmp(ev->name, names[k], ev->name_len) == 0)
			break;
	/* The host sends pending requests again after its replay, whatever their id. */
	if (ev->id <= s->host_event && k != 0)
		return;
	if (k == sizeof(names) / sizeof(names[0])) {
		/* Any other line of claude's (system, assistant, stream_event...): a turn runs. The
		 * cursor moves only with what changes attention: a replay of the rest is cheap. */
		if (s->activity == SESSION_IDLE) {
			s->host_event = ev->id;
			att_set(s, SESSION_WORKING, true);
		}
		return;
	}
	data = att_parse(ev->data, ev->data_len);
	if (ev->id > s->host_event)
		s->host_event = ev->id;
	if (!json_object_is_type(data, json_type_object)) {
		json_object_put(data);
		att_write(s);
		return;
	}
	switch (k) {
	case 0:
		att_host_permission(s, data);
		break;
	case 1:
		att_host_resolved(s, data);
		break;
	case 2:
		att_host_result(s, data);
		break;
	case 4:
		/* A prompt claude queued behind the running turn: /events says so, in order. */
		json_object_object_del(data, "prompt");
		att_set(s, SESSION_WORKING, false);
		att_publish(s, EV_QUEUED, json_object_get(data));
		break;
	default:
		att_withdraw_all(s, "exit");
		att_set(s, SESSION_IDLE, true);
		break;
	}
	json_object_put(data);
}

static void att_host_free(uv_handle_t *handle)
{
	struct att_host *h = handle->data;

	hostproto_reader_free(&h->rd);
	free(h);
}

/* Ends s's subscription (retry: try again at the next tick). */
static void att_host_close(struct att_session *s, bool retry)
{
	struct att_host *h = s->host;

	s->host = NULL;
	s->retry_at = retry ? uv_now(s->a->b->loop) + ATT_TICK_MS : 0;
	if (h == NULL)
		return;
	h->s = NULL;
	if (!h->closing) {
		h->closing = true;
		uv_close((uv_handle_t *)&h->pipe, att_host_free);
	}
}

static int att_host_line(void *arg, const char *line, size_t len)
{
	struct att_host *h = arg;
	struct hostproto_event ev;

	if (h->s == NULL)
		return 1;
	if (line == NULL) {
		log_warn("session %s: skipped a host line of %zu bytes", h->s->id, len);
		return 0;
	}
	if (hostproto_event_parse(line, len, &ev) == 0)
		att_host_event(h->s, &ev);
	/* else an answer or error line: the subscription goes on or ends by EOF */
	return h->s == NULL ? 1 : 0;
}

static void att_host_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
	struct att_host *h = handle->data;
	struct attention *a = h->s != NULL ? h->s->a : NULL;

	(void)suggested;
	buf->base = a != NULL ? a->scratch : NULL;
	buf->len = a != NULL ? sizeof(a->scratch) : 0;
}

static void att_host_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct att_host *h = stream->data;

	if (h->s == NULL)
		return;
	if (nread < 0) {
		struct att_session *s = h->s;

		/* The host ended (claude exited, a mode switch) or restarted: the record will
		 * say which; until then, try again. */
		att_host_close(s, true);
		return;
	}
	if (hostproto_reader_feed(&h->rd, buf->base, (size_t)nread, att_host_line, h) == -ENOMEM &&
	    h->s != NULL)
		log_error("session %s: out of memory reading its host", h->s->id);
}

/* Subscribes to s's host from the last event it took in. */
static void att_host_open(struct att_session *s)
{
	struct attention *a = s->a;
	char line[HOSTPROTO_SUBSCRIBE_MAX];
	struct att_host *h;
	uv_buf_t buf;
	size_t len;
	int fd;

	s->retry_at = 0;
	fd = hostsock_connect(a->b, s->id);
	if (fd < 0) {
		s->retry_at = uv_now(a->b->loop) + ATT_TICK_MS;
		return;
	}
	h = calloc(1, sizeof(*h));
	if (h == NULL || uv_pipe_init(a->b->loop, &h->pipe, 0) < 0) {
		free(h);
		close(fd);
		s->retry_at = uv_now(a->b->loop) + ATT_TICK_MS;
		return;
	}
	h->pipe.data = h;
	h->s = s;
	s->host = h;
	hostproto_reader_init(&h->rd, HOSTPROTO_EVENT_LINE_MAX);
	len = hostproto_subscribe_format(s->host_event, line);
	buf = uv_buf_init(line, (unsigned)len);
	/* A fresh unix socket takes a 64-byte line at once. */
	if (uv_pipe_open(&h->pipe, fd) < 0 ||
	    uv_try_write((uv_stream_t *)&h->pipe, &buf, 1) != (int)len ||
	    uv_read_start((uv_stream_t *)&h->pipe, att_host_alloc, att_host_read) < 0) {
		att_host_close(s, true);
		return;
	}
}

/* ---- the sessions ------------------------------------------------------------------------ */

struct att_session *att_session_find(struct attention *a, const char *id)
{
	struct att_session *s;

	LIST_FOREACH(s, &a->sessions, link)
	if (strcmp(s->id, id) == 0)
		return s;
	return NULL;
}

/* The entry of a session first seen with record rec: its facts as the record keeps them
 * (a previous bridge wrote them). */
struct att_session *att_session_new(struct attention *a, const struct session *rec)
{
	struct att_session *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->a = a;
	memcpy(s->id, rec->id, sizeof(s->id));
	s->mode = rec->mode;
	s->state = rec->state;
	s->activity = rec->activity;
	s->activity_at = rec->activity_at;
	s->bootstrap = rec->activity == SESSION_WORKING &&
		       (rec->state == SESSION_CREATING || rec->state == SESSION_RUNNING ||
			rec->state == SESSION_ATTACHED);
	s->host_event = rec->host_event;
	s->cost = rec->cost;
	for (unsigned i = 0; i < rec->n_pending && i < SESSION_PENDING_MAX; i++) {
		struct att_request *q = &s->req[i];

		q->used = true;
		memcpy(q->request_id, rec->pending[i].request_id, sizeof(q->request_id));
		memcpy(q->tool_name, rec->pending[i].tool_name, sizeof(q->tool_name));
		memcpy(q->description, rec->pending[i].description, sizeof(q->description));
		/* Structured: the host sends its pending requests again on subscribing, and
		 * those it no longer has are dropped then. Terminal: the hook asks again. */
		q->orphan_until = uv_now(a->b->loop) + ATT_ORPHAN_MS;
	}
	s->launch = rec->pending_launch;
	LIST_INSERT_HEAD(&a->sessions, s, link);
	return s;
}

static void att_session_free(struct att_session *s)
{
	att_host_close(s, false);
	for (size_t i = 0; i < ATT_PENDING_MAX; i++) {
		json_object_put(s->req[i].decision);
		json_object_put(s->req[i].input);
	}
	LIST_REMOVE(s, link);
	free(s);
}

static bool att_running(enum session_state st)
{
	return st == SESSION_RUNNING || st == SESSION_ATTACHED;
}

void attention_session_changed(struct attention *a, const char *id, const struct session *rec)
{
	struct att_session *s = att_session_find(a, id);

	if (rec == NULL) {
		if (s != NULL) {
			att_withdraw_all(s, "deleted");
			att_session_free(s);
		}
		return;
	}
	if (s == NULL && (s = att_session_new(a, rec)) == NULL) {
		log_error("session %s: cannot follow its activity: out of memory", id);
		return;
	}
	if (rec->mode != s->mode || (att_running(s->state) && !att_running(rec->state))) {
		/* A mode switch or an ended agent: the claude that asked is gone. */
		att_host_close(s, false);
		att_withdraw_all(s, rec->mode != s->mode ? "mode_switch" : "exit");
		s->mode = rec->mode;
		s->state = rec->state;
		att_set(s, SESSION_IDLE, true);
	}
	if (rec->state == SESSION_CREATING && s->state != SESSION_CREATING) {
		/* Created again (it was lost or failed): agentd-api says whether a bootstrap prompt
		 * is on its way. */
		s->activity = rec->activity;
		s->activity_at = rec->activity_at;
		s->bootstrap = rec->activity == SESSION_WORKING;
	}
	if (rec->launch != s->launch) {
		/* claude was started again (after a reboot, too: the requests its record kept are
		 * then an earlier claude's, which nobody can answer any more). */
		bool had = false;

		for (size_t i = 0; i < ATT_PENDING_MAX; i++)
			if (s->req[i].used) {
				att_withdraw(s, &s->req[i], "restart");
				had = true;
			}
		s->launch = rec->launch;
		if (had)
			att_set(s, s->activity, true);
	}
	s->mode = rec->mode;
	s->state = rec->state;
	if (rec->mode == SESSION_STRUCTURED && att_running(rec->state)) {
		if (s->host == NULL && s->retry_at == 0)
			att_host_open(s);
	} else {
		att_host_close(s, false);
	}
}

static void att_tick(uv_timer_t *t)
{
	struct attention *a = t->data;
	uint64_t now = uv_now(a->b->loop);
	struct att_session *s, *next;

	for (s = LIST_FIRST(&a->sessions); s != NULL; s = next) {
		bool changed = false;

		next = LIST_NEXT(s, link);
		if (s->host == NULL && s->retry_at != 0 && now >= s->retry_at &&
		    s->mode == SESSION_STRUCTURED && att_running(s->state))
			att_host_open(s);
		for (size_t i = 0; i < ATT_PENDING_MAX; i++) {
			struct att_request *q = &s->req[i];

			/* A structured request the host did not send again, or a terminal one
			 * whose hook did not come back. */
			if (!q->used || q->fn != NULL || q->orphan_until == 0 ||
			    now < q->orphan_until ||
			    !(s->mode == SESSION_TERMINAL || s->host != NULL ||
			      !att_running(s->state)))
				continue;
			if (q->decision != NULL)
				att_drop(s, q, q->decided_by); /* announced when it was given */
			else
				att_withdraw(s, q, "lost");
			changed = true;
		}
		if (changed)
			att_set(s, s->activity, false);
	}
}

/* ---- the hub ------------------------------------------------------------------------------ */

int attention_open(struct bridge *b, struct cause *cause)
{
	struct attention *a = calloc(1, sizeof(*a));
	int r;

	if (a == NULL)
		return cause_fail(cause, ENOMEM, "out of memory");
	a->b = b;
	LIST_INIT(&a->sessions);
	if ((r = uv_timer_init(b->loop, &a->timer)) < 0) {
		free(a);
		return cause_fail(cause, -r, "cannot start a timer: %s", uv_strerror(r));
	}
	a->timer.data = a;
	uv_timer_start(&a->timer, att_tick, ATT_TICK_MS, ATT_TICK_MS);
	/* The sessions come from the records watch (events.c), which starts after this: what the
	 * hub decides on seeing them (a request withdrawn while no bridge ran) is then published
	 * on /events, not lost. */
	b->attention = a;
	return 0;
}

static void att_timer_closed(uv_handle_t *handle)
{
	free(handle->data);
}

void attention_close(struct bridge *b)
{
	struct attention *a = b->attention;
	struct att_session *s;

	if (a == NULL)
		return;
	/* The requests stay in the records: hooks.c closes its connections without a decision
	 * and their hooks ask the next bridge again. */
	while ((s = LIST_FIRST(&a->sessions)) != NULL)
		att_session_free(s);
	b->attention = NULL;
	uv_close((uv_handle_t *)&a->timer, att_timer_closed);
}

bool attention_withdrawn(struct attention *a, const char *id, const char *request_id, char *msg,
			 size_t msglen)
{
	struct att_session *s = att_session_find(a, id);
	const struct att_answered *done;

	if (s == NULL || att_find(s, request_id) != NULL ||
	    (done = att_was_answered(s, request_id)) == NULL || !done->withdrawn)
		return false;
	snprintf(msg, msglen, "this permission request was withdrawn (%s)", done->by);
	return true;
}
