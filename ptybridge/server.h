/*
 * The bridge process around its one libuv loop: the listening unix socket
 * ($AGENTD_RUNTIME_DIR/bridge.sock, where nginx sends the terminal location), accepting,
 * the tick that drives every deadline, SIGCHLD (every tmux client is reaped, none becomes a
 * zombie) and SIGTERM/SIGINT (every WebSocket gets close 1001, then the process exits; tmux and
 * the agents are not touched).
 */
#ifndef AGENTD_BRIDGE_SERVER_H
#define AGENTD_BRIDGE_SERVER_H

#include "bridge.h"
#include "cause.h"
#include "config.h"

#define SERVER_SOCKET_NAME  "bridge.sock"
#define SERVER_BACKLOG      128
#define SERVER_SOCKET_MODE  0660 /* nginx's group connects (deploy puts it in our group) */
#define SERVER_POOL_THREADS "1"  /* libuv pool threads (UV_THREADPOOL_SIZE) for record writes */

/* Fills opt with the BRIDGE_* defaults. */
void server_options_defaults(struct bridge_options *opt);

/*
 * Serves until SIGTERM or SIGINT. cfg and opt are borrowed. Every request head is read here and
 * its path looked up in the services' route tables (terminal, relay, events): a path none has is
 * 404, a head too large 431, not HTTP 400. Before serving, resets the client counts a previous
 * bridge left in the records. Returns 0 after a clean stop, or -errno with cause set when the
 * bridge cannot start (socket in use by a live bridge, no tmux, ...).
 */
int server_run(const struct config *cfg, const struct bridge_options *opt, struct cause *cause);

#endif
