/*
 * A human-readable reason that travels with a negative errno from the place an error happens to
 * the edge that reports it (an HTTP body, a record's "error" field, a log line). Modules fill it;
 * only the edge prints it.
 */
#ifndef AGENTD_CAUSE_H
#define AGENTD_CAUSE_H

#define CAUSE_MAX 512

struct cause {
	char msg[CAUSE_MAX];
};

/* Formats into c->msg (truncated to CAUSE_MAX). NULL-safe: a NULL c is ignored. */
void cause_set(struct cause *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sets c->msg from fmt and returns -err, so a failing call can be one line: return cause_fail(...).
 */
int cause_fail(struct cause *c, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
