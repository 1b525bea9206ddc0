#include "conn.h"

#include "http.h"
#include "log.h"
#include "store.h"
#include "ws.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* One piece of queued output; written from off on. */
struct conn_chunk {
	struct conn_chunk *next;
	size_t len, off;
	char data[];
};

int conn_init(struct conn *c, uv_loop_t *loop, int fd, void *data)
{
	int r;

	memset(c, 0, sizeof(*c));
	c->fd = fd;
	r = uv_poll_init(loop, &c->poll, fd);
	if (r < 0)
		return r;
	c->poll.data = data;
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

void conn_close(struct conn *c, uv_close_cb cb)
{
	uv_close((uv_handle_t *)&c->poll, cb);
}

void conn_release(struct conn *c)
{
	conn_drop_output(c);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

char *conn_reserve(struct conn *c, size_t len)
{
	struct conn_chunk *k = malloc(sizeof(*k) + len);

	if (k == NULL)
		return NULL;
	k->next = NULL;
	k->len = len;
	k->off = 0;
	if (c->out_tail != NULL)
		c->out_tail->next = k;
	else
		c->out_head = k;
	c->out_tail = k;
	c->out_bytes += len;
	return k->data;
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

enum conn_record conn_lookup(const struct store *st, const char *id, struct session *s,
			     struct conn_refusal *why)
{
	struct cause cause = {{0}};
	int r;

	r = store_read(st, id, s, &cause);
	if (r == -ENOENT) {
		why->status = 404;
		why->code = "not_found";
		snprintf(why->message, sizeof(why->message), "no such session");
		return CONN_RECORD_MISSING;
	}
	if (r < 0) {
		log_error("session %s: %s", id, cause.msg);
		why->status = 500;
		why->code = "store_error";
		snprintf(why->message, sizeof(why->message), "cannot read the session record");
		return CONN_RECORD_MISSING;
	}
	switch (s->state) {
	case SESSION_RUNNING:
	case SESSION_ATTACHED:
		return CONN_RECORD_READY;
	case SESSION_CREATING:
		return CONN_RECORD_CREATING;
	case SESSION_FAILED:
	case SESSION_STOPPING:
	case SESSION_EXITED:
	case SESSION_LOST:
		break;
	}
	why->status = 409;
	why->code = session_unavailable(s, why->message, sizeof(why->message));
	return CONN_RECORD_UNAVAILABLE;
}
