/*
 * The attention hub's inside, shared by its two files: attention.c (the sessions' facts and
 * where they go, structured sessions' host events, the sessions, the hub) and atthooks.c
 * (terminal sessions: claude's hooks, and answers from clients). Not a contract for anyone else:
 * the hub's is attention.h.
 */
#ifndef AGENTD_BRIDGE_ATTENTION_INT_H
#define AGENTD_BRIDGE_ATTENTION_INT_H

#include "attention.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <time.h>
#include <uv.h>

#define ATT_PENDING_MAX  64   /* requests one session tracks; more are logged and left */
#define ATT_ANSWERED_MAX 64   /* ended requests remembered per session (409 with who) */
#define ATT_TICK_MS      1000 /* retries of host connections, orphan expiry */
#define ATT_ORPHAN_MS                                                                              \
	(15 * 1000)              /* a terminal request the bridge found in a record                \
					waits this long for its hook to ask again */
#define ATT_RESULT_TEXT_MAX 4096 /* bytes of a result's text on /events */
#define ATT_BEHAVIOR_MAX    16
#define ATT_BY_MAX          64

struct att_request {
	bool used;
	char request_id[HOSTPROTO_REQUEST_ID_MAX + 1];
	char tool_name[SESSION_TOOL_NAME_MAX + 1];
	char description[SESSION_DESCRIPTION_MAX + 1];
	/* Terminal mode: the hook waiting for a decision (fn NULL: none yet, an orphan). */
	attention_decided_fn fn;
	void *arg;
	uint64_t orphan_until; /* orphans only: when it is given up */
	json_object *decision; /* an orphan's answer, for its hook when it asks again */
	char decided_by[ATT_BY_MAX];
	json_object *input; /* terminal: the tool's input, to know its PostToolUse */
};

struct att_answered {
	char request_id[HOSTPROTO_REQUEST_ID_MAX + 1];
	char by[ATT_BY_MAX];
	bool withdrawn; /* nobody answered: its agent went (by says why) */
};

struct att_host;

struct att_session {
	LIST_ENTRY(att_session) link;
	struct attention *a;
	char id[SESSION_ID_MAX + 1];
	enum session_mode mode;
	enum session_state state;
	enum session_activity activity;
	int64_t activity_at;
	uint64_t host_event;
	struct session_cost cost; /* the record's, plus the results taken in since */
	uint32_t launch;          /* the record's: which claude the requests below come from */
	struct att_request req[ATT_PENDING_MAX];
	struct att_answered answered[ATT_ANSWERED_MAX];
	size_t answered_next;
	struct att_host *host; /* structured and running: the subscription */
	uint64_t retry_at;     /* when to try the host again (0: not waiting to) */
	bool seen;             /* found in the last pass over the records */
	/* The record's bootstrap prompt is on its way (agentd-api made the session working when
	 * it created it): working until a turn ends, whatever claude's start reports. */
	bool bootstrap;
	/* Terminal: the TUI shows a dialog no client can answer (claude's Notification said so,
	 * or the wait of a hook's request ran out): waiting until claude reports again. */
	bool tui_asks;
};

/* A subscription to a structured session's agentd-host. */
struct att_host {
	uv_pipe_t pipe;
	struct att_session *s; /* NULL once the session let it go */
	struct hostproto_reader rd;
	bool closing;
};

#define ATT_READ_CHUNK (64 * 1024)

struct attention {
	struct bridge *b;
	uv_timer_t timer;
	char scratch[ATT_READ_CHUNK]; /* every host read lands here; the reader keeps the rest */
	LIST_HEAD(, att_session) sessions;
};

static inline int64_t att_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* attention.c: the helpers the hooks' side uses (each is described where it is defined). */
struct att_request *att_add(struct att_session *s, const char *request_id, const char *tool_name,
			    const char *description);
void att_drop(struct att_session *s, struct att_request *q, const char *by);
struct att_request *att_find(struct att_session *s, const char *request_id);
void att_publish(struct att_session *s, const char *name, json_object *data);
struct att_session *att_session_find(struct attention *a, const char *id);
struct att_session *att_session_new(struct attention *a, const struct session *rec);
void att_set(struct att_session *s, enum session_activity act, bool force);
const char *att_str(json_object *o, const char *key);
const struct att_answered *att_was_answered(const struct att_session *s, const char *request_id);
void att_withdraw_all(struct att_session *s, const char *why);

#endif
