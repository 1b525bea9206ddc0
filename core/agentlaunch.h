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
 * Once agentd-host has recorded the agent's conversation in structured mode (acp.h:
 * ACP_STATE_NAME), a later terminal launch resumes that one by its id instead.
 */
#ifndef AGENTD_AGENTLAUNCH_H
#define AGENTD_AGENTLAUNCH_H

#include "agents.h"
#include "cause.h"
#include "claude.h"

#define AGENTLAUNCH_DIR      ".agentd-agents"               /* in the agent's HOME */
#define AGENTLAUNCH_FILE_MAX (1024 * 1024)                  /* an agent's config file copied in */
#define AGENTLAUNCH_HOOK_MS  (CLAUDE_HOOK_TIMEOUT_S * 1000) /* gemini counts milliseconds */
/* An agent's conversation id as agentd-host records it (acp.h: ACP_STATE_NAME): the host's
 * bound on a session id. */
#define ACP_CONVERSATION_MAX 255

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
 * agentlaunch_argv, but a later launch (resume true) of a built-in with conversation (not NULL:
 * the id agentd-host recorded in structured mode) goes on with that conversation by its id:
 * codex "resume … <id>", gemini "--resume=<id>", opencode "--session=<id>", so that a switch
 * back from structured mode continues the conversation the agent had there.
 */
int agentlaunch_argv_conversation(const struct agent *a, const struct session *s, bool resume,
				  const char *conversation, struct claude_argv *out);

/*
 * The conversation id agentd-host recorded for a session in structured mode (its acp.json, at
 * acp_state_path) into out. Returns 0; -ENOENT when there is none; -EINVAL for an id that is
 * not one (it would be a word of an argv: 1 to ACP_CONVERSATION_MAX of [A-Za-z0-9_-], not
 * starting with '-'); -ENAMETOOLONG; -errno of the read.
 */
int agentlaunch_recorded_conversation(const char *acp_state_path, char *out, size_t outlen);

/*
 * The id of codex's newest conversation in s's CODEX_HOME under home (the last rollout file's
 * UUID) into out: codex-acp loads a TUI's conversation by its id, but its session/list does not
 * list the TUI's (codex 0.169's rollouts). Returns 0, -ENOENT (none), -EINVAL, -ENAMETOOLONG.
 */
int agentlaunch_codex_newest(const struct session *s, const char *home, char *out, size_t outlen);

/*
 * Whether codex's TUI can resume its conversation id in s's CODEX_HOME under home: false when
 * the TUI began it (its records carry an "ordinal") and codex-acp wrote to it last (its records
 * do not), which codex 0.169 refuses. True when it has no such rollout.
 */
bool agentlaunch_codex_tui_can_resume(const struct session *s, const char *home, const char *id);

/*
 * When gemini made the conversation of s's agentSessionId (unix ms: the minute in its file's
 * name), 0 when not known: gemini cannot load a session in the minute it was made.
 */
int64_t agentlaunch_gemini_made_ms(const struct session *s, const char *home);

/*
 * Whether a later launch of a for s can go on with its conversation (read as the agent: the
 * caller holds its file identity): gemini's chat file for agentSessionId, codex's recorded
 * sessions, opencode's database, in the session's directory under home; a configured agent
 * with resume words: s->launched. False otherwise (the launch is a first one, prompt included).
 */
bool agentlaunch_has_conversation(const struct agent *a, const struct session *s, const char *home);

/* The same for conversation (not NULL: the id agentd-host recorded): gemini's chat file and
 * codex's recorded session of that id; NULL: as agentlaunch_has_conversation. */
bool agentlaunch_has_conversation_id(const struct agent *a, const struct session *s,
				     const char *home, const char *conversation);

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

/* The variable that gives opencode's attention plugin (written by agentlaunch_prepare into the
 * agent's ~/.config/opencode/plugin/) agentd-hook's words: set for terminal launches only. */
#define AGENTLAUNCH_OPENCODE_HOOK_ENV "AGENTD_OPENCODE_HOOK"

/* Adds to env what a terminal launch of a with hooks (hook_cmd, as agentlaunch_prepare's) needs
 * besides its files: opencode's AGENTLAUNCH_OPENCODE_HOOK_ENV. Returns 0 or as claude_env_put. */
int agentlaunch_hook_env(const struct agent *a, const char *hook_cmd, struct claude_env *env);

#endif
