/*
 * Streamed answers. A prompt from a chat starts a turn (POST /sessions/<id>/prompt, SSE); its
 * events are rendered (render.h) into one message, edited as they arrive at the pace the outbox
 * allows (one edit per 1.5 s per chat at most: several events in between make one edit), split
 * into a further message when the text passes 4096 characters, and ending with the result's
 * line. The text not yet in finished messages, the message showing it and the last event id are
 * kept in the state; after a restart, or when the stream breaks, the turn goes on from that id
 * with GET /sessions/<id>/events (Last-Event-ID), so an answer is neither lost nor shown twice.
 */
#ifndef AGENTD_TG_TURNS_H
#define AGENTD_TG_TURNS_H

#include "bot.h"

#include <stdbool.h>
#include <stdint.h>

#define TURN_TEXT_MAX (48 * 1024) /* an answer's text waiting for its messages; beyond, cut */

/* Sends prompt to session for user in chat, and streams the answer there. A refusal (terminal
 * mode, a turn already running, no such session) is said in the chat. */
void turns_prompt(struct bot *b, int64_t chat, int64_t user, const char *session,
		  const char *prompt);

/* Takes up the turns the state holds (after a restart). */
void turns_resume(struct bot *b);

/* Reconnects turns whose stream broke once their delay passed; asks for the next tick. */
void turns_tick(struct bot *b, int64_t now);

/* Frees every turn (no callbacks). */
void turns_destroy_all(struct bot *b);

#endif
