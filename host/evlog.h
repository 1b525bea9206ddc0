/*
 * The session's event log: events.log, one event per line exactly as sent to subscribers
 * ({"id":N,"event":...,"data":...}), appended with O_APPEND. Ids continue across host restarts
 * (mode switches), so a client's Last-Event-ID stays meaningful for the whole session.
 */
#ifndef AGENTD_EVLOG_H
#define AGENTD_EVLOG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct evlog {
	int fd;
	uint64_t last_id;
};

/* Opens (creating) path and finds the last id. Returns 0 or -errno. */
int evlog_open(struct evlog *log, const char *path);

void evlog_close(struct evlog *log);

/*
 * Appends an event; data is JSON text of data_len bytes (not NUL-terminated necessarily). The
 * formatted line (with '\n') is returned in *line (caller frees) and its length in *line_len.
 * Returns the new id (> 0) or -errno.
 */
int64_t evlog_append(struct evlog *log, const char *event, const char *data, size_t data_len,
		     char **line, size_t *line_len);

/* Reads the id at the start of an event line ({"id":N,...}). Returns N, or 0 if malformed. */
uint64_t evlog_line_id(const char *line, size_t len);

#endif
