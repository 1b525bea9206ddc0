/*
 * The agents table: the agent CLIs a session can run, and how each is started. Four are built in
 * (claude, codex, gemini, opencode); more come from the configuration, one
 * AGENTD_AGENT_<NAME>_COMMAND each (config.h: struct config_agent). A row says
 *   - the executable and its fixed words (a built-in's may be replaced: AGENTD_CLAUDE,
 *     AGENTD_AGENT_CODEX_COMMAND, ...), then the configured extra words;
 *   - how the bootstrap prompt is passed: never as a word of its own that could be read as an
 *     option: after "--" where the CLI takes it, else glued to an option ("--prompt=<text>");
 *   - the words of a first launch and of a later one, "{id}" standing for the session's
 *     agentSessionId: the CLI starts its conversation under that id where it lets us choose it
 *     (claude, gemini), and where it does not (codex, opencode) the session gets a home of its
 *     own for the CLI (agentlaunch.h) so that "the last conversation" there is the session's;
 *   - what tells the bridge the agent's activity in terminal mode ("hooks": the CLI runs
 *     agentd-hook for its events; "none": nothing does, activity is not tracked);
 *   - whether it has a structured mode.
 * docs/API.md ("Agents") documents each built-in's argv; this header is the table's contract.
 */
#ifndef AGENTD_AGENTS_H
#define AGENTD_AGENTS_H

#include "config.h"
#include "session.h"

#include <stdbool.h>
#include <stddef.h>

#define AGENT_NAME_MAX  SESSION_AGENT_MAX
#define AGENTS_BUILTIN  4
#define AGENTS_LIST_MAX ((AGENTS_BUILTIN + CONFIG_AGENTS_MAX) * (AGENT_NAME_MAX + 2) + 1)
#define AGENT_ID_WORD   "{id}" /* in start and resume words: the session's agentSessionId */

enum agent_kind { AGENT_CLAUDE, AGENT_CODEX, AGENT_GEMINI, AGENT_OPENCODE, AGENT_CUSTOM };

/* How a later launch finds the conversation to go on with. */
enum agent_resume {
	AGENT_RESUME_ID,   /* the resume words name it by agentSessionId ({id}) */
	AGENT_RESUME_LAST, /* the CLI's most recent one in the session's own home for it */
	AGENT_RESUME_NONE, /* no resume words: a later launch starts afresh */
};

/* One row; the strings point into the table or into the configuration (borrowed). */
struct agent {
	const char *name;
	enum agent_kind kind;
	const char *command; /* executable and fixed words, split on blanks (no quoting) */
	const char *args;    /* extra words of the configuration, split on blanks */
	const char *prompt;  /* "--", "none", or an option ending in '=' the prompt is glued to */
	const char *start;   /* words of the first launch, before args */
	const char *resume;  /* words of a later launch, before args */
	enum agent_resume resumes;
	const char *activity_source; /* terminal mode: "hooks" or "none" */
	bool structured;             /* POST /mode structured and "mode":"structured" work */
	/* Structured mode of an agent that is not claude: its Agent Client Protocol mode, run by
	 * agentd-host --acp (core/acplaunch.h). acp_command replaces command and acp_args when
	 * set (codex's ACP mode is another program, codex-acp; AGENTD_AGENT_<NAME>_ACP sets it,
	 * and gives a configured agent its structured mode); else command, then acp_args. */
	const char *acp_command;
	const char *acp_args;
};

/* Whether name is a built-in agent's. */
bool agents_builtin(const char *name);

/* Whether name can name an agent: 1 to AGENT_NAME_MAX of [a-z0-9_], a letter first. */
bool agents_name_valid(const char *name);

/*
 * Fills out with the row of the agent called name (built-in or configured). Returns 0 or
 * -ENOENT. out borrows from cfg: it is valid while cfg is.
 */
int agents_find(const struct config *cfg, const char *name, struct agent *out);

/* Writes the known agents' names into out, ", "-separated, built-ins first. */
void agents_list(const struct config *cfg, char *out, size_t outlen);

/*
 * What reports s's activity: "host" in structured mode (agentd-host's stream), else the agent's
 * row's activity_source for a built-in ("hooks" for claude, codex, gemini; "none" for opencode)
 * and "none" for a configured agent. The API's activitySource.
 */
const char *agents_activity_source(const struct session *s);

/*
 * Checks the agents of the configuration once it is loaded: AGENTD_DEFAULT_AGENT names a known
 * agent, each configured agent has its COMMAND, and a built-in is only given COMMAND or ARGS.
 * Returns 0 or -EINVAL with cause.
 */
int agents_check_config(const struct config *cfg, struct cause *cause);

#endif
