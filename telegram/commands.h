/*
 * What a user's message asks, for an allowed user (bot.c checks that first):
 *   /sessions                 every session with its activity (waiting first)
 *   /new owner/name issue [structured|terminal]   create one; it becomes the chat's session
 *   /use <id>                 the chat's session (also followed: its permission requests come)
 *   /mode terminal|structured switch the chat's session
 *   /stop [<id>] [force]      delete a session (the chat's by default); says what became of
 *                             its worktree, and "force" removes a kept one
 *   /interrupt                end the running turn of the chat's session
 *   /help, /start             the list above
 * Any other text is a prompt to the chat's session (turns.h).
 */
#ifndef AGENTD_TG_COMMANDS_H
#define AGENTD_TG_COMMANDS_H

#include "bot.h"

#define COMMANDS_PROMPT_MAX 8192 /* agent-daemon's own limit on a prompt */

/* Handles a text message from an allowed user. */
void commands_message(struct bot *b, const struct botapi_update *u);

/* The command word of text ("/new@agentd_bot owner/name 1" -> "new"), without the bot's name,
 * into out; "" when text is not a command. Exposed for tests. */
void commands_word(const char *text, char *out, size_t outlen);

#endif
