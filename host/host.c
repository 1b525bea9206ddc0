#include "host.h"

#include "evlog.h"
#include "hostproto.h"
#include "log.h"

#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#define HOST_READ_CHUNK   (64 * 1024)
#define HOST_REPLAY_HIGH  (256 * 1024) /* replay pauses while this much is queued */
#define HOST_ANSWERED_MAX 256          /* remembered answered ids, for 409 over 404 */
#define HOST_ID_MAX       128
#define HOST_EVENT_MAX    32

struct host;

enum sub_state { SUB_REQUEST, SUB_REPLAY, SUB_LIVE, SUB_DONE };

/* One connection on host.sock. */
struct sub {
	uv_pipe_t pipe;
	struct host *host;
	struct sub *next;
	enum sub_state state;
	char *req;
	size_t req_len;
	uint64_t after;
	FILE *replay;
	bool until_result; /* a prompt's stream: ends after the turn's result */
	bool closing;
};

struct pending {
	bool used;
	char request_id[HOST_ID_MAX];
	uint64_t event_id;
	char *event_line; /* the permission event, replayed to late subscribers */
	size_t event_len;
	json_object *input;
	uv_timer_t timer;
	struct host *host;
};

struct host {
	uv_loop_t *loop;
	const struct config *cfg;
	const char *id;
	uv_process_t proc;
	uv_pipe_t in, out, server;
	uv_signal_t sig[3];
	uv_timer_t kill_timer;
	bool proc_running, stopping, turn_running;
	int exit_code;
	struct evlog log;
	char log_path[CONFIG_PATH_MAX];
	char *line;
	size_t line_len;
	bool line_skip;
	struct sub *subs;
	struct pending pending[HOST_PENDING_MAX];
	char answered[HOST_ANSWERED_MAX][HOST_ID_MAX];
	size_t answered_next;
	unsigned long next_request;
};

/* ---- writing ---------------------------------------------------------------------------- */

struct host_write {
	uv_write_t req;
	char *buf;
};

static void host_write_done(uv_write_t *w, int status);

/* Queues a copy of buf on stream. Returns 0 or a libuv error. */
static int host_write(uv_stream_t *stream, const char *buf, size_t len)
{
	struct host_write *w = malloc(sizeof(*w));
	uv_buf_t b;
	int r;

	if (w == NULL || (w->buf = malloc(len)) == NULL) {
		free(w);
		return UV_ENOMEM;
	}
	memcpy(w->buf, buf, len);
	b = uv_buf_init(w->buf, (unsigned)len);
	r = uv_write(&w->req, stream, &b, 1, host_write_done);
	if (r < 0) {
		free(w->buf);
		free(w);
	}
	return r;
}

/* Writes one JSON line to claude's stdin: only JSON we built ourselves ever goes there. */
static void host_send_claude(struct host *h, json_object *msg)
{
	const char *text = json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN);
	size_t len = strlen(text);
	char *line = malloc(len + 1);

	if (line != NULL && h->proc_running) {
		memcpy(line, text, len);
		line[len] = '\n';
		if (host_write((uv_stream_t *)&h->in, line, len + 1) < 0)
			log_warn("cannot write to claude's stdin");
	}
	free(line);
	json_object_put(msg);
}

/* ---- subscribers ------------------------------------------------------------------------ */

static void sub_closed(uv_handle_t *handle)
{
	struct sub *s = handle->data;

	if (s->replay != NULL)
		fclose(s->replay);
	free(s->req);
	free(s);
}

static void sub_close(struct sub *s)
{
	struct sub **pp;

	if (s->closing)
		return;
	s->closing = true;
	for (pp = &s->host->subs; *pp != NULL; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	uv_close((uv_handle_t *)&s->pipe, sub_closed);
}

static void sub_shutdown_done(uv_shutdown_t *req, int status)
{
	struct sub *s = req->handle->data;

	free(req);
	sub_close(s);
}

/* Closes s once everything queued has been written. */
static void sub_finish(struct sub *s)
{
	uv_shutdown_t *req = malloc(sizeof(*req));

	s->state = SUB_DONE;
	if (req == NULL || uv_shutdown(req, (uv_stream_t *)&s->pipe, sub_shutdown_done) < 0) {
		free(req);
		sub_close(s);
	}
}

/* Queues a line for s; a subscriber too far behind is dropped (it can reconnect and replay). */
static void sub_send(struct sub *s, const char *line, size_t len)
{
	if (s->closing || s->state == SUB_DONE)
		return;
	if (uv_stream_get_write_queue_size((uv_stream_t *)&s->pipe) + len > HOST_SUB_QUEUE_MAX) {
		log_warn("dropping a subscriber that is %zu bytes behind",
			 uv_stream_get_write_queue_size((uv_stream_t *)&s->pipe));
		sub_close(s);
		return;
	}
	if (host_write((uv_stream_t *)&s->pipe, line, len) < 0)
		sub_close(s);
}

static void sub_reply(struct sub *s, json_object *msg)
{
	const char *text = json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN);
	size_t len = strlen(text);
	char *line = malloc(len + 1);

	if (line != NULL) {
		memcpy(line, text, len);
		line[len] = '\n';
		sub_send(s, line, len + 1);
	}
	free(line);
	json_object_put(msg);
}

static void sub_error(struct sub *s, int status, const char *code, const char *msg)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "type", json_object_new_string("error"));
	json_object_object_add(o, "status", json_object_new_int(status));
	json_object_object_add(o, "code", json_object_new_string(code));
	json_object_object_add(o, "error", json_object_new_string(msg));
	sub_reply(s, o);
	sub_finish(s);
}

static void sub_ok(struct sub *s)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "type", json_object_new_string("ok"));
	sub_reply(s, o);
	sub_finish(s);
}

/* After the replay: pending permissions go out again, then live events. */
static void sub_go_live(struct sub *s)
{
	struct host *h = s->host;

	if (s->replay != NULL) {
		fclose(s->replay);
		s->replay = NULL;
	}
	s->state = SUB_LIVE;
	for (size_t i = 0; i < HOST_PENDING_MAX; i++)
		if (h->pending[i].used && h->pending[i].event_id <= s->after)
			sub_send(s, h->pending[i].event_line, h->pending[i].event_len);
}

/* Sends replayed lines while the queue is short; resumes from host_write_done. */
static void sub_pump(struct sub *s)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	while (!s->closing && s->state == SUB_REPLAY &&
	       uv_stream_get_write_queue_size((uv_stream_t *)&s->pipe) < HOST_REPLAY_HIGH) {
		n = getline(&line, &cap, s->replay);
		if (n <= 0) {
			sub_go_live(s);
			break;
		}
		if (line[n - 1] == '\n' && evlog_line_id(line, (size_t)n) > s->after)
			sub_send(s, line, (size_t)n);
	}
	free(line);
}

static void host_write_done(uv_write_t *w, int status)
{
	struct host_write *hw = (struct host_write *)w;
	uv_stream_t *stream = w->handle;

	free(hw->buf);
	free(hw);
	if (stream->data != NULL && stream->type == UV_NAMED_PIPE &&
	    ((struct sub *)stream->data)->host != NULL &&
	    ((struct sub *)stream->data)->state == SUB_REPLAY)
		sub_pump(stream->data);
}

/* ---- events ----------------------------------------------------------------------------- */

static void host_print(struct host *h, const char *name, json_object *obj);

/* Numbers, logs and fans out one event. data is JSON text. Returns the id or 0. */
static uint64_t host_emit(struct host *h, const char *name, const char *data, size_t len,
			  char **keep_line, size_t *keep_len)
{
	char *line = NULL;
	size_t line_len = 0;
	int64_t id = evlog_append(&h->log, name, data, len, &line, &line_len);
	struct sub *s, *next;

	if (id < 0) {
		log_error("cannot append to %s: %s", h->log_path, strerror((int)-id));
		return 0;
	}
	for (s = h->subs; s != NULL; s = next) {
		next = s->next;
		if (s->state != SUB_LIVE || (uint64_t)id <= s->after)
			continue;
		sub_send(s, line, line_len);
		if (s->until_result && strcmp(name, "result") == 0)
			sub_finish(s);
	}
	if (keep_line != NULL) {
		*keep_line = line;
		*keep_len = line_len;
	} else {
		free(line);
	}
	return (uint64_t)id;
}

static void host_emit_json(struct host *h, const char *name, json_object *data)
{
	const char *text = json_object_to_json_string_ext(data, JSON_C_TO_STRING_PLAIN);

	host_emit(h, name, text, strlen(text), NULL, NULL);
	json_object_put(data);
}

static struct pending *host_find_pending(struct host *h, const char *request_id)
{
	for (size_t i = 0; i < HOST_PENDING_MAX; i++)
		if (h->pending[i].used && strcmp(h->pending[i].request_id, request_id) == 0)
			return &h->pending[i];
	return NULL;
}

static bool host_was_answered(struct host *h, const char *request_id)
{
	for (size_t i = 0; i < HOST_ANSWERED_MAX; i++)
		if (strcmp(h->answered[i], request_id) == 0)
			return true;
	return false;
}

static void pending_timer_closed(uv_handle_t *handle)
{
	struct pending *p = handle->data;

	json_object_put(p->input);
	free(p->event_line);
	memset(p, 0, sizeof(*p));
}

/* Forgets p (answered, withdrawn or timed out); its id is remembered for 409 answers. */
static void host_drop_pending(struct host *h, struct pending *p)
{
	snprintf(h->answered[h->answered_next], HOST_ID_MAX, "%s", p->request_id);
	h->answered_next = (h->answered_next + 1) % HOST_ANSWERED_MAX;
	p->request_id[0] = '\0';
	uv_timer_stop(&p->timer);
	uv_close((uv_handle_t *)&p->timer, pending_timer_closed);
}

/* Answers a can_use_tool request on claude's stdin and announces the decision. */
static void host_answer(struct host *h, struct pending *p, bool allow, const char *message,
			json_object *updated_input, json_object *updated_permissions,
			bool interrupt, const char *by)
{
	json_object *msg = json_object_new_object(), *resp = json_object_new_object(),
		    *inner = json_object_new_object(), *ev = json_object_new_object();

	json_object_object_add(inner, "behavior", json_object_new_string(allow ? "allow" : "deny"));
	if (allow)
		json_object_object_add(inner, "updatedInput",
				       updated_input ? json_object_get(updated_input)
						     : json_object_get(p->input));
	else
		json_object_object_add(inner, "message", json_object_new_string(message));
	/* "Allow for this session": claude adds these rules (the event's suggestions) itself. */
	if (allow && updated_permissions != NULL)
		json_object_object_add(inner, "updatedPermissions",
				       json_object_get(updated_permissions));
	if (!allow && interrupt)
		json_object_object_add(inner, "interrupt", json_object_new_boolean(true));
	json_object_object_add(resp, "subtype", json_object_new_string("success"));
	json_object_object_add(resp, "request_id", json_object_new_string(p->request_id));
	json_object_object_add(resp, "response", inner);
	json_object_object_add(msg, "type", json_object_new_string("control_response"));
	json_object_object_add(msg, "response", resp);
	host_send_claude(h, msg);
	json_object_object_add(ev, "requestId", json_object_new_string(p->request_id));
	json_object_object_add(ev, "behavior", json_object_new_string(allow ? "allow" : "deny"));
	json_object_object_add(ev, "by", json_object_new_string(by));
	if (message != NULL)
		json_object_object_add(ev, "message", json_object_new_string(message));
	host_drop_pending(h, p);
	host_emit_json(h, "permission_resolved", ev);
}

static void pending_timeout(uv_timer_t *t)
{
	struct pending *p = t->data;
	char msg[256];

	snprintf(msg, sizeof(msg),
		 "No answer within %d seconds (AGENTD_PERMISSION_TIMEOUT); denied automatically.",
		 p->host->cfg->permission_timeout);
	host_answer(p->host, p, false, msg, NULL, NULL, false, "timeout");
}

static json_object *host_get(json_object *o, const char *key)
{
	json_object *v = NULL;

	json_object_object_get_ex(o, key, &v);
	return v;
}

/* A can_use_tool request becomes a "permission" event and a pending entry with a timeout. */
static void host_permission(struct host *h, json_object *line)
{
	json_object *req = host_get(line, "request"), *rid = host_get(line, "request_id");
	json_object *data = json_object_new_object();
	struct pending *p = NULL;
	const char *text;

	for (size_t i = 0; i < HOST_PENDING_MAX && p == NULL; i++)
		if (!h->pending[i].used && h->pending[i].request_id[0] == '\0')
			p = &h->pending[i];
	if (p == NULL || rid == NULL || strlen(json_object_get_string(rid)) >= HOST_ID_MAX) {
		log_error("cannot track another permission request; it stays unanswered");
		json_object_put(data);
		return;
	}
	memset(p, 0, sizeof(*p));
	p->used = true;
	p->host = h;
	snprintf(p->request_id, sizeof(p->request_id), "%s", json_object_get_string(rid));
	p->input = json_object_get(host_get(req, "input"));
	json_object_object_add(data, "requestId", json_object_new_string(p->request_id));
	json_object_object_add(data, "toolName", json_object_get(host_get(req, "tool_name")));
	json_object_object_add(data, "input", json_object_get(p->input));
	json_object_object_add(data, "toolUseId", json_object_get(host_get(req, "tool_use_id")));
	json_object_object_add(data, "description", json_object_get(host_get(req, "description")));
	json_object_object_add(data, "suggestions",
			       json_object_get(host_get(req, "permission_suggestions")));
	json_object_object_add(data, "blockedPath", json_object_get(host_get(req, "blocked_path")));
	text = json_object_to_json_string_ext(data, JSON_C_TO_STRING_PLAIN);
	p->event_id = host_emit(h, "permission", text, strlen(text), &p->event_line, &p->event_len);
	json_object_put(data);
	uv_timer_init(h->loop, &p->timer);
	p->timer.data = p;
	uv_timer_start(&p->timer, pending_timeout, (uint64_t)h->cfg->permission_timeout * 1000, 0);
}

/* Event names come from claude's "type": kept to [a-z_] so SSE framing stays intact. */
static void host_event_name(json_object *obj, char out[HOST_EVENT_MAX])
{
	const char *t = json_object_is_type(host_get(obj, "type"), json_type_string)
			    ? json_object_get_string(host_get(obj, "type"))
			    : "unknown";
	size_t i;

	for (i = 0; t[i] != '\0' && i + 1 < HOST_EVENT_MAX; i++)
		if (!((t[i] >= 'a' && t[i] <= 'z') || t[i] == '_'))
			break;
	if (t[i] != '\0' || i == 0)
		t = "unknown", i = 7;
	memcpy(out, t, i);
	out[i] = '\0';
}

static void host_line(struct host *h, const char *line, size_t len)
{
	json_tokener *tok = json_tokener_new();
	json_object *obj = tok ? json_tokener_parse_ex(tok, line, (int)len) : NULL;
	char name[HOST_EVENT_MAX];
	json_object *req, *sub;

	json_tokener_free(tok);
	if (obj == NULL || !json_object_is_type(obj, json_type_object)) {
		/* Not JSON: still numbered, as a string, so nothing claude says is lost. */
		json_object *s = json_object_new_string_len(line, (int)len);

		host_emit_json(h, "raw", s);
		json_object_put(obj);
		return;
	}
	host_event_name(obj, name);
	req = host_get(obj, "request");
	sub = host_get(req, "subtype");
	if (strcmp(name, "control_request") == 0 && sub != NULL &&
	    strcmp(json_object_get_string(sub), "can_use_tool") == 0) {
		host_permission(h, obj);
	} else {
		if (strcmp(name, "control_cancel_request") == 0) {
			struct pending *p = host_find_pending(
			    h, json_object_get_string(host_get(obj, "request_id")));
			if (p != NULL)
				host_drop_pending(h, p);
		}
		if (strcmp(name, "result") == 0)
			h->turn_running = false;
		host_emit(h, name, line, len, NULL, NULL);
	}
	host_print(h, name, obj);
	json_object_put(obj);
}

/* ---- the transcript in the pane --------------------------------------------------------- */

static void host_print_content(json_object *content, const char *who)
{
	size_t n =
	    json_object_is_type(content, json_type_array) ? json_object_array_length(content) : 0;

	if (json_object_is_type(content, json_type_string))
		printf("%s: %s\n", who, json_object_get_string(content));
	for (size_t i = 0; i < n; i++) {
		json_object *b = json_object_array_get_idx(content, i);
		const char *type = json_object_get_string(host_get(b, "type"));

		if (type == NULL)
			continue;
		if (strcmp(type, "text") == 0)
			printf("%s: %s\n", who, json_object_get_string(host_get(b, "text")));
		else if (strcmp(type, "tool_use") == 0)
			printf("%s wants to use %s: %s\n", who,
			       json_object_get_string(host_get(b, "name")),
			       json_object_to_json_string_ext(host_get(b, "input"),
							      JSON_C_TO_STRING_PLAIN));
		else if (strcmp(type, "tool_result") == 0)
			printf("tool result received\n");
	}
}

static void host_print(struct host *h, const char *name, json_object *obj)
{
	json_object *msg = host_get(obj, "message");

	if (strcmp(name, "assistant") == 0)
		host_print_content(host_get(msg, "content"), "claude");
	else if (strcmp(name, "user") == 0)
		host_print_content(host_get(msg, "content"), "user");
	else if (strcmp(name, "result") == 0)
		printf("-- turn finished: %s\n", json_object_get_string(host_get(obj, "subtype")));
	else if (strcmp(name, "control_request") == 0)
		printf("-- permission requested for %s (answer it from the API)\n",
		       json_object_get_string(host_get(host_get(obj, "request"), "tool_name")));
	fflush(stdout);
}

/* ---- claude's stdout -------------------------------------------------------------------- */

static void host_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
	buf->base = malloc(HOST_READ_CHUNK);
	buf->len = buf->base != NULL ? HOST_READ_CHUNK : 0;
}

/* Splits claude's output into lines; a line over HOSTPROTO_LINE_MAX is dropped whole. */
static void host_feed(struct host *h, const char *data, size_t n)
{
	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t take = nl != NULL ? (size_t)(nl - data) : n;

		if (!h->line_skip && h->line_len + take > HOSTPROTO_LINE_MAX) {
			log_warn("claude wrote a line over %d bytes; dropped", HOSTPROTO_LINE_MAX);
			h->line_skip = true;
			h->line_len = 0;
		}
		if (!h->line_skip) {
			char *grown = realloc(h->line, h->line_len + take + 1);

			if (grown == NULL) {
				h->line_skip = true;
			} else {
				h->line = grown;
				memcpy(h->line + h->line_len, data, take);
				h->line_len += take;
			}
		}
		if (nl == NULL)
			return;
		if (!h->line_skip && h->line_len > 0)
			host_line(h, h->line, h->line_len);
		h->line_len = 0;
		h->line_skip = false;
		data = nl + 1;
		n -= take + 1;
	}
}

static void host_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct host *h = stream->data;

	if (nread > 0)
		host_feed(h, buf->base, (size_t)nread);
	else if (nread < 0)
		uv_read_stop(stream);
	free(buf->base);
}

/* ---- requests on host.sock -------------------------------------------------------------- */

/* Sends prompt (a JSON string) to claude as the next user message. */
static void host_start_turn(struct host *h, json_object *prompt)
{
	json_object *msg = json_object_new_object(), *m = json_object_new_object();

	json_object_object_add(m, "role", json_object_new_string("user"));
	json_object_object_add(m, "content", json_object_get(prompt));
	json_object_object_add(msg, "type", json_object_new_string("user"));
	json_object_object_add(msg, "message", m);
	h->turn_running = true;
	printf("user: %s\n", json_object_get_string(prompt));
	fflush(stdout);
	host_send_claude(h, msg);
}

static void host_prompt(struct host *h, struct sub *s, json_object *req)
{
	json_object *p = host_get(req, "prompt"), *ok;

	if (!json_object_is_type(p, json_type_string) || json_object_get_string_len(p) == 0) {
		sub_error(s, 400, "invalid_request", "prompt must be a non-empty string");
		return;
	}
	if (!h->proc_running) {
		sub_error(s, 409, "agent_exited", "claude is not running in this session");
		return;
	}
	if (h->turn_running) {
		sub_error(s, 409, "turn_running", "a turn is already running in this session");
		return;
	}
	s->after = h->log.last_id;
	s->until_result = true;
	s->state = SUB_LIVE;
	ok = json_object_new_object();
	json_object_object_add(ok, "type", json_object_new_string("accepted"));
	json_object_object_add(ok, "after", json_object_new_int64((int64_t)s->after));
	sub_reply(s, ok);
	host_start_turn(h, p);
}

static void host_permission_answer(struct host *h, struct sub *s, json_object *req)
{
	const char *rid = json_object_get_string(host_get(req, "requestId"));
	const char *behavior = json_object_get_string(host_get(req, "behavior"));
	json_object *msg = host_get(req, "message"), *upd = host_get(req, "updatedInput"),
		    *perms = host_get(req, "updatedPermissions");
	struct pending *p;
	bool allow;

	if (rid == NULL || behavior == NULL ||
	    (strcmp(behavior, "allow") != 0 && strcmp(behavior, "deny") != 0) ||
	    (upd != NULL && !json_object_is_type(upd, json_type_object)) ||
	    (perms != NULL &&
	     (!json_object_is_type(perms, json_type_array) || strcmp(behavior, "allow") != 0)) ||
	    (msg != NULL && !json_object_is_type(msg, json_type_string))) {
		sub_error(
		    s, 400, "invalid_request",
		    "expected {\"behavior\":\"allow\"|\"deny\"} with an optional message, "
		    "updatedInput object, interrupt and (with allow) updatedPermissions array");
		return;
	}
	p = host_find_pending(h, rid);
	if (p == NULL) {
		if (host_was_answered(h, rid))
			sub_error(s, 409, "already_answered",
				  "this permission request was already answered or withdrawn");
		else
			sub_error(s, 404, "unknown_request", "no such permission request");
		return;
	}
	allow = strcmp(behavior, "allow") == 0;
	host_answer(h, p, allow,
		    allow ? NULL
			  : (msg != NULL ? json_object_get_string(msg) : "Denied by the user."),
		    upd, perms, json_object_get_boolean(host_get(req, "interrupt")), "client");
	sub_ok(s);
}

static void host_interrupt(struct host *h, struct sub *s)
{
	json_object *msg, *r;
	char id[64];

	if (!h->proc_running) {
		sub_error(s, 409, "agent_exited", "claude is not running in this session");
		return;
	}
	snprintf(id, sizeof(id), "agentd-%lu", ++h->next_request);
	msg = json_object_new_object();
	r = json_object_new_object();
	json_object_object_add(r, "subtype", json_object_new_string("interrupt"));
	json_object_object_add(msg, "type", json_object_new_string("control_request"));
	json_object_object_add(msg, "request_id", json_object_new_string(id));
	json_object_object_add(msg, "request", r);
	host_send_claude(h, msg);
	sub_ok(s);
}

static void host_request(struct host *h, struct sub *s)
{
	json_object *req = json_tokener_parse(s->req);
	const char *type = json_object_get_string(host_get(req, "type"));
	json_object *after = host_get(req, "after");

	if (type == NULL) {
		sub_error(s, 400, "invalid_request", "a request needs a type");
	} else if (strcmp(type, "subscribe") == 0) {
		int fd = dup(h->log.fd);

		s->after = json_object_is_type(after, json_type_int)
			       ? (uint64_t)json_object_get_int64(after)
			       : 0;
		s->replay = fd >= 0 ? fdopen(fd, "r") : NULL;
		if (s->replay == NULL) {
			if (fd >= 0)
				close(fd);
			sub_error(s, 500, "log_error", "cannot read the event log");
		} else {
			rewind(s->replay);
			s->state = SUB_REPLAY;
			sub_pump(s);
		}
	} else if (strcmp(type, "prompt") == 0) {
		host_prompt(h, s, req);
	} else if (strcmp(type, "permission") == 0) {
		host_permission_answer(h, s, req);
	} else if (strcmp(type, "interrupt") == 0) {
		host_interrupt(h, s);
	} else {
		sub_error(s, 400, "invalid_request", "unknown request type");
	}
	json_object_put(req);
}

static void sub_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
	buf->base = malloc(4096);
	buf->len = buf->base != NULL ? 4096 : 0;
}

static void sub_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct sub *s = stream->data;
	char *nl;

	if (nread < 0) {
		sub_close(s);
	} else if (nread > 0 && s->state == SUB_REQUEST) {
		char *grown;

		if (s->req_len + (size_t)nread > HOSTPROTO_REQUEST_MAX) {
			sub_error(s, 413, "request_too_large", "the request line is too long");
			goto out;
		}
		grown = realloc(s->req, s->req_len + (size_t)nread + 1);
		if (grown == NULL) {
			sub_close(s);
			goto out;
		}
		s->req = grown;
		memcpy(s->req + s->req_len, buf->base, (size_t)nread);
		s->req_len += (size_t)nread;
		s->req[s->req_len] = '\0';
		nl = memchr(s->req, '\n', s->req_len);
		if (nl != NULL) {
			*nl = '\0';
			host_request(s->host, s);
		}
	}
out:
	free(buf->base);
}

static void host_accept(uv_stream_t *server, int status)
{
	struct host *h = server->data;
	struct sub *s;

	if (status < 0)
		return;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return;
	s->host = h;
	uv_pipe_init(h->loop, &s->pipe, 0);
	s->pipe.data = s;
	if (uv_accept(server, (uv_stream_t *)&s->pipe) < 0) {
		uv_close((uv_handle_t *)&s->pipe, sub_closed);
		return;
	}
	s->next = h->subs;
	h->subs = s;
	uv_read_start((uv_stream_t *)&s->pipe, sub_alloc, sub_read);
}

/* ---- lifecycle -------------------------------------------------------------------------- */

static void host_close_all(struct host *h)
{
	while (h->subs != NULL)
		sub_close(h->subs);
	for (size_t i = 0; i < HOST_PENDING_MAX; i++)
		if (h->pending[i].used && h->pending[i].request_id[0] != '\0')
			host_drop_pending(h, &h->pending[i]);
	for (size_t i = 0; i < 3; i++)
		uv_close((uv_handle_t *)&h->sig[i], NULL);
	uv_close((uv_handle_t *)&h->kill_timer, NULL);
	uv_close((uv_handle_t *)&h->server, NULL);
	uv_close((uv_handle_t *)&h->in, NULL);
	uv_close((uv_handle_t *)&h->out, NULL);
	uv_close((uv_handle_t *)&h->proc, NULL);
}

static void host_exited(uv_process_t *proc, int64_t status, int term_signal)
{
	struct host *h = proc->data;
	json_object *ev = json_object_new_object();

	h->proc_running = false;
	h->exit_code = term_signal ? 128 + term_signal : (int)status;
	json_object_object_add(ev, "code", json_object_new_int64(status));
	json_object_object_add(ev, "signal", json_object_new_int(term_signal));
	host_emit_json(h, "exit", ev);
	printf("-- claude exited (status %lld, signal %d)\n", (long long)status, term_signal);
	fflush(stdout);
	host_close_all(h);
}

static void host_kill_late(uv_timer_t *t)
{
	struct host *h = t->data;

	if (h->proc_running)
		kill(-h->proc.pid, SIGKILL);
}

static void host_signal(uv_signal_t *sig, int signum)
{
	struct host *h = sig->data;

	if (h->stopping || !h->proc_running)
		return;
	h->stopping = true;
	/* claude runs in its own process group (UV_PROCESS_DETACHED): end all of it. */
	kill(-h->proc.pid, SIGTERM);
	uv_timer_start(&h->kill_timer, host_kill_late, HOST_KILL_GRACE_MS, 0);
}

static int host_listen(struct host *h, const char *dir)
{
	char cwd[CONFIG_PATH_MAX];
	int r;

	/* sun_path holds 108 bytes; a long runtime dir plus a 100-character id would not fit, so
	 * bind relative to the session directory. */
	if (getcwd(cwd, sizeof(cwd)) == NULL || chdir(dir) < 0)
		return -errno;
	unlink("host.sock");
	uv_pipe_init(h->loop, &h->server, 0);
	h->server.data = h;
	r = uv_pipe_bind(&h->server, "host.sock");
	if (r == 0)
		r = uv_listen((uv_stream_t *)&h->server, 16, host_accept);
	if (chdir(cwd) < 0 && r == 0)
		r = -errno;
	return r;
}

/*
 * claude's environment: the pane's, which agentd-api made exactly the agent's (claude.h, tmux.h),
 * without CLAUDECODE (claude refuses to start nested) and with CLAUDE_CODE_ENTRYPOINT=sdk-ts,
 * which marks an SDK-style host as the official SDKs do (notes §1.3), unless it is set. The
 * array points into environ; the caller frees only the array.
 */
static char **host_claude_env(void)
{
	extern char **environ;
	static char entry[] = "CLAUDE_CODE_ENTRYPOINT=sdk-ts";
	size_t n = 0, k = 0;
	bool has_entry = false;
	char **env;

	while (environ[n] != NULL)
		n++;
	env = calloc(n + 2, sizeof(*env));
	if (env == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (strncmp(environ[i], "CLAUDECODE=", 11) == 0)
			continue;
		if (strncmp(environ[i], "CLAUDE_CODE_ENTRYPOINT=", 23) == 0)
			has_entry = true;
		env[k++] = environ[i];
	}
	if (!has_entry)
		env[k++] = entry;
	env[k] = NULL;
	return env;
}

static int host_spawn(struct host *h, char *const argv[])
{
	uv_process_options_t o;
	uv_stdio_container_t stdio[3];
	char **env = host_claude_env();
	int r;

	if (env == NULL)
		return UV_ENOMEM;

	memset(&o, 0, sizeof(o));
	uv_pipe_init(h->loop, &h->in, 0);
	uv_pipe_init(h->loop, &h->out, 0);
	h->out.data = h;
	stdio[0].flags = UV_CREATE_PIPE | UV_READABLE_PIPE;
	stdio[0].data.stream = (uv_stream_t *)&h->in;
	stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
	stdio[1].data.stream = (uv_stream_t *)&h->out;
	stdio[2].flags = UV_INHERIT_FD;
	stdio[2].data.fd = 2;
	o.file = argv[0];
	o.args = (char **)argv;
	o.env = env;
	o.stdio = stdio;
	o.stdio_count = 3;
	o.flags = UV_PROCESS_DETACHED;
	o.exit_cb = host_exited;
	h->proc.data = h;
	r = uv_spawn(h->loop, &h->proc, &o);
	free(env);
	return r;
}

int host_run(const struct config *cfg, const char *id, const char *first_prompt,
	     char *const claude_argv[])
{
	static const int signals[3] = {SIGTERM, SIGHUP, SIGINT};
	struct host *h = calloc(1, sizeof(*h));
	char dir[CONFIG_PATH_MAX];
	int r, code = 1;

	if (h == NULL)
		return 1;
	h->loop = uv_default_loop();
	h->cfg = cfg;
	h->id = id;
	h->log.fd = -1;
	signal(SIGPIPE, SIG_IGN);
	if (hostproto_path(cfg, id, "", dir, sizeof(dir)) < 0 ||
	    hostproto_path(cfg, id, "events.log", h->log_path, sizeof(h->log_path)) < 0) {
		log_error("session paths are too long");
		goto out;
	}
	if ((mkdir(dir, 0750) < 0 && errno != EEXIST) ||
	    (r = evlog_open(&h->log, h->log_path)) < 0) {
		log_error("cannot open %s: %s", h->log_path, strerror(errno));
		goto out;
	}
	if ((r = host_listen(h, dir)) < 0) {
		log_error("cannot listen on %s/host.sock: %s", dir, uv_strerror(r));
		goto out;
	}
	for (size_t i = 0; i < 3; i++) {
		uv_signal_init(h->loop, &h->sig[i]);
		h->sig[i].data = h;
		uv_signal_start(&h->sig[i], host_signal, signals[i]);
	}
	uv_timer_init(h->loop, &h->kill_timer);
	h->kill_timer.data = h;
	if ((r = host_spawn(h, claude_argv)) < 0) {
		log_error("cannot start %s: %s", claude_argv[0], uv_strerror(r));
		host_exited(&h->proc, 127, 0);
	} else {
		h->proc_running = true;
		printf("-- agentd-host: session %s, claude pid %d\n", id, h->proc.pid);
		fflush(stdout);
		uv_read_start((uv_stream_t *)&h->out, host_alloc, host_read);
		if (first_prompt != NULL && first_prompt[0] != '\0') {
			json_object *p = json_object_new_string(first_prompt);

			host_start_turn(h, p);
			json_object_put(p);
		}
	}
	uv_run(h->loop, UV_RUN_DEFAULT);
	code = h->exit_code;
	if (hostproto_path(cfg, id, "host.sock", dir, sizeof(dir)) == 0)
		unlink(dir);
out:
	evlog_close(&h->log);
	free(h->line);
	uv_loop_close(h->loop);
	free(h);
	return code;
}
