/*
 * The terminal service of the bridge: `GET /sessions/<id>/terminal` exactly as API.md says (400
 * not a valid upgrade, 403 Origin, 404 unknown, 409 not running, a wait of up to
 * BRIDGE_CREATING_WAIT_MS while the session is `creating`, woken by its record's change), then a
 * tmux client on its own PTY (`tmux -S SOCK attach-session -t =NAME`) joined to a WebSocket: PTY
 * output as binary frames, text and binary frames as keystrokes, `\x01C;R` as a resize. Output is
 * flow-controlled per client (the PTY is paused above BRIDGE_OUT_HIGH queued bytes), pings find
 * dead peers, a record that turns exited or lost ends the client, and closing the socket ends
 * only this client's tmux client. Built on the connection core (conn.h).
 */
#ifndef AGENTD_BRIDGE_TERMINAL_H
#define AGENTD_BRIDGE_TERMINAL_H

#include "bridge.h"

#include <stddef.h>
#include <stdint.h>

/* The service (struct bridge_service) and its route; its connections are in b->conns. */
extern const struct bridge_service terminal_service;
extern const struct bridge_route terminal_routes[];

/*
 * Classifies a client message: returns 1 with *cols and *rows set when it is exactly 0x01
 * "<cols>;<rows>" with both in 1..PTY_SIZE_MAX; -ERANGE when it has that shape but a value is
 * out of range (ignored, never typed); 0 for everything else, keystrokes (a lone 0x01 is Ctrl-A).
 */
int terminal_parse_resize(const uint8_t *msg, size_t len, unsigned *cols, unsigned *rows);

#endif
