/*
 * What the bot must not forget across a restart (kill -9 included), kept in one small JSON file
 * replaced atomically (core/fsutil.h): the getUpdates offset, the id of the last /events event
 * fully handled, each chat's current and followed sessions, the users refused once, the
 * permission messages whose buttons still work (their short callback keys), and the answers
 * being streamed (message, the text it shows, the session event it shows up to). The bot writes
 * it after handling what it received and before any further request goes out, so an update is
 * acted on at most once and an event's message is never lost. A state file that is not what
 * state_save writes is refused, never silently reset.
 */
#ifndef AGENTD_TG_STATE_H
#define AGENTD_TG_STATE_H

#include "cause.h"
#include "session.h"

#include <stdbool.h>
#include <stdint.h>

#define STATE_FILE_MAX        (4 * 1024 * 1024)
#define STATE_CHATS_MAX       64  /* chats remembered (each allowed user's, and groups) */
#define STATE_FOLLOW_MAX      16  /* sessions a chat follows; the oldest goes first */
#define STATE_REFUSED_MAX     256 /* users refused once; beyond, the oldest is forgotten */
#define STATE_APPROVALS_MAX   256 /* permission messages with live buttons; the oldest goes */
#define STATE_TURNS_MAX       64  /* answers being streamed at once */
#define STATE_KEY_MAX         8   /* "k" and base-36 digits: callback_data stays short */
#define STATE_TEXT_MAX        (64 * 1024) /* a streamed answer not yet in finished messages */
#define STATE_SUGGESTIONS_MAX 4096        /* claude's permission suggestions, as JSON text */
#define STATE_VERSION         1

struct state_chat {
	int64_t chat;
	char current[SESSION_ID_MAX + 1]; /* "" when none */
	char follows[STATE_FOLLOW_MAX][SESSION_ID_MAX + 1];
	unsigned nfollows; /* oldest first */
};

struct state_approval {
	char key[STATE_KEY_MAX + 1];
	int64_t chat;
	int64_t message; /* the message with the buttons; 0 until it is sent */
	char session[SESSION_ID_MAX + 1];
	char request_id[SESSION_REQUEST_ID_MAX + 1];
	char tool[SESSION_TOOL_NAME_MAX + 1];
	bool terminal;     /* a terminal-mode session's request */
	char *text;        /* the message's text before the decision (owned) */
	char *suggestions; /* JSON array text, or NULL: no "Allow for session" (owned) */
	bool busy;         /* not kept: a press or the final edit is underway */
};

struct state_turn {
	char session[SESSION_ID_MAX + 1];
	int64_t chat;
	int64_t user;    /* who sent the prompt (the actor of its requests) */
	int64_t message; /* the message showing text's start; 0 until it is sent */
	uint64_t after;  /* the last session event rendered into text */
	bool ended;      /* text holds the turn's end: only its showing is left */
	uint64_t shown;  /* a hash of what the message shows (0: not known), to spare an edit */
	char *text;      /* the answer's text not yet in finished messages (owned) */
};

struct state {
	int64_t offset;     /* the next getUpdates offset */
	uint64_t events_id; /* the last /events id handled; 0: none yet */
	uint32_t next_key;
	int64_t refused[STATE_REFUSED_MAX];
	unsigned nrefused;
	struct state_chat chats[STATE_CHATS_MAX];
	unsigned nchats;
	struct state_approval approvals[STATE_APPROVALS_MAX];
	unsigned napprovals;
	struct state_turn turns[STATE_TURNS_MAX];
	unsigned nturns;
};

/* An empty state (calloc'ed), or NULL when out of memory. */
struct state *state_create(void);
/* Frees st and what it owns. NULL-safe. */
void state_destroy(struct state *st);

/*
 * Reads path into st (which must be empty). A missing file leaves st empty and returns 0.
 * Returns -EINVAL (not a state file: cause says why), -EFBIG (over STATE_FILE_MAX), -ENOMEM or
 * -errno of reading.
 */
int state_load(struct state *st, const char *path, struct cause *cause);

/* Replaces path with st (mode 0600, fsync'ed, atomically). Returns 0 or -errno. */
int state_save(const struct state *st, const char *path, struct cause *cause);

/* The JSON text of st (caller frees), or NULL when out of memory. */
char *state_to_json(const struct state *st);

/* Parses text (len bytes) into an empty st. Returns 0, -EINVAL with cause, or -ENOMEM. */
int state_from_json(struct state *st, const char *text, size_t len, struct cause *cause);

/* The chat's entry, made when create (the oldest chat is forgotten when full); NULL when absent
 * and !create. */
struct state_chat *state_chat(struct state *st, int64_t chat, bool create);

/* The chat follows session (made its newest; the oldest is dropped when full). session must be
 * a valid session id. */
void state_follow(struct state_chat *c, const char *session);

/* Whether the chat follows session. */
bool state_follows(const struct state_chat *c, const char *session);

/* No chat follows session any longer, nor has it as current. */
void state_unfollow_all(struct state *st, const char *session);

/* Whether user was refused before; state_refuse records that it was (returns false if it was
 * already). */
bool state_refused(const struct state *st, int64_t user);
bool state_refuse(struct state *st, int64_t user);

/*
 * A new approval with a fresh key (the oldest is dropped when full; its key no longer works).
 * text and suggestions are copied (suggestions may be NULL). Returns it, or NULL when out of
 * memory.
 */
struct state_approval *state_approval_add(struct state *st, int64_t chat, const char *session,
					  const char *request_id, const char *tool, bool terminal,
					  const char *text, const char *suggestions);
struct state_approval *state_approval_by_key(struct state *st, const char *key);
struct state_approval *state_approval_find(struct state *st, int64_t chat, const char *session,
					   const char *request_id);
/* Removes a (a pointer into st->approvals; later entries move down). */
void state_approval_remove(struct state *st, struct state_approval *a);

/* The turn of chat in session, made when create (NULL when full or out of memory). */
struct state_turn *state_turn(struct state *st, int64_t chat, const char *session, bool create);
/* Replaces t's text with a copy of text. Returns 0 or -ENOMEM. */
int state_turn_set_text(struct state_turn *t, const char *text);
void state_turn_remove(struct state *st, struct state_turn *t);

#endif
