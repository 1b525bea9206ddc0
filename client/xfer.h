/*
 * HTTP transfers on one libcurl multi handle: a client's only network code
 * (agentd-telegram, agentctl), single-threaded.
 * Short requests keep their answer's body (bounded) for a callback; streams (long polling, SSE)
 * hand their 2xx body to a data callback as it arrives. Every network operation happens inside
 * xfer_loop_run_once, and every callback is made from it, after libcurl returned: a callback may
 * start and cancel transfers freely, and what it decides is in place before any byte goes out
 * again (the bot writes its state file between two rounds).
 */
#ifndef AGENTD_CLIENT_XFER_H
#define AGENTD_CLIENT_XFER_H

#include <stdbool.h>
#include <stddef.h>

#define XFER_HEADERS_MAX 8

struct xfer_loop;
struct xfer;

struct xfer_result {
	long status;       /* the HTTP status; 0 when there was no answer */
	int curl_code;     /* CURLE_OK, or why the transfer failed */
	const char *error; /* a sentence when curl_code is not CURLE_OK ("" otherwise) */
	bool too_large;    /* the answer's body passed body_max (and was cut there) */
	const char *body;  /* the answer's body (NUL-terminated; for a stream: a non-2xx body) */
	size_t body_len;
};

/* A request's end: called exactly once unless the transfer is cancelled. res is borrowed. */
typedef void (*xfer_done_fn)(void *arg, const struct xfer_result *res);

/* A stream's bytes (2xx answers only), as they arrive. A negative return ends the transfer
 * (done then reports it with a curl error). */
typedef int (*xfer_data_fn)(void *arg, const char *p, size_t n);

/* One part of a multipart/form-data body (a file upload): data is copied. */
struct xfer_part {
	const char *name; /* the form field */
	const char *data; /* len bytes */
	size_t len;
	const char *filename; /* NULL: a plain field */
	const char *type;     /* its Content-Type, or NULL */
};

#define XFER_PARTS_MAX 4

struct xfer_req {
	const char *method; /* "GET", "POST", "DELETE" */
	const char *url;
	const char *body;      /* sent as application/json when not NULL (copied) */
	size_t body_len;       /* the body's bytes; 0: strlen(body) (a binary body sets it) */
	const char *body_type; /* its Content-Type; NULL: application/json */
	const char *headers[XFER_HEADERS_MAX]; /* "Name: value" lines, NULL-terminated (copied) */
	/* Sent as multipart/form-data when nparts > 0 (and body is NULL). */
	struct xfer_part parts[XFER_PARTS_MAX];
	size_t nparts;
	long timeout_ms;      /* the whole transfer; 0: none (streams) */
	long stall_s;         /* a stream that sends nothing for this long ends (0: never) */
	size_t body_max;      /* the most of an answer's body kept */
	xfer_data_fn on_data; /* NULL: the body is kept for on_done */
	xfer_done_fn on_done;
	void *arg;
};

/* A loop with no transfers, or NULL (libcurl could not be set up). Call curl_global_init
 * first. */
struct xfer_loop *xfer_loop_create(void);

/* Ends every transfer: each one's done callback is called with curl_code CURLE_ABORTED_BY_CALLBACK
 * and no status, so that its owner lets go of what it holds (shutdown). */
void xfer_loop_finish(struct xfer_loop *l);

/* Ends every transfer left (no callback) and frees the loop. NULL-safe. */
void xfer_loop_destroy(struct xfer_loop *l);

/* Starts a transfer (it begins in the next round). Returns it, or NULL with errno (ENOMEM). */
struct xfer *xfer_start(struct xfer_loop *l, const struct xfer_req *req);

/* Ends x at once; its callbacks are never called. NULL-safe. */
void xfer_cancel(struct xfer *x);

/* Transfers running. */
unsigned xfer_count(const struct xfer_loop *l);

/*
 * One round: waits up to timeout_ms for network activity, or for extra_fd (-1: none) to become
 * readable (then *extra_ready is set), does the transfers' I/O and calls the callbacks of what
 * arrived or ended. Returns 0, or -EIO when libcurl failed.
 */
int xfer_loop_run_once(struct xfer_loop *l, int timeout_ms, int extra_fd, bool *extra_ready);

#endif
