/*
 * The readable transcript agentd-host prints to its tmux pane (its stdout), so an operator who
 * attaches sees what the agent does. Lines are kept in memory and written to the pane through
 * the host's own non-blocking open of the pane's tty: the event path never waits for tmux to
 * render them, and while claude streams they go out at most once per TRANSCRIPT_INTERVAL_MS
 * (the first write after a quiet spell goes at once), so tmux wakes for a batch of lines, not
 * for each event. The pane gets the same bytes in the same order as written one by one. More
 * than TRANSCRIPT_BACKLOG_MAX bytes waiting (tmux slower than claude for long) are written
 * blocking, as a plain stdout would be. When stdout is no tty, writes block.
 *
 * The pane is for a human: nobody reads a flood of 100,000 lines a second, tmux keeps a few
 * thousand lines of history, and the event log is the complete copy. So claude's events print
 * within a budget (a token bucket of bytes: TRANSCRIPT_RATE_BYTES a second, up to
 * TRANSCRIPT_BURST_BYTES at once, which every real turn fits whole). An event that finds the
 * budget spent is not printed, and not even looked at (no JSON work for it); once no event has
 * been skipped for TRANSCRIPT_QUIET_MS, or before a line that always prints, one line says how
 * many were not shown. Always printed, outside the budget: the host's own notes (prompts, its
 * start, claude's exit), permission requests and turn ends.
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
/* The budget of claude's events in the pane. A turn of a few hundred lines of a few hundred
 * bytes is under 256 KiB: it prints whole even right after another; a flood prints its first
 * 256 KiB, then 64 KiB a second (a few hundred lines a second: more than anyone reads). */
#define TRANSCRIPT_RATE_BYTES  (64 * 1024)  /* bytes a second, sustained */
#define TRANSCRIPT_BURST_BYTES (256 * 1024) /* bytes at once: the bucket's size */
#define TRANSCRIPT_QUIET_MS    1000         /* no event skipped this long: the flood is over */

/* The token bucket and the count of events it skipped; times are the loop's, in ms. */
struct transcript_budget {
	int64_t tokens;     /* bytes that may print now; below 0 after an event longer than that */
	uint64_t refilled;  /* when tokens were last refilled */
	uint64_t skipped;   /* events not printed since the flood began (0: none) */
	uint64_t last_skip; /* when the last of them came */
};

struct transcript {
	const char *id;    /* the session's, for the line that says where skipped events are */
	const char *agent; /* who speaks in the pane ("claude" when NULL) */
	struct transcript_budget budget;
	int fd;    /* the pane's tty, non-blocking; or -1: stdout, blocking */
	char *buf; /* bytes not written yet */
	size_t len, cap;
	uint64_t last_write; /* loop time of the last write (ms) */
	uv_timer_t timer;    /* the next interval's write */
	uv_poll_t poll;      /* the tty has room again */
	uv_timer_t quiet;    /* says how many were skipped once the flood is over */
	bool polling, timer_on, quiet_on, handles;
};

/* A full bucket at now. */
void transcript_budget_init(struct transcript_budget *b, uint64_t now);

/* Whether one of claude's events may print at now; false: it is skipped (and counted). The
 * caller charges what it printed with transcript_budget_charge. */
bool transcript_budget_admit(struct transcript_budget *b, uint64_t now);

/* Takes bytes printed from the bucket (it may go below 0: the next events wait for the refill). */
void transcript_budget_charge(struct transcript_budget *b, size_t bytes);

/* How many events were skipped, if the flood is over at now (or force: a line that always
 * prints comes, or the end), and then the count starts again; else 0. */
uint64_t transcript_budget_over(struct transcript_budget *b, uint64_t now, bool force);

/* Opens the pane's tty for the transcript of session id (handles on loop; id is kept). */
void transcript_init(struct transcript *t, uv_loop_t *loop, const char *id);

/* Whether an event of claude's named name is to be printed: one the transcript prints, within
 * the budget (or always printed). When not, it is counted as skipped if it would have printed. */
bool transcript_wants(struct transcript *t, const char *name);

/* Prints what the event (its name and line, parsed) says, after transcript_wants said yes. */
void transcript_print(struct transcript *t, const char *name, json_object *obj);

/* transcript_wants, then transcript_print. */
void transcript_event(struct transcript *t, const char *name, json_object *obj);

/* Prints one line of the host's own (always). */
void transcript_note(struct transcript *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints "who: text" (always), text's control characters made visible (\u001b) but for
 * newlines and tabs: what a prompt holds is shown, never obeyed by a viewer's terminal. */
void transcript_said(struct transcript *t, const char *who, const char *text);

/* What was printed goes to the pane: now, or at the end of the current interval. */
void transcript_flush(struct transcript *t);

/* Writes everything still waiting (blocking) and closes the handles. */
void transcript_close(struct transcript *t);

/* Frees the memory (after the loop closed the handles). */
void transcript_free(struct transcript *t);

#endif
