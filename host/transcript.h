/*
 * The readable transcript agentd-host prints to its tmux pane (its stdout), so an operator who
 * attaches sees what the agent does. stdout is fully buffered: lines are written once per batch
 * of claude's output (transcript_flush), not one system call per event.
 */
#ifndef AGENTD_HOST_TRANSCRIPT_H
#define AGENTD_HOST_TRANSCRIPT_H

#include <json-c/json.h>

#define TRANSCRIPT_BUFFER (64 * 1024)

/* Makes stdout fully buffered. */
void transcript_init(void);

/* Prints what an event of claude's (its name and line) says, if anything. */
void transcript_event(const char *name, json_object *obj);

/* Prints one line of the host's own. */
void transcript_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Writes what was printed to the pane. */
void transcript_flush(void);

#endif
