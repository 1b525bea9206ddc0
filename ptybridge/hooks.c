#include "hooks.h"

#include "log.h"
#include "panes.h"
#include "proc.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define HOOKS_READ_CHUNK 4096
#define HOOKS_WARN_MAX   512 /* one warning line */

enum hook_state {
	HC_READING,   /* the report line, and who the peer is */
	HC_WAITING,   /* a PermissionRequest asked: the decision, the wait's end, or EOF */
	HC_ANSWERING, /* the last line is queued; the connection closes after it */
};

struct hook_conn {
	LIST_ENTRY(hook_conn) link;
	struct hooks *h;
	uv_pipe_t pipe;
	uv_timer_t timer;
	int open_handles;
	bool closing;
	enum hook_state state;
	pid_t peer;
	uid_t uid;
	uint64_t accepted_at;
	bool heard; /* a byte came */
	struct panes_proc chain[PANES_DEPTH_MAX];
	size_t depth;
	char id[SESSION_ID_MAX + 1]; /* "" until the peer's pane is known */
	uint64_t need_gen;           /* waits for the list of this refresh (0: not waiting) */
	char *buf;
	size_t len, cap;
	bool line; /* buf holds the whole report line (its newline replaced) */
	char request_id[HOSTPROTO_REQUEST_ID_MAX + 1];
};

struct hook_out {
	uv_write_t req;
	struct hook_conn *c;
	bool then_close;
	size_t len;
	char data[];
};

struct hooks {
	uv_loop_t *loop;
	struct hooks_options opt;
	uv_pipe_t server;
	unsigned refs; /* 1 until hooks_close, + each open handle of h, + each connection */
	bool closing;
	/* The panes as tmux last listed them, and the list being made. */
	struct panes *table;
	bool have_table;
	uint64_t table_at; /* uv_now when the last list started */
	uint64_t gen;      /* lists started */
	bool refreshing;
	uint64_t refresh_started_at;
	pid_t child;
	uv_pipe_t out;
	bool out_open;
	char *outbuf;
	size_t outlen;
	uv_timer_t refresh_timer; /* a list's start (rate limit) or its timeout */
	LIST_HEAD(, hook_conn) conns;
	unsigned nconns;
	/* Warnings about peers: how many this interval (since warn_since), and how many were left
	 * out (warn_timer logs their count when the interval ends). */
	uv_timer_t warn_timer;
	uint64_t warn_since;
	unsigned warned, suppressed;
};

static void hooks_unref(struct hooks *h)
{
	if (--h->refs > 0)
		return;
	free(h->table);
	free(h->outbuf);
	free(h);
}

static void hooks_handle_closed(uv_handle_t *handle)
{
	hooks_unref(handle->data);
}

static unsigned hooks_warn_interval(const struct hooks *h)
{
	return h->opt.warn_interval_ms > 0 ? h->opt.warn_interval_ms : HOOKS_WARN_INTERVAL_MS;
}

/* The interval with warnings left out is over: one line counts them; a new interval starts. */
static void hooks_warn_summary(struct hooks *h)
{
	if (h->suppressed > 0)
		log_warn("%u more warnings about hook connections in %u ms were left out",
			 h->suppressed, hooks_warn_interval(h));
	h->suppressed = 0;
	h->warned = 0;
	h->warn_since = uv_now(h->loop);
}

static void hooks_warn_timer(uv_timer_t *t)
{
	hooks_warn_summary(t->data);
}

/* A warning about a peer. Any local user can connect as often as it likes: past
 * HOOKS_WARN_BURST lines an interval, they are only counted. */
static void hooks_warn(struct hooks *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void hooks_warn(struct hooks *h, const char *fmt, ...)
{
	uint64_t now = uv_now(h->loop);
	char line[HOOKS_WARN_MAX];
	va_list ap;

	/* (while some are left out, warn_timer ends the interval) */
	if (h->suppressed == 0 && now - h->warn_since >= hooks_warn_interval(h)) {
		h->warn_since = now;
		h->warned = 0;
	}
	if (h->warned >= HOOKS_WARN_BURST) {
		if (h->suppressed++ == 0 && !h->closing)
			uv_timer_start(&h->warn_timer, hooks_warn_timer,
				       h->warn_since + hooks_warn_interval(h) - now, 0);
		return;
	}
	h->warned++;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	log_warn("%s", line);
}

/* ---- connections -------------------------------------------------------------------------- */

static void conn_handle_closed(uv_handle_t *handle)
{
	struct hook_conn *c = handle->data;
	struct hooks *h = c->h;

	if (--c->open_handles > 0)
		return;
	free(c->buf);
	free(c);
	hooks_unref(h);
}

/* Ends c without telling the sink anything (callers tell it first when they must). */
static void conn_close(struct hook_conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	LIST_REMOVE(c, link);
	c->h->nconns--;
	uv_close((uv_handle_t *)&c->pipe, conn_handle_closed);
	uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
}

/* A connection that asked and will wait no more: the sink learns why, then it ends. */
static void conn_abandon(struct hook_conn *c)
{
	const struct hooks_sink *sink = c->h->opt.sink;

	if (c->state == HC_WAITING) {
		c->state = HC_ANSWERING;
		sink->gone(sink->arg, c->id, c->request_id);
	}
	conn_close(c);
}

static void conn_written(uv_write_t *req, int status)
{
	struct hook_out *out = (struct hook_out *)req;
	struct hook_conn *c = out->c;
	bool then_close = out->then_close;

	free(out);
	if (status == UV_ECANCELED)
		return; /* c is closing */
	if (status < 0 || then_close)
		conn_close(c);
}

/* Queues len bytes of text for the peer (copied); then_close: the connection ends after them. */
static void conn_send(struct hook_conn *c, const char *text, size_t len, bool then_close)
{
	struct hook_out *out = malloc(sizeof(*out) + len);
	uv_buf_t buf;

	if (out == NULL) {
		conn_close(c);
		return;
	}
	out->c = c;
	out->then_close = then_close;
	out->len = len;
	memcpy(out->data, text, len);
	buf = uv_buf_init(out->data, (unsigned)len);
	if (uv_write(&out->req, (uv_stream_t *)&c->pipe, &buf, 1, conn_written) < 0) {
		free(out);
		conn_close(c);
	}
}

/* The last answer: a decision (NULL: none), then the end. */
static void conn_answer(struct hook_conn *c, json_object *decision)
{
	char *line = hookproto_answer_encode(decision);

	c->state = HC_ANSWERING;
	uv_timer_stop(&c->timer);
	if (line == NULL) {
		conn_close(c);
		return;
	}
	conn_send(c, line, strlen(line), true);
	free(line);
}

/* attention_decided_fn: a client answered (or the request was withdrawn: NULL). */
static void conn_decided(void *arg, json_object *decision)
{
	struct hook_conn *c = arg;

	if (c->state != HC_WAITING)
		return;
	conn_answer(c, decision);
}

static void conn_wait_over(uv_timer_t *t)
{
	struct hook_conn *c = t->data;
	const struct hooks_sink *sink = c->h->opt.sink;

	if (c->state == HC_WAITING) {
		/* No client answered in time: the TUI's dialog asks alone from now on. */
		c->state = HC_ANSWERING;
		sink->expired(sink->arg, c->id, c->request_id);
		conn_answer(c, NULL);
		return;
	}
	if (c->state == HC_READING && !c->heard)
		hooks_warn(c->h, "hook connection of pid %d: nothing sent within %d ms",
			   (int)c->peer, HOOKS_IDLE_MS);
	else if (c->state == HC_READING)
		hooks_warn(c->h, "hook connection of pid %d: no report within %d ms", (int)c->peer,
			   HOOKS_READ_TIMEOUT_MS);
	conn_close(c);
}

static void conn_dispatch(struct hook_conn *c)
{
	const struct hooks_sink *sink = c->h->opt.sink;
	struct cause cause = {{0}};
	struct hook_report rep;
	char interim[HOOKPROTO_INTERIM_MAX];
	int r, n;

	if (hookproto_report_decode(c->buf, c->len, &rep, &cause) < 0) {
		hooks_warn(c->h, "hook connection of pid %d (session %s): %s", (int)c->peer, c->id,
			   cause.msg);
		conn_close(c);
		return;
	}
	free(c->buf); /* the report is decoded: its text is not needed any more */
	c->buf = NULL;
	c->len = c->cap = 0;
	if (rep.event != HOOK_PERMISSION_REQUEST) {
		sink->report(sink->arg, c->id, rep.event, rep.payload);
		conn_answer(c, NULL);
		hookproto_report_clear(&rep);
		return;
	}
	if (c->h->opt.wait_ms == 0) {
		conn_answer(c, NULL); /* no wait: the TUI asks alone */
		hookproto_report_clear(&rep);
		return;
	}
	/* Waiting before the ask: a decision kept while the hook was away comes at once. */
	c->state = HC_WAITING;
	memcpy(c->request_id, rep.request_id, sizeof(c->request_id));
	r = sink->ask(sink->arg, c->id, rep.payload, conn_decided, c, c->request_id);
	hookproto_report_clear(&rep);
	if (c->state != HC_WAITING)
		return; /* answered already */
	if (r < 0) {
		c->state = HC_ANSWERING;
		if (r != -EALREADY && r != -ENOENT)
			hooks_warn(c->h, "session %s: a PermissionRequest hook cannot ask: %s",
				   c->id, strerror(-r));
		conn_answer(c, NULL);
		return;
	}
	n = hookproto_interim_encode(c->request_id, interim);
	if (n < 0) {
		conn_abandon(c);
		return;
	}
	conn_send(c, interim, (size_t)n, false);
	uv_timer_start(&c->timer, conn_wait_over, c->h->opt.wait_ms, 0);
}

static void conn_try_dispatch(struct hook_conn *c)
{
	if (c->state == HC_READING && c->line && c->id[0] != '\0' && !c->closing)
		conn_dispatch(c);
}

static void conn_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
	struct hook_conn *c = handle->data;
	size_t limit = HOOKPROTO_LINE_MAX + 1;

	(void)suggested;
	buf->base = NULL;
	buf->len = 0;
	if (c->state != HC_READING) {
		/* Only EOF is expected now; a byte is enough to see anything else. */
		static char sink[1];

		buf->base = sink;
		buf->len = sizeof(sink);
		return;
	}
	if (c->cap - c->len < HOOKS_READ_CHUNK && c->cap < limit) {
		size_t cap = c->cap == 0 ? HOOKS_READ_CHUNK : c->cap * 2;
		char *bigger;

		cap = cap > limit ? limit : cap;
		bigger = realloc(c->buf, cap);
		if (bigger == NULL)
			return; /* UV_ENOBUFS: the read callback ends the connection */
		c->buf = bigger;
		c->cap = cap;
	}
	buf->base = c->buf + c->len;
	buf->len = c->cap - c->len;
}

static void conn_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct hook_conn *c = stream->data;
	char *nl;

	if (c->closing || nread == 0)
		return;
	if (c->state != HC_READING) {
		/* EOF: claude ended the hook (its dialog was answered in the terminal); bytes:
		 * not the protocol. Either way the hook waits no more. */
		if (c->state == HC_WAITING && nread > 0)
			hooks_warn(c->h, "session %s: a waiting hook sent more: closed", c->id);
		conn_abandon(c);
		return;
	}
	if (nread < 0) {
		conn_close(c); /* gone before its whole report */
		return;
	}
	if (!c->heard) {
		/* Talking: the rest of the report's time, counted from the connection. */
		uint64_t end = c->accepted_at + HOOKS_READ_TIMEOUT_MS, now = uv_now(c->h->loop);

		c->heard = true;
		uv_timer_start(&c->timer, conn_wait_over, end > now ? end - now : 1, 0);
	}
	if (c->line) {
		hooks_warn(c->h, "hook connection of pid %d: more than one line", (int)c->peer);
		conn_close(c);
		return;
	}
	nl = memchr(buf->base, '\n', (size_t)nread);
	c->len += (size_t)nread;
	if (nl == NULL) {
		if (c->len > HOOKPROTO_LINE_MAX) {
			hooks_warn(c->h, "hook connection of pid %d: a report over %d bytes",
				   (int)c->peer, HOOKPROTO_LINE_MAX);
			conn_close(c);
		}
		return;
	}
	if (nl != c->buf + c->len - 1) {
		hooks_warn(c->h, "hook connection of pid %d: more than one line", (int)c->peer);
		conn_close(c);
		return;
	}
	c->len--; /* the newline */
	c->line = true;
	conn_try_dispatch(c);
}

/* ---- who the peer is: tmux's list of panes ------------------------------------------------ */

static void hooks_refresh(struct hooks *h);

static void hooks_refused(struct hook_conn *c)
{
	hooks_warn(c->h,
		   "hook connection of pid %d: not in the pane of any agentd session; refused",
		   (int)c->peer);
	conn_close(c);
}

/* c's peer is in session id's pane: c is that session's, unless the session has its share of
 * connections already (then c is refused). Returns whether c stays. */
static bool conn_admit(struct hook_conn *c, const char *id)
{
	const struct hooks_options *opt = &c->h->opt;
	struct hook_conn *o;
	unsigned n = 0;
	uid_t uid = opt->session_uid != NULL ? opt->session_uid(opt->session_uid_arg, id) : 0;

	if (uid != 0 && c->uid != uid) {
		hooks_warn(c->h,
			   "a hook connection of uid %u for session %s (uid %u): pid %d refused",
			   (unsigned)c->uid, id, (unsigned)uid, (int)c->peer);
		conn_close(c);
		return false;
	}
	LIST_FOREACH(o, &c->h->conns, link)
	if (o != c && strcmp(o->id, id) == 0)
		n++;
	if (n >= HOOKS_CONNS_PER_SESSION) {
		hooks_warn(c->h, "session %s has %u hook connections open: pid %d refused", id, n,
			   (int)c->peer);
		conn_close(c);
		return false;
	}
	memcpy(c->id, id, strlen(id) + 1);
	return true;
}

/* The list of refresh gen is in: every connection it can answer is identified or refused. */
static void hooks_resolve(struct hooks *h, uint64_t gen)
{
	struct hook_conn *c, *next;
	bool more = false;

	for (c = LIST_FIRST(&h->conns); c != NULL; c = next) {
		const char *id;

		next = LIST_NEXT(c, link);
		if (c->need_gen == 0)
			continue;
		id = panes_find(h->table, c->chain, c->depth);
		if (id != NULL) {
			c->need_gen = 0;
			if (conn_admit(c, id))
				conn_try_dispatch(c);
		} else if (c->need_gen <= gen) {
			c->need_gen = 0;
			hooks_refused(c);
		} else {
			more = true;
		}
	}
	if (more)
		hooks_refresh(h);
}

static void hooks_list_closed(uv_handle_t *handle)
{
	struct hooks *h = handle->data;

	h->out_open = false;
	hooks_unref(h);
}

/* The list ended (EOF, an error, or its timeout): parse what came and answer the waiters. */
static void hooks_list_done(struct hooks *h)
{
	uint64_t gen = h->gen;

	if (h->out_open && !uv_is_closing((uv_handle_t *)&h->out))
		uv_close((uv_handle_t *)&h->out, hooks_list_closed);
	uv_timer_stop(&h->refresh_timer);
	h->refreshing = false;
	panes_parse(h->table, h->opt.proc_root, h->outbuf, h->outlen);
	h->have_table = true;
	h->table_at = h->refresh_started_at;
	h->outlen = 0;
	if (!h->closing)
		hooks_resolve(h, gen);
}

static void hooks_list_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
	struct hooks *h = handle->data;

	(void)suggested;
	if (h->outlen < PANES_OUTPUT_MAX) {
		buf->base = h->outbuf + h->outlen;
		buf->len = PANES_OUTPUT_MAX - h->outlen;
	} else {
		/* Over the limit: read on and drop it, so tmux is not blocked. */
		static char sink[HOOKS_READ_CHUNK];

		buf->base = sink;
		buf->len = sizeof(sink);
	}
}

static void hooks_list_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct hooks *h = stream->data;

	if (nread < 0) {
		hooks_list_done(h);
		return;
	}
	if (h->outlen < PANES_OUTPUT_MAX && buf->base == h->outbuf + h->outlen)
		h->outlen += (size_t)nread;
}

static void hooks_refresh_timer(uv_timer_t *t)
{
	struct hooks *h = t->data;

	if (h->refreshing) {
		log_warn("tmux list-panes gave no answer within %d ms: killed",
			 HOOKS_TMUX_TIMEOUT_MS);
		if (h->child > 0)
			kill(h->child, SIGKILL);
		hooks_list_done(h);
		return;
	}
	hooks_refresh(h);
}

/* Starts tmux's list now, or once HOOKS_REFRESH_MIN_MS have passed since the last one. */
static void hooks_refresh(struct hooks *h)
{
	struct proc_opts opts = {.envp = h->opt.panes_env, .keep_fd = -1};
	uint64_t now = uv_now(h->loop);
	int fd, r;
	pid_t pid;

	if (h->refreshing || h->closing)
		return;
	if (h->have_table && now < h->table_at + HOOKS_REFRESH_MIN_MS) {
		uv_timer_start(&h->refresh_timer, hooks_refresh_timer,
			       h->table_at + HOOKS_REFRESH_MIN_MS - now, 0);
		return;
	}
	h->gen++;
	h->refreshing = true;
	h->refresh_started_at = now;
	h->outlen = 0;
	r = proc_start(h->opt.panes_argv, &opts, &fd, &pid);
	if (r < 0) {
		log_error("cannot run %s to list the panes: %s", h->opt.panes_argv[0],
			  strerror(-r));
		hooks_list_done(h);
		return;
	}
	h->child = pid;
	if ((r = uv_pipe_init(h->loop, &h->out, 0)) < 0) {
		close(fd);
		hooks_list_done(h);
		return;
	}
	h->out.data = h;
	h->out_open = true;
	h->refs++;
	if ((r = uv_pipe_open(&h->out, fd)) < 0) {
		close(fd);
		hooks_list_done(h);
		return;
	}
	if ((r = uv_read_start((uv_stream_t *)&h->out, hooks_list_alloc, hooks_list_read)) < 0) {
		hooks_list_done(h);
		return;
	}
	uv_timer_start(&h->refresh_timer, hooks_refresh_timer, HOOKS_TMUX_TIMEOUT_MS, 0);
}

bool hooks_child_exited(struct hooks *h, pid_t pid)
{
	if (h == NULL || pid <= 0 || pid != h->child)
		return false;
	h->child = 0;
	return true;
}

/* ---- the socket --------------------------------------------------------------------------- */

/* Who c's peer is: from the list at hand, or from the next one. */
static void conn_identify(struct hook_conn *c)
{
	struct hooks *h = c->h;
	const char *id = h->have_table ? panes_find(h->table, c->chain, c->depth) : NULL;
	struct hook_conn *o;
	unsigned pending = 0;

	if (id != NULL) {
		conn_admit(c, id);
		return;
	}
	LIST_FOREACH(o, &h->conns, link)
	if (o->need_gen != 0 && o->uid == c->uid)
		pending++;
	if (pending >= HOOKS_PENDING_PER_UID) {
		hooks_warn(h, "uid %u has %u hook connections in no known pane: pid %d refused",
			   (unsigned)c->uid, pending, (int)c->peer);
		conn_close(c);
		return;
	}
	/* Only a list started after this connection may refuse it: its pane may be newer than
	 * the list at hand or than the one being made. */
	c->need_gen = h->gen + 1;
	hooks_refresh(h);
}

static void hooks_on_connection(uv_stream_t *server, int status)
{
	struct hooks *h = server->data;
	struct hook_conn *c;
	struct ucred cred;
	socklen_t credlen = sizeof(cred);
	uv_os_fd_t fd;

	if (status < 0 || h->closing)
		return;
	c = calloc(1, sizeof(*c));
	if (c == NULL || uv_pipe_init(h->loop, &c->pipe, 0) < 0) {
		free(c);
		return; /* it waits in the backlog */
	}
	c->h = h;
	c->pipe.data = c;
	c->timer.data = c;
	uv_timer_init(h->loop, &c->timer);
	c->open_handles = 2;
	h->refs++;
	LIST_INSERT_HEAD(&h->conns, c, link);
	h->nconns++;
	if (uv_accept(server, (uv_stream_t *)&c->pipe) < 0) {
		conn_close(c);
		return;
	}
	if (h->nconns > HOOKS_CONNS_MAX) {
		hooks_warn(h, "refusing a hook connection: %u open", h->nconns - 1);
		conn_close(c);
		return;
	}
	if (uv_fileno((uv_handle_t *)&c->pipe, &fd) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &credlen) < 0 || cred.pid <= 0) {
		conn_close(c);
		return;
	}
	c->peer = cred.pid;
	c->uid = cred.uid;
	c->accepted_at = uv_now(h->loop);
	c->depth = panes_ancestry(h->opt.proc_root, cred.pid, c->chain, PANES_DEPTH_MAX);
	uv_timer_start(&c->timer, conn_wait_over, HOOKS_IDLE_MS, 0);
	if (uv_read_start((uv_stream_t *)&c->pipe, conn_alloc, conn_read) < 0) {
		conn_close(c);
		return;
	}
	if (c->depth == 0) {
		conn_close(c); /* gone already */
		return;
	}
	conn_identify(c);
}

struct hooks *hooks_open(uv_loop_t *loop, const struct hooks_options *opt, struct cause *cause)
{
	struct hooks *h = calloc(1, sizeof(*h));
	int r;

	if (h == NULL || (h->table = calloc(1, sizeof(*h->table))) == NULL ||
	    (h->outbuf = malloc(PANES_OUTPUT_MAX)) == NULL) {
		if (h != NULL) {
			free(h->table);
			free(h);
		}
		cause_set(cause, "out of memory");
		return NULL;
	}
	h->loop = loop;
	h->opt = *opt;
	if (h->opt.proc_root == NULL)
		h->opt.proc_root = PANES_PROC_ROOT;
	h->refs = 1;
	LIST_INIT(&h->conns);
	uv_timer_init(loop, &h->refresh_timer);
	h->refresh_timer.data = h;
	h->refs++;
	uv_timer_init(loop, &h->warn_timer);
	h->warn_timer.data = h;
	h->refs++;
	r = uv_pipe_init(loop, &h->server, 0);
	if (r < 0) {
		cause_set(cause, "cannot make the hook socket: %s", uv_strerror(r));
		uv_close((uv_handle_t *)&h->refresh_timer, hooks_handle_closed);
		uv_close((uv_handle_t *)&h->warn_timer, hooks_handle_closed);
		hooks_unref(h);
		return NULL;
	}
	h->server.data = h;
	h->refs++;
	/* Ours: the bridge socket is (a live bridge would have kept us from starting). */
	unlink(opt->socket_path);
	r = uv_pipe_bind(&h->server, opt->socket_path);
	if (r == 0 && chmod(opt->socket_path, HOOKS_SOCKET_MODE) < 0)
		r = -errno;
	if (r == 0)
		r = uv_listen((uv_stream_t *)&h->server, SOMAXCONN, hooks_on_connection);
	if (r < 0) {
		cause_set(cause, "cannot listen on %s: %s", opt->socket_path, uv_strerror(r));
		hooks_close(h);
		return NULL;
	}
	return h;
}

void hooks_close(struct hooks *h)
{
	if (h == NULL || h->closing)
		return;
	h->closing = true;
	unlink(h->opt.socket_path);
	while (!LIST_EMPTY(&h->conns))
		conn_close(LIST_FIRST(&h->conns));
	if (h->out_open && !uv_is_closing((uv_handle_t *)&h->out))
		uv_close((uv_handle_t *)&h->out, hooks_list_closed);
	uv_close((uv_handle_t *)&h->server, hooks_handle_closed);
	uv_close((uv_handle_t *)&h->refresh_timer, hooks_handle_closed);
	if (h->suppressed > 0)
		hooks_warn_summary(h);
	uv_close((uv_handle_t *)&h->warn_timer, hooks_handle_closed);
	hooks_unref(h);
}
