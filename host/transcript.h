/*
 * The readable transcript agentd-host prints to its tmux pane (its stdout), so an operator who
 * attaches sees what the agent does. Lines are kept in memory and written to the pane through
 * the host's own non-blocking open of the pane's tty: the event path never waits for tmux to
 * render them, and while claude streams they go out at most once per TRANSCRIPT_INTERVAL_MS
 * (the first write after a quiet spell goes at once), so tmux wakes for a batch of lines, not
 * for each event. The pane gets the same bytes in the same order as written one by one. More
 * than TRANSCRIPT_BACKLOG_MAX bytes waiting (tmux slower than claude for long) are written
 * blocking, as a plain stdout would be. When stdout is no tty, writes block.
 */
#ifndef AGENTD_HOST_TRANSCRIPT_H
#define AGENTD_HOST_TRANSCRIPT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define TRANSCRIPT_INTERVAL_MS 20            /* at most one pane write per interval */
#define TRANSCRIPT_BACKLOG_MAX (1024 * 1024) /* bytes waiting: past this, written blocking */
#define TRANSCRIPT_BUFFER      (64 * 1024)   /* memory kept once a burst went by */

struct transcript {
	int fd;    /* the pane's tty, non-blocking; or -1: stdout, blocking */
	char *buf; /* bytes not written yet */
	size_t len, cap;
	uint64_t last_write; /* loop time of the last write (ms) */
	uv_timer_t timer;    /* the next interval's write */
	uv_poll_t poll;      /* the tty has room again */
	bool polling, timer_on, handles;
};

/* Opens the pane's tty for the transcript (handles on loop). */
void transcript_init(struct transcript *t, uv_loop_t *loop);

/* Prints what an event of claude's (its name and line) says, if anything. */
void transcript_event(struct transcript *t, const char *name, json_object *obj);

/* Prints one line of the host's own. */
void transcript_note(struct transcript *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* What was printed goes to the pane: now, or at the end of the current interval. */
void transcript_flush(struct transcript *t);

/* Writes everything still waiting (blocking) and closes the handles. */
void transcript_close(struct transcript *t);

/* Frees the memory (after the loop closed the handles). */
void transcript_free(struct transcript *t);

#endif
