/* agentd-host: the process a structured session's tmux pane runs instead of claude. */
#include "config.h"
#include "host.h"
#include "hostproto.h"
#include "log.h"
#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: agentd-host [--set KEY=VALUE]... [--prompt TEXT] [--acp NAME] [--resume ID]\n"
    "       [--resume-made MS] SESSION-ID -- CLAUDE [ARGS...]\n"
    "\n"
    "Runs claude in stream-json mode for a structured agentd session: keeps its output in\n"
    "$AGENTD_STATE_DIR/agents/SESSION-ID/events.log, serves it on\n"
    "$AGENTD_RUNTIME_DIR/agents/SESSION-ID/host.sock (the bridge relays it as SSE /\n"
    "WebSocket), and prints a readable transcript. agentd-api starts\n"
    "it with tmux respawn-pane; SIGTERM or SIGHUP ends claude's process group and the host.\n"
    "--prompt TEXT starts the first turn with TEXT (a session created in structured mode).\n"
    "--acp NAME: the agent after \"--\" (named NAME in events) speaks the Agent Client\n"
    "Protocol (gemini --acp, opencode acp, codex-acp) instead of claude's stream-json.\n"
    "--resume ID: with --acp, the agent's session to load when the host remembers none (the\n"
    "conversation of the session's terminal mode), or \"" ACP_RESUME_NEWEST "\": the one\n"
    "the agent lists as updated last in this directory; --resume-made MS: when it was made\n"
    "(unix ms; gemini cannot load a session in the minute it was made).\n"
    "--set KEY=VALUE sets an AGENTD_* setting (agentd-api passes AGENTD_RUNTIME_DIR,\n"
    "AGENTD_STATE_DIR, AGENTD_PERMISSION_TIMEOUT and AGENTD_STOP_GRACE: the pane's\n"
    "environment is only the agent's); no configuration\n"
    "file or environment variable is read.\n";

int main(int argc, char **argv)
{
	struct cause cause = {{0}};
	struct config cfg;
	struct acpagent_opts acp = {NULL, NULL, 0};
	const char *first_prompt = NULL;
	char *end;

	log_init("agentd-host");
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(usage, stdout);
		return 0;
	}
	/* The defaults and the --set words only: the host runs as the agent user, who need not be
	 * able to read the daemons' configuration file, and its environment is the agent's. */
	config_defaults(&cfg);
	/* Options come in pairs before the session id; the words are positional, so no value
	 * (a prompt starting with '-' included) is ever taken for an option. */
	while (argc > 2 && (strcmp(argv[1], "--set") == 0 || strcmp(argv[1], "--prompt") == 0 ||
			    strcmp(argv[1], "--acp") == 0 || strcmp(argv[1], "--resume") == 0 ||
			    strcmp(argv[1], "--resume-made") == 0)) {
		if (strcmp(argv[1], "--prompt") == 0) {
			first_prompt = argv[2];
		} else if (strcmp(argv[1], "--resume") == 0) {
			if (argv[2][0] == '\0' || strlen(argv[2]) > ACPAGENT_SESSION_ID_MAX) {
				fputs(usage, stderr);
				return 2;
			}
			acp.resume = argv[2];
		} else if (strcmp(argv[1], "--resume-made") == 0) {
			acp.resume_made_ms = strtoll(argv[2], &end, 10);
			if (end == argv[2] || *end != '\0' || acp.resume_made_ms < 0) {
				fputs(usage, stderr);
				return 2;
			}
		} else if (strcmp(argv[1], "--acp") == 0) {
			if (!hostproto_event_name_valid(argv[2], strlen(argv[2]))) {
				fputs(usage, stderr);
				return 2;
			}
			acp.name = argv[2];
		} else {
			char key[64];
			const char *eq = strchr(argv[2], '=');

			if (eq == NULL || (size_t)(eq - argv[2]) >= sizeof(key)) {
				fputs(usage, stderr);
				return 2;
			}
			snprintf(key, sizeof(key), "%.*s", (int)(eq - argv[2]), argv[2]);
			if (config_set(&cfg, key, eq + 1, &cause) < 0) {
				log_error("%s", cause.msg);
				return 2;
			}
		}
		argv += 2;
		argc -= 2;
	}
	if (argc < 4 || strcmp(argv[2], "--") != 0 || !session_id_valid(argv[1])) {
		fputs(usage, stderr);
		return 2;
	}
	if (acp.resume != NULL && acp.name == NULL) {
		fputs(usage, stderr);
		return 2;
	}
	return host_run(&cfg, argv[1], &acp, first_prompt, argv + 3);
}
