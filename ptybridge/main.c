/*
 * agentd-bridge: the terminal bridge (see server.h) and the structured-mode relay (relay.h).
 * Everything comes from the agentd configuration; the options below only shorten timeouts (and
 * the /events log's bound and the connection limits) for tests, given as flags or as
 * AGENTD_BRIDGE_* variables (so a test can pass them through deploy/up).
 */
#include "cause.h"
#include "config.h"
#include "log.h"
#include "relay.h"
#include "server.h"

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAIN_OPTION_MAX (24U * 3600 * 1000)

struct main_option {
	const char *flag;
	const char *env;
	size_t offset; /* of the unsigned field in struct bridge_options */
};

static const struct main_option main_options[] = {
    {"ping-interval-ms", "AGENTD_BRIDGE_PING_INTERVAL_MS",
     offsetof(struct bridge_options, ping_interval_ms)},
    {"stall-timeout-ms", "AGENTD_BRIDGE_STALL_TIMEOUT_MS",
     offsetof(struct bridge_options, stall_timeout_ms)},
    {"handshake-timeout-ms", "AGENTD_BRIDGE_HANDSHAKE_TIMEOUT_MS",
     offsetof(struct bridge_options, handshake_timeout_ms)},
    {"creating-wait-ms", "AGENTD_BRIDGE_CREATING_WAIT_MS",
     offsetof(struct bridge_options, creating_wait_ms)},
    {"max-clients", "AGENTD_BRIDGE_MAX_CLIENTS", offsetof(struct bridge_options, max_clients)},
    {"max-per-identity", "AGENTD_BRIDGE_MAX_PER_IDENTITY",
     offsetof(struct bridge_options, max_per_identity)},
    {"events-log-max", "AGENTD_BRIDGE_EVENTS_LOG_MAX",
     offsetof(struct bridge_options, events_log_max)},
};
#define MAIN_NOPTIONS (sizeof(main_options) / sizeof(main_options[0]))

static void usage(FILE *f)
{
	fputs("usage: agentd-bridge", f);
	for (size_t i = 0; i < MAIN_NOPTIONS; i++)
		fprintf(f, " [--%s=N]", main_options[i].flag);
	fputs("\nEach option can also be set with its variable:", f);
	for (size_t i = 0; i < MAIN_NOPTIONS; i++)
		fprintf(f, " %s", main_options[i].env);
	fputs("\n", f);
}

static int main_set(struct bridge_options *opt, size_t i, const char *value)
{
	char *end;
	unsigned long v;

	if (*value == '\0')
		return -1;
	v = strtoul(value, &end, 10);
	if (*end != '\0' || v > MAIN_OPTION_MAX) {
		fprintf(stderr, "agentd-bridge: bad value for %s: %s\n", main_options[i].flag,
			value);
		return -1;
	}
	*(unsigned *)((char *)opt + main_options[i].offset) = (unsigned)v;
	return 0;
}

int main(int argc, char **argv)
{
	struct option longopts[MAIN_NOPTIONS + 2];
	struct bridge_options opt;
	struct config cfg;
	struct cause cause = {{0}};
	int c, r;

	log_init("agentd-bridge");
	server_options_defaults(&opt);
	for (size_t i = 0; i < MAIN_NOPTIONS; i++) {
		const char *env = getenv(main_options[i].env);

		longopts[i] =
		    (struct option){main_options[i].flag, required_argument, NULL, (int)i};
		if (env != NULL && main_set(&opt, i, env) < 0)
			return 2;
	}
	longopts[MAIN_NOPTIONS] = (struct option){"help", no_argument, NULL, 'h'};
	longopts[MAIN_NOPTIONS + 1] = (struct option){NULL, 0, NULL, 0};
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (c < 0 || (size_t)c >= MAIN_NOPTIONS || main_set(&opt, (size_t)c, optarg) < 0) {
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (opt.max_clients == 0 || opt.max_per_identity == 0 || opt.handshake_timeout_ms == 0 ||
	    opt.events_log_max == 0) {
		fputs("agentd-bridge: max-clients, max-per-identity, handshake-timeout-ms and "
		      "events-log-max must be positive\n",
		      stderr);
		return 2;
	}
	r = config_load(&cfg, &cause);
	if (r < 0) {
		log_error("configuration: %s", cause.msg);
		return 1;
	}
	r = server_run(&cfg, &opt, &cause);
	if (r < 0) {
		log_error("%s", cause.msg);
		return 1;
	}
	return 0;
}
