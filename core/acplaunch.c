#include "acplaunch.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

struct acplaunch_builder {
	struct claude_argv *out;
	size_t n, used;
};

static int acplaunch_push(struct acplaunch_builder *b, const char *word, size_t len)
{
	if (b->n >= CLAUDE_ARGV_MAX)
		return -E2BIG;
	if (b->used + len + 1 > sizeof(b->out->buf))
		return -ENAMETOOLONG;
	memcpy(b->out->buf + b->used, word, len);
	b->out->buf[b->used + len] = '\0';
	b->out->argv[b->n++] = b->out->buf + b->used;
	b->out->argv[b->n] = NULL;
	b->used += len + 1;
	return 0;
}

static int acplaunch_pushf(struct acplaunch_builder *b, const char *prefix, const char *value)
{
	char word[CONFIG_PATH_MAX + 64];
	int n = snprintf(word, sizeof(word), "%s%s", prefix, value);

	if (n < 0 || (size_t)n >= sizeof(word))
		return -ENAMETOOLONG;
	return acplaunch_push(b, word, (size_t)n);
}

/* The blank-separated words of words (no quoting, as the agents table's). */
static int acplaunch_words(struct acplaunch_builder *b, const char *words)
{
	int r;

	for (const char *p = words != NULL ? words : ""; *p != '\0';) {
		size_t len;

		p += strspn(p, " \t");
		len = strcspn(p, " \t");
		if (len > 0 && (r = acplaunch_push(b, p, len)) < 0)
			return r;
		p += len;
	}
	return 0;
}

int acplaunch_argv(const struct config *cfg, const struct agent *a, const struct session *s,
		   const char *host_bin, const char *first_prompt, const char *resume,
		   int64_t resume_made_ms, struct claude_argv *out)
{
	struct acplaunch_builder b = {out, 0, 0};
	char timeout[16], grace[16], made[24];
	int r;

	out->argv[0] = NULL;
	if (a->acp_command == NULL && a->acp_args == NULL)
		return -EINVAL;
	snprintf(timeout, sizeof(timeout), "%d", cfg->permission_timeout);
	/* The host kills its agent only after the grace the daemon waits for a stop (claude.c). */
	snprintf(grace, sizeof(grace), "%d", cfg->stop_grace);
	/* The host's pane has only the agent's environment: its own settings come as words. */
	if ((r = acplaunch_push(&b, host_bin, strlen(host_bin))) < 0 ||
	    (r = acplaunch_push(&b, "--set", 5)) < 0 ||
	    (r = acplaunch_pushf(&b, "AGENTD_RUNTIME_DIR=", cfg->runtime_dir)) < 0 ||
	    (r = acplaunch_push(&b, "--set", 5)) < 0 ||
	    (r = acplaunch_pushf(&b, "AGENTD_STATE_DIR=", cfg->state_dir)) < 0 ||
	    (r = acplaunch_push(&b, "--set", 5)) < 0 ||
	    (r = acplaunch_pushf(&b, "AGENTD_PERMISSION_TIMEOUT=", timeout)) < 0 ||
	    (r = acplaunch_push(&b, "--set", 5)) < 0 ||
	    (r = acplaunch_pushf(&b, "AGENTD_STOP_GRACE=", grace)) < 0 ||
	    (r = acplaunch_push(&b, "--acp", 5)) < 0 ||
	    (r = acplaunch_push(&b, a->name, strlen(a->name))) < 0)
		return r;
	if (first_prompt != NULL && first_prompt[0] != '\0' &&
	    ((r = acplaunch_push(&b, "--prompt", 8)) < 0 ||
	     (r = acplaunch_push(&b, first_prompt, strlen(first_prompt))) < 0))
		return r;
	if (resume != NULL && ((r = acplaunch_push(&b, "--resume", 8)) < 0 ||
			       (r = acplaunch_push(&b, resume, strlen(resume))) < 0))
		return r;
	snprintf(made, sizeof(made), "%lld", (long long)resume_made_ms);
	if (resume != NULL && resume_made_ms > 0 &&
	    ((r = acplaunch_push(&b, "--resume-made", 13)) < 0 ||
	     (r = acplaunch_push(&b, made, strlen(made))) < 0))
		return r;
	if ((r = acplaunch_push(&b, s->id, strlen(s->id))) < 0 ||
	    (r = acplaunch_push(&b, "--", 2)) < 0)
		return r;
	/* A program of its own (codex-acp) takes none of the CLI's extra words. */
	if (a->acp_command != NULL)
		return acplaunch_words(&b, a->acp_command);
	if ((r = acplaunch_words(&b, a->command)) < 0 || (r = acplaunch_words(&b, a->acp_args)) < 0)
		return r;
	return acplaunch_words(&b, a->args);
}
