/*
 * agentd-push: the Web Push sender of agent-daemon (docs/DESIGN.md, "Notifications (Web Push)";
 * sender.h). Every setting comes from the agentd configuration; the only options are --help and
 * --check (load the configuration and the VAPID key, then exit).
 */
#include "cause.h"
#include "config.h"
#include "log.h"
#include "sender.h"
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
	fputs("usage: agentd-push [--check | --help]\n"
	      "Sends Web Push notifications of agent-daemon's sessions to the devices subscribed\n"
	      "in the web UI. Settings (agentd configuration file or environment):\n"
	      "  AGENTD_STATE_DIR  the VAPID key (push-vapid.pem, made at start), the\n"
	      "                    subscriptions, agentd-push's own read-only token (push-token,\n"
	      "                    made when the first device subscribes)\n"
	      "  AGENTD_URL        agent-daemon (http://$AGENTD_LISTEN)\n"
	      "--check loads them and exits.\n",
	      f);
}

/* The signals that stop the daemon (systemd's stop, Ctrl-C under deploy/up). */
static const int stop_signals[] = {SIGTERM, SIGINT};

int main(int argc, char **argv)
{
	struct config *cfg = calloc(1, sizeof(*cfg));
	struct cause cause = {{0}};
	struct sender *s = NULL;
	int sigfd = -1, rc = 1;

	log_init("agentd-push");
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
	if (cfg == NULL || config_load(cfg, &cause) < 0) {
		log_error("%s", cfg == NULL ? "out of memory" : cause.msg);
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
	s = sender_create(cfg, &cause);
	if (s == NULL) {
		log_error("%s", cause.msg);
		goto out_curl;
	}
	if (argc == 2) {
		printf("ok: VAPID key in %s\n", cfg->state_dir);
		rc = 0;
		goto out_curl;
	}
	sd_notify(0, "READY=1\nSTATUS=following /events");
	rc = sender_run(s, sigfd) < 0 ? 1 : 0;
	sd_notify(0, "STOPPING=1");
	if (rc != 0)
		log_error("the network loop failed");
out_curl:
	sender_destroy(s);
	curl_global_cleanup();
out:
	if (sigfd >= 0)
		close(sigfd);
	free(cfg);
	return rc;
}
