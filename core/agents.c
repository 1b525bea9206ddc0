#include "agents.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/*
 * The built-in rows. Their shapes were checked against the pinned CLIs
 * (tests/package.json; notes in docs/API.md "Agents"):
 *   - codex takes its prompt after "--" but no conversation id: each session has its own
 *     CODEX_HOME, so "resume --last" is its conversation. --no-daemon: the TUI would otherwise
 *     start a shared app-server that outlives the pane (and the session). The hooks are ours,
 *     written at each launch, and codex would stop at "Hooks need review" without
 *     --dangerously-bypass-hook-trust.
 *   - gemini breaks with "--" (it starts with an empty prompt): its -i option carries it,
 *     glued with '='. --skip-trust: a folder it does not know shows a trust dialog that drops
 *     the prompt.
 *   - opencode's positional is a directory: its --prompt option carries the prompt. Its ids
 *     cannot be chosen: each session has its own database, so --continue is its conversation.
 *   - structured mode: each one's ACP mode behind agentd-host --acp (gemini --acp, opencode
 *     acp, and for codex the separate codex-acp adapter: codex itself speaks no ACP).
 * claude's executable and extra words are AGENTD_CLAUDE and AGENTD_CLAUDE_ARGS (filled in by
 * agents_find); its argv is core/claude.h's.
 */
static const struct agent agents_table[AGENTS_BUILTIN] = {
    {"claude", AGENT_CLAUDE, "claude", "", "--", "--session-id=" AGENT_ID_WORD,
     "--resume=" AGENT_ID_WORD, AGENT_RESUME_ID, "hooks", true, NULL, NULL},
    {"codex", AGENT_CODEX, "codex", "", "--", "--no-daemon --dangerously-bypass-hook-trust",
     "resume --no-daemon --dangerously-bypass-hook-trust --last", AGENT_RESUME_LAST, "hooks", true,
     "codex-acp", ""},
    {"gemini", AGENT_GEMINI, "gemini", "", "--prompt-interactive=",
     "--skip-trust --session-id=" AGENT_ID_WORD, "--skip-trust --resume=" AGENT_ID_WORD,
     AGENT_RESUME_ID, "hooks", true, NULL, "--acp --skip-trust"},
    {"opencode", AGENT_OPENCODE, "opencode", "", "--prompt=", "", "--continue", AGENT_RESUME_LAST,
     "hooks", true, NULL, "acp"},
};

static const struct agent *agents_builtin_row(const char *name)
{
	for (size_t i = 0; i < AGENTS_BUILTIN; i++)
		if (strcmp(agents_table[i].name, name) == 0)
			return &agents_table[i];
	return NULL;
}

bool agents_builtin(const char *name)
{
	return agents_builtin_row(name) != NULL;
}

bool agents_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > AGENT_NAME_MAX || !(name[0] >= 'a' && name[0] <= 'z'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
		      name[i] == '_'))
			return false;
	return true;
}

static const struct config_agent *agents_configured(const struct config *cfg, const char *name)
{
	for (size_t i = 0; i < CONFIG_AGENTS_MAX; i++)
		if (cfg->agents[i].name[0] != '\0' && strcmp(cfg->agents[i].name, name) == 0)
			return &cfg->agents[i];
	return NULL;
}

int agents_find(const struct config *cfg, const char *name, struct agent *out)
{
	const struct agent *row = agents_builtin_row(name);
	const struct config_agent *ca = agents_configured(cfg, name);

	if (row != NULL) {
		*out = *row;
		if (row->kind == AGENT_CLAUDE) {
			out->command = cfg->claude;
			out->args = cfg->claude_args;
		} else if (ca != NULL) {
			if (ca->command[0] != '\0')
				out->command = ca->command;
			out->args = ca->args;
			if (ca->acp[0] != '\0' && row->kind != AGENT_CLAUDE)
				out->acp_command = ca->acp;
		}
		return 0;
	}
	if (ca == NULL || ca->command[0] == '\0')
		return -ENOENT;
	*out = (struct agent){
	    .name = ca->name,
	    .kind = AGENT_CUSTOM,
	    .command = ca->command,
	    .args = ca->args,
	    .prompt = ca->has_prompt ? ca->prompt : "--",
	    .start = ca->start,
	    .resume = ca->resume,
	    .resumes = ca->resume[0] != '\0' ? AGENT_RESUME_ID : AGENT_RESUME_NONE,
	    .activity_source = "none",
	    .structured = ca->acp[0] != '\0',
	    .acp_command = ca->acp[0] != '\0' ? ca->acp : NULL,
	};
	return 0;
}

void agents_list(const struct config *cfg, char *out, size_t outlen)
{
	size_t used = 0;

	if (outlen == 0)
		return;
	out[0] = '\0';
	for (size_t i = 0; i < AGENTS_BUILTIN + CONFIG_AGENTS_MAX; i++) {
		const char *name;
		int n;

		if (i < AGENTS_BUILTIN) {
			name = agents_table[i].name;
		} else {
			const struct config_agent *ca = &cfg->agents[i - AGENTS_BUILTIN];

			if (ca->name[0] == '\0' || agents_builtin(ca->name) ||
			    ca->command[0] == '\0')
				continue;
			name = ca->name;
		}
		n = snprintf(out + used, outlen - used, "%s%s", used > 0 ? ", " : "", name);
		if (n < 0 || (size_t)n >= outlen - used)
			return; /* cut: outlen below AGENTS_LIST_MAX */
		used += (size_t)n;
	}
}

const char *agents_activity_source(const struct session *s)
{
	const struct agent *row = agents_builtin_row(s->agent);

	if (s->mode == SESSION_STRUCTURED)
		return "host";
	return row != NULL ? row->activity_source : "none";
}

int agents_check_config(const struct config *cfg, struct cause *cause)
{
	struct agent a;
	char known[AGENTS_LIST_MAX];

	for (size_t i = 0; i < CONFIG_AGENTS_MAX; i++) {
		const struct config_agent *ca = &cfg->agents[i];

		if (ca->name[0] == '\0')
			continue;
		if (strcmp(ca->name, "claude") == 0)
			return cause_fail(cause, EINVAL,
					  "AGENTD_AGENT_CLAUDE_* is not read: claude's are "
					  "AGENTD_CLAUDE and AGENTD_CLAUDE_ARGS");
		if (agents_builtin(ca->name) && (ca->has_prompt || ca->has_start || ca->has_resume))
			return cause_fail(cause, EINVAL,
					  "%s is a built-in agent: only its _COMMAND and _ARGS can "
					  "be configured",
					  ca->name);
		if (!agents_builtin(ca->name) && ca->command[0] == '\0')
			return cause_fail(
			    cause, EINVAL,
			    "the agent %s has no command (AGENTD_AGENT_<NAME>_COMMAND)", ca->name);
	}
	if (agents_find(cfg, cfg->default_agent, &a) < 0) {
		agents_list(cfg, known, sizeof(known));
		return cause_fail(cause, EINVAL,
				  "AGENTD_DEFAULT_AGENT '%s' is not an agent; known: %s",
				  cfg->default_agent, known);
	}
	return 0;
}
