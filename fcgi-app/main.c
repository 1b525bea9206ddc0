/* agentd-api: the REST side of agent-daemon, a FastCGI program behind nginx. */
#include "apimetrics.h"
#include "app.h"
#include "boot.h"
#include "cagecmd.h"
#include "configcmd.h"
#include "create.h"
#include "fsutil.h"
#include "gitrepo.h"
#include "log.h"
#include "recovery.h"
#include "server.h"
#include "sessioncg.h"
#include "standby.h"
#include "tokencmd.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* In the runtime dir: the tmux server's pid, for agentd-tmux.service's PIDFile=. */
#define TMUX_PIDFILE "tmux.pid"

static const char usage[] =
    "usage: agentd-api [--no-tmux-start | --init | --create ID | token ... | config ... |\n"
    "                   --help | --version]\n"
    "\n"
    "Serves the agent-daemon REST API over FastCGI on $AGENTD_RUNTIME_DIR/api.sock\n"
    "(nginx forwards /sessions, /worktrees, /branches and /healthz to it). Stops on SIGTERM.\n"
    "\n"
    "  --no-tmux-start  never start the tmux server (agentd-tmux.service owns it); sessions\n"
    "                   fail to start while it does not run\n"
    "  --init       write $AGENTD_RUNTIME_DIR/tmux.conf, start the tmux server unless it runs,\n"
    "               when the server is new (a reboot, or the last one ended) start the sessions\n"
    "               that were running again (claude --resume), recover session records from tmux,\n"
    "               write the server's pid to $AGENTD_RUNTIME_DIR/tmux.pid, and exit\n"
    "  --create ID  (internal) the detached worker that finishes creating session ID\n"
    "  --standby    (internal) a creation worker started ahead of need, waiting for a session\n"
    "  token add NAME [--read-only] | token list | token revoke NAME | token init NAME\n"
    "               manage the bearer tokens in $AGENTD_STATE_DIR/tokens.json (a new token is\n"
    "               printed once; only its SHA-256 is kept; init adds an admin token only to\n"
    "               an empty store, as deploy/up does at the first start)\n"
    "  config --check | --print | --get KEY... | --render-nginx PREFIX ...\n"
    "               check or show the configuration, or render nginx's from it\n"
    "               (agentd-api config --help)\n"
    "\n"
    "Configuration: defaults, then $AGENTD_CONFIG (default /etc/agentd/agentd.conf, KEY=value\n"
    "lines), then AGENTD_* environment variables; see README.md.\n";

/* Makes the runtime usable: the agents' directory, tmux config, tmux server, records reconciled
 * with tmux. */
static int prepare(const struct app *app, struct cause *cause)
{
	int r;

	if ((r = app_prepare_agents_dir(app, cause)) < 0 ||
	    (r = tmux_write_conf(&app->tmux, cause)) < 0 ||
	    (!app->tmux.no_start && (r = tmux_start_server(&app->tmux, cause)) < 0))
		return r;
	/* A new tmux server (a reboot, or the last one ended) gets back what was running, before
	 * recovery judges. */
	if ((r = boot_resume(app, cause)) < 0)
		log_warn("%s", cause->msg);
	return recovery_run(app, cause);
}

/*
 * agentd-api --init's last step: <runtime_dir>/tmux.pid names the server, so that
 * agentd-tmux.service (Type=forking, PIDFile=) watches the server itself and restarts it when it
 * dies. Written atomically: systemd reads it once --init has exited.
 */
static int write_tmux_pidfile(const struct app *app, struct cause *cause)
{
	char path[CONFIG_PATH_MAX], text[32];
	int pid, r;

	if ((pid = tmux_server_pid(&app->tmux, cause)) < 0)
		return pid;
	if ((r = config_runtime_path(app->cfg, TMUX_PIDFILE, path, sizeof(path))) < 0)
		return cause_fail(cause, -r, "the runtime dir's path is too long");
	snprintf(text, sizeof(text), "%d\n", pid);
	if ((r = fsutil_write_atomic(path, text, 0644, false)) < 0)
		return cause_fail(cause, -r, "cannot write %s: %s", path, strerror(-r));
	return 0;
}

int main(int argc, char **argv)
{
	struct cause cause = {{0}}, cgnote = {{0}};
	struct apimetrics metrics;
	struct authcache auth;
	struct config cfg;
	struct app app;
	int r;

	log_init("agentd-api");
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "--version") == 0) {
		puts("agentd-api " AGENTD_VERSION);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "config") == 0)
		return configcmd_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "token") == 0) {
		if (config_load(&cfg, &cause) < 0) {
			log_error("%s", cause.msg);
			return 1;
		}
		return tokencmd_main(&cfg, argc - 1, argv + 1);
	}
	if ((r = config_load(&cfg, &cause)) < 0 || (r = app_init(&app, &cfg, &cause)) < 0) {
		log_error("%s", cause.msg);
		return 1;
	}
	/* Caged sessions each get a repository of their own (the store layout): a worktree of a
	 * shared bare clone would let any session's uid move every branch. */
	if (cfg.git_store_dir[0] == '\0' && cagecmd_enabled(&app, cause.msg, sizeof(cause.msg)) &&
	    config_state_path(&cfg, "git", cfg.git_store_dir, sizeof(cfg.git_store_dir)) < 0) {
		log_error("AGENTD_STATE_DIR is too long for the git stores");
		return 1;
	}
	if (authcache_init(&auth, &cfg) < 0) {
		log_error("AGENTD_STATE_DIR is too long");
		return 1;
	}
	app.auth = &auth;
	sessioncg_init(&app, &cgnote);
	apimetrics_init(&metrics);
	app.metrics = &metrics;
	/* The worker gets --no-tmux-start after its id when the API has it. */
	app.tmux.no_start = argc > 1 && strcmp(argv[argc - 1], APP_NO_TMUX_START) == 0;
	if (app.tmux.no_start)
		argc--;
	if (argc == 3 && strcmp(argv[1], "--create") == 0)
		return create_worker_main(&app, argv[2]);
	if (argc == 3 && strcmp(argv[1], STANDBY_ARG) == 0)
		return create_standby_main(&app, argv);
	if (argc > 2 || (argc == 2 && (app.tmux.no_start || strcmp(argv[1], "--init") != 0))) {
		fputs(usage, stderr);
		return 2;
	}
	/* Every git call of the API (inventory, worktrees, recovery) reads the agent's git
	 * configuration, or none: never the daemon's. */
	if ((r = worktree_global_init(cagecmd_git_home(&app))) < 0) {
		log_error("libgit2 cannot be set up: %s", strerror(-r));
		return 1;
	}
	/* Before any thread: the pull requests' GitHub calls (github.h) share libcurl's state. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		log_error("libcurl cannot be set up");
		return 1;
	}
	if ((r = prepare(&app, &cause)) < 0) {
		log_error("%s", cause.msg);
		return 1;
	}
	if (argc == 2) {
		if ((r = write_tmux_pidfile(&app, &cause)) < 0) {
			log_error("%s", cause.msg);
			return 1;
		}
		return 0;
	}
	{
		char why[CONFIG_PATH_MAX];

		/* Once per start, where the operator looks: whether agents are kept from each
		 * other. */
		if (cagecmd_enabled(&app, why, sizeof(why)))
			log_info(
			    "sessions are caged (agentd-cage, bwrap): each agent sees only its "
			    "own worktree, HOME and processes");
		else
			log_warn(
			    "sessions are not caged: %s; agents can reach each other's files and "
			    "processes",
			    why);
	}
	if (app.cgroups.mode == CGROUP_NONE)
		log_warn("%s", cgnote.msg);
	else
		log_info("%s", cgnote.msg);
	if ((app.standby = standby_start(&app)) == NULL)
		log_warn("no creation worker waits ahead of need: %s", strerror(errno));
	r = server_run(&app, &cause);
	standby_stop(app.standby);
	if (r < 0)
		log_error("%s", cause.msg);
	return r < 0 ? 1 : 0;
}
