/*
 * One FastCGI request as the handlers see it, and the only place that writes HTTP responses:
 * statuses, JSON bodies and the API's error shape {"error": "<sentence>", "code": "<snake_case>"}.
 */
#ifndef AGENTD_REQUEST_H
#define AGENTD_REQUEST_H

#include <fcgiapp.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct request {
	FCGX_Request *fcgi;
	const char *method;       /* REQUEST_METHOD */
	const char *path;         /* DOCUMENT_URI: decoded and normalised by nginx */
	const char *query;        /* QUERY_STRING, "" if none */
	const char *origin;       /* HTTP_ORIGIN or NULL */
	bool origin_repeated;     /* the client sent more than one Origin header */
	const char *host;         /* AGENTD_HOST (Host with port) or HTTP_HOST */
	const char *scheme;       /* AGENTD_SCHEME or "http" */
	const char *content_type; /* CONTENT_TYPE or NULL */
	const char *by;           /* AGENTD_BY (nginx's decision: identity[:actor]) or "unknown" */
	char *body;               /* owned; NUL-terminated; NULL until request_read_body */
	int status;               /* the status answered (0: none yet), for GET /metrics */
	size_t body_len;
};

/* Fills req from the FastCGI parameters. Borrowed strings live until FCGX_Finish_r. */
void request_init(struct request *req, FCGX_Request *fcgi);

/* Frees what request_read_body allocated. */
void request_finish(struct request *req);

/*
 * Reads the body (at most max bytes). Returns 0, -EFBIG when CONTENT_LENGTH exceeds max, -EIO when
 * the client sent less than announced, -ENOMEM.
 */
int request_read_body(struct request *req, size_t max);

/* True when Content-Type is application/json, with no charset or charset=utf-8 (jsontext.h). */
bool request_is_json(const struct request *req);

/*
 * The JSON body of a request that must carry one: read (at most max bytes) and parsed (objects
 * nested at most depth deep, no key twice: jsontext.h). Returns it (owned), or NULL after answering
 * 415 unsupported_media_type, 413 body_too_large, 400 bad_body or 400 invalid_request.
 */
json_object *request_json_body(struct request *req, size_t max, int depth);

/* Returns the value of query parameter key (copied into out) or NULL. */
const char *request_query(const struct request *req, const char *key, char *out, size_t outlen);

/* Writes status + JSON body; takes ownership of body (json_object_put). Bytes of the body that
 * are not valid UTF-8 go out as U+FFFD. extra_headers may be NULL or "Name: value\r\n..." lines. */
void request_reply(struct request *req, int status, json_object *body, const char *extra_headers);

/* Writes status and body (len bytes, sent as they are) with content_type, e.g. "text/x-diff;
 * charset=utf-8"; extra_headers as for request_reply. */
void request_reply_bytes(struct request *req, int status, const char *content_type,
			 const char *body, size_t len, const char *extra_headers);

/* The value of FastCGI parameter name (one nginx sets, e.g. AGENTD_COOKIE), or NULL when absent
 * or empty. Borrowed until FCGX_Finish_r. */
const char *request_param_value(const struct request *req, const char *name);

/* Writes status and the header lines extra_headers ("Name: value\r\n"..., may be NULL) with no
 * body: the answers nginx reads only the head of (auth_request, redirects). */
void request_reply_head(struct request *req, int status, const char *extra_headers);

/* As request_reply_head, for an answer nginx's cache may give again for secs (> 0) seconds:
 * X-Accel-Expires instead of Cache-Control: no-store (nginx counts it in whole seconds of its
 * clock, so the answer may live up to secs + 1 seconds). */
void request_reply_head_reusable(struct request *req, int status, int secs,
				 const char *extra_headers);

/* Writes the error shape with status, code and a printf-formatted sentence. */
void request_error(struct request *req, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
