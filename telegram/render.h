/*
 * What the bot writes in a chat, as plain text (no parse_mode: nothing in an agent's output can
 * break the markup): a turn's events as a streamed answer (the assistant's text, tool uses in
 * short form, failures, the result with turns, cost and time), permission messages and the line
 * that says who decided, and the /sessions list. Pure functions; texts that come from the agent
 * are cut where the chat would drown in them.
 */
#ifndef AGENTD_TG_RENDER_H
#define AGENTD_TG_RENDER_H

#include "buf.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#define RENDER_TOOL_MAX     160 /* a tool use's short form, in UTF-16 units */
#define RENDER_ERROR_MAX    300 /* a failure's text */
#define RENDER_PERM_MAX     900 /* a permission request's command or description */
#define RENDER_NAME_MAX     64  /* a user's name in "Allowed by <name>" (bytes) */
#define RENDER_DECISION_MAX 512

/*
 * Appends what the event (its SSE name and parsed data) adds to a streamed answer: nothing for
 * most (system, stream_event, permission_resolved...). Returns 0, or out's -EOVERFLOW/-ENOMEM.
 */
int render_turn_event(struct buf *out, const char *name, json_object *data);

/* Whether the event ends a turn's stream (result, error). */
bool render_turn_ends(const char *name);

/* "Bash: touch x": the tool's name and the input that says most (command, file, pattern, URL,
 * description), first line only, cut to RENDER_TOOL_MAX. A command may be a list of words (an
 * ACP agent's raw input): the script of sh/bash -c, else the words joined. The name alone when
 * the input says it again (another agent's tool is named by its call's title). */
void render_tool(char *out, size_t outlen, const char *tool, json_object *input);

/*
 * The text of a permission message for session's request (the data of a permission event:
 * toolName, input, description), with a link to the session in the web UI when web_url is not
 * NULL (a terminal-mode session). A title that is the command itself ("asks to run a command")
 * or a description that is the title is said once. Returns 0 or out's error.
 */
int render_permission(struct buf *out, const char *session, json_object *data, const char *web_url);

/*
 * The line appended to a permission message once decided. behavior: "allow", "deny",
 * "withdrawn" (or NULL: unknown, e.g. answered in the terminal); by: agentd's "by" of
 * permission_resolved ("client", "timeout", "terminal", "telegram:<id>"...) or NULL; who: the
 * name of the Telegram user who pressed the button, or NULL when decided elsewhere; for_session:
 * "Allow for session".
 */
void render_decision(char *out, size_t outlen, const char *behavior, const char *by,
		     const char *who, bool for_session);

/*
 * The /sessions answer: every session of the array (GET /sessions), those waiting first, then
 * working, idle and the rest, each with its activity, mode, agent, and what it waits for; current
 * is marked. Returns 0 or out's error.
 */
int render_sessions(struct buf *out, json_object *sessions, const char *current);

/*
 * The message for a `pr` event of /events (its data: session, repo, pr, previous), or false when
 * the change is not worth a message (checks that start running again): "CI failed on
 * acme/widgets#12 (widgets-7): build, lint", "CI passed on …", "acme/widgets#12 was merged:
 * widgets-7 is finished.", "… was closed without merging", "Pull request … opened", each with
 * the pull request's URL.
 */
bool render_pr_event(char *out, size_t outlen, json_object *data);

/* Copies a Telegram user's name (first_name, else "user <id>") cut to RENDER_NAME_MAX. */
void render_user_name(char *out, size_t outlen, const char *first_name, long long id);

#endif
