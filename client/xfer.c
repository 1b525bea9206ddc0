#include "xfer.h"

#include "buf.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct xfer {
	struct xfer_loop *loop;
	struct xfer *next;
	CURL *easy;
	struct curl_slist *headers;
	char *body;
	curl_mime *mime; /* a multipart body, or NULL */
	struct buf answer;
	char error[CURL_ERROR_SIZE];
	long status;
	bool too_large;
	bool stream_failed; /* on_data said stop */
	bool cancelled;
	xfer_data_fn on_data;
	xfer_done_fn on_done;
	void *arg;
};

struct xfer_loop {
	CURLM *multi;
	struct xfer *all;
	unsigned count;
};

static void xfer_reap(struct xfer_loop *l);

struct xfer_loop *xfer_loop_create(void)
{
	struct xfer_loop *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	l->multi = curl_multi_init();
	if (l->multi == NULL) {
		free(l);
		return NULL;
	}
	return l;
}

static void xfer_free(struct xfer *x)
{
	curl_multi_remove_handle(x->loop->multi, x->easy);
	curl_easy_cleanup(x->easy);
	curl_slist_free_all(x->headers);
	free(x->body);
	curl_mime_free(x->mime);
	buf_free(&x->answer);
	free(x);
}

/* Unlinks and frees x. */
static void xfer_drop(struct xfer *x)
{
	struct xfer **pp = &x->loop->all;

	while (*pp != NULL && *pp != x)
		pp = &(*pp)->next;
	if (*pp == x)
		*pp = x->next;
	x->loop->count--;
	xfer_free(x);
}

void xfer_loop_finish(struct xfer_loop *l)
{
	/* A callback may start another transfer: a few passes end those too. */
	for (int pass = 0; pass < 4; pass++) {
		struct xfer *x;
		bool any = false;

		for (x = l->all; x != NULL; x = x->next) {
			struct xfer_result res = {.curl_code = CURLE_ABORTED_BY_CALLBACK,
						  .error = "shutting down",
						  .body = ""};

			if (x->cancelled)
				continue;
			any = true;
			xfer_cancel(x);
			if (x->on_done != NULL)
				x->on_done(x->arg, &res);
		}
		xfer_reap(l);
		if (!any)
			break;
	}
}

void xfer_loop_destroy(struct xfer_loop *l)
{
	if (l == NULL)
		return;
	while (l->all != NULL)
		xfer_drop(l->all);
	curl_multi_cleanup(l->multi);
	free(l);
}

unsigned xfer_count(const struct xfer_loop *l)
{
	unsigned n = 0;

	for (const struct xfer *x = l->all; x != NULL; x = x->next)
		n += !x->cancelled;
	return n;
}

static size_t xfer_write(char *p, size_t size, size_t nmemb, void *userdata)
{
	struct xfer *x = userdata;
	size_t n = size * nmemb;
	long status = 0;

	if (x->cancelled)
		return 0;
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	if (x->on_data != NULL && status >= 200 && status < 300) {
		if (x->on_data(x->arg, p, n) < 0) {
			x->stream_failed = true;
			return 0;
		}
		return n;
	}
	if (!x->too_large && buf_add(&x->answer, p, n) < 0) {
		/* Keep what fits, and say the rest was dropped. */
		size_t room = x->answer.max > x->answer.len ? x->answer.max - x->answer.len : 0;

		buf_add(&x->answer, p, room < n ? room : n);
		x->too_large = true;
	}
	return n;
}

struct xfer *xfer_start(struct xfer_loop *l, const struct xfer_req *req)
{
	struct xfer *x = calloc(1, sizeof(*x));
	CURL *e;

	if (x == NULL)
		return NULL;
	x->loop = l;
	buf_init(&x->answer, req->body_max);
	x->on_data = req->on_data;
	x->on_done = req->on_done;
	x->arg = req->arg;
	x->easy = e = curl_easy_init();
	if (e == NULL)
		goto fail;
	for (size_t i = 0; i < XFER_HEADERS_MAX && req->headers[i] != NULL; i++) {
		struct curl_slist *h = curl_slist_append(x->headers, req->headers[i]);

		if (h == NULL)
			goto fail;
		x->headers = h;
	}
	if (req->body != NULL) {
		size_t len = req->body_len > 0 ? req->body_len : strlen(req->body);
		char type[128];
		struct curl_slist *h;

		snprintf(type, sizeof(type), "Content-Type: %s",
			 req->body_type != NULL ? req->body_type : "application/json");
		h = curl_slist_append(x->headers, type);
		if (h == NULL || (x->body = malloc(len + 1)) == NULL) {
			if (h != NULL)
				x->headers = h;
			goto fail;
		}
		memcpy(x->body, req->body, len);
		x->body[len] = '\0';
		x->headers = h;
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	}
	if (req->body == NULL && req->nparts > 0) {
		if ((x->mime = curl_mime_init(e)) == NULL)
			goto fail;
		for (size_t i = 0; i < req->nparts && i < XFER_PARTS_MAX; i++) {
			const struct xfer_part *p = &req->parts[i];
			curl_mimepart *part = curl_mime_addpart(x->mime);

			if (part == NULL || curl_mime_name(part, p->name) != CURLE_OK ||
			    curl_mime_data(part, p->data, p->len) != CURLE_OK ||
			    (p->filename != NULL &&
			     curl_mime_filename(part, p->filename) != CURLE_OK) ||
			    (p->type != NULL && curl_mime_type(part, p->type) != CURLE_OK))
				goto fail;
		}
		curl_easy_setopt(e, CURLOPT_MIMEPOST, x->mime);
	}
	/* No "Expect: 100-continue" round trip for a body. */
	{
		struct curl_slist *h = curl_slist_append(x->headers, "Expect:");

		if (h == NULL)
			goto fail;
		x->headers = h;
	}
	curl_easy_setopt(e, CURLOPT_URL, req->url);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req->method);
	if (strcmp(req->method, "GET") == 0)
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, xfer_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->error);
	curl_easy_setopt(e, CURLOPT_PRIVATE, x);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	/* Only the URL's own scheme: no redirects, nothing but http(s). */
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "agentd-telegram");
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	if (req->timeout_ms > 0)
		curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, req->timeout_ms);
	if (req->stall_s > 0) {
		curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, req->stall_s);
	}
	if (curl_multi_add_handle(l->multi, e) != CURLM_OK)
		goto fail;
	x->next = l->all;
	l->all = x;
	l->count++;
	return x;
fail:
	curl_easy_cleanup(x->easy);
	curl_slist_free_all(x->headers);
	free(x->body);
	curl_mime_free(x->mime);
	buf_free(&x->answer);
	free(x);
	errno = ENOMEM;
	return NULL;
}

void xfer_cancel(struct xfer *x)
{
	if (x == NULL || x->cancelled)
		return;
	/* Freed at the end of the round: a round may still be looking at it. */
	x->cancelled = true;
	curl_multi_remove_handle(x->loop->multi, x->easy);
}

/* Frees what was cancelled. */
static void xfer_reap(struct xfer_loop *l)
{
	struct xfer *x = l->all, *next;

	while (x != NULL) {
		next = x->next;
		if (x->cancelled)
			xfer_drop(x);
		x = next;
	}
}

int xfer_loop_run_once(struct xfer_loop *l, int timeout_ms, int extra_fd, bool *extra_ready)
{
	struct curl_waitfd wfd = {.fd = extra_fd, .events = CURL_WAIT_POLLIN};
	CURLMsg *msg;
	int running, left, numfds = 0;

	if (extra_ready != NULL)
		*extra_ready = false;
	if (curl_multi_poll(l->multi, extra_fd >= 0 ? &wfd : NULL, extra_fd >= 0 ? 1 : 0,
			    timeout_ms, &numfds) != CURLM_OK)
		return -EIO;
	if (extra_fd >= 0 && extra_ready != NULL && (wfd.revents & CURL_WAIT_POLLIN))
		*extra_ready = true;
	if (curl_multi_perform(l->multi, &running) != CURLM_OK)
		return -EIO;
	/* Outside libcurl's callbacks: a done callback may start and cancel transfers. One that
	 * is cancelled is only marked, so its message, if still queued, is recognised and
	 * skipped, and it is freed at the end of the round. */
	while ((msg = curl_multi_info_read(l->multi, &left)) != NULL) {
		struct xfer *x = NULL;
		struct xfer_result res;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
		if (x == NULL || x->cancelled)
			continue;
		x->error[CURL_ERROR_SIZE - 1] = '\0';
		if (x->stream_failed)
			strncpy(x->error, "the reader of the stream ended it", CURL_ERROR_SIZE - 1);
		else if (msg->data.result != CURLE_OK && x->error[0] == '\0')
			strncpy(x->error, curl_easy_strerror(msg->data.result),
				CURL_ERROR_SIZE - 1);
		curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &x->status);
		res = (struct xfer_result){
		    .status = x->status,
		    .curl_code = (int)msg->data.result,
		    .error = msg->data.result != CURLE_OK ? x->error : "",
		    .too_large = x->too_large,
		    .body = buf_str(&x->answer),
		    .body_len = x->answer.len,
		};
		xfer_cancel(x); /* ended: freed at the end of the round, after its callback */
		if (x->on_done != NULL)
			x->on_done(x->arg, &res);
	}
	xfer_reap(l);
	return 0;
}
