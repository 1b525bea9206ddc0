/*
 * The FastCGI side of agentd-api: a unix socket at <runtime_dir>/api.sock, whose connections
 * (kept open by nginx between requests) a poller holds while they are idle (conns.h), and
 * APP_WORKER_THREADS threads that each serve one request at a time on a connection that has one
 * to read; the liveness watcher's threads (watch.h:
 * recovery on every change tmux or a pane process reports, at least every RECOVERY_INTERVAL_S), and
 * a clean stop on SIGTERM/SIGINT (sigwait, then conns_stop: requests being served finish).
 */
#ifndef AGENTD_SERVER_H
#define AGENTD_SERVER_H

#include "app.h"

#define SERVER_BACKLOG 128

/* Serves until SIGTERM or SIGINT. Returns 0 on a clean stop, or -errno with cause. */
int server_run(const struct app *app, struct cause *cause);

#endif
