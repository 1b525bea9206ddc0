/*
 * What every part of agentd-api shares: the loaded configuration, the record store and the tmux
 * server. Built once in main() and passed down read-only; the request threads share it.
 */
#ifndef AGENTD_APP_H
#define AGENTD_APP_H

#include "agentuser.h"
#include "authcache.h"
#include "cgroup.h"
#include "config.h"
#include "store.h"
#include "tmux.h"

struct standby;
struct apimetrics;

#define APP_BODY_MAX       (64 * 1024)
#define APP_WORKER_THREADS 4
/* agentd-api's flag that sets tmux.no_start: the tmux server is agentd-tmux.service's, and one we
 * started would run the agents in our sandbox. Passed on to the creation worker. */
#define APP_NO_TMUX_START "--no-tmux-start"

struct app {
	const struct config *cfg;
	struct store store;
	struct tmux tmux;
	char self_exe[CONFIG_PATH_MAX]; /* this program, re-run as the creation worker */
	char host_bin[CONFIG_PATH_MAX]; /* agentd-host: AGENTD_HOST_BIN, or found beside us */
	struct agent_user agent;        /* who claude runs as; whose the git work is */
	struct authcache *auth;         /* the token store as the request threads see it */
	struct standby *standby;        /* the creation worker waiting for a session, or NULL */
	char
	    hook_bin[CONFIG_PATH_MAX]; /* agentd-hook: AGENTD_HOOK, or found beside us ("": none) */
	struct timespec started;       /* CLOCK_MONOTONIC at app_init: /healthz's uptimeSeconds */
	struct apimetrics *metrics;    /* the request threads' counters (apimetrics.h), or NULL */
	struct cgroup_tree cgroups;    /* the sessions' cgroups (sessioncg.h); CGROUP_NONE: none */
};

/* Fills app from cfg: store dir, tmux paths, own executable path, the agent user
 * (agentuser_resolve: agentd-api does not start without one it can run agents as). Returns 0 or
 * -errno with cause. */
int app_init(struct app *app, const struct config *cfg, struct cause *cause);

/*
 * Makes <runtime_dir>/agents and <state_dir>/agents (hostproto.h: the hosts' sockets, their event
 * logs) the agent user's, group ours, mode 2750, and lets the agent user search the runtime and
 * state dirs (o+x, no listing: everything else in them keeps its own mode, none open to others
 * but the list view). Run by agentd-api --init and at start. Returns 0 or -errno with cause.
 */
int app_prepare_agents_dir(const struct app *app, struct cause *cause);

#endif
