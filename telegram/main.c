/*
 * agentd-telegram: the reference Telegram client of agent-daemon (README.md, "Telegram"). Every
 * setting comes from the agentd configuration (settings.h); the only options are --help and
 * --check (validate the settings, then exit).
 */
#include "bot.h"
#include "cause.h"
#include "config.h"
#include "log.h"
#include "settings.h"
#include "sigfd.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fputs("usage: agentd-telegram [--check | --help]\n"
	      "The Telegram bot of agent-daemon. Settings (agentd configuration file or "
	      "environment):\n"
	      "  AGENTD_TELEGRAM_TOKEN / AGENTD_TELEGRAM_TOKEN_FILE  the bot's token (BotFather)\n"
	      "  AGENTD_TELEGRAM_USERS    Telegram user ids served (blank- or comma-separated;\n"
	      "                           empty: nobody yet, writers are told their id)\n"
	      "  AGENTD_TELEGRAM_API      Bot API base URL (https://api.telegram.org)\n"
	      "  AGENTD_TELEGRAM_STATE    state file ($STATE_DIRECTORY/telegram.json, else\n"
	      "                           $AGENTD_STATE_DIR/telegram.json)\n"
	      "  AGENTD_URL               agent-daemon (http://$AGENTD_LISTEN)\n"
	      "  AGENTD_TOKEN             its token for agent-daemon (agentd-api token add "
	      "telegram)\n"
	      "  AGENTD_TELEGRAM_WEB_URL  the web UI for links in messages (AGENTD_URL)\n"
	      "--check validates them and exits.\n",
	      f);
}

/* The signals that stop the daemon (systemd's stop, Ctrl-C under deploy/up). */
static const int stop_signals[] = {SIGTERM, SIGINT};

int main(int argc, char **argv)
{
	struct config *cfg = calloc(1, sizeof(*cfg));
	struct settings *set = calloc(1, sizeof(*set));
	struct cause cause = {{0}};
	struct bot *b = NULL;
	bool check = false;
	int sigfd = -1, rc = 1, r;

	log_init("agentd-telegram");
	if (argc > 2 || (argc == 2 && strcmp(argv[1], "--check") != 0 &&
			 strcmp(argv[1], "--help") != 0 && strcmp(argv[1], "-h") != 0)) {
		usage(stderr);
		rc = 2;
		goto out;
	}
	if (argc == 2 && strcmp(argv[1], "--check") != 0) {
		usage(stdout);
		rc = 0;
		goto out;
	}
	check = argc == 2;
	if (cfg == NULL || set == NULL) {
		log_error("out of memory");
		goto out;
	}
	if (config_load(cfg, &cause) < 0 ||
	    settings_load(set, cfg, getenv("STATE_DIRECTORY"), &cause) < 0) {
		log_error("%s", cause.msg);
		goto out;
	}
	if (check) {
		if (set->nusers == 0)
			printf("ok: no users yet (the bot tells whoever writes their Telegram user "
			       "id), ");
		else
			printf("ok: %u users, ", set->nusers);
		printf("Bot API %s, agent-daemon %s, state %s\n", set->api, set->url,
		       set->state_path);
		rc = 0;
		goto out;
	}
	signal(SIGPIPE, SIG_IGN);
	if ((sigfd = sigfd_open(stop_signals, 2, NULL)) < 0) {
		log_error("cannot set up signals: %s", strerror(-sigfd));
		goto out;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		log_error("libcurl cannot start");
		goto out;
	}
	b = bot_create(set, &cause);
	if (b == NULL) {
		log_error("%s", cause.msg);
		goto out_curl;
	}
	if (set->nusers == 0)
		log_warn("AGENTD_TELEGRAM_USERS is empty: the bot serves nobody yet and only tells "
			 "whoever writes their Telegram user id; agent-daemon at %s",
			 set->url);
	else
		log_info("serving %u Telegram users; agent-daemon at %s", set->nusers, set->url);
	if (set->agentd_token[0] == '\0')
		log_warn("AGENTD_TOKEN is not set: agent-daemon's door refuses requests without a "
			 "token (agentd-api token add telegram)");
	sd_notify(0, "READY=1\nSTATUS=polling Telegram");
	r = bot_run(b, sigfd);
	sd_notify(0, "STOPPING=1");
	if (r < 0)
		log_error("the network loop failed");
	else
		rc = 0;
	bot_destroy(b);
out_curl:
	curl_global_cleanup();
out:
	if (sigfd >= 0)
		close(sigfd);
	if (set != NULL)
		memset(set->token, 0, sizeof(set->token));
	free(set);
	free(cfg);
	return rc;
}
