/*
 * The argv and environment of the agent process. Terminal mode: claude --session-id=<uuid>
 * --settings=<file> [extra args] -- <prompt> on the first launch and claude --resume=<uuid>
 * --settings=<file> [extra args] afterwards. The prompt is one argv word after "--" (tmux execs
 * argv of two or more words without a shell), so it can never be read as an option. The
 * settings file holds the hooks through which claude reports to the bridge (agentd-hook,
 * core/hookproto.h): one file in the runtime dir, the same for every terminal session.
 */
#ifndef AGENTD_CLAUDE_H
#define AGENTD_CLAUDE_H

#include "config.h"
#include "session.h"

#include <json-c/json.h>

#define CLAUDE_ARGV_MAX       64
#define CLAUDE_ENV_MAX        64
#define CLAUDE_ENV_BUF        (16 * 1024) /* tmux carries the -e words in one 16 KiB message too */
#define CLAUDE_SETTINGS_NAME  "claude-settings.json" /* in the runtime dir */
#define CLAUDE_HOOK_TIMEOUT_S 30 /* claude's limit for a report (agentd-hook waits 2 s at most) */
#define CLAUDE_HOOK_GRACE_S   60 /* a PermissionRequest's limit beyond the wait */

struct claude_argv {
	char *argv[CLAUDE_ARGV_MAX + 1]; /* NULL-terminated; points into buf */
	char buf[CONFIG_VALUE_MAX * 2 + CONFIG_PATH_MAX * 4 + SESSION_PROMPT_MAX + 256];
	size_t argc, used; /* words in argv, bytes of buf they take */
};

/* The one builder of an agent's argv (claude's, the other CLIs', agentd-host's): empties out. */
void claude_argv_reset(struct claude_argv *out);

/* Appends the len bytes of word as one word. Returns 0, -E2BIG (CLAUDE_ARGV_MAX words) or
 * -ENAMETOOLONG (buf is full). */
int claude_argv_push(struct claude_argv *out, const char *word, size_t len);

/* Appends prefix and value as one word ("--set" values, "--name=value"). */
int claude_argv_pushf(struct claude_argv *out, const char *prefix, const char *value);

/* Appends the blank-separated words of words (NULL: none). No quoting, by design: they are
 * configuration, not a shell. */
int claude_argv_words(struct claude_argv *out, const char *words);

/* "NAME=value" words for tmux's -e, NULL-terminated; they point into buf. */
struct claude_env {
	char *words[CLAUDE_ENV_MAX + 1];
	char buf[CLAUDE_ENV_BUF];
};

/*
 * Builds the agent's environment into out: every variable named in cfg->agent_env (names split on
 * blanks and commas; the first of a repeated name counts) that is set in from (an environ array),
 * then what a terminal program needs unless the list gave it: COLORTERM=truecolor and
 * LANG=C.UTF-8. tmux adds its own (tmux.h). Returns 0, -E2BIG (over CLAUDE_ENV_MAX variables) or
 * -ENAMETOOLONG (over CLAUDE_ENV_BUF bytes).
 */
int claude_env(const struct config *cfg, char *const *from, struct claude_env *out);

/* Appends name=value to env (built by claude_env) unless name is there already. Returns 0,
 * -E2BIG or -ENAMETOOLONG as claude_env. */
int claude_env_put(struct claude_env *env, const char *name, const char *value);

/*
 * Builds the terminal-mode argv for s into out: --session-id on first launch (s->launched false,
 * with s->prompt as the last word when non-empty), --resume afterwards; --settings=<settings>
 * next unless settings is NULL. Returns 0, -E2BIG (too many extra args) or -ENAMETOOLONG.
 */
int claude_terminal_argv(const struct config *cfg, const struct session *s, const char *settings,
			 struct claude_argv *out);

/*
 * One hook entry of Claude Code's settings, which codex and gemini read too:
 * {"matcher":<matcher>,"hooks":[{"type":"command","command":<command>,"timeout":<timeout>}]},
 * without "matcher" when it is NULL. NULL when out of memory.
 */
json_object *claude_hook_entry(const char *command, int timeout, const char *matcher);

/*
 * The settings JSON for terminal sessions (caller frees): for each hook event agent-daemon
 * listens to (SessionStart, UserPromptSubmit, PreToolUse, PermissionRequest unless
 * cfg->terminal_permission_wait is 0, PostToolUse, PostToolUseFailure, Notification, Stop,
 * SessionEnd) the command "<hook_bin> --socket <runtime>/hooks.sock [--wait N] <Event>", with a
 * timeout. claude hands the command to a shell: hook_bin and the socket path must be plain
 * absolute paths (config_path_plain). NULL with cause (-EINVAL: not plain; -ENOMEM).
 */
char *claude_hook_settings(const struct config *cfg, const char *hook_bin, struct cause *cause);

/*
 * Writes claude_hook_settings() to <runtime>/CLAUDE_SETTINGS_NAME (mode 0644; a temp file of its
 * own renamed over it, so writers may overlap and a reader sees a whole file) and its path into
 * path. Returns 0 or -errno with cause.
 */
int claude_hook_settings_write(const struct config *cfg, const char *hook_bin, char *path,
			       size_t pathlen, struct cause *cause);

/*
 * Builds the structured-mode argv for s into out: host_bin --set AGENTD_RUNTIME_DIR=<dir> --set
 * AGENTD_STATE_DIR=<dir> --set AGENTD_PERMISSION_TIMEOUT=<n> [--prompt <first_prompt>] <id> --
 * claude -p --input-format stream-json --output-format stream-json --verbose --replay-user-messages
 * --permission-prompt-tool stdio (--resume=<uuid> when has_transcript, else --session-id=<uuid>)
 * [extra args]. agentd-host runs in the pane, starts claude from the words after "--" and sends
 * first_prompt (NULL or "" for none) as the first user message. --replay-user-messages makes
 * claude echo each prompt on its stdout (a "user" line with "isReplay": true, after the turn's
 * system/init): the session's event log then holds the prompts too, so a client replaying it
 * shows the whole conversation.
 * Returns 0, -E2BIG or -ENAMETOOLONG.
 */
int claude_structured_argv(const struct config *cfg, const struct session *s, const char *host_bin,
			   bool has_transcript, const char *first_prompt, struct claude_argv *out);

/*
 * Tells whether claude has a transcript for s: $CLAUDE_CONFIG_DIR or $HOME/.claude, then
 * projects/<worktree with '/' and '.' as '-'>/<uuid>.jsonl. home and config_dir may be NULL.
 */
bool claude_has_transcript(const struct session *s, const char *home, const char *config_dir);

/* Writes the path of claude's transcript of s into out: $CLAUDE_CONFIG_DIR (config_dir) or
 * home/.claude, then projects/<worktree with / and . as ->/<agentSessionId>.jsonl. Returns 0,
 * -ENOENT (neither given) or -ENAMETOOLONG. */
int claude_transcript_path(const struct session *s, const char *home, const char *config_dir,
			   char *out, size_t len);

#endif
