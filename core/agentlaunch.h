/*
 * Starting an agent of the table (core/agents.h) in terminal mode: its argv, the conversation a
 * later launch goes on with, the files it needs written before it starts, and its variables.
 * claude's own are core/claude.h's; this module does the others and leaves claude to it.
 *
 * Each session has a directory of its own for its agent, AGENTLAUNCH_DIR/<id> in the agent's HOME
 * (the session's HOME when caged), written anew at each launch as the agent user:
 *   codex    <dir>/codex = CODEX_HOME: config.toml (the agent's ~/.codex/config.toml, then the
 *            worktree marked trusted), hooks.json (agentd-hook for each event), and the agent's
 *            ~/.codex/auth.json when it has one; its conversations stay there, so
 *            "resume --last" is the session's.
 *   gemini   <dir>/gemini = GEMINI_CLI_HOME: .gemini/settings.json (the agent's own, with
 *            agentd-hook's hooks added), .gemini/trustedFolders.json (the worktree), the agent's
 *            OAuth files; GEMINI_CLI_NO_RELAUNCH=1 keeps it one process.
 *   opencode <dir>/opencode.db = OPENCODE_DB, so "--continue" is the session's conversation.
 */
#ifndef AGENTD_AGENTLAUNCH_H
#define AGENTD_AGENTLAUNCH_H

#include "agents.h"
#include "cause.h"
#include "claude.h"

#define AGENTLAUNCH_DIR      ".agentd-agents"               /* in the agent's HOME */
#define AGENTLAUNCH_FILE_MAX (1024 * 1024)                  /* an agent's config file copied in */
#define AGENTLAUNCH_HOOK_MS  (CLAUDE_HOOK_TIMEOUT_S * 1000) /* gemini counts milliseconds */

/* <home>/AGENTLAUNCH_DIR/<s->id> into out. Returns 0 or -ENAMETOOLONG. */
int agentlaunch_dir(const char *home, const struct session *s, char *out, size_t outlen);

/*
 * The terminal-mode argv of a (not claude) for s into out: the command's words, then the start
 * words (first launch) or the resume words (resume true), AGENT_ID_WORD replaced by
 * s->agent_session_id, then the configured extra words, then on the first launch the prompt
 * s->prompt (when non-empty) in the agent's shape: "--" and the prompt as one word, or the prompt
 * glued to the option ("--prompt=<text>"); "none" leaves it out. Returns 0, -E2BIG or
 * -ENAMETOOLONG.
 */
int agentlaunch_argv(const struct agent *a, const struct session *s, bool resume,
		     struct claude_argv *out);

/*
 * Whether a later launch of a for s can go on with its conversation (read as the agent: the
 * caller holds its file identity): gemini's chat file for agentSessionId, codex's recorded
 * sessions, opencode's database, in the session's directory under home; a configured agent
 * with resume words: s->launched. False otherwise (the launch is a first one, prompt included).
 */
bool agentlaunch_has_conversation(const struct agent *a, const struct session *s, const char *home);

/*
 * Writes the files a needs for s under home (see above), as the caller's file identity (the
 * agent's). hook_cmd is the command prefix of the hooks, "<agentd-hook> --socket <path>" (plain
 * words: the CLIs run it with a shell; NULL: no hooks, for structured mode), permission_wait the
 * PermissionRequest hook's wait (0: none asked). Returns 0 or -errno with cause.
 */
int agentlaunch_prepare(const struct agent *a, const struct session *s, const char *home,
			const char *hook_cmd, int permission_wait, struct cause *cause);

/* Adds a's variables for s to env (CODEX_HOME, GEMINI_CLI_HOME, OPENCODE_DB, ...). Returns 0 or
 * -E2BIG / -ENAMETOOLONG as claude_env_put. */
int agentlaunch_env(const struct agent *a, const struct session *s, const char *home,
		    struct claude_env *env);

#endif
