/* GET /events (ptybridge/events.h): what it calls a change of a session (every member but the two
 * that move while a terminal shows output), and the service on a loop with a client on a
 * socketpair: numbering, the snapshot, a slow client fed from the log, one rotated past. */
#include "events.h"

#include "conn.h"
#include "http.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static json_object *obj(const char *text)
{
	json_object *o = json_tokener_parse(text);

	cr_assert_not_null(o, "%s", text);
	return o;
}

static bool changed(const char *a, const char *b)
{
	json_object *x = obj(a), *y = obj(b);
	bool r = events_session_changed(x, y);

	json_object_put(x);
	json_object_put(y);
	return r;
}

Test(events, the_same_object_is_no_change)
{
	cr_assert_not(changed("{\"id\":\"a-1\",\"state\":\"running\",\"clients\":0}",
			      "{\"clients\":0,\"id\":\"a-1\",\"state\":\"running\"}"));
}

Test(events, updated_at_and_last_activity_are_ignored)
{
	cr_assert_not(changed("{\"id\":\"a-1\",\"updatedAt\":\"2026-01-01T00:00:00Z\","
			      "\"lastActivity\":\"2026-01-01T00:00:00Z\"}",
			      "{\"id\":\"a-1\",\"updatedAt\":\"2026-01-01T00:00:05Z\","
			      "\"lastActivity\":\"2026-01-01T00:00:05Z\"}"));
	cr_assert_not(changed("{\"id\":\"a-1\"}", "{\"id\":\"a-1\",\"lastActivity\":\"x\"}"),
		      "an ignored member that appears is no change either");
}

/* Every write raises rev, also one that moves only lastActivity: no event for it either. */
Test(events, rev_alone_is_no_change)
{
	cr_assert_not(changed("{\"id\":\"a-1\",\"rev\":4}", "{\"id\":\"a-1\",\"rev\":5}"));
	cr_assert(changed("{\"id\":\"a-1\",\"rev\":4,\"state\":\"creating\"}",
			  "{\"id\":\"a-1\",\"rev\":5,\"state\":\"failed\"}"));
}

Test(events, any_other_member_is_a_change)
{
	cr_assert(changed("{\"id\":\"a-1\",\"state\":\"running\"}",
			  "{\"id\":\"a-1\",\"state\":\"attached\"}"));
	cr_assert(changed("{\"id\":\"a-1\",\"clients\":0}", "{\"id\":\"a-1\",\"clients\":1}"));
	cr_assert(changed("{\"id\":\"a-1\"}", "{\"id\":\"a-1\",\"activity\":\"working\"}"),
		  "a member that appears");
	cr_assert(changed("{\"id\":\"a-1\",\"error\":\"x\"}", "{\"id\":\"a-1\"}"),
		  "a member that goes");
	cr_assert(changed("{\"repo\":{\"owner\":\"a\",\"name\":\"b\"}}",
			  "{\"repo\":{\"owner\":\"a\",\"name\":\"c\"}}"),
		  "inside a nested object");
	cr_assert(changed("{\"pending\":[{\"requestId\":\"r1\"}]}", "{\"pending\":[]}"));
}

Test(events, no_previous_object_is_a_change)
{
	json_object *o = obj("{\"id\":\"a-1\"}");

	cr_assert(events_session_changed(NULL, o));
	cr_assert(events_session_changed(o, NULL));
	json_object_put(o);
}

/* ---- the service on a loop: a client on a socketpair ---------------------------------------- */

struct rig {
	uv_loop_t loop;
	struct config cfg;
	struct bridge b;
	char dir[64];
	int peer;
	char *in; /* what the client read */
	size_t len, cap;
	bool eof;
};

static void rig_open(struct rig *r, unsigned log_max)
{
	struct cause cause = {{0}};

	memset(r, 0, sizeof(*r));
	r->peer = -1;
	snprintf(r->dir, sizeof(r->dir), "/tmp/test_events.XXXXXX");
	cr_assert_not_null(mkdtemp(r->dir));
	config_defaults(&r->cfg);
	snprintf(r->cfg.runtime_dir, sizeof(r->cfg.runtime_dir), "%s", r->dir);
	snprintf(r->cfg.state_dir, sizeof(r->cfg.state_dir), "%s", r->dir);
	cr_assert_eq(uv_loop_init(&r->loop), 0);
	r->b.loop = &r->loop;
	r->b.cfg = &r->cfg;
	r->b.opt = (struct bridge_options){
	    .stall_timeout_ms = 60 * 1000, .max_clients = 8, .events_log_max = log_max};
	LIST_INIT(&r->b.conns.head);
	cr_assert_eq(store_init(&r->b.store, r->dir, r->dir, &cause), 0, "%s", cause.msg);
	cr_assert_eq(events_open(&r->b, NULL, NULL, &cause), 0, "%s", cause.msg);
	cr_assert_not_null(r->b.events);
}

/* Connects a client with request head text. */
static void rig_client(struct rig *r, const char *text)
{
	struct http_request *req = http_request_create();
	size_t avail;
	char *space = http_request_space(req, &avail);
	int sv[2];

	cr_assert(strlen(text) <= avail);
	memcpy(space, text, strlen(text));
	cr_assert_eq(http_request_feed(req, strlen(text)), 1);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	/* A small window: what the client does not read stays in the bridge. */
	setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &(int){4096}, sizeof(int));
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &(int){4096}, sizeof(int));
	r->peer = sv[1];
	cr_assert_eq(events_service.accept(&r->b, sv[0], req, 0), 0);
	uv_run(&r->loop, UV_RUN_NOWAIT);
}

/* The client reads what there is (the loop runs between reads) until until() holds or EOF. */
static void rig_read(struct rig *r, bool (*until)(const struct rig *))
{
	for (int idle = 0; idle < 2000 && !r->eof && (until == NULL || !until(r));) {
		ssize_t n;

		uv_run(&r->loop, UV_RUN_NOWAIT);
		if (r->len + 65536 > r->cap) {
			r->cap = r->cap == 0 ? 1 << 20 : 2 * r->cap;
			r->in = realloc(r->in, r->cap + 1);
			cr_assert_not_null(r->in);
		}
		n = read(r->peer, r->in + r->len, r->cap - r->len);
		if (n == 0) {
			r->eof = true;
		} else if (n > 0) {
			r->len += (size_t)n;
			r->in[r->len] = '\0';
			idle = 0;
		} else {
			idle++;
			usleep(1000);
		}
	}
}

static void rig_close(struct rig *r)
{
	char cmd[128];

	if (r->peer >= 0)
		close(r->peer);
	/* The client's end is noticed; then the service closes. */
	for (int i = 0; i < 100 && !LIST_EMPTY(&r->b.conns.head); i++)
		uv_run(&r->loop, UV_RUN_NOWAIT);
	cr_assert(LIST_EMPTY(&r->b.conns.head));
	events_close(&r->b);
	uv_run(&r->loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&r->loop), 0);
	free(r->in);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", r->dir);
	cr_assert_eq(system(cmd), 0);
}

/* The ids of the SSE events read, in order; returns how many. */
static size_t sse_ids(const struct rig *r, uint64_t *ids, size_t max)
{
	size_t n = 0;

	for (const char *p = r->in; p != NULL && *p != '\0'; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (strncmp(p, "id: ", 4) == 0 && n < max)
			ids[n++] = strtoull(p + 4, NULL, 10);
	}
	return n;
}

static json_object *payload(size_t bytes)
{
	char *text = malloc(bytes + 1);
	json_object *o = json_object_new_object();

	memset(text, 'x', bytes);
	text[bytes] = '\0';
	json_object_object_add(o, "session", json_object_new_string("a-1"));
	json_object_object_add(o, "text", json_object_new_string(text));
	free(text);
	return o;
}

static uint64_t want_last;
static bool saw_last(const struct rig *r)
{
	char needle[40];

	snprintf(needle, sizeof(needle), "id: %llu\n", (unsigned long long)want_last);
	return r->in != NULL && strstr(r->in, needle) != NULL;
}

Test(events, publish_numbers_and_keeps_ids_across_a_reopen)
{
	struct rig r;
	struct cause cause = {{0}};

	rig_open(&r, EVENTS_LOG_MAX);
	cr_assert_eq(events_publish(r.b.events, "result", payload(10)), 1);
	cr_assert_eq(events_publish(r.b.events, "permission", payload(10)), 2);
	cr_assert_eq(events_publish(r.b.events, "bad name", payload(10)), -EINVAL);
	cr_assert_eq(events_publish(r.b.events, "result", json_object_new_array()), -EINVAL);
	cr_assert_eq(events_publish(r.b.events, "result", payload(EVENTS_DATA_MAX)), -EMSGSIZE);
	events_close(&r.b);
	uv_run(&r.loop, UV_RUN_DEFAULT);
	cr_assert_eq(events_open(&r.b, NULL, NULL, &cause), 0);
	cr_assert_eq(events_publish(r.b.events, "result", payload(10)), 3, "ids go on");
	rig_close(&r);
}

Test(events, no_id_gets_the_snapshot_then_live_events)
{
	struct rig r;
	uint64_t ids[8];

	rig_open(&r, EVENTS_LOG_MAX);
	events_publish(r.b.events, "result", payload(10));
	rig_client(&r, "GET /events HTTP/1.1\r\nHost: h\r\n\r\n");
	events_publish(r.b.events, "result", payload(10));
	want_last = 2;
	rig_read(&r, saw_last);
	cr_assert_not_null(strstr(r.in, "HTTP/1.1 200 OK\r\n"));
	cr_assert_not_null(strstr(r.in, "Content-Type: text/event-stream\r\n"));
	cr_assert_not_null(
	    strstr(r.in, "id: 1\nevent: snapshot\ndata: {\"snapshot\":true,\"sessions\":[]}\n\n"));
	cr_assert_eq(sse_ids(&r, ids, 8), 2, "the snapshot (at id 1), then event 2: %s", r.in);
	cr_assert_eq(ids[1], 2);
	rig_close(&r);
}

Test(events, a_malformed_id_is_400)
{
	struct rig r;

	rig_open(&r, EVENTS_LOG_MAX);
	rig_client(&r, "GET /events HTTP/1.1\r\nHost: h\r\nLast-Event-ID: 1a\r\n\r\n");
	rig_read(&r, NULL);
	cr_assert(r.eof);
	cr_assert_not_null(strstr(r.in, "HTTP/1.1 400 "), "%s", r.in);
	cr_assert_not_null(strstr(r.in, "\"code\":\"invalid_event_id\""));
	rig_close(&r);
}

/* A client that reads nothing while 4 MiB of events are published costs the bridge a bounded
 * queue; when it reads, it gets every event from the log, in order, once. */
Test(events, a_slow_client_is_served_from_the_log_without_gap)
{
	enum { N = 4000 };
	struct rig r;
	static uint64_t ids[N + 10];
	size_t n;

	rig_open(&r, 64 * 1024 * 1024);
	rig_client(&r, "GET /events?after=0 HTTP/1.1\r\nHost: h\r\n\r\n");
	for (int i = 0; i < N; i++) {
		struct conn *c = LIST_FIRST(&r.b.conns.head);

		cr_assert_eq(events_publish(r.b.events, "result", payload(1000)), i + 1);
		uv_run(&r.loop, UV_RUN_NOWAIT);
		cr_assert_lt(conn_queued(c), EVENTS_QUEUE_HIGH + 2048, "queued %zu",
			     conn_queued(c));
	}
	want_last = N;
	rig_read(&r, saw_last);
	n = sse_ids(&r, ids, N + 10);
	cr_assert_eq(n, N);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(ids[i], i + 1);
	rig_close(&r);
}

/* Behind by more than the two files hold: the stream ends with `error` lagged. */
Test(events, a_client_rotated_past_gets_lagged)
{
	struct rig r;
	uint64_t ids[400];
	size_t n;

	rig_open(&r, 64 * 1024);
	rig_client(&r, "GET /events?after=0 HTTP/1.1\r\nHost: h\r\n\r\n");
	for (int i = 0; i < 1000; i++) {
		events_publish(r.b.events, "result", payload(1000));
		uv_run(&r.loop, UV_RUN_NOWAIT);
	}
	rig_read(&r, NULL);
	cr_assert(r.eof, "the stream ends");
	cr_assert_not_null(strstr(r.in, "event: error\ndata: {\"error\":"), "%s",
			   r.in + (r.len > 300 ? r.len - 300 : 0));
	cr_assert_not_null(strstr(r.in, "\"code\":\"lagged\"}\n\n"));
	n = sse_ids(&r, ids, 400);
	cr_assert_gt(n, 0);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(ids[i], i + 1, "what it got before has no gap");
	rig_close(&r);
}
