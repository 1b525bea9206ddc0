#include "terminal.h"

#include "conn.h"
#include "http.h"
#include "log.h"
#include "origin.h"
#include "ptyproc.h"
#include "session.h"
#include "tmux.h"
#include "ws.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TERMINAL_PATH_PREFIX "/sessions/"
#define TERMINAL_PATH_SUFFIX "/terminal"
#define TERMINAL_ARGV_MAX    20
#define TERMINAL_RESIZE_SAT  100000 /* digits beyond this only need to read as "too large" */

enum terminal_state {
	TS_REQUEST,    /* reading the request head */
	TS_WAITING,    /* the session is `creating`: re-reading its record */
	TS_RESPONDING, /* writing an HTTP error */
	TS_LINGER,     /* error written: reading what the peer still sends, then closing */
	TS_OPEN,       /* WebSocket joined to a tmux client */
	TS_CLOSING,    /* close frame queued, tmux client gone; waiting for the close handshake */
	TS_DEAD,       /* handles closing; freed in the close callback */
};

struct terminal {
	struct bridge *b;
	LIST_ENTRY(terminal) link;
	enum terminal_state state;
	struct conn c; /* the socket, its poll handle, lingering and pings */
	/* While open: the sessions directory, so a record that turns exited or lost ends the
	 * client at once (tmux keeps a client attached to a dead pane). */
	uv_fs_event_t watch;
	int handles; /* poll and watch not yet closed: t is freed when both are */
	struct http_request *req;
	struct ws *ws;
	struct ptyproc *pty;
	struct roster_entry *entry;
	char id[SESSION_ID_MAX + 1];
	char tmux_name[SESSION_ID_MAX + 3]; /* "=" + name */
	char tmux_pane[SESSION_ID_MAX + 4]; /* "=" + name + ":" */
	char guard[TMUX_GUARD_MAX];         /* true only while the tmux session is this id's */
	unsigned short cols, rows;
	uint64_t deadline;  /* of the current state (request, waiting, responding, closing) */
	uint64_t next_poll; /* waiting: next record read */
	bool output_paused; /* PTY reading stopped: the client is behind */
	uint64_t paused_since;
	bool input_paused; /* socket reading stopped: the PTY is full */
	bool in_recv;      /* inside ws_recv: wslay is not re-entered, on_poll flushes after */
};

static void terminal_on_poll(uv_poll_t *handle, int status, int events);
static void terminal_close(struct terminal *t);
static void terminal_flush(struct terminal *t);

static uint64_t terminal_now(const struct terminal *t)
{
	return uv_now(t->b->loop);
}

static void terminal_update_poll(struct terminal *t)
{
	int want = 0;

	switch (t->state) {
	case TS_REQUEST:
		want = UV_READABLE;
		break;
	case TS_WAITING:
		want = UV_DISCONNECT; /* notice a browser that gives up while we wait */
		break;
	case TS_RESPONDING:
		want = UV_WRITABLE;
		break;
	case TS_LINGER:
		want = UV_READABLE;
		break;
	case TS_OPEN:
	case TS_CLOSING:
		if (!conn_out_empty(&t->c) || ws_want_write(t->ws))
			want |= UV_WRITABLE;
		if (conn_out_empty(&t->c) && !t->input_paused && ws_want_read(t->ws))
			want |= UV_READABLE;
		break;
	case TS_DEAD:
		return;
	}
	conn_watch(&t->c, want, terminal_on_poll);
}

static void terminal_on_close(uv_handle_t *handle)
{
	struct terminal *t = handle->data;

	if (--t->handles > 0)
		return;
	conn_release(&t->c); /* fd -1: handed over to the other service */
	ws_destroy(t->ws);
	http_request_destroy(t->req);
	free(t);
}

/* Ends the tmux client of t and its share of the record's count. */
static void terminal_detach(struct terminal *t)
{
	if (t->entry != NULL) {
		roster_detach(t->entry);
		t->entry = NULL;
		log_info("session %s: client detached (%d left)", t->id,
			 roster_clients(t->b->roster, t->id));
	}
	uv_fs_event_stop(&t->watch);
	ptyproc_destroy(t->pty);
	t->pty = NULL;
	if (t->input_paused) {
		/* No PTY will drain it any more; the peer's close frame must still be read. */
		t->input_paused = false;
		ws_pause_read(t->ws, false);
	}
}

/* Cuts the connection now. Safe from any callback: memory goes in the close callback. */
static void terminal_close(struct terminal *t)
{
	if (t->state == TS_DEAD)
		return;
	terminal_detach(t);
	t->state = TS_DEAD;
	LIST_REMOVE(t, link);
	t->b->nterminals--;
	/* The poll handle stops watching fd here (hand-over relies on it); the memory goes when
	 * both handles' close callbacks have run. */
	conn_close(&t->c, terminal_on_close);
	uv_close((uv_handle_t *)&t->watch, terminal_on_close);
}

/* Starts the WebSocket close handshake; the connection is cut if it does not finish in time. */
static void terminal_close_ws(struct terminal *t, uint16_t code, const char *reason)
{
	if (t->state != TS_OPEN)
		return;
	terminal_detach(t);
	ws_queue_close(t->ws, code, reason);
	t->state = TS_CLOSING;
	t->deadline = terminal_now(t) + BRIDGE_CLOSE_TIMEOUT_MS;
	terminal_flush(t);
}

static void terminal_respond(struct terminal *t, int status, const char *code, const char *message,
			     const char *extra)
{
	if (t->req != NULL)
		log_info("%s %s: %d %s", http_request_method(t->req), http_request_path(t->req),
			 status, code);
	conn_drop_output(&t->c);
	if (conn_queue_error(&t->c, status, code, message, extra) < 0) {
		terminal_close(t);
		return;
	}
	t->state = TS_RESPONDING;
	t->deadline = terminal_now(t) + BRIDGE_CLOSE_TIMEOUT_MS;
	terminal_flush(t);
}

/* Pauses or resumes this client's PTY by how much output waits for it. */
static void terminal_backpressure(struct terminal *t)
{
	size_t bytes, count;

	if (t->pty == NULL)
		return;
	bytes = ws_queued_bytes(t->ws);
	count = ws_queued_count(t->ws);
	if (!t->output_paused && (bytes > BRIDGE_OUT_HIGH || count > BRIDGE_OUT_MSGS_HIGH)) {
		t->output_paused = true;
		t->paused_since = terminal_now(t);
		ptyproc_pause(t->pty);
	} else if (t->output_paused && bytes < BRIDGE_OUT_LOW && count < BRIDGE_OUT_MSGS_LOW) {
		t->output_paused = false;
		ptyproc_resume(t->pty);
	}
}

/* Sends what can be sent and closes the connection when it has nothing left to do. */
static void terminal_flush(struct terminal *t)
{
	int r;

	if (t->state == TS_DEAD || t->in_recv)
		return;
	if (!conn_out_empty(&t->c)) {
		r = conn_write(&t->c);
		if (r < 0) {
			terminal_close(t);
			return;
		}
		if (r == 0) {
			terminal_update_poll(t);
			return;
		}
	}
	if (t->state == TS_RESPONDING) {
		conn_shut_write(&t->c);
		t->state = TS_LINGER;
		terminal_update_poll(t);
		return;
	}
	if (t->state != TS_OPEN && t->state != TS_CLOSING)
		return;
	if (ws_send(t->ws) < 0) {
		terminal_close(t);
		return;
	}
	if (ws_queued_bytes(t->ws) > BRIDGE_OUT_HARD ||
	    ws_queued_count(t->ws) > BRIDGE_OUT_MSGS_HARD) {
		log_warn("session %s: client has %zu frames queued, cut", t->id,
			 ws_queued_count(t->ws));
		terminal_close(t);
		return;
	}
	terminal_backpressure(t);
	if (!ws_want_read(t->ws) && !ws_want_write(t->ws)) {
		if (ws_close_received(t->ws)) {
			terminal_close(t); /* close handshake done */
			return;
		}
		/* We closed first (a too big message, a protocol error) while the peer may still
		 * be sending: closing with unread bytes would send a reset that can overtake our
		 * close frame. Half-close and drop what still comes until its EOF. */
		if (t->state == TS_OPEN)
			terminal_detach(t);
		conn_shut_write(&t->c);
		t->state = TS_LINGER;
		t->deadline = terminal_now(t) + BRIDGE_CLOSE_TIMEOUT_MS;
		terminal_update_poll(t);
		return;
	}
	if (t->state == TS_OPEN && !ws_want_read(t->ws)) {
		/* wslay stopped reading (peer's close, a too big message): no more keystrokes. */
		terminal_detach(t);
		t->state = TS_CLOSING;
		t->deadline = terminal_now(t) + BRIDGE_CLOSE_TIMEOUT_MS;
	}
	terminal_update_poll(t);
}

/* ws_recv failed: a vanished peer is cut at once; a protocol error still gets the close frame
 * wslay queued. Returns true when t is closed. */
static bool terminal_recv_failed(struct terminal *t, int err)
{
	if (t->state == TS_DEAD)
		return true;
	if (err == -EPIPE || err == -ECONNRESET || !ws_want_write(t->ws)) {
		terminal_close(t);
		return true;
	}
	if (t->state == TS_OPEN) {
		log_info("session %s: client broke the WebSocket protocol, closing", t->id);
		terminal_detach(t);
		t->state = TS_CLOSING;
		t->deadline = terminal_now(t) + BRIDGE_CLOSE_TIMEOUT_MS;
	}
	return false;
}

static void terminal_on_output(void *data, const char *buf, size_t len)
{
	struct terminal *t = data;

	if (t->state != TS_OPEN)
		return;
	if (ws_queue_binary(t->ws, buf, len) < 0) {
		terminal_close(t);
		return;
	}
	if (t->entry != NULL)
		roster_activity(t->entry, (int64_t)time(NULL));
	terminal_flush(t);
}

static void terminal_on_drained(void *data)
{
	struct terminal *t = data;

	if (t->input_paused) {
		t->input_paused = false;
		ws_pause_read(t->ws, false);
		terminal_update_poll(t);
	}
}

static void terminal_on_hangup(void *data)
{
	struct terminal *t = data;

	log_info("session %s: tmux client ended", t->id);
	terminal_close_ws(t, WS_CLOSE_NORMAL, "session ended");
}

int terminal_parse_resize(const uint8_t *msg, size_t len, unsigned *cols, unsigned *rows)
{
	unsigned long v[2] = {0, 0};
	size_t i = 1;

	if (len < 4 || msg[0] != 0x01)
		return 0;
	for (int k = 0; k < 2; k++) {
		size_t start = i;

		while (i < len && msg[i] >= '0' && msg[i] <= '9') {
			v[k] = v[k] * 10 + (unsigned long)(msg[i] - '0');
			if (v[k] > TERMINAL_RESIZE_SAT)
				v[k] = TERMINAL_RESIZE_SAT;
			i++;
		}
		if (i == start)
			return 0;
		if (k == 0) {
			if (i >= len || msg[i] != ';')
				return 0;
			i++;
		}
	}
	if (i != len)
		return 0;
	if (v[0] < 1 || v[0] > PTY_SIZE_MAX || v[1] < 1 || v[1] > PTY_SIZE_MAX)
		return -ERANGE;
	*cols = (unsigned)v[0];
	*rows = (unsigned)v[1];
	return 1;
}

static void terminal_on_message(void *data, const uint8_t *msg, size_t len)
{
	struct terminal *t = data;
	unsigned cols, rows;
	int r;

	if (t->state != TS_OPEN || t->pty == NULL)
		return;
	r = terminal_parse_resize(msg, len, &cols, &rows);
	if (r > 0) {
		ptyproc_resize(t->pty, cols, rows);
		return;
	}
	if (r < 0 || len == 0)
		return;
	r = ptyproc_write(t->pty, msg, len);
	if (r == -EOVERFLOW || r == -ENOMEM) {
		log_warn("session %s: client input overflows the terminal, closing", t->id);
		terminal_close_ws(t, WS_CLOSE_POLICY, "input overflow");
		return;
	}
	if (r == 0 && ptyproc_pending(t->pty) > 0 && !t->input_paused) {
		t->input_paused = true;
		ws_pause_read(t->ws, true);
	}
	/* -EIO: the tmux client is gone; its hangup closes the connection. */
}

static void terminal_on_pong(void *data)
{
	struct terminal *t = data;

	conn_pong(&t->c);
}

/* A file in the sessions directory changed: if it is this session's record and it says the
 * agent is gone, the client is told so and closed. */
static void terminal_on_record(uv_fs_event_t *handle, const char *filename, int events, int status)
{
	struct terminal *t = handle->data;
	char leaf[SESSION_ID_MAX + 8], msg[SESSION_ERROR_MAX + 128], reason[WS_CLOSE_REASON_MAX];
	struct session s;
	const char *code;

	if (t->state != TS_OPEN || status < 0 || filename == NULL)
		return;
	snprintf(leaf, sizeof(leaf), "%s.json", t->id);
	if (strcmp(filename, leaf) != 0 || store_read(&t->b->store, t->id, &s, NULL) < 0)
		return;
	if (s.state != SESSION_EXITED && s.state != SESSION_LOST)
		return;
	code = session_unavailable(&s, msg, sizeof(msg));
	if (s.state == SESSION_EXITED)
		snprintf(reason, sizeof(reason), "%s: status %d%s%s", code, s.exit_status,
			 s.exit_signal[0] != '\0' ? " " : "", s.exit_signal);
	else
		snprintf(reason, sizeof(reason), "%s", code);
	log_info("session %s: %s; closing the client", t->id, msg);
	terminal_close_ws(t, WS_CLOSE_NORMAL, reason);
}

static void terminal_attach(struct terminal *t)
{
	static const struct ptyproc_callbacks pty_cb = {
	    .on_output = terminal_on_output,
	    .on_drained = terminal_on_drained,
	    .on_hangup = terminal_on_hangup,
	};
	static const struct ws_callbacks ws_cb = {
	    .on_message = terminal_on_message,
	    .on_pong = terminal_on_pong,
	};
	struct bridge *b = t->b;
	/* The attach runs only if the tmux session still carries this session's id, checked in the
	 * same tmux call (tmux.h); -E: the bridge's variables never reach the session. */
	char *argv[TERMINAL_ARGV_MAX] = {
	    b->tmux_bin,
	    "-u",
	    "-S",
	    b->tmux_socket,
	    "-f",
	    b->tmux_conf,
	    "if-shell",
	    "-F",
	    "-t",
	    t->tmux_pane,
	    t->guard,
	    "",
	    TMUX_GUARD_FAIL,
	    ";",
	    "attach-session",
	    "-E",
	    "-t",
	    t->tmux_name,
	    NULL,
	};
	struct ptyproc_spec spec = {
	    .path = b->tmux_bin,
	    .argv = argv,
	    .envp = b->child_env,
	    .cols = t->cols,
	    .rows = t->rows,
	};
	char accept[WS_ACCEPT_LEN + 1], head[HTTP_RESPONSE_MAX];
	const char *rest;
	size_t rest_len;
	int r, n;

	if (ws_accept_key(http_request_header(t->req, "Sec-WebSocket-Key", NULL), accept) < 0) {
		terminal_respond(t, 400, "bad_key", "invalid Sec-WebSocket-Key", NULL);
		return;
	}
	t->ws = ws_create(t->c.fd, &ws_cb, t);
	if (t->ws == NULL) {
		terminal_respond(t, 503, "no_memory", "out of memory", NULL);
		return;
	}
	rest = http_request_rest(t->req, &rest_len);
	n = http_format_upgrade(head, sizeof(head), accept);
	if (n < 0 || ws_prefix(t->ws, rest, rest_len) < 0) {
		terminal_respond(t, 400, "bad_request", "unexpected bytes after the request", NULL);
		return;
	}
	r = ptyproc_spawn(&t->pty, b->loop, &spec, b->scratch, &pty_cb, t);
	if (r < 0) {
		log_error("session %s: cannot start a tmux client: %s", t->id, strerror(-r));
		terminal_respond(t, 503, "attach_failed", "cannot start a terminal", NULL);
		return;
	}
	if (conn_queue(&t->c, head, (size_t)n) < 0) {
		ptyproc_destroy(t->pty);
		t->pty = NULL;
		terminal_respond(t, 503, "no_memory", "out of memory", NULL);
		return;
	}
	http_request_destroy(t->req);
	t->req = NULL;
	t->state = TS_OPEN;
	t->c.next_ping = terminal_now(t) + b->opt.ping_interval_ms;
	t->entry = roster_attach(b->roster, t->id);
	r = uv_fs_event_start(&t->watch, terminal_on_record, b->store.dir, 0);
	if (r < 0)
		log_warn(
		    "session %s: cannot watch its record (%s): an exit will not end the client",
		    t->id, uv_strerror(r));
	log_info("session %s: client attached (%d now, pid %d, %ux%u)", t->id,
		 roster_clients(b->roster, t->id), (int)ptyproc_pid(t->pty), t->cols, t->rows);
	if (rest_len > 0) {
		/* Frames that came with the request: no poll event will announce them. */
		t->in_recv = true;
		r = ws_recv(t->ws);
		t->in_recv = false;
		if (r < 0 && terminal_recv_failed(t, r))
			return;
	}
	terminal_flush(t);
}

/* Reads the record and attaches, waits, or refuses. */
static void terminal_lookup(struct terminal *t)
{
	struct conn_refusal why;
	struct session s;

	switch (conn_lookup(&t->b->store, t->id, &s, &why)) {
	case CONN_RECORD_READY:
		snprintf(t->tmux_name, sizeof(t->tmux_name), "=%s", s.tmux_name);
		snprintf(t->tmux_pane, sizeof(t->tmux_pane), "=%s:", s.tmux_name);
		if (tmux_guard_format(s.tmux_name, s.id, t->guard, sizeof(t->guard)) < 0) {
			terminal_respond(t, 500, "store_error", "bad tmux name in the record",
					 NULL);
			return;
		}
		terminal_attach(t);
		return;
	case CONN_RECORD_CREATING:
		if (t->state != TS_WAITING) {
			t->state = TS_WAITING;
			t->deadline = terminal_now(t) + t->b->opt.creating_wait_ms;
		} else if (terminal_now(t) >= t->deadline) {
			terminal_respond(t, 409, "not_running",
					 "the session is still being created", NULL);
			return;
		}
		t->next_poll = terminal_now(t) + BRIDGE_CREATING_POLL_MS;
		terminal_update_poll(t);
		return;
	case CONN_RECORD_MISSING:
	case CONN_RECORD_UNAVAILABLE:
		terminal_respond(t, why.status, why.code, why.message, NULL);
		return;
	}
}

/* Gives the socket and the request to the other service; t goes away. */
static void terminal_hand_over(struct terminal *t)
{
	struct bridge *b = t->b;
	struct http_request *req = t->req;
	int fd = t->c.fd;

	t->req = NULL;
	t->c.fd = -1;
	terminal_close(t); /* the poll handle stops watching fd right here */
	b->other->accept(b, fd, req);
}

/* Checks the request against API.md, in the order that reveals least to a refused caller. */
static void terminal_handle_request(struct terminal *t)
{
	const struct http_request *req = t->req;
	const char *path = http_request_path(req);
	const char *origin, *host, *proto, *version, *end;
	size_t plen = strlen(TERMINAL_PATH_PREFIX), slen = strlen(TERMINAL_PATH_SUFFIX);
	size_t len = strlen(path), idlen;
	unsigned norigin, nhost, nkey, nversion;
	long v;

	if (len <= plen + slen || strncmp(path, TERMINAL_PATH_PREFIX, plen) != 0 ||
	    strcmp(path + len - slen, TERMINAL_PATH_SUFFIX) != 0) {
		if (t->b->other != NULL && t->b->other->claims(path))
			terminal_hand_over(t);
		else
			terminal_respond(t, 404, "not_found", "no such resource", NULL);
		return;
	}
	end = path + len - slen;
	idlen = (size_t)(end - (path + plen));
	if (idlen > SESSION_ID_MAX || memchr(path + plen, '/', idlen) != NULL) {
		terminal_respond(t, 404, "not_found", "no such resource", NULL);
		return;
	}
	memcpy(t->id, path + plen, idlen);
	t->id[idlen] = '\0';
	if (strcmp(http_request_method(req), "GET") != 0) {
		terminal_respond(t, 405, "method_not_allowed", "use GET with a WebSocket upgrade",
				 "Allow: GET\r\n");
		return;
	}
	if (!session_id_valid(t->id)) {
		terminal_respond(t, 400, "invalid_id", "malformed session id", NULL);
		return;
	}
	version = http_request_header(req, "Sec-WebSocket-Version", &nversion);
	http_request_header(req, "Sec-WebSocket-Key", &nkey);
	if (!http_request_is_upgrade(req) ||
	    !http_has_token(http_request_header(req, "Upgrade", NULL), "websocket") || nkey != 1) {
		terminal_respond(t, 400, "not_websocket", "expected a WebSocket upgrade", NULL);
		return;
	}
	if (nversion != 1 || strcmp(version, "13") != 0) {
		terminal_respond(t, 400, "bad_version", "WebSocket version 13 is required",
				 "Sec-WebSocket-Version: 13\r\n");
		return;
	}
	origin = http_request_header(req, "Origin", &norigin);
	host = http_request_header(req, "Host", &nhost);
	proto = http_request_header(req, "X-Forwarded-Proto", NULL);
	if (nhost != 1) {
		terminal_respond(t, 400, "bad_host", "exactly one Host header is required", NULL);
		return;
	}
	if (norigin > 1 || !origin_allowed(origin, proto != NULL && *proto != '\0' ? proto : "http",
					   host, t->b->cfg->allowed_origins)) {
		terminal_respond(t, 403, "forbidden_origin", "this Origin may not open terminals",
				 NULL);
		return;
	}
	t->cols = BRIDGE_DEFAULT_COLS;
	t->rows = BRIDGE_DEFAULT_ROWS;
	if (http_query_int(http_request_query(req), "cols", 1, PTY_SIZE_MAX, &v) == 0)
		t->cols = (unsigned short)v;
	if (http_query_int(http_request_query(req), "rows", 1, PTY_SIZE_MAX, &v) == 0)
		t->rows = (unsigned short)v;
	terminal_lookup(t);
}

static void terminal_read_request(struct terminal *t)
{
	int r = conn_read_head(&t->c, t->req);

	if (r == -EOVERFLOW)
		terminal_respond(t, 431, "head_too_large", "request head too large", NULL);
	else if (r == -EBADMSG)
		terminal_respond(t, 400, "bad_request", "malformed HTTP request", NULL);
	else if (r < 0)
		terminal_close(t); /* gone before a whole request */
	else if (r > 0)
		terminal_handle_request(t);
}

/* Drops what the refused peer still sends; closes at its EOF or past CONN_LINGER_MAX. */
static void terminal_linger(struct terminal *t)
{
	if (conn_drain(&t->c) > 0)
		terminal_close(t);
}

static void terminal_on_poll(uv_poll_t *handle, int status, int events)
{
	struct terminal *t = handle->data;

	if (status < 0) {
		terminal_close(t);
		return;
	}
	switch (t->state) {
	case TS_REQUEST:
		terminal_read_request(t);
		break;
	case TS_WAITING:
		if (events & UV_DISCONNECT)
			terminal_close(t);
		break;
	case TS_RESPONDING:
		terminal_flush(t);
		break;
	case TS_LINGER:
		terminal_linger(t);
		break;
	case TS_OPEN:
	case TS_CLOSING:
		if ((events & (UV_READABLE | UV_DISCONNECT)) && conn_out_empty(&t->c)) {
			int r;

			t->in_recv = true;
			r = ws_recv(t->ws);
			t->in_recv = false;
			if (r < 0 && terminal_recv_failed(t, r))
				break;
		}
		terminal_flush(t);
		break;
	case TS_DEAD:
		break;
	}
	if (t->state != TS_DEAD)
		terminal_update_poll(t);
}

int terminal_accept(struct bridge *b, int fd)
{
	struct terminal *t = calloc(1, sizeof(*t));
	int r;

	if (t == NULL) {
		close(fd);
		return -ENOMEM;
	}
	t->b = b;
	t->req = http_request_create();
	if (t->req == NULL) {
		close(fd);
		free(t);
		return -ENOMEM;
	}
	r = conn_init(&t->c, b->loop, fd, t);
	if (r < 0) {
		close(fd);
		http_request_destroy(t->req);
		free(t);
		return r;
	}
	uv_fs_event_init(b->loop, &t->watch); /* cannot fail; started once the client is open */
	t->watch.data = t;
	t->handles = 2;
	t->state = TS_REQUEST;
	t->deadline = terminal_now(t) + b->opt.handshake_timeout_ms;
	LIST_INSERT_HEAD(&b->terminals, t, link);
	b->nterminals++;
	terminal_update_poll(t);
	return 0;
}

void terminal_tick(struct terminal *t, uint64_t now)
{
	const struct bridge_options *opt = &t->b->opt;
	int r;

	switch (t->state) {
	case TS_REQUEST:
	case TS_RESPONDING:
	case TS_LINGER:
	case TS_CLOSING:
		if (now >= t->deadline)
			terminal_close(t);
		return;
	case TS_WAITING:
		if (now >= t->next_poll)
			terminal_lookup(t);
		return;
	case TS_OPEN:
		break;
	case TS_DEAD:
		return;
	}
	if (t->output_paused && now - t->paused_since >= opt->stall_timeout_ms) {
		log_warn("session %s: client has not read its output for %u ms, closing", t->id,
			 opt->stall_timeout_ms);
		terminal_close_ws(t, WS_CLOSE_POLICY, "client does not read");
		return;
	}
	r = conn_ping(&t->c, t->ws, now, opt->ping_interval_ms);
	if (r < 0) {
		log_warn("session %s: client did not answer a ping, closing", t->id);
		terminal_close(t);
		return;
	}
	if (r > 0)
		terminal_flush(t);
}

void terminal_shutdown(struct terminal *t)
{
	switch (t->state) {
	case TS_OPEN:
		terminal_close_ws(t, WS_CLOSE_GOING_AWAY, "bridge shutting down");
		return;
	case TS_RESPONDING:
	case TS_LINGER:
	case TS_CLOSING:
	case TS_DEAD:
		return;
	case TS_REQUEST:
	case TS_WAITING:
		terminal_close(t);
		return;
	}
}

void terminal_abort(struct terminal *t)
{
	terminal_close(t);
}

bool terminal_child_exited(struct terminal *t, pid_t pid)
{
	if (t->pty == NULL || ptyproc_pid(t->pty) != pid)
		return false;
	ptyproc_set_reaped(t->pty);
	return true;
}

struct terminal *terminal_next(struct terminal *t)
{
	return LIST_NEXT(t, link);
}
