/*
 * The Telegram Bot API as the bot uses it: a method call is a POST of JSON to
 * <api>/bot<token>/<method>, its answer {"ok":true,"result":...} or {"ok":false,"error_code",
 * "description","parameters":{"retry_after"}}; and the parts of an update the bot reads. The
 * token is in the URL only, and no URL is ever logged.
 */
#ifndef AGENTD_TG_BOTAPI_H
#define AGENTD_TG_BOTAPI_H

#include "render.h"
#include "xfer.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#define BOTAPI_ANSWER_MAX      (4 * 1024 * 1024) /* a getUpdates answer of 100 long messages */
#define BOTAPI_TIMEOUT_MS      30000             /* a method call, long polling aside */
#define BOTAPI_POLL_S          25                /* getUpdates waits this long on Telegram's side */
#define BOTAPI_DESCRIPTION_MAX 256
#define BOTAPI_DEPTH           32

struct botapi;

struct botapi_answer {
	bool ok;
	bool transient;  /* no answer, a timeout or a 5xx: the same call may succeed later */
	bool aborted;    /* ended by xfer_loop_finish (shutdown): nothing to report */
	long status;     /* HTTP status (0: none) */
	int error_code;  /* Telegram's error_code when !ok (else the HTTP status) */
	int retry_after; /* seconds: parameters.retry_after of a 429, else 0 */
	char description[BOTAPI_DESCRIPTION_MAX];
	json_object *result; /* the "result" when ok; borrowed for the callback */
};

typedef void (*botapi_fn)(void *arg, const struct botapi_answer *a);

/* A client of the Bot API at api (e.g. "https://api.telegram.org", no trailing slash needed)
 * with token, both copied; NULL when out of memory. */
struct botapi *botapi_create(struct xfer_loop *loop, const char *api, const char *token);
void botapi_destroy(struct botapi *b);

/*
 * Calls method with params (consumed; NULL: none), waiting at most timeout_ms. fn gets the
 * answer (never when the returned transfer is cancelled). Returns the transfer, or NULL with
 * errno.
 */
struct xfer *botapi_call(struct botapi *b, const char *method, json_object *params, long timeout_ms,
			 botapi_fn fn, void *arg);

/*
 * Sends data (len bytes) to chat as a document named filename (text/plain), with caption (NULL:
 * none), through sendDocument: a multipart upload, the only way the Bot API takes a file. The
 * answer goes to fn as for botapi_call. Returns the transfer, or NULL with errno.
 */
struct xfer *botapi_send_document(struct botapi *b, int64_t chat, const char *filename,
				  const char *data, size_t len, const char *caption, botapi_fn fn,
				  void *arg);

/* Turns an HTTP answer into a, parsing the body (a->result borrows from *root, which the caller
 * puts). Exposed for tests. */
void botapi_parse_answer(const struct xfer_result *res, struct botapi_answer *a,
			 json_object **root);

enum botapi_update_kind {
	BOTAPI_OTHER,    /* anything the bot does not read (edits, joins...) */
	BOTAPI_MESSAGE,  /* a text message */
	BOTAPI_CALLBACK, /* an inline button was pressed */
};

struct botapi_update {
	int64_t update_id;
	enum botapi_update_kind kind;
	int64_t user; /* from.id */
	char user_name[RENDER_NAME_MAX + 1];
	int64_t chat;
	const char *text;          /* a message's text (borrowed from the update) */
	const char *callback_id;   /* a callback query's id */
	const char *callback_data; /* its data */
	int64_t message_id;        /* the message the pressed button is on */
};

/* Reads update u. Returns 0, or -EINVAL when it has no valid update_id (a kind the bot does
 * not read is BOTAPI_OTHER with 0). */
int botapi_parse_update(json_object *u, struct botapi_update *out);

/* {"inline_keyboard": [[buttons]]} for one row of (text, callback_data) pairs. */
json_object *botapi_keyboard(const char *const *texts, const char *const *data, size_t n);

#endif
