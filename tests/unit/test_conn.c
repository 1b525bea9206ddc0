/* The connection core on a socketpair: scripted peers that send byte by byte, too much, never
 * read or leave; the phases it drives for every service; the record watch on a temp dir. */
#include "conn.h"
#include "http.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct pair {
	uv_loop_t loop;
	struct conn c;
	int peer;
};

static void pair_open(struct pair *p)
{
	int sv[2];

	cr_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
	cr_assert(uv_loop_init(&p->loop) == 0);
	cr_assert(conn_init(&p->c, &p->loop, sv[0], p) == 0);
	p->peer = sv[1];
}

static void pair_closed(uv_handle_t *h)
{
	(void)h;
}

static void pair_finish(struct pair *p)
{
	conn_close(&p->c, pair_closed);
	uv_run(&p->loop, UV_RUN_DEFAULT);
	conn_release(&p->c);
	close(p->peer);
	cr_assert(uv_loop_close(&p->loop) == 0);
}

Test(conn, head_fed_one_byte_at_a_time)
{
	static const char head[] = "GET /sessions/x/terminal HTTP/1.1\r\nHost: h\r\n\r\n";
	struct http_request *req = http_request_create();
	struct pair p;
	int r = 0;

	pair_open(&p);
	for (size_t i = 0; i < strlen(head); i++) {
		cr_assert(r == 0);
		cr_assert(write(p.peer, head + i, 1) == 1);
		r = conn_read_head(&p.c, req);
	}
	cr_assert(r == 1);
	cr_assert(strcmp(http_request_path(req), "/sessions/x/terminal") == 0);
	http_request_destroy(req);
	pair_finish(&p);
}

Test(conn, oversize_head_is_eoverflow)
{
	struct http_request *req = http_request_create();
	char line[1024];
	struct pair p;
	int r = 0;

	pair_open(&p);
	cr_assert(write(p.peer, "GET / HTTP/1.1\r\n", 16) == 16);
	memset(line, 'a', sizeof(line));
	memcpy(line, "X-Pad: ", 7);
	line[sizeof(line) - 2] = '\r';
	line[sizeof(line) - 1] = '\n';
	for (int i = 0; i < 2 * HTTP_HEAD_MAX / (int)sizeof(line) && r == 0; i++) {
		cr_assert(write(p.peer, line, sizeof(line)) == (ssize_t)sizeof(line));
		r = conn_read_head(&p.c, req);
	}
	cr_assert(r == -EOVERFLOW);
	http_request_destroy(req);
	pair_finish(&p);
}

Test(conn, garbage_is_ebadmsg_and_eof_is_epipe)
{
	struct http_request *req = http_request_create();
	struct pair p;

	pair_open(&p);
	cr_assert(conn_read_head(&p.c, req) == 0);
	cr_assert(write(p.peer, "\x01\x02\r\n\r\n", 6) == 6);
	cr_assert(conn_read_head(&p.c, req) == -EBADMSG);
	http_request_destroy(req);
	req = http_request_create();
	shutdown(p.peer, SHUT_WR);
	cr_assert(conn_read_head(&p.c, req) == -EPIPE);
	http_request_destroy(req);
	pair_finish(&p);
}

Test(conn, output_waits_for_a_peer_that_never_reads)
{
	static char chunk[64 * 1024];
	struct pair p;
	char buf[4096];
	uint64_t total = 0;
	ssize_t n;

	pair_open(&p);
	for (int i = 0; i < 32; i++) {
		cr_assert(conn_queue(&p.c, chunk, sizeof(chunk)) == 0);
		total += sizeof(chunk);
	}
	cr_assert(conn_write(&p.c) == 0); /* socket full, the rest stays queued */
	cr_assert(!conn_out_empty(&p.c));
	cr_assert(p.c.out_bytes + p.c.sent == total);
	while (!conn_out_empty(&p.c)) {
		while ((n = read(p.peer, buf, sizeof(buf))) > 0)
			;
		cr_assert(conn_write(&p.c) >= 0);
	}
	cr_assert(p.c.sent == total && p.c.out_bytes == 0);
	pair_finish(&p);
}

/* A batch's frames share one piece of memory (conn_reserve_room), appended also while its
 * first bytes are being written; the peer reads them whole and in order. */
Test(conn, reserved_room_takes_a_batch_in_order_across_partial_writes)
{
	struct pair p;
	char got[64];
	char *a, *b, *c;
	ssize_t n;

	pair_open(&p);
	a = conn_reserve_room(&p.c, 3, 8);
	cr_assert(a != NULL);
	memcpy(a, "one", 3);
	b = conn_reserve(&p.c, 3); /* fits the room left: follows a in memory */
	cr_assert(b == a + 3);
	memcpy(b, "two", 3);
	cr_assert(conn_queued(&p.c) == 6);
	cr_assert(conn_write(&p.c) == 1);
	cr_assert(conn_out_empty(&p.c));
	c = conn_reserve(&p.c, 5); /* nothing queued: new memory */
	cr_assert(c != NULL);
	memcpy(c, "three", 5);
	a = conn_reserve_room(&p.c, 4, 2); /* more than the room: as large as it must be */
	cr_assert(a != NULL && a != c + 5);
	memcpy(a, "four", 4);
	cr_assert(conn_queued(&p.c) == 9);
	cr_assert(conn_write(&p.c) == 1);
	n = read(p.peer, got, sizeof(got));
	cr_assert(n == 15);
	cr_assert(memcmp(got, "onetwothreefour", 15) == 0);
	pair_finish(&p);
}

Test(conn, error_answer_then_linger_until_eof)
{
	struct pair p;
	char buf[HTTP_RESPONSE_MAX];
	char big[2 * HTTP_RESPONSE_MAX];
	ssize_t n;

	pair_open(&p);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	cr_assert(conn_queue_error(&p.c, 409, "not_running", big, NULL) == 0);
	cr_assert(conn_write(&p.c) == 1);
	conn_shut_write(&p.c);
	n = read(p.peer, buf, sizeof(buf) - 1);
	cr_assert(n > 0);
	buf[n] = '\0';
	cr_assert(strncmp(buf, "HTTP/1.1 409 ", 13) == 0);
	cr_assert(strstr(buf, "request failed") != NULL); /* too long a sentence is replaced */
	cr_assert(read(p.peer, buf, sizeof(buf)) == 0);   /* half-closed */
	cr_assert(write(p.peer, "late", 4) == 4);
	cr_assert(conn_drain(&p.c) == 0);
	cr_assert(p.c.lingered == 4);
	shutdown(p.peer, SHUT_WR);
	cr_assert(conn_drain(&p.c) == 1);
	pair_finish(&p);
}

Test(conn, linger_is_bounded)
{
	static char chunk[16 * 1024];
	struct pair p;
	int r = 0;

	pair_open(&p);
	for (size_t sent = 0; sent <= CONN_LINGER_MAX + sizeof(chunk) && r == 0;) {
		ssize_t n = write(p.peer, chunk, sizeof(chunk));

		if (n > 0)
			sent += (size_t)n;
		r = conn_drain(&p.c);
	}
	cr_assert(r == 1);
	cr_assert(p.c.lingered > CONN_LINGER_MAX);
	pair_finish(&p);
}

/* ---- driven connections: the phases the core runs for every service ---------------------- */

struct driven {
	uv_loop_t loop;
	struct conn c;
	int peer;
	struct conn_set set;
	int released, detached, cuts, changes;
};

static void driven_release(struct conn *c)
{
	struct driven *d = c->data;

	conn_release(c);
	d->released++;
}

static void driven_detach(struct conn *c)
{
	((struct driven *)c->data)->detached++;
}

static void driven_cut(struct conn *c)
{
	((struct driven *)c->data)->cuts++;
}

static void driven_changed(struct conn *c)
{
	struct driven *d = c->data;

	d->changes++;
	uv_stop(&d->loop);
}

static const struct conn_ops driven_ops = {
    .detach = driven_detach,
    .record_changed = driven_changed,
    .cut = driven_cut,
    .release = driven_release,
};

static void driven_open(struct driven *d)
{
	int sv[2];

	memset(d, 0, sizeof(*d));
	cr_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
	cr_assert(uv_loop_init(&d->loop) == 0);
	cr_assert(conn_init(&d->c, &d->loop, sv[0], d) == 0);
	conn_start(&d->c, &d->set, &driven_ops);
	snprintf(d->c.id, sizeof(d->c.id), "s1");
	d->peer = sv[1];
}

static void driven_finish(struct driven *d)
{
	conn_cut(&d->c);
	uv_run(&d->loop, UV_RUN_DEFAULT);
	cr_assert(d->released == 1);
	close(d->peer);
	cr_assert(uv_loop_close(&d->loop) == 0);
}

Test(conn, respond_writes_lingers_and_is_cut_at_the_peers_eof)
{
	struct driven d;
	char buf[HTTP_RESPONSE_MAX];
	ssize_t n;

	driven_open(&d);
	cr_assert(conn_queue(&d.c, "stale", 5) == 0); /* an answer replaces queued output */
	conn_respond(&d.c, 409, "not_running", "the session is still being created", NULL,
		     BRIDGE_CLOSE_TIMEOUT_MS);
	cr_assert(d.c.phase == CONN_LINGER); /* written at once, half-closed */
	cr_assert(d.detached == 1);
	n = read(d.peer, buf, sizeof(buf) - 1);
	cr_assert(n > 0);
	buf[n] = '\0';
	cr_assert(strncmp(buf, "HTTP/1.1 409 ", 13) == 0);
	cr_assert(strstr(buf, "stale") == NULL);
	cr_assert(read(d.peer, buf, sizeof(buf)) == 0);
	/* The peer still sends, then leaves: the connection is cut on its EOF only. */
	cr_assert(write(d.peer, "more", 4) == 4);
	uv_run(&d.loop, UV_RUN_NOWAIT);
	cr_assert(d.c.phase == CONN_LINGER && d.c.lingered == 4);
	shutdown(d.peer, SHUT_WR);
	while (d.c.phase != CONN_DEAD)
		uv_run(&d.loop, UV_RUN_ONCE);
	cr_assert(d.cuts == 1);
	uv_run(&d.loop, UV_RUN_DEFAULT);
	cr_assert(d.released == 1);
	close(d.peer);
	cr_assert(uv_loop_close(&d.loop) == 0);
}

Test(conn, finish_waits_for_a_peer_that_does_not_read_and_its_deadline_cuts)
{
	static char chunk[64 * 1024];
	const struct bridge_options opt = {.stall_timeout_ms = 60 * 1000};
	struct driven d;

	driven_open(&d);
	for (int i = 0; i < 32; i++)
		cr_assert(conn_queue(&d.c, chunk, sizeof(chunk)) == 0);
	conn_finish(&d.c, 1000);
	cr_assert(d.c.phase == CONN_FINISH); /* the socket is full */
	cr_assert(d.c.deadline > 0);
	conn_tick(&d.c, d.c.deadline - 1, &opt);
	cr_assert(d.c.phase == CONN_FINISH);
	conn_tick(&d.c, d.c.deadline, &opt);
	cr_assert(d.c.phase == CONN_DEAD && d.cuts == 1 && d.set.n == 0);
	uv_run(&d.loop, UV_RUN_DEFAULT);
	cr_assert(d.released == 1);
	close(d.peer);
	cr_assert(uv_loop_close(&d.loop) == 0);
}

Test(conn, a_peer_that_leaves_while_finishing_is_cut)
{
	static char chunk[64 * 1024];
	struct driven d;

	driven_open(&d);
	for (int i = 0; i < 32; i++)
		cr_assert(conn_queue(&d.c, chunk, sizeof(chunk)) == 0);
	conn_finish(&d.c, 0);
	cr_assert(d.c.phase == CONN_FINISH && d.c.deadline == 0);
	close(d.peer);
	d.peer = -1;
	while (d.c.phase != CONN_DEAD)
		uv_run(&d.loop, UV_RUN_ONCE);
	uv_run(&d.loop, UV_RUN_DEFAULT);
	cr_assert(d.released == 1 && d.cuts == 1);
	cr_assert(uv_loop_close(&d.loop) == 0);
}

/* A request head parsed from text, for the header checks. */
static struct http_request *head_of(const char *text)
{
	struct http_request *req = http_request_create();
	size_t avail;
	char *space = http_request_space(req, &avail);

	cr_assert(strlen(text) <= avail);
	memcpy(space, text, strlen(text));
	cr_assert(http_request_feed(req, strlen(text)) == 1);
	return req;
}

Test(conn, upgrade_and_origin_checks_refuse_as_api_md_says)
{
	static const char ok[] =
	    "GET /x HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n"
	    "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	    "Sec-WebSocket-Version: 13\r\n\r\n";
	static const char v8[] =
	    "GET /x HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n"
	    "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	    "Sec-WebSocket-Version: 8\r\n\r\n";
	static const char plain[] = "GET /x HTTP/1.1\r\nHost: h\r\n\r\n";
	static const char two_hosts[] = "GET /x HTTP/1.1\r\nHost: h\r\nHost: i\r\n\r\n";
	static const char foreign[] = "GET /x HTTP/1.1\r\nHost: h\r\nOrigin: http://evil\r\n\r\n";
	struct conn_refusal why;
	struct http_request *req;
	const char *extra;

	req = head_of(ok);
	cr_assert(conn_upgrade_ok(req, &why, &extra));
	cr_assert(conn_origin_ok(req, "", "no", &why)); /* no Origin: not a browser */
	http_request_destroy(req);
	req = head_of(v8);
	cr_assert(!conn_upgrade_ok(req, &why, &extra));
	cr_assert(why.status == 400 && strcmp(why.code, "bad_version") == 0);
	cr_assert(extra != NULL && strstr(extra, "Sec-WebSocket-Version: 13") != NULL);
	http_request_destroy(req);
	req = head_of(plain);
	cr_assert(!conn_upgrade_ok(req, &why, &extra));
	cr_assert(why.status == 400 && strcmp(why.code, "not_websocket") == 0 && extra == NULL);
	http_request_destroy(req);
	req = head_of(two_hosts);
	cr_assert(!conn_origin_ok(req, "", "no", &why));
	cr_assert(why.status == 400 && strcmp(why.code, "bad_host") == 0);
	http_request_destroy(req);
	req = head_of(foreign);
	cr_assert(!conn_origin_ok(req, "", "this Origin may not", &why));
	cr_assert(why.status == 403 && strcmp(why.code, "forbidden_origin") == 0);
	cr_assert(strcmp(why.message, "this Origin may not") == 0);
	http_request_destroy(req);
}

/* ---- the record watch: a wait ends on the record's change, not on a poll ------------------- */

static void write_record(const char *dir, const char *leaf, const char *text)
{
	char tmp[512], path[512];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, leaf);
	snprintf(path, sizeof(path), "%s/%s", dir, leaf);
	f = fopen(tmp, "w");
	cr_assert(f != NULL);
	fputs(text, f);
	cr_assert(fclose(f) == 0);
	cr_assert(rename(tmp, path) == 0); /* as the store writes records */
}

static void remove_record(const char *dir, const char *leaf)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, leaf);
	unlink(path);
}

static void on_bound(uv_timer_t *t)
{
	uv_stop(t->loop);
}

Test(conn, record_watch_wakes_on_the_sessions_record_only)
{
	char dir[] = "/tmp/test_conn.XXXXXX";
	struct driven d;
	uv_timer_t bound;
	uint64_t t0;

	cr_assert(mkdtemp(dir) != NULL);
	driven_open(&d);
	cr_assert(conn_watch_record(&d.c, dir, uv_now(&d.loop)) == 0);
	cr_assert(uv_timer_init(&d.loop, &bound) == 0);
	/* Another session's record does not wake this one. */
	write_record(dir, "s10.json", "{}");
	write_record(dir, "s1.json.tmp", "{}");
	cr_assert(uv_timer_start(&bound, on_bound, 300, 0) == 0);
	uv_run(&d.loop, UV_RUN_DEFAULT);
	cr_assert(d.changes == 0);
	/* Its own does, long before any fallback (a generous bound, no timing claim). */
	t0 = uv_now(&d.loop);
	write_record(dir, "s1.json", "{\"state\":\"running\"}");
	cr_assert(uv_timer_start(&bound, on_bound, CONN_RECORD_FALLBACK_MS - 1000, 0) == 0);
	uv_run(&d.loop, UV_RUN_DEFAULT);
	cr_assert(d.changes >= 1);
	cr_assert(uv_now(&d.loop) - t0 < CONN_RECORD_FALLBACK_MS - 1000);
	conn_unwatch_record(&d.c);
	uv_close((uv_handle_t *)&bound, NULL);
	driven_finish(&d);
	remove_record(dir, "s1.json");
	remove_record(dir, "s10.json");
	remove_record(dir, "s1.json.tmp");
	rmdir(dir);
}

Test(conn, record_that_cannot_be_watched_is_polled)
{
	struct driven d;
	uint64_t now;

	driven_open(&d);
	now = uv_now(&d.loop);
	cr_assert(conn_watch_record(&d.c, "/nonexistent/records", now) < 0);
	cr_assert(!conn_record_due(&d.c, now));
	cr_assert(conn_record_due(&d.c, now + BRIDGE_CREATING_POLL_MS));
	cr_assert(!conn_record_due(&d.c, now + BRIDGE_CREATING_POLL_MS));
	conn_unwatch_record(&d.c);
	cr_assert(!conn_record_due(&d.c, now + 10 * BRIDGE_CREATING_POLL_MS));
	driven_finish(&d);
}

Test(conn, watched_record_has_a_slow_safety_net)
{
	char dir[] = "/tmp/test_conn.XXXXXX";
	struct driven d;
	uint64_t now;

	cr_assert(mkdtemp(dir) != NULL);
	driven_open(&d);
	now = uv_now(&d.loop);
	cr_assert(conn_watch_record(&d.c, dir, now) == 0);
	cr_assert(!conn_record_due(&d.c, now + BRIDGE_CREATING_POLL_MS));
	cr_assert(conn_record_due(&d.c, now + CONN_RECORD_FALLBACK_MS));
	conn_unwatch_record(&d.c);
	driven_finish(&d);
	rmdir(dir);
}

Test(conn, end_before_any_answer_is_a_401_with_the_code)
{
	struct driven d;
	char buf[HTTP_RESPONSE_MAX];
	ssize_t n;

	driven_open(&d);
	conn_end(&d.c, "credentials_revoked", "the token of this connection was revoked");
	cr_assert(d.c.phase == CONN_LINGER && d.detached == 1);
	n = read(d.peer, buf, sizeof(buf) - 1);
	cr_assert(n > 0);
	buf[n] = '\0';
	cr_assert(strncmp(buf, "HTTP/1.1 401 ", 13) == 0, "%s", buf);
	cr_assert(strstr(buf, "\"code\":\"credentials_revoked\"") != NULL, "%s", buf);
	conn_end(&d.c, "credentials_revoked", "again"); /* ending already: nothing more */
	cr_assert(read(d.peer, buf, sizeof(buf)) == 0);
	driven_finish(&d);
}

Test(conn, end_of_a_stream_is_its_last_sse_event)
{
	struct driven d;
	char buf[HTTP_RESPONSE_MAX];
	const char *head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n";
	ssize_t n;

	driven_open(&d);
	cr_assert(conn_queue(&d.c, head, strlen(head)) == 0);
	conn_flush(&d.c);
	cr_assert(d.c.sent == strlen(head));
	conn_end(&d.c, "credentials_unavailable", "the credential store cannot be read");
	cr_assert(d.c.phase == CONN_LINGER);
	n = read(d.peer, buf, sizeof(buf) - 1);
	cr_assert(n > 0);
	buf[n] = '\0';
	cr_assert_str_eq(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
			      "event: error\ndata: {\"error\":\"the credential store cannot be "
			      "read\",\"code\":\"credentials_unavailable\"}\n\n");
	driven_finish(&d);
}
