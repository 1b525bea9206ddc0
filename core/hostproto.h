/*
 * The protocol between agentd-bridge and agentd-host, and where its files live: the one codec
 * both sides use (the bridge builds requests and reads answers and events; the host reads
 * requests and builds answers and events), so the two cannot disagree on a field or a limit.
 * Each structured session has two directories:
 *   <runtime_dir>/agents/<id>/host.sock   the host's unix socket (gone with a reboot)
 *   <state_dir>/agents/<id>/events.log    every event, one line each, as sent to subscribers:
 *                                         it outlives a reboot, so a resumed session's host
 *                                         goes on numbering and a client replays from event 1
 * agentd-host runs as the agent user (agentuser.h), so these are the agent's files, apart from
 * the records in <state_dir>/sessions/ that it may not write: both agents/ directories are the
 * agent user's, group the daemons' (setgid, mode 2750), so the host's socket gets the daemons'
 * group and nobody else reaches it; agentd-bridge talks only to a socket the agent user owns.
 *
 * On host.sock both sides speak newline-delimited JSON. A connection starts with one request line:
 *   {"type":"subscribe","after":N}
 *       replays every event with id > N, then every pending permission request (again, even if
 *       its id <= N), then streams live events until either side closes.
 *   {"type":"prompt","prompt":"text","by":"alice"}
 *       answers {"type":"accepted","after":N,"queued":K} and then streams the turn's events
 *       (ids > N) until the turn's "result" event, then closes. While a turn runs claude queues
 *       the prompt (K: the turns ahead of it): its stream has the host's "queued" event
 *       {"prompt","position":K,"by"}, then its own turn's events from when it begins. An error
 *       {"type":"error","status":409,"code":"turn_running",...} when it cannot be queued (an
 *       interrupt is under way, HOST_QUEUED_MAX wait already): the sentence says since when the
 *       running turn runs.
 *   {"type":"permission","requestId":"…","behavior":"allow"|"deny","message":"…",
 *    "updatedInput":{…},"interrupt":true,"updatedPermissions":[{…}],"by":"alice"}
 *       (updatedPermissions only with allow: passed to claude in its control_response)
 *   {"type":"interrupt"}
 *       answer {"type":"ok"} or an error, then close.
 * "by" is taken only from a peer that is one of the daemons (SO_PEERCRED: root, or the runtime
 * directory's owner): the socket is the agent user's, so any agent reaches it, and a request of
 * another peer is handled with "by":"unvouched" whatever it says.
 * Errors are {"type":"error","status":<HTTP status>,"code":"snake_case","error":"sentence"}; one
 * may also end a stream (the host cannot go on with it, e.g. its log cannot be read).
 * Events are {"id":N,"event":"<name>","data":<JSON>}: for claude's own lines the name is the line's
 * "type" and data is the line exactly as claude wrote it; a tool-permission request is
 * "permission" with data {"requestId","toolName","input","toolUseId","description","suggestions",
 * "blockedPath"}.
 *
 * Everything here is pure (no I/O); parsed views point into the caller's line or into the JSON
 * object the parsed struct owns.
 */
#ifndef AGENTD_HOSTPROTO_H
#define AGENTD_HOSTPROTO_H

#include "config.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HOSTPROTO_LINE_MAX    (16 * 1024 * 1024) /* longest claude line or event data we carry */
#define HOSTPROTO_REQUEST_MAX (256 * 1024)       /* longest request line a client may send */
#define HOSTPROTO_ANSWER_MAX  (4 * 1024)         /* longest answer line the host sends */
#define HOSTPROTO_NAME_MAX    32                 /* an event name, with its NUL */
/* {"id":<20 digits>,"event":"<31 characters>","data": and a NUL */
#define HOSTPROTO_EVENT_HEAD_MAX 80
/* An event line: claude's line inside {"id","event","data"}, its closing '}' and '\n'. */
#define HOSTPROTO_EVENT_LINE_MAX     (HOSTPROTO_LINE_MAX + HOSTPROTO_EVENT_HEAD_MAX + 2)
#define HOSTPROTO_REQUEST_ID_MAX     127 /* a permission request id (claude's are UUIDs) */
#define HOSTPROTO_PERMISSION_UPDATES 16  /* entries of a permission answer's updatedPermissions */
#define HOSTPROTO_SUBSCRIBE_MAX      64  /* {"type":"subscribe","after":N}\n with its NUL */

#define HOSTPROTO_DIR         "agents" /* in the runtime dir: the hosts' directories */
#define HOSTPROTO_SOCKET_MODE 0660     /* host.sock: the agent user and the daemons' group */

/* Writes <runtime_dir>/agents/<id>/<leaf> (leaf "" gives the directory). Returns 0 or
 * -ENAMETOOLONG. */
int hostproto_path(const struct config *cfg, const char *id, const char *leaf, char *out,
		   size_t outlen);

/* Writes <runtime_dir>/agents (the directory of every host's directory). Returns 0 or
 * -ENAMETOOLONG. */
int hostproto_dir(const struct config *cfg, char *out, size_t outlen);

#define HOSTPROTO_LOG_NAME "events.log"

/* Writes <state_dir>/agents/<id>/<leaf> (leaf "" gives the directory; HOSTPROTO_LOG_NAME the
 * event log). Returns 0 or -ENAMETOOLONG. */
int hostproto_state_path(const struct config *cfg, const char *id, const char *leaf, char *out,
			 size_t outlen);

/* Writes <state_dir>/agents. Returns 0 or -ENAMETOOLONG. */
int hostproto_state_dir(const struct config *cfg, char *out, size_t outlen);

/* ---- requests (bridge → host) ----------------------------------------------------------- */

enum hostproto_kind {
	HOSTPROTO_SUBSCRIBE,
	HOSTPROTO_PROMPT,
	HOSTPROTO_PERMISSION,
	HOSTPROTO_INTERRUPT,
};

struct hostproto_request {
	enum hostproto_kind kind;
	uint64_t after;      /* SUBSCRIBE: replay events with ids above it */
	json_object *prompt; /* PROMPT: a non-empty JSON string */
	/* PERMISSION: */
	char request_id[HOSTPROTO_REQUEST_ID_MAX + 1];
	bool allow;
	const char *message;              /* NULL: none */
	json_object *updated_input;       /* NULL, or an object */
	json_object *updated_permissions; /* NULL, or (allow only) 1..HOSTPROTO_PERMISSION_UPDATES
					     objects each with a string "type" */
	bool interrupt;
	/* PROMPT, PERMISSION: who sends it (nginx's X-Agentd-By, core/auth.h), or NULL; the host
	 * names it in permission_resolved ("client" without it). A malformed one reads as NULL. */
	const char *by;
	json_object *owner; /* holds what the members above point into (put by _release) */
};

/* A prompt the protocol refuses: NULL when prompt is a non-empty JSON string without U+0000,
 * else the sentence for a 400 (HOSTPROTO_PROMPT_NUL for one with U+0000). */
const char *hostproto_prompt_why(json_object *prompt);
#define HOSTPROTO_PROMPT_NUL "prompt must be a string without NUL bytes"

/* True when id has 1..HOSTPROTO_REQUEST_ID_MAX characters of [A-Za-z0-9._:-]. */
bool hostproto_request_id_valid(const char *id);

/*
 * Reads the permission answer fields of obj (a client's body or a request line) into req:
 * "behavior" ("allow"|"deny") and the optional "message" (string), "updatedInput" (object),
 * "interrupt" (boolean) and, with allow, "updatedPermissions" (see struct hostproto_request).
 * Other members are ignored. req's pointers point into obj. Returns 0 or -EINVAL.
 */
int hostproto_permission_fields(json_object *obj, struct hostproto_request *req);

/*
 * Formats req as its request line (JSON, '\n' and a NUL not counted in *len). Returns the line
 * (caller frees) or NULL (errno ENOMEM, or EINVAL for a request the protocol does not allow: an
 * empty prompt, a bad request id).
 */
char *hostproto_request_format(const struct hostproto_request *req, size_t *len);

/* Writes the subscribe line for after into out (HOSTPROTO_SUBSCRIBE_MAX bytes). Returns its
 * length. */
size_t hostproto_subscribe_format(uint64_t after, char out[HOSTPROTO_SUBSCRIBE_MAX]);

/*
 * Parses one request line (without its '\n'; at most HOSTPROTO_REQUEST_MAX bytes). Returns 0 with
 * req filled (release it with hostproto_request_release), or -EINVAL with *why set to a sentence
 * for a 400 answer (-EMSGSIZE when the line is too long).
 */
int hostproto_request_parse(const char *line, size_t len, struct hostproto_request *req,
			    const char **why);

void hostproto_request_release(struct hostproto_request *req);

/* ---- answers (host → bridge: the first line on a request's connection) ------------------- */

enum hostproto_answer_type {
	HOSTPROTO_ACCEPTED,
	HOSTPROTO_OK,
	HOSTPROTO_ERROR,
};

struct hostproto_answer {
	enum hostproto_answer_type type;
	uint64_t after;    /* ACCEPTED */
	uint64_t queued;   /* ACCEPTED: turns ahead of the prompt (0: its turn began) */
	int status;        /* ERROR: as sent (0 when missing or not an integer) */
	const char *code;  /* ERROR: NULL when missing */
	const char *error; /* ERROR: NULL when missing */
	json_object *obj;  /* the line parsed (the caller may add to it); put by _release */
};

/* Formats an answer line ('\n', then a NUL not counted). Returns its length, or -EOVERFLOW when
 * it would not fit in outlen (HOSTPROTO_ANSWER_MAX fits any status, a code and a sentence of up
 * to 1 KiB). */
int hostproto_accepted_format(uint64_t after, uint64_t queued, char *out, size_t outlen);
int hostproto_ok_format(char *out, size_t outlen);
int hostproto_error_format(int status, const char *code, const char *error, char *out,
			   size_t outlen);

/* Parses an answer line (without its '\n'). Returns 0 with a filled (release it), or -EBADMSG
 * for anything else (not one JSON object, or no known "type"). */
int hostproto_answer_parse(const char *line, size_t len, struct hostproto_answer *a);

void hostproto_answer_release(struct hostproto_answer *a);

/* ---- events (host → subscribers, and the lines of events.log) --------------------------- */

/* An event line taken apart: views into the line, valid while the line is. */
struct hostproto_event {
	uint64_t id;
	const char *name;
	size_t name_len;
	const char *data; /* the JSON text of "data", exactly as the host wrote it */
	size_t data_len;
};

/*
 * Writes the head of an event line, {"id":<id>,"event":"<name>","data": into out
 * (HOSTPROTO_EVENT_HEAD_MAX bytes); the line is the head, the data, then HOSTPROTO_EVENT_TAIL.
 * name must satisfy hostproto_event_name_valid. Returns the head's length, or -EINVAL.
 */
int hostproto_event_head(uint64_t id, const char *name, char out[HOSTPROTO_EVENT_HEAD_MAX]);
#define HOSTPROTO_EVENT_TAIL "}\n"

/* True when name has 1..HOSTPROTO_NAME_MAX-1 characters of [A-Za-z0-9_] (so SSE framing stays
 * intact). */
bool hostproto_event_name_valid(const char *name, size_t len);

/*
 * The name for an event of claude's line: its "type" when a string of 1..HOSTPROTO_NAME_MAX-1
 * characters of [a-z_], else "unknown". Writes it to out.
 */
void hostproto_event_name(const char *type, char out[HOSTPROTO_NAME_MAX]);

/*
 * Takes apart one event line (without its '\n'): {"id":<decimal>,"event":"<name>","data":<DATA>}
 * with a name hostproto_event_name_valid accepts. DATA is not parsed, only required to be
 * non-empty. Returns 0, or -EBADMSG for anything else (an answer line such as {"type":"ok"}
 * included).
 */
int hostproto_event_parse(const char *line, size_t len, struct hostproto_event *ev);

/* ---- splitting a byte stream into lines ------------------------------------------------- */

/*
 * Called for each whole line (without its '\n'); line is NULL when a line went over the reader's
 * max (len: the bytes seen of it), and the rest of that line is skipped. A non-zero return stops
 * the feed and is returned by hostproto_reader_feed.
 */
typedef int (*hostproto_line_fn)(void *arg, const char *line, size_t len);

/* Lines of at most max bytes; a line split across reads is kept in buf until its '\n'. */
struct hostproto_reader {
	size_t max;
	char *buf;
	size_t len, cap;
	bool skip; /* inside a line that went over max */
};

void hostproto_reader_init(struct hostproto_reader *rd, size_t max);

/* Feeds n bytes. Whole lines in data are passed without a copy. Returns 0, a callback's non-zero
 * value, or -ENOMEM (the line being kept is dropped). */
int hostproto_reader_feed(struct hostproto_reader *rd, const char *data, size_t n,
			  hostproto_line_fn fn, void *arg);

/* Bytes of an unfinished line kept. */
size_t hostproto_reader_pending(const struct hostproto_reader *rd);

void hostproto_reader_free(struct hostproto_reader *rd);

#endif
