#include "terminal.h"

#include "conn.h"
#include "http.h"
#include "log.h"
#include "origin.h"
#include "proc.h"
#include "ptyproc.h"
#include "session.h"
#include "tmux.h"
#include "ws.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TERMINAL_PATH_PREFIX "/sessions/"
#define TERMINAL_PATH_SUFFIX "/terminal"
#define TERMINAL_ARGV_MAX    32
#define TERMINAL_SIZE_DIGITS 8      /* PTY_SIZE_MAX in decimal, and its NUL */
#define TERMINAL_RESIZE_SAT  100000 /* digits beyond this only need to read as "too large" */

struct terminal {
	struct bridge *b;
	/* The socket, its poll handle, the record watch (while waiting for a `creating` session,
	 * and while open: a record that turns exited or lost ends the client at once, as tmux
	 * keeps a client attached to a dead pane), the answer, lingering, the WebSocket. */
	struct conn c;
	bool waiting; /* CONN_SERVICE: the session is `creating`; its record is watched */
	struct ptyproc *pty;
	struct roster_entry *entry;
	char tmux_name[SESSION_ID_MAX + 3]; /* "=" + name */
	char tmux_pane[SESSION_ID_MAX + 4]; /* "=" + name + ":" */
	char guard[TMUX_GUARD_MAX];         /* true only while the tmux session is this id's */
	unsigned short cols, rows;
	bool output_paused; /* PTY reading stopped: the client is behind */
	uint64_t paused_since;
	/* The window's size is the bridge's to set, with resize-window (which leaves the window
	 * in window-size manual, where no client's size counts): an admin's attach and resizes
	 * set it, a viewer's attach only keeps it (tmux would let an ignore-size client size the
	 * window while it is alone). One resize-window runs at a time per session, so they apply
	 * in order. */
	uint64_t sized_at; /* when this admin last attached or resized (0: never, a viewer) */
	bool size_pending; /* this admin's size waits for the session's resize-window in flight */
	pid_t sizer;       /* the resize-window running for this terminal (0: none) */
};

static const struct conn_ops terminal_ops;

static void terminal_lookup(struct terminal *t);

/* The terminal that c is, when c is one on session id; else NULL. */
static struct terminal *terminal_of(struct conn *c, const char *id)
{
	struct terminal *t = c->data;

	return c->ops == &terminal_ops && strcmp(t->c.id, id) == 0 ? t : NULL;
}

/*
 * Appends to argv (at *n) the words of one tmux command line that resizes t's window only while
 * the tmux session is still t's id's (the guard, tmux.h): "if-shell -F -t PANE GUARD '' FAIL ;
 * resize-window -t PANE [-x COLS -y ROWS]". Without cols and rows the window keeps its size and
 * goes to manual mode all the same. The words point into t and the caller's buffers.
 */
static void terminal_resize_words(struct terminal *t, char **argv, size_t *n, char *cols,
				  char *rows)
{
	char *words[] = {
	    "if-shell",      "-F", "-t",        t->tmux_pane, t->guard, "", TMUX_GUARD_FAIL, ";",
	    "resize-window", "-t", t->tmux_pane};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		argv[(*n)++] = words[i];
	if (cols != NULL && rows != NULL) {
		argv[(*n)++] = "-x";
		argv[(*n)++] = cols;
		argv[(*n)++] = "-y";
		argv[(*n)++] = rows;
	}
}

/* Starts resize-window for t's size (only while the tmux session is still t's id's). */
static void terminal_sizer_spawn(struct terminal *t)
{
	struct bridge *b = t->b;
	char cols[TERMINAL_SIZE_DIGITS], rows[TERMINAL_SIZE_DIGITS];
	char *argv[TERMINAL_ARGV_MAX] = {b->tmux_bin, "-S", b->tmux_socket, "-f", b->tmux_conf};
	size_t n = 5;
	struct proc_opts opts = {.envp = b->child_env, .keep_fd = -1};
	pid_t pid;
	int fd, r;

	terminal_resize_words(t, argv, &n, cols, rows);
	argv[n] = NULL;
	snprintf(cols, sizeof(cols), "%u", (unsigned)t->cols);
	snprintf(rows, sizeof(rows), "%u", (unsigned)t->rows);
	r = proc_start(argv, &opts, &fd, &pid);
	if (r < 0) {
		log_warn("session %s: cannot run tmux resize-window: %s", t->c.id, strerror(-r));
		return;
	}
	close(fd); /* its words are not needed: the pane's size shows whether it worked */
	t->sizer = pid;
}

/* Runs session id's next resize-window, unless one runs already. */
static void terminal_sizer_next(struct bridge *b, const char *id)
{
	struct terminal *want = NULL, *o;
	struct conn *c;

	LIST_FOREACH(c, &b->conns.head, link)
	{
		if ((o = terminal_of(c, id)) == NULL)
			continue;
		if (o->sizer > 0)
			return;
		if (o->size_pending)
			want = o;
	}
	if (want == NULL)
		return;
	want->size_pending = false;
	terminal_sizer_spawn(want);
}

/* t's size becomes the window's: t is the latest admin to attach or resize. */
static void terminal_size_window(struct terminal *t, bool now)
{
	struct terminal *o;
	struct conn *c;

	LIST_FOREACH(c, &t->b->conns.head, link)
	if ((o = terminal_of(c, t->c.id)) != NULL)
		o->size_pending = false;
	t->sized_at = uv_now(t->b->loop);
	if (!now)
		return; /* the attach sets it itself */
	t->size_pending = true;
	terminal_sizer_next(t->b, t->c.id);
}

/* Admin t leaves: when it was the latest to size the window, the latest of the admins still
 * there sizes it again (as tmux's window-size latest would). */
static void terminal_size_after(struct terminal *t)
{
	struct terminal *o, *best = NULL;
	struct conn *c;

	if (t->sized_at == 0)
		return;
	t->size_pending = false;
	LIST_FOREACH(c, &t->b->conns.head, link)
	{
		if ((o = terminal_of(c, t->c.id)) == NULL || o == t || o->pty == NULL ||
		    o->sized_at == 0)
			continue;
		if (o->sized_at > t->sized_at)
			return; /* the window is someone else's size already */
		if (best == NULL || o->sized_at > best->sized_at)
			best = o;
	}
	t->sized_at = 0;
	if (best != NULL)
		terminal_size_window(best, true);
}

static uint64_t terminal_now(const struct terminal *t)
{
	return uv_now(t->b->loop);
}

static int terminal_want(struct conn *c)
{
	struct terminal *t = c->data;

	return t->waiting ? UV_DISCONNECT : 0; /* notice a browser that gives up while we wait */
}

static void terminal_on_poll(struct conn *c, int events)
{
	if (events & UV_DISCONNECT)
		conn_cut(c);
}

static void terminal_release(struct conn *c)
{
	struct terminal *t = c->data;
	struct bridge *b = t->b;
	char id[SESSION_ID_MAX + 1];
	bool sizing = t->sizer > 0;

	memcpy(id, t->c.id, sizeof(id));
	conn_release(&t->c);
	free(t);
	/* Its resize-window is reaped unseen now: the session's next one need not wait for it. */
	if (sizing)
		terminal_sizer_next(b, id);
}

/* Ends the tmux client of t and its share of the record's count. */
static void terminal_detach(struct conn *c)
{
	struct terminal *t = c->data;

	if (t->entry != NULL) {
		roster_detach(t->entry);
		t->entry = NULL;
		log_info("session %s: client detached (%d left)", t->c.id,
			 roster_clients(t->b->roster, t->c.id));
	}
	conn_unwatch_record(&t->c);
	t->waiting = false;
	if (t->pty != NULL)
		terminal_size_after(t);
	ptyproc_destroy(t->pty);
	t->pty = NULL;
	/* No PTY will drain the input any more; the peer's close frame must still be read. */
	conn_pause_input(&t->c, false);
}

static void terminal_respond(struct terminal *t, int status, const char *code, const char *message,
			     const char *extra)
{
	if (t->c.req != NULL)
		log_info("%s %s: %d %s", http_request_method(t->c.req), http_request_path(t->c.req),
			 status, code);
	conn_respond(&t->c, status, code, message, extra, BRIDGE_CLOSE_TIMEOUT_MS);
}

/* Pauses or resumes this client's PTY by how much output waits for it. */
static void terminal_backpressure(struct conn *c)
{
	struct terminal *t = c->data;
	size_t bytes, count;

	if (t->pty == NULL)
		return;
	bytes = ws_queued_bytes(c->ws);
	count = ws_queued_count(c->ws);
	if (!t->output_paused && (bytes > BRIDGE_OUT_HIGH || count > BRIDGE_OUT_MSGS_HIGH)) {
		t->output_paused = true;
		t->paused_since = terminal_now(t);
		ptyproc_pause(t->pty);
	} else if (t->output_paused && bytes < BRIDGE_OUT_LOW && count < BRIDGE_OUT_MSGS_LOW) {
		t->output_paused = false;
		ptyproc_resume(t->pty);
	}
}

static void terminal_on_output(void *data, const char *buf, size_t len)
{
	struct terminal *t = data;

	if (t->c.phase != CONN_WS)
		return;
	if (conn_ws_queue(&t->c, false, buf, len) < 0) {
		conn_cut(&t->c);
		return;
	}
	if (t->entry != NULL)
		roster_activity(t->entry, (int64_t)time(NULL));
	conn_flush(&t->c);
}

static void terminal_on_drained(void *data)
{
	struct terminal *t = data;

	if (t->c.read_paused) {
		conn_pause_input(&t->c, false);
		conn_update(&t->c);
	}
}

static void terminal_on_hangup(void *data)
{
	struct terminal *t = data;

	log_info("session %s: tmux client ended", t->c.id);
	conn_ws_close(&t->c, WS_CLOSE_NORMAL, "session ended");
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
	struct conn *c = data;
	struct terminal *t = c->data;
	unsigned cols, rows;
	int r;

	if (c->phase != CONN_WS || t->pty == NULL)
		return;
	/* A read-only identity watches: its keystrokes and resizes are dropped, not refused (the
	 * terminal stays open). */
	if (!c->who.admin)
		return;
	r = terminal_parse_resize(msg, len, &cols, &rows);
	if (r > 0) {
		/* The tmux client draws for its PTY's size; the window follows with resize-window.
		 */
		ptyproc_resize(t->pty, cols, rows);
		t->cols = (unsigned short)cols;
		t->rows = (unsigned short)rows;
		terminal_size_window(t, true);
		return;
	}
	if (r < 0 || len == 0)
		return;
	r = ptyproc_write(t->pty, msg, len);
	if (r == -EOVERFLOW || r == -ENOMEM) {
		log_warn("session %s: client input overflows the terminal, closing", t->c.id);
		conn_ws_close(c, WS_CLOSE_POLICY, "input overflow");
		return;
	}
	if (r == 0 && ptyproc_pending(t->pty) > 0 && !c->read_paused)
		conn_pause_input(c, true);
	/* -EIO: the tmux client is gone; its hangup closes the connection. */
}

/* While open: if the record says the agent is gone, the client is told so and closed. */
static void terminal_exit_check(struct terminal *t)
{
	char msg[SESSION_ERROR_MAX + 128], reason[WS_CLOSE_REASON_MAX];
	struct session s;
	const char *code;

	if (store_read(&t->b->store, t->c.id, &s, NULL) < 0)
		return;
	if (s.state != SESSION_EXITED && s.state != SESSION_LOST)
		return;
	code = session_unavailable(&s, msg, sizeof(msg));
	if (s.state == SESSION_EXITED)
		snprintf(reason, sizeof(reason), "%s: status %d%s%s", code, s.exit_status,
			 s.exit_signal[0] != '\0' ? " " : "", s.exit_signal);
	else
		snprintf(reason, sizeof(reason), "%s", code);
	log_info("session %s: %s; closing the client", t->c.id, msg);
	conn_ws_close(&t->c, WS_CLOSE_NORMAL, reason);
}

/* The session's record changed: a wait for `creating` reads it again, an open client checks
 * for the agent's end. */
static void terminal_record_changed(struct conn *c)
{
	struct terminal *t = c->data;

	if (c->phase == CONN_SERVICE && t->waiting)
		terminal_lookup(t);
	else if (c->phase == CONN_WS)
		terminal_exit_check(t);
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
	    .on_pong = conn_on_pong,
	};
	struct bridge *b = t->b;
	char cols[TERMINAL_SIZE_DIGITS], rows[TERMINAL_SIZE_DIGITS];
	/* The attach runs only if the tmux session still carries this session's id, checked in the
	 * same tmux call (tmux.h); -E: the bridge's variables never reach the session. An admin's
	 * size becomes the window's first. */
	char *argv[TERMINAL_ARGV_MAX] = {b->tmux_bin,    "-u", "-S",
					 b->tmux_socket, "-f", b->tmux_conf};
	size_t w = 6;
	struct ptyproc_spec spec = {
	    .path = b->tmux_bin,
	    .argv = argv,
	    .envp = b->child_env,
	    .cols = t->cols,
	    .rows = t->rows,
	};
	struct conn_refusal why;
	char head[HTTP_RESPONSE_MAX];
	size_t n;
	int r;

	snprintf(cols, sizeof(cols), "%u", (unsigned)t->cols);
	snprintf(rows, sizeof(rows), "%u", (unsigned)t->rows);
	/* A read-only identity's client is read-only to tmux too (its keys are dropped before
	 * they reach the PTY anyway), and it never sizes the window: resize-window without a
	 * size keeps the window's own, in manual mode (tmux would take the size of an
	 * ignore-size client that is alone, even in a server still configured "latest"). */
	if (t->c.who.admin)
		terminal_resize_words(t, argv, &w, cols, rows);
	else
		terminal_resize_words(t, argv, &w, NULL, NULL);
	argv[w++] = ";";
	argv[w++] = "attach-session";
	argv[w++] = "-E";
	if (!t->c.who.admin) {
		argv[w++] = "-f";
		argv[w++] = "read-only,ignore-size";
	}
	argv[w++] = "-t";
	argv[w++] = t->tmux_name;
	argv[w] = NULL;
	conn_unwatch_record(&t->c); /* the wait is over; restarted below for the exit */
	t->waiting = false;
	if (conn_ws_accept(&t->c, &ws_cb, &t->c, head, &n, &why) < 0) {
		terminal_respond(t, why.status, why.code, why.message, NULL);
		return;
	}
	r = ptyproc_spawn(&t->pty, b->loop, &spec, b->scratch, &pty_cb, t);
	if (r < 0) {
		log_error("session %s: cannot start a tmux client: %s", t->c.id, strerror(-r));
		terminal_respond(t, 503, "attach_failed", "cannot start a terminal", NULL);
		return;
	}
	if (conn_ws_begin(&t->c, head, n, terminal_now(t), b->opt.ping_interval_ms) < 0) {
		ptyproc_destroy(t->pty);
		t->pty = NULL;
		terminal_respond(t, 503, "no_memory", "out of memory", NULL);
		return;
	}
	http_request_destroy(t->c.req);
	t->c.req = NULL;
	if (t->c.who.admin)
		terminal_size_window(t, false);
	t->entry = roster_attach(b->roster, t->c.id);
	r = conn_watch_record(&t->c, b->store.dir, terminal_now(t));
	if (r < 0)
		log_warn(
		    "session %s: cannot watch its record (%s): an exit will not end the client",
		    t->c.id, uv_strerror(r));
	log_info("session %s: client attached (%d now, pid %d, %ux%u)", t->c.id,
		 roster_clients(b->roster, t->c.id), (int)ptyproc_pid(t->pty), t->cols, t->rows);
	if (t->c.ws_prefixed)
		conn_ws_recv(&t->c); /* frames that came with the request: no poll event for them */
	else
		conn_flush(&t->c);
}

/* Reads the record and attaches, waits, or refuses. */
static void terminal_lookup(struct terminal *t)
{
	struct conn_refusal why;
	struct session s;
	int r;

	switch (conn_lookup(&t->b->store, t->c.id, &s, &why)) {
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
		if (t->waiting) {
			if (terminal_now(t) >= t->c.deadline)
				terminal_respond(t, 409, "not_running",
						 "the session is still being created", NULL);
			return;
		}
		/* Watched first, then read again: a change between the two is not missed. */
		t->waiting = true;
		t->c.deadline = terminal_now(t) + t->b->opt.creating_wait_ms;
		r = conn_watch_record(&t->c, t->b->store.dir, terminal_now(t));
		if (r < 0)
			log_warn("session %s: cannot watch its record (%s): polling it", t->c.id,
				 uv_strerror(r));
		conn_update(&t->c);
		terminal_lookup(t);
		return;
	case CONN_RECORD_MISSING:
	case CONN_RECORD_UNAVAILABLE:
		terminal_respond(t, why.status, why.code, why.message, NULL);
		return;
	}
}

/* Checks the request against API.md, in the order that reveals least to a refused caller. */
static void terminal_handle_request(struct terminal *t)
{
	const struct http_request *req = t->c.req;
	const char *path = http_request_path(req), *extra;
	size_t plen = strlen(TERMINAL_PATH_PREFIX), slen = strlen(TERMINAL_PATH_SUFFIX);
	size_t len = strlen(path), idlen = len - plen - slen;
	struct conn_refusal why;
	long v;

	/* The route table sent /sessions/<segment>/terminal here; a segment too long is 404. */
	if (idlen > SESSION_ID_MAX) {
		terminal_respond(t, 404, "not_found", "no such resource", NULL);
		return;
	}
	memcpy(t->c.id, path + plen, idlen);
	t->c.id[idlen] = '\0';
	if (strcmp(http_request_method(req), "GET") != 0) {
		terminal_respond(t, 405, "method_not_allowed", "use GET with a WebSocket upgrade",
				 "Allow: GET\r\n");
		return;
	}
	if (!session_id_valid(t->c.id)) {
		terminal_respond(t, 400, "invalid_id", "malformed session id", NULL);
		return;
	}
	if (!conn_upgrade_ok(req, &why, &extra) ||
	    !conn_origin_ok(req, t->b->cfg->allowed_origins, "this Origin may not open terminals",
			    &why)) {
		terminal_respond(t, why.status, why.code, why.message, extra);
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

static void terminal_tick(struct conn *c, uint64_t now)
{
	struct terminal *t = c->data;
	const struct bridge_options *opt = &t->b->opt;

	if (c->phase == CONN_SERVICE) {
		if (t->waiting && (now >= c->deadline || conn_record_due(c, now)))
			terminal_lookup(t);
		return;
	}
	if (t->output_paused && now - t->paused_since >= opt->stall_timeout_ms) {
		log_warn("session %s: client has not read its output for %u ms, closing", t->c.id,
			 opt->stall_timeout_ms);
		conn_ws_close(c, WS_CLOSE_POLICY, "client does not read");
	}
}

static const struct conn_ops terminal_ops = {
    .kind = "terminal",
    .want = terminal_want,
    .on_poll = terminal_on_poll,
    .detach = terminal_detach,
    .flushed = terminal_backpressure,
    .record_changed = terminal_record_changed,
    .tick = terminal_tick,
    .release = terminal_release,
    .cut_overfull = true,
};

static int terminal_accept(struct bridge *b, int fd, struct http_request *req, int route)
{
	struct terminal *t = conn_open(sizeof(*t), offsetof(struct terminal, c), b->loop, fd,
				       &b->conns, &terminal_ops, req);

	if (t == NULL)
		return -ENOMEM;
	t->b = b;
	terminal_handle_request(t);
	if (t->c.phase == CONN_SERVICE)
		conn_update(&t->c);
	return 0;
}

static bool terminal_child_exited(struct bridge *b, pid_t pid)
{
	struct conn *c;

	LIST_FOREACH(c, &b->conns.head, link)
	{
		struct terminal *t = c->data;

		if (c->ops == &terminal_ops && t->pty != NULL && ptyproc_pid(t->pty) == pid) {
			ptyproc_set_reaped(t->pty);
			return true;
		}
		if (c->ops == &terminal_ops && t->sizer == pid) {
			t->sizer = 0;
			terminal_sizer_next(b, t->c.id);
			return true;
		}
	}
	return false;
}

const struct bridge_service terminal_service = {
    .accept = terminal_accept,
    .child_exited = terminal_child_exited,
};

const struct bridge_route terminal_routes[] = {
    {TERMINAL_PATH_PREFIX "*" TERMINAL_PATH_SUFFIX, &terminal_service, 0},
    {NULL, NULL, 0},
};
