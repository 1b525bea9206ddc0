/*
 * What every part of agentd-bridge shares: the loop, the read-only configuration, the record
 * store and roster, the tmux client command, the named limits and timeouts, and the list of
 * client connections. Owned by the server module; the rest borrow it.
 */
#ifndef AGENTD_BRIDGE_BRIDGE_H
#define AGENTD_BRIDGE_BRIDGE_H

#include "access.h"
#include "config.h"
#include "roster.h"
#include "stats.h"
#include "store.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>
#include <uv.h>

/* Limits and timeouts (milliseconds unless said otherwise). */
#define BRIDGE_CLIENTS_MAX 512 /* connections at once; more are refused (503) */
/* One identity's share: the Telegram bot (one token) streams up to 64 answers at once besides
 * its /events (telegram/state.h STATE_TURNS_MAX); a browser holds a few. More: 503. */
#define BRIDGE_CLIENTS_PER_IDENTITY 128
/* Kept for admins, a share of max_clients (64 of 512): read-only identities together get the
 * rest, so viewers cannot lock an admin out. A share, so that a small max_clients keeps room. */
#define BRIDGE_ADMIN_SHARE 8 /* 1/8 */
/* Connections read past the limit only to be answered 503 properly (a request head, then the
 * answer and a linger: closing at once resets the request and nginx reports a dead bridge). */
#define BRIDGE_REFUSE_SPARE         64
#define BRIDGE_TICK_MS              250         /* timer granularity for every deadline below */
#define BRIDGE_PING_INTERVAL_MS     (20 * 1000) /* a ping each; unanswered by the next: closed */
#define BRIDGE_HANDSHAKE_TIMEOUT_MS (10 * 1000) /* to send a complete request head */
#define BRIDGE_CREATING_WAIT_MS     (30 * 1000) /* an upgrade waits this long for `running` */
#define BRIDGE_CREATING_POLL_MS     250 /* record re-read interval when it cannot be watched */
#define BRIDGE_STALL_TIMEOUT_MS     (30 * 1000)  /* output paused this long: client closed */
#define BRIDGE_CLOSE_TIMEOUT_MS     (2 * 1000)   /* for a close handshake or error response */
#define BRIDGE_SHUTDOWN_TIMEOUT_MS  (3 * 1000)   /* SIGTERM: then every socket is cut */
#define BRIDGE_OUT_HIGH             (256 * 1024) /* queued output: stop reading the PTY */
#define BRIDGE_OUT_LOW              (64 * 1024)  /* ... and resume below this */
#define BRIDGE_OUT_MSGS_HIGH        64           /* the same in queued frames */
#define BRIDGE_OUT_MSGS_LOW         16
#define BRIDGE_OUT_HARD             (1024 * 1024) /* never legitimately reached: cut at once */
#define BRIDGE_OUT_MSGS_HARD        1024          /* e.g. pongs owed to a ping flood */
#define BRIDGE_DEFAULT_COLS         80
#define BRIDGE_DEFAULT_ROWS         24
#define BRIDGE_CHILD_TERM           "TERM=xterm-256color"

/* Tunables (tests shorten the timeouts); see the matching BRIDGE_* defaults. */
struct bridge_options {
	unsigned ping_interval_ms; /* 0: no pings */
	unsigned stall_timeout_ms;
	unsigned handshake_timeout_ms;
	unsigned creating_wait_ms;
	unsigned max_clients;
	unsigned max_per_identity; /* connections one identity may hold at once */
	unsigned events_log_max;   /* bytes of the /events log before rotation (EVENTS_LOG_MAX) */
};

/* Every connection of the bridge, whatever its service (conn.h drives them all). */
struct conn;
LIST_HEAD(conn_list, conn);
struct conn_set {
	struct conn_list head;
	unsigned n;
	struct access *access; /* the door's check for connections that stay open (access.h) */
};

struct bridge;
struct events;
struct attention;
struct hooks;
struct http_request;

/*
 * A service of the bridge (terminal, relay, ...): the server reads every request head, finds its
 * path in the route tables (struct bridge_route) and hands the connection over with accept(): fd
 * is a non-blocking socket no handle watches any more, req the complete request, route the
 * matching entry's value; both belong to the service from then on, on every path. Its
 * connections join b->conns (conn_start), where the server ticks, stops and counts them. The
 * server calls child_exited() (when set) for each reaped child until one claims it.
 */
struct bridge_service {
	int (*accept)(struct bridge *b, int fd, struct http_request *req, int route);
	bool (*child_exited)(struct bridge *b, pid_t pid);
};

/* One entry of a service's route table (a NULL pattern ends it): pattern is a path in which
 * each '*' stands for one non-empty segment without '/' (route.h). */
struct bridge_route {
	const char *pattern;
	const struct bridge_service *service;
	int route;
};

struct bridge {
	uv_loop_t *loop;
	const struct config *cfg;
	struct bridge_options opt;
	struct store store;
	struct roster *roster;
	struct events *events;             /* GET /events and its log (events.h) */
	struct attention *attention;       /* activity and pending requests (attention.h) */
	struct hooks *hooks;               /* claude's hooks in terminal mode (hooks.h) */
	char tmux_bin[CONFIG_PATH_MAX];    /* absolute path of the tmux executable */
	char tmux_socket[CONFIG_PATH_MAX]; /* <runtime>/tmux.sock */
	char tmux_conf[CONFIG_PATH_MAX];   /* <runtime>/tmux.conf */
	char **child_env;                  /* tmux clients' environment (TERM set, TMUX unset) */
	uid_t host_uid; /* the agent user (agentuser.h): a host.sock of anyone else is no host */
	char *scratch;  /* PTY_FRAME_MAX bytes shared by all PTY reads */
	struct conn_set conns; /* at the front door and in every service; counts to max_clients */
	struct access access;  /* the token store, for connections that stay open */
	struct stats stats;    /* GET /metrics: this daemon's numbers (stats.h) */
	bool stopping;
};

#endif
