#include "acplaunch.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int acplaunch_argv(const struct config *cfg, const struct agent *a, const struct session *s,
		   const char *host_bin, const char *first_prompt, const char *resume,
		   int64_t resume_made_ms, struct claude_argv *out)
{
	char timeout[16], grace[16], made[24];
	int r;

	claude_argv_reset(out);
	if (a->acp_command == NULL && a->acp_args == NULL)
		return -EINVAL;
	snprintf(timeout, sizeof(timeout), "%d", cfg->permission_timeout);
	/* The host kills its agent only after the grace the daemon waits for a stop (claude.c). */
	snprintf(grace, sizeof(grace), "%d", cfg->stop_grace);
	/* The host's pane has only the agent's environment: its own settings come as words. */
	if ((r = claude_argv_push(out, host_bin, strlen(host_bin))) < 0 ||
	    (r = claude_argv_push(out, "--set", 5)) < 0 ||
	    (r = claude_argv_pushf(out, "AGENTD_RUNTIME_DIR=", cfg->runtime_dir)) < 0 ||
	    (r = claude_argv_push(out, "--set", 5)) < 0 ||
	    (r = claude_argv_pushf(out, "AGENTD_STATE_DIR=", cfg->state_dir)) < 0 ||
	    (r = claude_argv_push(out, "--set", 5)) < 0 ||
	    (r = claude_argv_pushf(out, "AGENTD_PERMISSION_TIMEOUT=", timeout)) < 0 ||
	    (r = claude_argv_push(out, "--set", 5)) < 0 ||
	    (r = claude_argv_pushf(out, "AGENTD_STOP_GRACE=", grace)) < 0 ||
	    (r = claude_argv_push(out, "--acp", 5)) < 0 ||
	    (r = claude_argv_push(out, a->name, strlen(a->name))) < 0)
		return r;
	if (first_prompt != NULL && first_prompt[0] != '\0' &&
	    ((r = claude_argv_push(out, "--prompt", 8)) < 0 ||
	     (r = claude_argv_push(out, first_prompt, strlen(first_prompt))) < 0))
		return r;
	if (resume != NULL && ((r = claude_argv_push(out, "--resume", 8)) < 0 ||
			       (r = claude_argv_push(out, resume, strlen(resume))) < 0))
		return r;
	snprintf(made, sizeof(made), "%lld", (long long)resume_made_ms);
	if (resume != NULL && resume_made_ms > 0 &&
	    ((r = claude_argv_push(out, "--resume-made", 13)) < 0 ||
	     (r = claude_argv_push(out, made, strlen(made))) < 0))
		return r;
	if ((r = claude_argv_push(out, s->id, strlen(s->id))) < 0 ||
	    (r = claude_argv_push(out, "--", 2)) < 0)
		return r;
	/* A program of its own (codex-acp) takes none of the CLI's extra words. */
	if (a->acp_command != NULL)
		return claude_argv_words(out, a->acp_command);
	if ((r = claude_argv_words(out, a->command)) < 0 ||
	    (r = claude_argv_words(out, a->acp_args)) < 0)
		return r;
	return claude_argv_words(out, a->args);
}
