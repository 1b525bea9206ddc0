/*
 * An event log: one event per line exactly as sent to subscribers ({"id":N,"event":...,
 * "data":...}, core/hostproto.h), appended with O_APPEND. Two writers use it: agentd-host (each
 * structured session's events.log, never rotated) and agentd-bridge (<runtime_dir>/events.log of
 * GET /events, rotated to events.log.1 when it grows past its bound: evlog_rotate). Ids continue
 * across restarts of the writer, so a client's Last-Event-ID stays meaningful. Events are
 * numbered into a batch and the batch goes to the log with one write before anyone sees it, so
 * the log holds every event a subscriber was sent: it is also where a subscriber that fell behind
 * catches up from. A line torn by a crash mid-write is ended at the next open and is no event to
 * a reader.
 */
#ifndef AGENTD_EVLOG_H
#define AGENTD_EVLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct evlog {
	int fd;
	uint64_t last_id; /* the last id given (written, or in a batch not yet written) */
	off_t end;        /* bytes of the log: where the next batch goes */
};

/* One event line of a batch. */
struct evlog_entry {
	size_t off, len; /* within the batch's data, '\n' included */
	uint64_t id;     /* 0: not an event line (a torn line of a crashed host, when read back) */
	bool result;     /* the event is a "result" (the end of a turn) */
};

/*
 * Event lines in one buffer: numbered and not yet written, or written (at is their offset in the
 * log), or read back from the log. Shared by reference count between the host and the writes
 * that send parts of it to subscribers.
 */
struct evlog_batch {
	unsigned refs;
	off_t at;
	char *data;
	size_t len, cap;
	struct evlog_entry *ev;
	size_t n, ev_cap;
};

/* Opens (creating) path and finds the last id. Returns 0 or -errno. */
int evlog_open(struct evlog *log, const char *path);

/* Opens an existing log to read it back only (a rotated one). Returns 0 or -errno (-ENOENT when
 * there is none). */
int evlog_open_read(struct evlog *log, const char *path);

/* The id of the first line that carries one, or 0 when the log holds no event. */
uint64_t evlog_first_id(const struct evlog *log);

/*
 * Rotates the log: renames path to old_path (replacing the older rotated file) and opens a new,
 * empty path whose ids continue log's. *old (fd -1, or the previous rotated log: closed) then
 * holds the renamed file, still open, so readers go on reading it where they were; *log holds the
 * new one. Returns 0, or -errno with both unchanged (the events then go on into path).
 */
int evlog_rotate(struct evlog *log, struct evlog *old, const char *path, const char *old_path);

void evlog_close(struct evlog *log);

/* A new empty batch (one reference), or NULL. */
struct evlog_batch *evlog_batch_new(void);
struct evlog_batch *evlog_batch_ref(struct evlog_batch *b);
void evlog_batch_unref(struct evlog_batch *b);

/*
 * Numbers an event and adds its line to b; data is JSON text of data_len bytes (not necessarily
 * NUL-terminated), name an event name (hostproto_event_name_valid). Returns the new id (> 0) or
 * -errno.
 */
int64_t evlog_batch_add(struct evlog *log, struct evlog_batch *b, const char *name,
			const char *data, size_t data_len);

/* Writes b to the end of the log (one write: a reader sees whole lines) and sets b->at. On
 * failure the batch's ids are given back. Returns 0 or -errno. */
int evlog_batch_write(struct evlog *log, struct evlog_batch *b);

/*
 * Reads the whole lines of the log from offset at, about want bytes (more when one line is
 * longer) but never past the end written so far, into a new batch (*out, with at set) with its
 * entries found. A batch of len 0 means at is the end. Returns 0 or -errno (-EBADMSG: a line
 * longer than any event line).
 */
int evlog_read(const struct evlog *log, off_t at, size_t want, struct evlog_batch **out);

#endif
