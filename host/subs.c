#include "subs.h"

#include "host.h"
#include "hostproto.h"
#include "log.h"
#include "requests.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define SUBS_SLICES 64 /* slices of a batch sent without an allocation */

/* A write to a subscriber: part of a batch (held by reference) or a copy of a line. */
struct sub_write {
	uv_write_t req;
	struct evlog_batch *batch;
	char data[];
};

static void sub_pump(struct sub *s);

static size_t sub_queued(const struct sub *s)
{
	return uv_stream_get_write_queue_size((const uv_stream_t *)&s->pipe);
}

static void sub_closed(uv_handle_t *handle)
{
	struct sub *s = handle->data;

	hostproto_reader_free(&s->req);
	free(s);
}

static void sub_close(struct sub *s)
{
	struct sub **pp;

	if (s->closing)
		return;
	s->closing = true;
	for (pp = &s->host->subs.head; *pp != NULL; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	uv_close((uv_handle_t *)&s->pipe, sub_closed);
}

static void sub_shutdown_done(uv_shutdown_t *req, int status)
{
	struct sub *s = req->handle->data;

	free(req);
	sub_close(s);
}

/* Closes s once everything queued has been written. */
static void sub_finish(struct sub *s)
{
	uv_shutdown_t *req;

	if (s->closing || s->state == SUB_DONE)
		return;
	s->state = SUB_DONE;
	req = malloc(sizeof(*req));
	if (req == NULL || uv_shutdown(req, (uv_stream_t *)&s->pipe, sub_shutdown_done) < 0) {
		free(req);
		sub_close(s);
	}
}

static void sub_write_done(uv_write_t *w, int status)
{
	struct sub_write *sw = (struct sub_write *)w;
	struct sub *s = w->handle->data;

	evlog_batch_unref(sw->batch);
	free(sw);
	/* A replay goes on as the queue empties. */
	if (status == 0 && !s->closing && s->state == SUB_REPLAY)
		sub_pump(s);
}

/* Queues a copy of a line for s. */
static void sub_send_copy(struct sub *s, const char *line, size_t len)
{
	struct sub_write *w;
	uv_buf_t b;

	if (s->closing || s->state == SUB_DONE)
		return;
	w = malloc(sizeof(*w) + len);
	if (w == NULL) {
		sub_close(s);
		return;
	}
	w->batch = NULL;
	memcpy(w->data, line, len);
	b = uv_buf_init(w->data, (unsigned)len);
	if (uv_write(&w->req, (uv_stream_t *)&s->pipe, &b, 1, sub_write_done) < 0) {
		free(w);
		sub_close(s);
	}
}

static void sub_send_pending(void *arg, const char *line, size_t len)
{
	sub_send_copy(arg, line, len);
}

/*
 * Sends s the events of b (which starts at s's offset) it has not had: ids above s->after, up to
 * the turn's result for a prompt's stream, which then ends. Consecutive lines go as one slice of
 * b, which the write holds by reference.
 */
static void sub_send_batch(struct sub *s, struct evlog_batch *b)
{
	uv_buf_t small[SUBS_SLICES], *bufs = small;
	size_t nb = 0, end = b->len;
	bool done = false;
	struct sub_write *w;

	if (b->n > SUBS_SLICES && (bufs = malloc(b->n * sizeof(*bufs))) == NULL) {
		sub_close(s);
		return;
	}
	for (size_t i = 0; i < b->n && !done; i++) {
		const struct evlog_entry *e = &b->ev[i];

		if (e->id <= s->after)
			continue;
		if (nb > 0 && bufs[nb - 1].base + bufs[nb - 1].len == b->data + e->off)
			bufs[nb - 1].len += e->len;
		else
			bufs[nb++] = uv_buf_init(b->data + e->off, (unsigned)e->len);
		if (s->end_id != 0 && e->id == s->end_id) {
			done = true;
			end = e->off + e->len;
		}
	}
	s->offset = b->at + (off_t)end;
	if (nb > 0) {
		w = malloc(sizeof(*w));
		if (w == NULL) {
			sub_close(s);
			goto out;
		}
		w->batch = evlog_batch_ref(b);
		if (uv_write(&w->req, (uv_stream_t *)&s->pipe, bufs, (unsigned)nb, sub_write_done) <
		    0) {
			evlog_batch_unref(b);
			free(w);
			sub_close(s);
			goto out;
		}
	}
	if (done)
		sub_finish(s);
out:
	if (bufs != small)
		free(bufs);
}

/* At the log's end: live from now on (after a first replay, pending permissions again). */
static void sub_go_live(struct sub *s)
{
	s->state = SUB_LIVE;
	if (!s->replayed) {
		s->replayed = true;
		perms_each_pending(&s->host->perms, s->after, sub_send_pending, s);
	}
	if (s->draining)
		sub_finish(s);
}

/* Sends lines of the log while the queue is short; goes on from sub_write_done. */
static void sub_pump(struct sub *s)
{
	struct host *h = s->host;

	while (!s->closing && s->state == SUB_REPLAY && sub_queued(s) < SUBS_QUEUE_HIGH) {
		struct evlog_batch *b = NULL;
		int r;

		if (s->offset >= h->log.end) {
			sub_go_live(s);
			return;
		}
		r = evlog_read(&h->log, s->offset, SUBS_REPLAY_CHUNK, &b);
		if (r < 0 || b->len == 0) {
			/* The stream cannot go on: it ends with an error the bridge passes on. */
			log_error("cannot read %s at %lld: %s", h->log_path, (long long)s->offset,
				  strerror(r < 0 ? -r : EIO));
			evlog_batch_unref(b);
			sub_error(s, 500, "log_error", "cannot read the event log");
			return;
		}
		sub_send_batch(s, b);
		evlog_batch_unref(b);
	}
}

void subs_publish(struct host *h, struct evlog_batch *b)
{
	struct sub *s, *next;

	for (s = h->subs.head; s != NULL; s = next) {
		next = s->next;
		if (s->state != SUB_LIVE || s->closing)
			continue;
		/* Behind: it catches up from the log (from this batch on) as its queue empties. */
		if (sub_queued(s) >= SUBS_QUEUE_HIGH) {
			s->state = SUB_REPLAY;
			continue;
		}
		sub_send_batch(s, b);
	}
}

/* ---- answers ------------------------------------------------------------------------------ */

void sub_subscribe(struct sub *s, uint64_t after)
{
	s->after = after;
	s->offset = 0;
	s->state = SUB_REPLAY;
	sub_pump(s);
}

void sub_prompt(struct sub *s, uint64_t after, uint64_t no, uint64_t queued)
{
	char line[HOSTPROTO_ANSWER_MAX];
	int n = hostproto_accepted_format(after, queued, line, sizeof(line));

	s->after = after;
	s->offset = s->host->log.end;
	s->prompt_no = no;
	s->replayed = true;
	s->state = SUB_LIVE;
	if (n > 0)
		sub_send_copy(s, line, (size_t)n);
}

void sub_hold(struct sub *s)
{
	s->after = UINT64_MAX;
}

void subs_turn_ended(struct host *h, uint64_t id, uint64_t done)
{
	for (struct sub *s = h->subs.head; s != NULL; s = s->next) {
		if (s->prompt_no == 0 || s->end_id != 0)
			continue;
		if (s->prompt_no <= done) {
			/* Its turn ended (a queued prompt claude folded into the running turn
			 * ends with it). */
			s->end_id = id;
			if (s->after >= id)
				s->after = id - 1;
		} else if (s->prompt_no == done + 1 && s->after > id) {
			s->after = id; /* its turn begins after this result */
		}
	}
}

void sub_ok(struct sub *s)
{
	char line[HOSTPROTO_ANSWER_MAX];
	int n = hostproto_ok_format(line, sizeof(line));

	if (n > 0)
		sub_send_copy(s, line, (size_t)n);
	sub_finish(s);
}

void sub_error(struct sub *s, int status, const char *code, const char *msg)
{
	char line[HOSTPROTO_ANSWER_MAX];
	int n = hostproto_error_format(status, code, msg, line, sizeof(line));

	if (n > 0)
		sub_send_copy(s, line, (size_t)n);
	sub_finish(s);
}

/* ---- the request line --------------------------------------------------------------------- */

static int sub_request(void *arg, const char *line, size_t len)
{
	struct sub *s = arg;
	struct hostproto_request req;
	const char *why = NULL;

	if (line == NULL) {
		sub_error(s, 413, "request_too_large", "the request line is too long");
		return 1;
	}
	if (hostproto_request_parse(line, len, &req, &why) < 0) {
		sub_error(s, 400, "invalid_request", why);
		return 1;
	}
	/* Who a peer the host cannot vouch for says it is counts for nothing. */
	if (!s->vouched)
		req.by = SUBS_UNVOUCHED;
	requests_handle(s->host, s, &req);
	hostproto_request_release(&req);
	return 1;
}

static void sub_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
	buf->base = malloc(SUBS_READ_CHUNK);
	buf->len = buf->base != NULL ? SUBS_READ_CHUNK : 0;
}

/* The request line; later bytes are not read for anything but the end of the connection. */
static void sub_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct sub *s = stream->data;

	if (nread < 0) {
		sub_close(s);
	} else if (nread > 0 && s->state == SUB_REQUEST) {
		int r = hostproto_reader_feed(&s->req, buf->base, (size_t)nread, sub_request, s);

		if (r < 0)
			sub_close(s);
		else if (r > 0)
			hostproto_reader_free(&s->req);
	}
	free(buf->base);
}

/*
 * Whether the peer on pipe is agentd-bridge (or another of the daemons): the socket is the agent
 * user's, so any agent reaches it, and only a daemon knows who answers a permission request. A
 * daemon runs as root, or as the owner of the runtime directory where the daemons are not root
 * (then nothing is contained: DESIGN.md, "Who runs as whom").
 */
static bool subs_vouched(const struct host *h, uv_pipe_t *pipe)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	uv_os_fd_t fd;

	if (uv_fileno((uv_handle_t *)pipe, &fd) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return false;
	return cred.uid == 0 || cred.uid == h->subs.daemons_uid;
}

static void subs_accept(uv_stream_t *server, int status)
{
	struct host *h = server->data;
	struct sub *s;

	if (status < 0)
		return;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return;
	s->host = h;
	hostproto_reader_init(&s->req, HOSTPROTO_REQUEST_MAX);
	uv_pipe_init(h->loop, &s->pipe, 0);
	s->pipe.data = s;
	if (uv_accept(server, (uv_stream_t *)&s->pipe) < 0) {
		uv_close((uv_handle_t *)&s->pipe, sub_closed);
		return;
	}
	s->vouched = subs_vouched(h, &s->pipe);
	s->next = h->subs.head;
	h->subs.head = s;
	uv_read_start((uv_stream_t *)&s->pipe, sub_alloc, sub_read);
}

int subs_listen(struct host *h, const char *dir)
{
	char cwd[CONFIG_PATH_MAX];
	struct stat st;
	int r;

	/* No daemon but root when the runtime directory cannot be looked at. */
	h->subs.daemons_uid = stat(h->cfg->runtime_dir, &st) == 0 ? st.st_uid : 0;
	uv_timer_init(h->loop, &h->subs.drain_timer);
	h->subs.drain_timer.data = h;
	uv_pipe_init(h->loop, &h->subs.server, 0);
	h->subs.server.data = h;
	/* sun_path holds 108 bytes; a long runtime dir plus a 100-character id would not fit, so
	 * bind relative to the session directory. */
	if (getcwd(cwd, sizeof(cwd)) == NULL || chdir(dir) < 0)
		return -errno;
	unlink("host.sock");
	r = uv_pipe_bind(&h->subs.server, "host.sock");
	/* The agent user's socket (the host runs as it), for the daemons' group (the directory's,
	 * setgid): the bridge connects without any capability; the umask would deny its group. */
	if (r == 0 && chmod("host.sock", HOSTPROTO_SOCKET_MODE) < 0)
		r = -errno;
	if (r == 0)
		r = uv_listen((uv_stream_t *)&h->subs.server, SUBS_BACKLOG, subs_accept);
	if (chdir(cwd) < 0 && r == 0)
		r = -errno;
	return r;
}

/* ---- the end ------------------------------------------------------------------------------ */

static void subs_close_all(struct host *h)
{
	while (h->subs.head != NULL)
		sub_close(h->subs.head);
}

static void subs_drain_late(uv_timer_t *t)
{
	struct host *h = t->data;

	if (h->subs.head != NULL)
		log_warn("closing subscribers that did not take the last events in %d ms",
			 SUBS_DRAIN_MS);
	subs_close_all(h);
}

void subs_drain(struct host *h)
{
	struct sub *s, *next;

	if (!uv_is_closing((uv_handle_t *)&h->subs.server))
		uv_close((uv_handle_t *)&h->subs.server, NULL);
	for (s = h->subs.head; s != NULL; s = next) {
		next = s->next;
		if (s->state == SUB_REQUEST)
			sub_close(s);
		else if (s->state == SUB_LIVE)
			sub_finish(s);
		else if (s->state == SUB_REPLAY)
			s->draining = true;
	}
	/* The timer alone does not keep the loop running. */
	uv_timer_start(&h->subs.drain_timer, subs_drain_late, SUBS_DRAIN_MS, 0);
	uv_unref((uv_handle_t *)&h->subs.drain_timer);
}

void subs_close(struct host *h)
{
	subs_close_all(h);
	if (!uv_is_closing((uv_handle_t *)&h->subs.server))
		uv_close((uv_handle_t *)&h->subs.server, NULL);
	if (!uv_is_closing((uv_handle_t *)&h->subs.drain_timer))
		uv_close((uv_handle_t *)&h->subs.drain_timer, NULL);
}
