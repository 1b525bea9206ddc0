#include "agentc.h"

#include "jsontext.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AGENTC_URL_MAX    2048
#define AGENTC_HEADER_MAX 1024

struct agentc {
	struct xfer_loop *loop;
	char *url;
	char *auth; /* "Authorization: Bearer <token>", or NULL */
	struct agentc_stream *streams;
	unsigned busy; /* > 0 while stream callbacks run: a close then only marks */
};

struct agentc_event {
	struct agentc_event *next;
	struct sseread_event ev; /* ev.data points at data below */
	char data[];
};

struct agentc_stream {
	struct agentc *c;
	struct agentc_stream *next;
	struct xfer *x;
	struct sseread rd;
	struct agentc_event *head, *tail;
	size_t queued;
	bool closed;
	agentc_event_fn on_event;
	agentc_fn on_end;
	void *arg;
};

struct agentc_call {
	agentc_fn fn;
	void *arg;
};

struct agentc *agentc_create(struct xfer_loop *loop, const char *url, const char *token)
{
	struct agentc *c = calloc(1, sizeof(*c));
	size_t n;

	if (c == NULL)
		return NULL;
	c->loop = loop;
	if ((c->url = strdup(url)) == NULL)
		goto fail;
	n = strlen(c->url);
	while (n > 0 && c->url[n - 1] == '/')
		c->url[--n] = '\0';
	if (token != NULL && *token != '\0') {
		size_t len = strlen("Authorization: Bearer ") + strlen(token) + 1;

		if ((c->auth = malloc(len)) == NULL)
			goto fail;
		snprintf(c->auth, len, "Authorization: Bearer %s", token);
	}
	return c;
fail:
	agentc_destroy(c);
	return NULL;
}

static void agentc_stream_free(struct agentc_stream *s)
{
	struct agentc_event *e = s->head, *next;

	while (e != NULL) {
		next = e->next;
		free(e);
		e = next;
	}
	xfer_cancel(s->x);
	sseread_finish(&s->rd);
	free(s);
}

/* Frees the closed streams (not while their callbacks may run). */
static void agentc_reap(struct agentc *c)
{
	struct agentc_stream **pp = &c->streams;

	if (c->busy > 0)
		return;
	while (*pp != NULL) {
		struct agentc_stream *s = *pp;

		if (s->closed) {
			*pp = s->next;
			agentc_stream_free(s);
		} else {
			pp = &s->next;
		}
	}
}

void agentc_destroy(struct agentc *c)
{
	if (c == NULL)
		return;
	for (struct agentc_stream *s = c->streams; s != NULL; s = s->next)
		s->closed = true;
	c->busy = 0;
	agentc_reap(c);
	free(c->url);
	if (c->auth != NULL)
		memset(c->auth, 0, strlen(c->auth));
	free(c->auth);
	free(c);
}

/* Parses an answer into a (a->body borrows *root, which the caller puts). */
static void agentc_parse(const struct xfer_result *res, struct agentc_answer *a, json_object **root)
{
	struct cause cause = {{0}};
	json_object *v;

	memset(a, 0, sizeof(*a));
	*root = NULL;
	a->status = res->status;
	if (res->curl_code != CURLE_OK || res->status == 0) {
		a->status = 0;
		a->transient = true;
		a->aborted = res->curl_code == CURLE_ABORTED_BY_CALLBACK;
		snprintf(a->err, sizeof(a->err), "agent-daemon does not answer: %s",
			 res->error[0] != '\0' ? res->error : "no answer");
		return;
	}
	a->transient = res->status == 502 || res->status == 503 || res->status == 504;
	if (!res->too_large && res->body_len > 0)
		*root = jsontext_parse(res->body, res->body_len, AGENTC_DEPTH, &cause);
	a->body = *root;
	if (res->status < 400)
		return;
	if (*root != NULL && json_object_object_get_ex(*root, "error", &v) &&
	    json_object_is_type(v, json_type_string))
		snprintf(a->err, sizeof(a->err), "%s", json_object_get_string(v));
	else
		snprintf(a->err, sizeof(a->err), "agent-daemon answered HTTP %ld", res->status);
	if (*root != NULL && json_object_object_get_ex(*root, "code", &v) &&
	    json_object_is_type(v, json_type_string))
		snprintf(a->code, sizeof(a->code), "%s", json_object_get_string(v));
}

static void agentc_call_done(void *arg, const struct xfer_result *res)
{
	struct agentc_call *call = arg;
	struct agentc_answer a;
	json_object *root;

	agentc_parse(res, &a, &root);
	if (call->fn != NULL)
		call->fn(call->arg, &a);
	json_object_put(root);
	free(call);
}

/* Fills the request's URL and headers. Returns 0 or -ENAMETOOLONG. */
static int agentc_prepare(struct agentc *c, struct xfer_req *req, const char *path, char *url,
			  char hdr[][AGENTC_HEADER_MAX], uint64_t last_id, int64_t actor,
			  bool stream)
{
	size_t h = 0;
	int n = snprintf(url, AGENTC_URL_MAX, "%s%s", c->url, path);

	if (n < 0 || n >= AGENTC_URL_MAX)
		return -ENAMETOOLONG;
	req->url = url;
	if (c->auth != NULL)
		req->headers[h++] = c->auth;
	if (actor != 0) {
		snprintf(hdr[0], AGENTC_HEADER_MAX, "X-Agentd-Actor: %" PRId64, actor);
		req->headers[h++] = hdr[0];
	}
	if (stream) {
		req->headers[h++] = "Accept: text/event-stream";
		if (last_id > 0) {
			snprintf(hdr[1], AGENTC_HEADER_MAX, "Last-Event-ID: %" PRIu64, last_id);
			req->headers[h++] = hdr[1];
		}
	}
	req->headers[h] = NULL;
	return 0;
}

struct xfer *agentc_request(struct agentc *c, const char *method, const char *path,
			    json_object *body, int64_t actor, agentc_fn fn, void *arg)
{
	char url[AGENTC_URL_MAX], hdr[2][AGENTC_HEADER_MAX];
	struct xfer_req req = {.method = method,
			       .timeout_ms = AGENTC_TIMEOUT_MS,
			       .body_max = AGENTC_ANSWER_MAX,
			       .on_done = agentc_call_done};
	struct agentc_call *call = calloc(1, sizeof(*call));
	struct xfer *x = NULL;

	if (call == NULL || agentc_prepare(c, &req, path, url, hdr, 0, actor, false) < 0) {
		errno = call == NULL ? ENOMEM : ENAMETOOLONG;
		free(call);
		json_object_put(body);
		return NULL;
	}
	call->fn = fn;
	call->arg = arg;
	req.arg = call;
	if (body != NULL)
		req.body = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN |
								    JSON_C_TO_STRING_NOSLASHESCAPE);
	x = xfer_start(c->loop, &req);
	if (x == NULL)
		free(call);
	json_object_put(body);
	return x;
}

/* ---- streams -------------------------------------------------------------------------------- */

static int agentc_enqueue(void *arg, const struct sseread_event *ev)
{
	struct agentc_stream *s = arg;
	struct agentc_event *e;

	if (s->queued + ev->data_len > AGENTC_QUEUE_MAX)
		return -ENOBUFS; /* ends the stream: it is replayed from its last id */
	e = malloc(sizeof(*e) + ev->data_len + 1);
	if (e == NULL)
		return -ENOMEM;
	e->next = NULL;
	e->ev = *ev;
	memcpy(e->data, ev->data, ev->data_len);
	e->data[ev->data_len] = '\0';
	e->ev.data = e->data;
	if (s->tail != NULL)
		s->tail->next = e;
	else
		s->head = e;
	s->tail = e;
	s->queued += ev->data_len;
	return 0;
}

static int agentc_stream_data(void *arg, const char *p, size_t n)
{
	struct agentc_stream *s = arg;

	return sseread_feed(&s->rd, p, n, agentc_enqueue, s);
}

/* Hands s's queued events to its callback, stopping if it is closed. */
static void agentc_deliver(struct agentc_stream *s)
{
	struct agentc_event *e;

	while (!s->closed && (e = s->head) != NULL) {
		struct cause cause = {{0}};
		json_object *data = NULL;

		s->head = e->next;
		if (s->head == NULL)
			s->tail = NULL;
		s->queued -= e->ev.data_len;
		if (!e->ev.oversize && e->ev.data_len > 0)
			data = jsontext_parse(e->ev.data, e->ev.data_len, AGENTC_DEPTH, &cause);
		s->on_event(s->arg, &e->ev, data);
		json_object_put(data);
		free(e);
	}
}

static void agentc_stream_done(void *arg, const struct xfer_result *res)
{
	struct agentc_stream *s = arg;
	struct agentc *c = s->c;
	struct agentc_answer a;
	json_object *root;

	s->x = NULL; /* xfer frees itself after this callback */
	c->busy++;
	agentc_deliver(s);
	if (!s->closed) {
		agentc_parse(res, &a, &root);
		if (a.status == 200 && res->curl_code == CURLE_OK)
			snprintf(a.err, sizeof(a.err), "the stream ended");
		s->closed = true;
		if (s->on_end != NULL)
			s->on_end(s->arg, &a);
		json_object_put(root);
	}
	c->busy--;
	agentc_reap(c);
}

struct agentc_stream *agentc_stream_open(struct agentc *c, const char *method, const char *path,
					 json_object *body, uint64_t last_id, int64_t actor,
					 agentc_event_fn on_event, agentc_fn on_end, void *arg)
{
	char url[AGENTC_URL_MAX], hdr[2][AGENTC_HEADER_MAX];
	struct xfer_req req = {.method = method,
			       .stall_s = AGENTC_STALL_S,
			       .body_max = AGENTC_ANSWER_MAX,
			       .on_data = agentc_stream_data,
			       .on_done = agentc_stream_done};
	struct agentc_stream *s = calloc(1, sizeof(*s));

	if (s == NULL || agentc_prepare(c, &req, path, url, hdr, last_id, actor, true) < 0) {
		errno = s == NULL ? ENOMEM : ENAMETOOLONG;
		free(s);
		json_object_put(body);
		return NULL;
	}
	s->c = c;
	s->on_event = on_event;
	s->on_end = on_end;
	s->arg = arg;
	sseread_init(&s->rd, AGENTC_EVENT_MAX);
	req.arg = s;
	if (body != NULL)
		req.body = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN |
								    JSON_C_TO_STRING_NOSLASHESCAPE);
	s->x = xfer_start(c->loop, &req);
	json_object_put(body);
	if (s->x == NULL) {
		sseread_finish(&s->rd);
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->next = c->streams;
	c->streams = s;
	return s;
}

void agentc_stream_close(struct agentc_stream *s)
{
	if (s == NULL || s->closed)
		return;
	s->closed = true;
	xfer_cancel(s->x);
	s->x = NULL;
	agentc_reap(s->c);
}

void agentc_dispatch(struct agentc *c)
{
	c->busy++;
	for (struct agentc_stream *s = c->streams; s != NULL; s = s->next)
		agentc_deliver(s);
	c->busy--;
	agentc_reap(c);
}
