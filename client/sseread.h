/*
 * Reading a server-sent event stream (GET /events, a turn's POST /prompt, GET
 * /sessions/<id>/events) from bytes as they arrive, in chunks of any size: lines end in LF, CR or
 * CRLF (a CR at a chunk's end waits for the next byte); "id", "event" and "data" fields make an
 * event, a blank line dispatches it; comments (": ping") and other fields are skipped. An event
 * whose data passes the reader's limit is dispatched with its id and name but flagged oversize
 * and without data, so a consumer keeps its place in the stream.
 */
#ifndef AGENTD_CLIENT_SSEREAD_H
#define AGENTD_CLIENT_SSEREAD_H

#include "buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SSEREAD_NAME_MAX 64 /* the longest event name kept (agentd's are short words) */
#define SSEREAD_ID_MAX   20 /* digits of a uint64_t */

struct sseread_event {
	uint64_t id; /* 0 when the event had no valid id */
	bool has_id;
	char name[SSEREAD_NAME_MAX + 1]; /* "message" when the event named none */
	const char *data;                /* NUL-terminated; "" when oversize */
	size_t data_len;
	bool oversize; /* the data passed the reader's limit and was dropped */
};

/* Called once per event; ev and its data are borrowed for the call. A negative return stops
 * sseread_feed, which returns it. */
typedef int (*sseread_fn)(void *arg, const struct sseread_event *ev);

struct sseread {
	struct buf line; /* the line being read */
	struct buf data; /* the event's data lines, joined with LF */
	char name[SSEREAD_NAME_MAX + 1];
	uint64_t id;
	bool has_id;
	bool have_event; /* a field was seen since the last dispatch */
	bool line_over;  /* the current line passed the limit: its rest is skipped */
	bool data_over;  /* the event's data passed the limit */
	bool after_cr;   /* the last byte was CR: an LF right after it ends nothing */
	size_t data_max; /* the most data an event may have */
};

/* A reader for events of at most data_max bytes of data. */
void sseread_init(struct sseread *r, size_t data_max);

/* Frees what the reader holds; it can be initialised again. */
void sseread_finish(struct sseread *r);

/* Forgets a partial line or event (a new connection starts). */
void sseread_reset(struct sseread *r);

/*
 * Reads n bytes, calling fn for each event they complete. Returns 0, fn's negative value, or
 * -ENOMEM.
 */
int sseread_feed(struct sseread *r, const char *p, size_t n, sseread_fn fn, void *arg);

#endif
