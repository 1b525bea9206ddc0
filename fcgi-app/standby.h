/*
 * A creation worker started ahead of need. Starting a worker (posix_spawn, exec, loading
 * libgit2 and its TLS stack, git_libgit2_init parsing the CA bundle) costs more than a third of
 * a creation's own work, so agentd-api keeps one worker started and initialised, waiting: a
 * POST hands it the session (its record, store_encode) and the worker lock (create.h) over a
 * socket pair only the two ends hold, and the keeper thread starts the next one. When none is
 * ready (the first instants, or it died) the POST starts a worker the plain way.
 *
 * The message: one datagram (SOCK_SEQPACKET) holding the payload (1 to STANDBY_PAYLOAD_MAX
 * bytes) and, as SCM_RIGHTS, exactly one fd: the worker lock, already locked. The end of the
 * API's side (it stopped or died) is the waiting worker's signal to exit.
 */
#ifndef AGENTD_STANDBY_H
#define AGENTD_STANDBY_H

#include <stddef.h>

#include "session.h"

#define STANDBY_ARG         "--standby"
#define STANDBY_SOCKFD      3 /* where the waiting worker finds its end of the pair */
#define STANDBY_PAYLOAD_MAX SESSION_RECORD_MAX

struct app;
struct standby;

/*
 * Starts the keeper thread, which keeps one worker waiting (argv: app->self_exe --standby
 * <title room> [--no-tmux-start]). NULL with errno when the thread cannot start (creations then
 * start their workers themselves).
 */
struct standby *standby_start(const struct app *app);

/*
 * Hands payload and lock_fd (the caller keeps its own copy, and closes it) to the waiting worker.
 * Returns 0, -EAGAIN when none is ready (sb NULL, starting, or found dead), or -errno.
 */
int standby_handoff(struct standby *sb, const char *payload, size_t len, int lock_fd);

/* Stops the keeper; the waiting worker sees its socket close and exits. NULL is a no-op. */
void standby_stop(struct standby *sb);

/* The message's codec. Sends payload and lock_fd on fd. Returns 0 or -errno (-EPIPE: no peer,
 * -EMSGSIZE: an empty payload or one over STANDBY_PAYLOAD_MAX). */
int standby_send(int fd, const char *payload, size_t len, int lock_fd);

/*
 * The waiting worker's side: blocks until a message arrives on fd (STANDBY_SOCKFD). Fills buf
 * with the payload, NUL-terminated (buflen > the longest payload), *len and *lock_fd
 * (close-on-exec). Returns 1 with a message, 0 when the API's end closed first, -errno (-EPROTO
 * for a malformed message: not exactly one fd, empty, or cut short; any fd it carried is closed).
 */
int standby_receive(int fd, char *buf, size_t buflen, size_t *len, int *lock_fd);

/*
 * Rewrites the waiting worker's command line in place (argv as main got it) to
 * `<argv[0]> --create <id>` and the words after the title room, as a worker started for id has:
 * ps and pgrep see what it does now. Returns 0, or -ENOSPC when the room is too small.
 */
int standby_retitle(char **argv, const char *id);

#endif
