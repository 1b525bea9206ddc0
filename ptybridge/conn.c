#include "conn.h"

#include "eventnames.h"
#include "http.h"
#include "log.h"
#include "origin.h"
#include "ws.h"

#include <errno.h>
#include <json-c/json.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* One piece of queued output; written from off on; room for cap bytes, later output goes on
 * at len while it fits. */
struct conn_chunk {
	struct conn_chunk *next;
	size_t len, off, cap;
	char data[];
};

int conn_init(struct conn *c, uv_loop_t *loop, int fd, void *data)
{
	int r;

	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->data = data;
	r = uv_poll_init(loop, &c->poll, fd);
	if (r < 0)
		return r;
	uv_fs_event_init(loop, &c->record); /* cannot fail; started by conn_watch_record */
	c->poll.data = data;
	c->record.data = data;
	c->handles = 2;
	return 0;
}

void conn_watch(struct conn *c, int want, uv_poll_cb cb)
{
	if (want == c->events)
		return;
	c->events = want;
	if (want == 0)
		uv_poll_stop(&c->poll);
	else
		uv_poll_start(&c->poll, want, cb);
}

static void conn_on_close(uv_handle_t *handle)
{
	struct conn *c = handle->type == UV_POLL ? CONN_OF(handle, poll) : CONN_OF(handle, record);

	if (--c->handles > 0)
		return;
	c->closed((uv_handle_t *)&c->poll);
}

void conn_close(struct conn *c, uv_close_cb cb)
{
	c->closed = cb;
	uv_close((uv_handle_t *)&c->poll, conn_on_close);
	uv_close((uv_handle_t *)&c->record, conn_on_close);
}

void conn_release(struct conn *c)
{
	conn_drop_output(c);
	ws_destroy(c->ws);
	c->ws = NULL;
	http_request_destroy(c->req);
	c->req = NULL;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

size_t conn_queued(const struct conn *c)
{
	return c->out_bytes + (c->ws != NULL ? ws_queued_bytes(c->ws) : 0);
}

void conn_queued_now(struct conn *c, size_t before)
{
	c->last_queued = uv_now(c->poll.loop);
	if (before == 0)
		c->last_moved = c->last_queued;
}

char *conn_reserve_room(struct conn *c, size_t len, size_t room)
{
	struct conn_chunk *k = c->out_tail;
	size_t cap = room > CONN_ROOM_MAX ? CONN_ROOM_MAX : room;

	if (k != NULL && k->cap - k->len >= len) {
		conn_queued_now(c, conn_queued(c));
		c->out_bytes += len;
		k->len += len;
		return k->data + k->len - len;
	}
	if (cap < len)
		cap = len;
	k = malloc(sizeof(*k) + cap);
	if (k == NULL)
		return NULL;
	conn_queued_now(c, conn_queued(c));
	k->next = NULL;
	k->len = len;
	k->off = 0;
	k->cap = cap;
	if (c->out_tail != NULL)
		c->out_tail->next = k;
	else
		c->out_head = k;
	c->out_tail = k;
	c->out_bytes += len;
	return k->data;
}

char *conn_reserve(struct conn *c, size_t len)
{
	return conn_reserve_room(c, len, len);
}

int conn_queue(struct conn *c, const void *data, size_t len)
{
	char *space = conn_reserve(c, len);

	if (space == NULL)
		return -ENOMEM;
	memcpy(space, data, len);
	return 0;
}

void conn_drop_output(struct conn *c)
{
	while (c->out_head != NULL) {
		struct conn_chunk *k = c->out_head;

		c->out_head = k->next;
		free(k);
	}
	c->out_tail = NULL;
	c->out_bytes = 0;
}

int conn_write(struct conn *c)
{
	while (c->out_head != NULL) {
		struct iovec iov[CONN_IOV_MAX];
		struct msghdr msg = {.msg_iov = iov};
		struct conn_chunk *k;
		ssize_t n;

		for (k = c->out_head; k != NULL && msg.msg_iovlen < CONN_IOV_MAX; k = k->next) {
			iov[msg.msg_iovlen].iov_base = k->data + k->off;
			iov[msg.msg_iovlen].iov_len = k->len - k->off;
			msg.msg_iovlen++;
		}
		n = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n < 0)
			return -errno;
		c->sent += (uint64_t)n;
		c->out_bytes -= (size_t)n;
		while (n > 0) {
			k = c->out_head;
			if ((size_t)n < k->len - k->off) {
				k->off += (size_t)n;
				break;
			}
			n -= (ssize_t)(k->len - k->off);
			c->out_head = k->next;
			if (c->out_head == NULL)
				c->out_tail = NULL;
			free(k);
		}
	}
	return 1;
}

int conn_queue_error(struct conn *c, int status, const char *code, const char *message,
		     const char *extra)
{
	char buf[HTTP_RESPONSE_MAX];
	int n;

	n = http_format_error(buf, sizeof(buf), status, code, message, extra);
	if (n < 0) /* a sentence (from a record or a host) too long for the buffer */
		n = http_format_error(buf, sizeof(buf), status, code, "request failed", extra);
	if (n < 0)
		return n;
	return conn_queue(c, buf, (size_t)n);
}

int conn_read_head(struct conn *c, struct http_request *req)
{
	for (;;) {
		size_t avail;
		char *space = http_request_space(req, &avail);
		ssize_t n;
		int r;

		if (avail == 0)
			return -EOVERFLOW;
		n = recv(c->fd, space, avail, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0)
			return -EPIPE;
		r = http_request_feed(req, (size_t)n);
		if (r == 0)
			continue;
		if (r < 0 && r != -EOVERFLOW)
			return -EBADMSG;
		return r;
	}
}

void conn_shut_write(struct conn *c)
{
	shutdown(c->fd, SHUT_WR);
}

int conn_drain(struct conn *c)
{
	char sink[CONN_SINK];

	for (;;) {
		ssize_t n = recv(c->fd, sink, sizeof(sink), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0 || (c->lingered += (size_t)n) > CONN_LINGER_MAX)
			return 1;
	}
}

int conn_ping(struct conn *c, struct ws *ws, uint64_t now, unsigned interval_ms)
{
	if (interval_ms == 0 || now < c->next_ping)
		return 0;
	if (c->pong_due)
		return -ETIMEDOUT;
	c->pong_due = true;
	c->next_ping = now + interval_ms;
	ws_queue_ping(ws);
	return 1;
}

void conn_pong(struct conn *c)
{
	c->pong_due = false;
}

/* ---- driven connections ------------------------------------------------------------------ */

static void conn_on_poll(uv_poll_t *handle, int status, int events);

static uint64_t conn_now(const struct conn *c)
{
	return uv_now(c->poll.loop);
}

void conn_start(struct conn *c, struct conn_set *set, const struct conn_ops *ops)
{
	c->set = set;
	LIST_INSERT_HEAD(&set->head, c, link);
	set->n++;
	c->ops = ops;
	c->phase = CONN_SERVICE;
	c->last_moved = conn_now(c);
}

void conn_update(struct conn *c)
{
	int want = 0;

	switch (c->phase) {
	case CONN_SERVICE:
		want = c->ops->want != NULL ? c->ops->want(c) : 0;
		break;
	case CONN_FINISH:
		want = UV_WRITABLE;
		break;
	case CONN_LINGER:
		want = UV_READABLE;
		break;
	case CONN_WS:
	case CONN_WS_CLOSING:
		if (!conn_out_empty(c) || ws_want_write(c->ws))
			want |= UV_WRITABLE;
		if (conn_out_empty(c) && !c->read_paused && ws_want_read(c->ws))
			want |= UV_READABLE;
		break;
	case CONN_DEAD:
		return;
	}
	conn_watch(c, want, conn_on_poll);
}

static void conn_detach(struct conn *c)
{
	if (c->ops->detach != NULL)
		c->ops->detach(c);
}

static void conn_on_closed(uv_handle_t *handle)
{
	struct conn *c = CONN_OF(handle, poll);

	c->ops->release(c);
}

void conn_cut(struct conn *c)
{
	if (c->phase == CONN_DEAD)
		return;
	conn_detach(c);
	if (c->ops->cut != NULL)
		c->ops->cut(c); /* still in its phase: the service may log what it was */
	LIST_REMOVE(c, link);
	c->set->n--;
	c->phase = CONN_DEAD;
	/* The poll handle stops watching fd here (a hand-over relies on it). */
	conn_close(c, conn_on_closed);
}

/* Half-closes and drops what the peer still sends, until its EOF or the deadline. */
static void conn_linger(struct conn *c, uint64_t deadline)
{
	conn_shut_write(c);
	c->phase = CONN_LINGER;
	c->deadline = deadline;
	conn_update(c);
}

/* The WebSocket stops reading: no more input reaches the service; the handshake is awaited. */
static void conn_ws_closing(struct conn *c)
{
	conn_detach(c);
	c->phase = CONN_WS_CLOSING;
	c->deadline = conn_now(c) + BRIDGE_CLOSE_TIMEOUT_MS;
}

/* The WebSocket part of a flush. Returns false when c was cut or moved to lingering. */
static bool conn_flush_ws(struct conn *c)
{
	size_t before = ws_queued_bytes(c->ws);

	if (ws_send(c->ws) < 0) {
		conn_cut(c);
		return false;
	}
	if (ws_queued_bytes(c->ws) < before)
		c->last_moved = conn_now(c);
	if (c->ops->cut_overfull && (ws_queued_bytes(c->ws) > BRIDGE_OUT_HARD ||
				     ws_queued_count(c->ws) > BRIDGE_OUT_MSGS_HARD)) {
		log_warn("session %s: client has %zu frames queued, cut", c->id,
			 ws_queued_count(c->ws));
		conn_cut(c);
		return false;
	}
	if (!ws_want_read(c->ws) && !ws_want_write(c->ws)) {
		if (ws_close_received(c->ws)) {
			conn_cut(c); /* close handshake done */
			return false;
		}
		/* We closed first (a too big message, a protocol error) while the peer may still
		 * be sending: closing with unread bytes would send a reset that can overtake our
		 * close frame. Half-close and drop what still comes until its EOF. */
		if (c->phase == CONN_WS)
			conn_detach(c);
		conn_linger(c, conn_now(c) + BRIDGE_CLOSE_TIMEOUT_MS);
		return false;
	}
	if (c->phase == CONN_WS && !ws_want_read(c->ws))
		conn_ws_closing(c); /* wslay stopped reading: the peer's close, a too big message */
	return true;
}

void conn_flush(struct conn *c)
{
	int w = 1;

	if (c->phase == CONN_DEAD || c->in_recv)
		return;
	if (!conn_out_empty(c)) {
		uint64_t before = c->sent;

		w = conn_write(c);
		if (c->sent != before)
			c->last_moved = conn_now(c);
		if (w < 0) {
			conn_cut(c);
			return;
		}
	}
	if (w == 1 && c->phase == CONN_FINISH) {
		conn_linger(c,
			    c->deadline != 0 ? c->deadline : conn_now(c) + BRIDGE_CLOSE_TIMEOUT_MS);
		return;
	}
	if (w == 1 && (c->phase == CONN_WS || c->phase == CONN_WS_CLOSING) && !conn_flush_ws(c))
		return;
	if (conn_out_empty(c) && (c->ws == NULL || ws_queued_bytes(c->ws) == 0))
		c->last_moved = conn_now(c); /* nothing waits: no stall */
	if (c->ops->flushed != NULL)
		c->ops->flushed(c);
	if (c->phase != CONN_DEAD)
		conn_update(c);
}

void conn_finish(struct conn *c, unsigned deadline_ms)
{
	if (c->phase == CONN_DEAD || c->phase == CONN_FINISH || c->phase == CONN_LINGER)
		return;
	conn_detach(c);
	c->phase = CONN_FINISH;
	c->deadline = deadline_ms != 0 ? conn_now(c) + deadline_ms : 0;
	conn_flush(c);
}

void conn_respond(struct conn *c, int status, const char *code, const char *message,
		  const char *extra, unsigned deadline_ms)
{
	switch (c->phase) {
	case CONN_SERVICE:
		break;
	case CONN_WS:
	case CONN_WS_CLOSING:
		conn_cut(c); /* too late for a status */
		return;
	case CONN_FINISH:
	case CONN_LINGER:
	case CONN_DEAD:
		return;
	}
	conn_drop_output(c);
	if (conn_queue_error(c, status, code, message, extra) < 0) {
		conn_cut(c);
		return;
	}
	c->last_moved = conn_now(c);
	conn_finish(c, deadline_ms);
}

static void conn_refuse(struct conn_refusal *why, int status, const char *code, const char *message)
{
	why->status = status;
	why->code = code;
	snprintf(why->message, sizeof(why->message), "%s", message);
}

bool conn_upgrade_ok(const struct http_request *req, struct conn_refusal *why, const char **extra)
{
	const char *version;
	unsigned nkey, nversion;

	*extra = NULL;
	version = http_request_header(req, "Sec-WebSocket-Version", &nversion);
	http_request_header(req, "Sec-WebSocket-Key", &nkey);
	if (!http_request_is_upgrade(req) ||
	    !http_has_token(http_request_header(req, "Upgrade", NULL), "websocket") || nkey != 1) {
		conn_refuse(why, 400, "not_websocket", "expected a WebSocket upgrade");
		return false;
	}
	if (nversion != 1 || strcmp(version, "13") != 0) {
		conn_refuse(why, 400, "bad_version", "WebSocket version 13 is required");
		*extra = "Sec-WebSocket-Version: 13\r\n";
		return false;
	}
	return true;
}

bool conn_origin_ok(const struct http_request *req, const char *allowed, const char *message,
		    struct conn_refusal *why)
{
	const char *origin, *host, *proto;
	unsigned norigin, nhost;

	origin = http_request_header(req, "Origin", &norigin);
	host = http_request_header(req, "Host", &nhost);
	proto = http_request_header(req, "X-Forwarded-Proto", NULL);
	if (nhost != 1) {
		conn_refuse(why, 400, "bad_host", "exactly one Host header is required");
		return false;
	}
	if (norigin > 1 || !origin_allowed(origin, proto != NULL && *proto != '\0' ? proto : "http",
					   host, allowed)) {
		conn_refuse(why, 403, "forbidden_origin", message);
		return false;
	}
	return true;
}

int conn_ws_accept(struct conn *c, const struct ws_callbacks *cb, void *data, char *head,
		   size_t *len, struct conn_refusal *why)
{
	const struct http_request *req = c->req;
	char accept[WS_ACCEPT_LEN + 1];
	const char *rest;
	size_t rest_len;
	int n;

	if (ws_accept_key(http_request_header(req, "Sec-WebSocket-Key", NULL), accept) < 0) {
		conn_refuse(why, 400, "bad_key", "invalid Sec-WebSocket-Key");
		return -1;
	}
	c->ws = ws_create(c->fd, cb, data);
	if (c->ws == NULL) {
		conn_refuse(why, 503, "no_memory", "out of memory");
		return -1;
	}
	rest = http_request_rest(req, &rest_len);
	n = http_format_upgrade(head, HTTP_RESPONSE_MAX, accept);
	if (n < 0 || ws_prefix(c->ws, rest, rest_len) < 0) {
		conn_refuse(why, 400, "bad_request", "unexpected bytes after the request");
		return -1;
	}
	c->ws_prefixed = rest_len > 0;
	*len = (size_t)n;
	return 0;
}

int conn_ws_begin(struct conn *c, const char *head, size_t len, uint64_t now, unsigned ping_ms)
{
	if (conn_queue(c, head, len) < 0)
		return -ENOMEM;
	c->last_moved = now;
	c->phase = CONN_WS;
	c->next_ping = now + ping_ms;
	return 0;
}

int conn_ws_queue(struct conn *c, bool text, const void *data, size_t len)
{
	size_t before = conn_queued(c);
	int r = text ? ws_queue_text(c->ws, data, len) : ws_queue_binary(c->ws, data, len);

	if (r == 0)
		conn_queued_now(c, before);
	return r;
}

void conn_pause_input(struct conn *c, bool pause)
{
	c->read_paused = pause;
	if (c->ws != NULL)
		ws_pause_read(c->ws, pause);
}

/* ws_recv failed: a vanished peer is cut at once; a protocol error still gets the close frame
 * wslay queued. Returns true when c is cut. */
static bool conn_recv_failed(struct conn *c, int err)
{
	if (c->phase == CONN_DEAD)
		return true;
	if (err == -EPIPE || err == -ECONNRESET || !ws_want_write(c->ws)) {
		conn_cut(c);
		return true;
	}
	if (c->phase == CONN_WS) {
		log_info("session %s: client broke the WebSocket protocol, closing", c->id);
		conn_ws_closing(c);
	}
	return false;
}

void conn_ws_recv(struct conn *c)
{
	int r;

	/* What arrives after a revoke is not read: the store is checked before every read (a stat
	 * while it is unchanged), not only on the tick that closes the connection. */
	if (c->phase == CONN_WS && !conn_allowed(c))
		return;
	c->ws_prefixed = false;
	c->in_recv = true;
	r = ws_recv(c->ws);
	c->in_recv = false;
	if (r < 0 && conn_recv_failed(c, r))
		return;
	conn_flush(c);
}

void conn_ws_close(struct conn *c, uint16_t code, const char *reason)
{
	if (c->phase != CONN_WS)
		return;
	conn_detach(c);
	ws_queue_close(c->ws, code, reason);
	c->phase = CONN_WS_CLOSING;
	c->deadline = conn_now(c) + BRIDGE_CLOSE_TIMEOUT_MS;
	conn_flush(c);
}

void conn_end(struct conn *c, const char *code, const char *message)
{
	json_object *o;
	char *frame;
	int n;

	if (c->phase != CONN_WS && c->phase != CONN_SERVICE)
		return; /* ending already, its service detached */
	log_info("session %s: %s closed: %s", c->id[0] != '\0' ? c->id : "-",
		 c->identity[0] != '\0' ? c->identity : "a connection", code);
	if (c->phase == CONN_WS) {
		conn_ws_close(c, WS_CLOSE_POLICY, code);
		return;
	}
	if (c->sent == 0 && conn_out_empty(c)) {
		conn_respond(c, 401, code, message, NULL, BRIDGE_CLOSE_TIMEOUT_MS);
		return;
	}
	/* A stream (SSE) whose head is out: its last event says why. */
	o = json_object_new_object();
	json_object_object_add(o, "error", json_object_new_string(message));
	json_object_object_add(o, "code", json_object_new_string(code));
	n = asprintf(&frame, "event: " EV_ERROR "\ndata: %s\n\n",
		     json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	if (n < 0 || conn_queue(c, frame, (size_t)n) < 0) {
		if (n >= 0)
			free(frame);
		conn_cut(c);
		return;
	}
	free(frame);
	conn_finish(c, BRIDGE_CLOSE_TIMEOUT_MS);
}

bool conn_allowed(struct conn *c)
{
	struct access_refusal why;

	if (c->set == NULL || c->set->access == NULL)
		return true;
	if (access_refresh(c->set->access))
		conn_set_recheck(c->set);
	if (access_allowed(c->set->access, &c->cred, &why))
		return true;
	conn_end(c, why.code, why.message);
	return false;
}

void conn_set_recheck(struct conn_set *set)
{
	struct access_refusal why;
	struct conn *c, *next;

	for (c = LIST_FIRST(&set->head); c != NULL; c = next) {
		next = LIST_NEXT(c, link);
		if (!access_allowed(set->access, &c->cred, &why))
			conn_end(c, why.code, why.message);
	}
}

void conn_on_pong(void *data)
{
	conn_pong(data);
}

static void conn_on_poll(uv_poll_t *handle, int status, int events)
{
	struct conn *c = CONN_OF(handle, poll);

	if (status < 0) {
		conn_cut(c);
		return;
	}
	switch (c->phase) {
	case CONN_SERVICE:
		c->ops->on_poll(c, events);
		break;
	case CONN_FINISH:
		conn_flush(c);
		break;
	case CONN_LINGER:
		if (conn_drain(c) > 0)
			conn_cut(c);
		break;
	case CONN_WS:
	case CONN_WS_CLOSING:
		if ((events & (UV_READABLE | UV_DISCONNECT)) && conn_out_empty(c))
			conn_ws_recv(c);
		else
			conn_flush(c);
		break;
	case CONN_DEAD:
		break;
	}
	if (c->phase != CONN_DEAD)
		conn_update(c);
}

void conn_tick(struct conn *c, uint64_t now, const struct bridge_options *opt)
{
	int r;

	if (c->phase != CONN_DEAD && c->ops->cut_stalled && conn_queued(c) > 0 &&
	    now - c->last_moved >= opt->stall_timeout_ms) {
		log_warn("session %s: client has not read its output for %u ms, cut",
			 c->id[0] != '\0' ? c->id : "?", opt->stall_timeout_ms);
		conn_cut(c);
		return;
	}
	switch (c->phase) {
	case CONN_SERVICE:
		break;
	case CONN_FINISH:
		if (c->deadline != 0 && now >= c->deadline)
			conn_cut(c);
		return;
	case CONN_LINGER:
	case CONN_WS_CLOSING:
		if (now >= c->deadline)
			conn_cut(c);
		return;
	case CONN_WS:
		r = conn_ping(c, c->ws, now, opt->ping_interval_ms);
		if (r < 0) {
			log_warn("session %s: client did not answer a ping, closing", c->id);
			conn_cut(c);
			return;
		}
		if (r > 0)
			conn_flush(c);
		if (c->phase != CONN_WS)
			return;
		break;
	case CONN_DEAD:
		return;
	}
	if (c->ops->tick != NULL)
		c->ops->tick(c, now);
}

void conn_set_tick(struct conn_set *set, uint64_t now, const struct bridge_options *opt)
{
	struct conn *c, *next;

	for (c = LIST_FIRST(&set->head); c != NULL; c = next) {
		next = LIST_NEXT(c, link);
		conn_tick(c, now, opt);
	}
}

void conn_set_stop(struct conn_set *set)
{
	struct conn *c, *next;

	for (c = LIST_FIRST(&set->head); c != NULL; c = next) {
		next = LIST_NEXT(c, link);
		if (c->phase == CONN_WS)
			conn_ws_close(c, WS_CLOSE_GOING_AWAY, "bridge shutting down");
		else if (c->phase == CONN_SERVICE && c->ops->stop != NULL)
			c->ops->stop(c);
		else if (c->phase == CONN_SERVICE)
			conn_cut(c);
	}
}

void conn_set_abort(struct conn_set *set)
{
	while (!LIST_EMPTY(&set->head))
		conn_cut(LIST_FIRST(&set->head));
}

/* The identity and the credential of the sender, from the headers nginx set. A role without a
 * credential nginx vouches for grants nothing: only the door's whole decision makes an admin. */
static void conn_who(struct conn *c, const struct http_request *req)
{
	const char *identity = http_request_header(req, AUTH_HEADER_IDENTITY, NULL);

	snprintf(c->identity, sizeof(c->identity), "%s", identity != NULL ? identity : "");
	access_parse(http_request_header(req, AUTH_HEADER_CREDENTIAL, NULL), &c->cred);
	if (c->cred.kind != ACCESS_TOKEN && c->cred.kind != ACCESS_TAILSCALE)
		c->who.admin = false;
}

void *conn_open(size_t size, size_t offset, uv_loop_t *loop, int fd, struct conn_set *set,
		const struct conn_ops *ops, struct http_request *req)
{
	char *obj = calloc(1, size);
	struct conn *c;

	if (obj == NULL) {
		close(fd);
		http_request_destroy(req);
		return NULL;
	}
	c = (struct conn *)(obj + offset);
	if (conn_init(c, loop, fd, obj) < 0) {
		close(fd);
		http_request_destroy(req);
		free(obj);
		return NULL;
	}
	conn_start(c, set, ops);
	c->req = req;
	auth_who_from_headers(&c->who, http_request_header(req, AUTH_HEADER_ROLE, NULL),
			      http_request_header(req, AUTH_HEADER_BY, NULL));
	conn_who(c, req);
	return obj;
}
