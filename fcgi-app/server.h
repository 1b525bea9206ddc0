/*
 * The FastCGI side of agentd-api: a unix socket at <runtime_dir>/api.sock, APP_WORKER_THREADS
 * threads accepting in turn (libfcgi's threaded pattern), the liveness watcher's threads (watch.h:
 * recovery on every change tmux or a pane process reports, at least every RECOVERY_INTERVAL_S), and
 * a clean stop on SIGTERM/SIGINT (sigwait + FCGX_ShutdownPending + shutdown(2) of the listener, see
 * integration notes §3.3).
 */
#ifndef AGENTD_SERVER_H
#define AGENTD_SERVER_H

#include "app.h"

#define SERVER_BACKLOG 128

/* Serves until SIGTERM or SIGINT. Returns 0 on a clean stop, or -errno with cause. */
int server_run(const struct app *app, struct cause *cause);

#endif
