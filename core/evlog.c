#include "evlog.h"

#include "hostproto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EVLOG_TAIL_CHUNK (64 * 1024)
#define EVLOG_DATA_MIN   (64 * 1024) /* first room of a batch */
#define EVLOG_EV_MIN     64
#define EVLOG_RESULT     "result"
#define EVLOG_HEAD_CHUNK 4096 /* read to find the first event line */

/* The id of an event line, or 0 when it is none. */
static uint64_t evlog_line_id(const char *line, size_t len, bool *result)
{
	struct hostproto_event ev;

	*result = false;
	if (hostproto_event_parse(line, len, &ev) < 0)
		return 0;
	*result =
	    ev.name_len == strlen(EVLOG_RESULT) && memcmp(ev.name, EVLOG_RESULT, ev.name_len) == 0;
	return ev.id;
}

/* The id at the start of a line ({"id":N,...}), read from a head of it only. */
static uint64_t evlog_head_id(const char *head, size_t len)
{
	static const char prefix[] = "{\"id\":";
	uint64_t id = 0;
	size_t i = sizeof(prefix) - 1;

	if (len < i || memcmp(head, prefix, i) != 0)
		return 0;
	for (; i < len && head[i] >= '0' && head[i] <= '9' && i < 30; i++)
		id = id * 10 + (uint64_t)(head[i] - '0');
	return i < len && head[i] == ',' ? id : 0;
}

/* The id at the head of the line that starts at off, or 0. */
static uint64_t evlog_id_at(int fd, off_t off)
{
	char head[40];
	ssize_t h = pread(fd, head, sizeof(head), off);

	return h > 0 ? evlog_head_id(head, (size_t)h) : 0;
}

/*
 * The last id is in the last line that carries one (a torn or foreign line after it must not
 * make the ids start over); lines can be long, so scan back chunk by chunk.
 */
static uint64_t evlog_scan_last(int fd, off_t end)
{
	char *buf = malloc(EVLOG_TAIL_CHUNK);
	uint64_t id = 0;
	off_t pos;

	if (buf == NULL || end <= 0)
		goto out;
	/* Each '\n' before the final byte starts a line: try them from the last one back. */
	for (pos = end - 1; pos > 0 && id == 0;) {
		off_t from = pos > EVLOG_TAIL_CHUNK ? pos - EVLOG_TAIL_CHUNK : 0;
		ssize_t n = pread(fd, buf, (size_t)(pos - from), from);

		if (n <= 0)
			break;
		for (ssize_t i = n - 1; i >= 0 && id == 0; i--)
			if (buf[i] == '\n' && from + i < end - 1)
				id = evlog_id_at(fd, from + i + 1);
		pos = from;
	}
	if (id == 0)
		id = evlog_id_at(fd, 0);
out:
	free(buf);
	return id;
}

/* Opens path (for appending when append, creating it) and finds its end and last id. */
static int evlog_open_mode(struct evlog *log, const char *path, bool append)
{
	int flags = append ? O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC : O_RDONLY | O_CLOEXEC;

	log->fd = open(path, flags, 0640);
	if (log->fd < 0)
		return -errno;
	log->end = lseek(log->fd, 0, SEEK_END);
	if (log->end < 0) {
		int e = errno;

		evlog_close(log);
		return -e;
	}
	/* A writer that died mid-write left a torn line: end it, so that the next event starts a
	 * line of its own and the torn one is no event to anyone who reads the log back. */
	if (append && log->end > 0) {
		char last;

		if (pread(log->fd, &last, 1, log->end - 1) == 1 && last != '\n' &&
		    write(log->fd, "\n", 1) == 1)
			log->end++;
	}
	log->last_id = evlog_scan_last(log->fd, log->end);
	return 0;
}

int evlog_open(struct evlog *log, const char *path)
{
	return evlog_open_mode(log, path, true);
}

int evlog_open_read(struct evlog *log, const char *path)
{
	return evlog_open_mode(log, path, false);
}

uint64_t evlog_first_id(const struct evlog *log)
{
	off_t at = 0;

	/* Lines before the first event can only be torn ones: a few at most. */
	while (at < log->end) {
		struct evlog_batch *b = NULL;
		uint64_t id = 0;

		if (evlog_read(log, at, EVLOG_HEAD_CHUNK, &b) < 0 || b->len == 0) {
			evlog_batch_unref(b);
			return 0;
		}
		for (size_t i = 0; i < b->n && id == 0; i++)
			id = b->ev[i].id;
		at += (off_t)b->len;
		evlog_batch_unref(b);
		if (id != 0)
			return id;
	}
	return 0;
}

int evlog_rotate(struct evlog *log, struct evlog *old, const char *path, const char *old_path)
{
	struct evlog fresh;
	int r;

	if (rename(path, old_path) < 0)
		return -errno;
	r = evlog_open(&fresh, path);
	if (r < 0) {
		/* Put it back, so that path stays the file being written. */
		if (rename(old_path, path) < 0)
			r = -errno;
		return r;
	}
	fresh.last_id = log->last_id;
	evlog_close(old);
	*old = *log;
	*log = fresh;
	return 0;
}

void evlog_close(struct evlog *log)
{
	if (log->fd >= 0)
		close(log->fd);
	log->fd = -1;
}

struct evlog_batch *evlog_batch_new(void)
{
	struct evlog_batch *b = calloc(1, sizeof(*b));

	if (b != NULL)
		b->refs = 1;
	return b;
}

struct evlog_batch *evlog_batch_ref(struct evlog_batch *b)
{
	b->refs++;
	return b;
}

void evlog_batch_unref(struct evlog_batch *b)
{
	if (b == NULL || --b->refs > 0)
		return;
	free(b->data);
	free(b->ev);
	free(b);
}

/* Room for more bytes of data and one more entry. Returns 0 or -ENOMEM. */
static int evlog_batch_grow(struct evlog_batch *b, size_t more)
{
	if (b->len + more > b->cap) {
		size_t cap = b->cap > 0 ? b->cap : EVLOG_DATA_MIN;
		char *grown;

		while (cap < b->len + more)
			cap *= 2;
		grown = realloc(b->data, cap);
		if (grown == NULL)
			return -ENOMEM;
		b->data = grown;
		b->cap = cap;
	}
	if (b->n == b->ev_cap) {
		size_t cap = b->ev_cap > 0 ? 2 * b->ev_cap : EVLOG_EV_MIN;
		struct evlog_entry *grown = realloc(b->ev, cap * sizeof(*grown));

		if (grown == NULL)
			return -ENOMEM;
		b->ev = grown;
		b->ev_cap = cap;
	}
	return 0;
}

int64_t evlog_batch_add(struct evlog *log, struct evlog_batch *b, const char *name,
			const char *data, size_t data_len)
{
	char head[HOSTPROTO_EVENT_HEAD_MAX];
	uint64_t id = log->last_id + 1;
	int hn = hostproto_event_head(id, name, head);
	size_t tail = strlen(HOSTPROTO_EVENT_TAIL), len;
	struct evlog_entry *e;

	if (hn < 0)
		return -EINVAL;
	len = (size_t)hn + data_len + tail;
	if (evlog_batch_grow(b, len) < 0)
		return -ENOMEM;
	e = &b->ev[b->n++];
	e->off = b->len;
	e->len = len;
	e->id = id;
	e->result = strcmp(name, EVLOG_RESULT) == 0;
	memcpy(b->data + b->len, head, (size_t)hn);
	memcpy(b->data + b->len + hn, data, data_len);
	memcpy(b->data + b->len + hn + data_len, HOSTPROTO_EVENT_TAIL, tail);
	b->len += len;
	log->last_id = id;
	return (int64_t)id;
}

int evlog_batch_write(struct evlog *log, struct evlog_batch *b)
{
	size_t done = 0;

	b->at = log->end;
	while (done < b->len) {
		ssize_t n = write(log->fd, b->data + done, b->len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;

			/* What did go in is a torn line readers skip; the ids are given back. */
			log->end += (off_t)done;
			log->last_id = b->n > 0 ? b->ev[0].id - 1 : log->last_id;
			return -e;
		}
		done += (size_t)n;
	}
	log->end += (off_t)b->len;
	return 0;
}

/* Finds the entries of the whole lines in b->data[0, len). */
static int evlog_index(struct evlog_batch *b, size_t len)
{
	size_t off = 0;

	while (off < len) {
		const char *nl = memchr(b->data + off, '\n', len - off);
		size_t n = (size_t)(nl - (b->data + off)) + 1;
		struct evlog_entry *e;

		if (evlog_batch_grow(b, 0) < 0)
			return -ENOMEM;
		e = &b->ev[b->n++];
		e->off = off;
		e->len = n;
		e->id = evlog_line_id(b->data + off, n - 1, &e->result);
		off += n;
	}
	b->len = len;
	return 0;
}

int evlog_read(const struct evlog *log, off_t at, size_t want, struct evlog_batch **out)
{
	struct evlog_batch *b = evlog_batch_new();
	size_t left = at < log->end ? (size_t)(log->end - at) : 0;
	int r = -ENOMEM;

	if (b == NULL)
		return -ENOMEM;
	b->at = at;
	for (;;) {
		size_t n = want < left ? want : left;
		ssize_t got;
		char *nl;

		if (n == 0)
			break;
		if (n > b->cap) {
			char *grown = realloc(b->data, n);

			if (grown == NULL)
				goto fail;
			b->data = grown;
			b->cap = n;
		}
		got = pread(log->fd, b->data, n, at);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			r = got < 0 ? -errno : -EIO;
			goto fail;
		}
		nl = memrchr(b->data, '\n', (size_t)got);
		if (nl != NULL) {
			r = evlog_index(b, (size_t)(nl - b->data) + 1);
			if (r < 0)
				goto fail;
			break;
		}
		if ((size_t)got == left) {
			/* The log ends in a torn line (a host that crashed mid-write): nothing to
			 * send, but it is passed over. */
			b->len = (size_t)got;
			break;
		}
		if (want >= HOSTPROTO_EVENT_LINE_MAX) {
			r = -EBADMSG;
			goto fail;
		}
		want *= 2;
	}
	*out = b;
	return 0;
fail:
	evlog_batch_unref(b);
	return r;
}
