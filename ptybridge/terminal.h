/*
 * One client connection of the bridge, from its first request byte to its close:
 * `GET /sessions/<id>/terminal` exactly as API.md says (400 not a valid upgrade, 403 Origin,
 * 404 unknown, 409 not running, a wait of up to BRIDGE_CREATING_WAIT_MS while the session is
 * `creating`), then a tmux client on its own PTY (`tmux -S SOCK attach-session -t =NAME`) joined to
 * a WebSocket: PTY output as binary frames, text and binary frames as keystrokes, `\x01C;R` as a
 * resize. Output is flow-controlled per client (the PTY is paused above BRIDGE_OUT_HIGH queued
 * bytes), pings find dead peers, and closing the socket ends only this client's tmux client.
 */
#ifndef AGENTD_BRIDGE_TERMINAL_H
#define AGENTD_BRIDGE_TERMINAL_H

#include "bridge.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Takes over the accepted non-blocking socket fd (closed on every path, also on failure) and
 * starts reading its request. The connection adds itself to b->terminals and removes itself when
 * it is closed. Returns 0 or -errno.
 */
int terminal_accept(struct bridge *b, int fd);

/* Runs the deadlines of t (handshake, creating wait, ping, stalled output, close); now is
 * uv_now. May close t. */
void terminal_tick(struct terminal *t, uint64_t now);

/* The bridge is stopping: an open WebSocket gets close 1001, anything else is cut. */
void terminal_shutdown(struct terminal *t);

/* Cuts the connection at once (shutdown deadline passed). */
void terminal_abort(struct terminal *t);

/* Tells t that child pid was reaped. Returns true if it was t's tmux client. */
bool terminal_child_exited(struct terminal *t, pid_t pid);

/* The next connection in b->terminals after t, or NULL (for iterating while closing). */
struct terminal *terminal_next(struct terminal *t);

/*
 * Classifies a client message: returns 1 with *cols and *rows set when it is exactly 0x01
 * "<cols>;<rows>" with both in 1..PTY_SIZE_MAX; -ERANGE when it has that shape but a value is
 * out of range (ignored, never typed); 0 for everything else, keystrokes (a lone 0x01 is Ctrl-A).
 */
int terminal_parse_resize(const uint8_t *msg, size_t len, unsigned *cols, unsigned *rows);

#endif
