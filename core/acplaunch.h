/*
 * Starting an agent that is not claude in structured mode: agentd-host --acp <agent> runs the
 * agent's Agent Client Protocol mode (core/agents.h: acp_command, acp_args) and speaks ACP to it
 * (host/acpagent.h). The host itself remembers the agent's session (acp.json in the session's
 * state dir) and loads it again after a restart, so the argv is the same at every launch; only
 * the first one carries the bootstrap prompt (--prompt, a first user message, never a word of
 * the agent's), and a launch after the terminal mode had a conversation the host has not
 * recorded names that one (--resume), so a mode switch keeps the conversation.
 */
#ifndef AGENTD_ACPLAUNCH_H
#define AGENTD_ACPLAUNCH_H

#include "agents.h"
#include "claude.h"
#include "config.h"
#include "session.h"

#include <stdint.h>

/*
 * Builds into out: host_bin --set AGENTD_RUNTIME_DIR=<dir> --set AGENTD_STATE_DIR=<dir> --set
 * AGENTD_PERMISSION_TIMEOUT=<n> --acp <a->name> [--prompt <first_prompt>] [--resume <resume>
 * [--resume-made <resume_made_ms>]] <s->id> -- <the ACP command: acp_command's words, or
 * command's, acp_args' and args'>. first_prompt NULL or "" for none; resume NULL for none (the
 * terminal mode's conversation for the host to load when it recorded none: an agent's session
 * id, or ACP_RESUME_NEWEST), resume_made_ms 0 when not known. Returns 0, -EINVAL (a has no
 * ACP mode), -E2BIG or -ENAMETOOLONG.
 */
int acplaunch_argv(const struct config *cfg, const struct agent *a, const struct session *s,
		   const char *host_bin, const char *first_prompt, const char *resume,
		   int64_t resume_made_ms, struct claude_argv *out);

#endif
