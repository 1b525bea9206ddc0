#include "botapi.h"

#include "jsontext.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BOTAPI_URL_MAX 2048

struct botapi {
	struct xfer_loop *loop;
	char *api;
	char *token;
};

struct botapi_call {
	botapi_fn fn;
	void *arg;
};

struct botapi *botapi_create(struct xfer_loop *loop, const char *api, const char *token)
{
	struct botapi *b = calloc(1, sizeof(*b));
	size_t n;

	if (b == NULL)
		return NULL;
	b->loop = loop;
	b->api = strdup(api);
	b->token = strdup(token);
	if (b->api == NULL || b->token == NULL) {
		botapi_destroy(b);
		return NULL;
	}
	n = strlen(b->api);
	while (n > 0 && b->api[n - 1] == '/')
		b->api[--n] = '\0';
	return b;
}

void botapi_destroy(struct botapi *b)
{
	if (b == NULL)
		return;
	free(b->api);
	if (b->token != NULL)
		memset(b->token, 0, strlen(b->token));
	free(b->token);
	free(b);
}

void botapi_parse_answer(const struct xfer_result *res, struct botapi_answer *a, json_object **root)
{
	json_object *o = NULL, *v, *params;
	struct cause cause = {{0}};

	memset(a, 0, sizeof(*a));
	*root = NULL;
	a->status = res->status;
	if (res->curl_code != CURLE_OK || res->status == 0) {
		a->transient = true;
		a->aborted = res->curl_code == CURLE_ABORTED_BY_CALLBACK;
		a->error_code = 0;
		snprintf(a->description, sizeof(a->description), "%s",
			 res->error[0] != '\0' ? res->error : "no answer");
		return;
	}
	if (!res->too_large)
		o = jsontext_parse(res->body, res->body_len, BOTAPI_DEPTH, &cause);
	if (o == NULL || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		a->transient = res->status >= 500 || res->status == 429;
		a->error_code = (int)res->status;
		if (res->status == 429)
			a->retry_after = 1; /* no retry_after readable: a second, not at once */
		snprintf(a->description, sizeof(a->description), "HTTP %ld: %s", res->status,
			 res->too_large ? "the answer is too large" : "the answer is not JSON");
		return;
	}
	*root = o;
	a->ok = json_object_object_get_ex(o, "ok", &v) && json_object_get_boolean(v) &&
		res->status == 200;
	if (a->ok) {
		json_object_object_get_ex(o, "result", &a->result);
		return;
	}
	a->error_code =
	    json_object_object_get_ex(o, "error_code", &v) && json_object_is_type(v, json_type_int)
		? json_object_get_int(v)
		: (int)res->status;
	if (json_object_object_get_ex(o, "description", &v) &&
	    json_object_is_type(v, json_type_string) && json_object_get_string_len(v) > 0)
		snprintf(a->description, sizeof(a->description), "%s", json_object_get_string(v));
	else
		snprintf(a->description, sizeof(a->description), "HTTP %ld", res->status);
	if (json_object_object_get_ex(o, "parameters", &params) &&
	    json_object_object_get_ex(params, "retry_after", &v) &&
	    json_object_is_type(v, json_type_int)) {
		int64_t s = json_object_get_int64(v);

		/* A day at most: a corrupt value must not stop the bot for ever. */
		a->retry_after = s < 1 ? 1 : s > 86400 ? 86400 : (int)s;
	}
	if (a->error_code == 429 && a->retry_after == 0)
		a->retry_after = 1;
	a->transient = a->error_code == 429 || a->error_code >= 500 || res->status >= 500;
}

static void botapi_done(void *arg, const struct xfer_result *res)
{
	struct botapi_call *c = arg;
	struct botapi_answer a;
	json_object *root;

	botapi_parse_answer(res, &a, &root);
	if (c->fn != NULL)
		c->fn(c->arg, &a);
	json_object_put(root);
	free(c);
}

struct xfer *botapi_call(struct botapi *b, const char *method, json_object *params, long timeout_ms,
			 botapi_fn fn, void *arg)
{
	char url[BOTAPI_URL_MAX];
	struct botapi_call *c = NULL;
	struct xfer *x = NULL;
	const char *body;
	int n;

	if (params == NULL)
		params = json_object_new_object();
	n = snprintf(url, sizeof(url), "%s/bot%s/%s", b->api, b->token, method);
	if (params == NULL || n < 0 || (size_t)n >= sizeof(url) ||
	    (c = calloc(1, sizeof(*c))) == NULL) {
		errno = params == NULL || c == NULL ? ENOMEM : ENAMETOOLONG;
		goto out;
	}
	c->fn = fn;
	c->arg = arg;
	body = json_object_to_json_string_ext(params, JSON_C_TO_STRING_PLAIN |
							  JSON_C_TO_STRING_NOSLASHESCAPE);
	x = xfer_start(b->loop, &(struct xfer_req){
				    .method = "POST",
				    .url = url,
				    .body = body,
				    .timeout_ms = timeout_ms,
				    .body_max = BOTAPI_ANSWER_MAX,
				    .on_done = botapi_done,
				    .arg = c,
				});
	if (x == NULL) {
		free(c);
		errno = ENOMEM;
	}
out:
	memset(url, 0, sizeof(url));
	json_object_put(params);
	return x;
}

struct xfer *botapi_send_document(struct botapi *b, int64_t chat, const char *filename,
				  const char *data, size_t len, const char *caption, botapi_fn fn,
				  void *arg)
{
	char url[BOTAPI_URL_MAX], chat_id[24];
	struct botapi_call *c = NULL;
	struct xfer *x = NULL;
	struct xfer_req req = {
	    .method = "POST",
	    .url = url,
	    .timeout_ms = BOTAPI_TIMEOUT_MS,
	    .body_max = BOTAPI_ANSWER_MAX,
	    .on_done = botapi_done,
	};
	int n = snprintf(url, sizeof(url), "%s/bot%s/sendDocument", b->api, b->token);

	if (n < 0 || (size_t)n >= sizeof(url) || (c = calloc(1, sizeof(*c))) == NULL) {
		errno = c == NULL && n >= 0 && (size_t)n < sizeof(url) ? ENOMEM : ENAMETOOLONG;
		goto out;
	}
	c->fn = fn;
	c->arg = arg;
	req.arg = c;
	snprintf(chat_id, sizeof(chat_id), "%" PRId64, chat);
	req.parts[req.nparts++] =
	    (struct xfer_part){"chat_id", chat_id, strlen(chat_id), NULL, NULL};
	req.parts[req.nparts++] =
	    (struct xfer_part){"document", data, len, filename, "text/plain; charset=utf-8"};
	if (caption != NULL)
		req.parts[req.nparts++] =
		    (struct xfer_part){"caption", caption, strlen(caption), NULL, NULL};
	if ((x = xfer_start(b->loop, &req)) == NULL) {
		free(c);
		errno = ENOMEM;
	}
out:
	memset(url, 0, sizeof(url));
	return x;
}

static int64_t botapi_int(json_object *o, const char *key)
{
	json_object *v;

	if (o == NULL || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_int))
		return 0;
	return json_object_get_int64(v);
}

int botapi_parse_update(json_object *u, struct botapi_update *out)
{
	json_object *m, *from = NULL, *chat = NULL, *v;

	memset(out, 0, sizeof(*out));
	if (!json_object_object_get_ex(u, "update_id", &v) ||
	    !json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
		return -EINVAL;
	out->update_id = json_object_get_int64(v);
	if (json_object_object_get_ex(u, "message", &m) &&
	    json_object_is_type(m, json_type_object)) {
		json_object_object_get_ex(m, "from", &from);
		json_object_object_get_ex(m, "chat", &chat);
		out->text = jsontext_str(m, "text");
		out->user = botapi_int(from, "id");
		out->chat = botapi_int(chat, "id");
		if (out->text != NULL && out->user != 0 && out->chat != 0)
			out->kind = BOTAPI_MESSAGE;
	} else if (json_object_object_get_ex(u, "callback_query", &m) &&
		   json_object_is_type(m, json_type_object)) {
		json_object *msg = NULL;

		json_object_object_get_ex(m, "from", &from);
		json_object_object_get_ex(m, "message", &msg);
		if (msg != NULL)
			json_object_object_get_ex(msg, "chat", &chat);
		out->user = botapi_int(from, "id");
		out->chat = botapi_int(chat, "id");
		out->message_id = botapi_int(msg, "message_id");
		out->callback_id = jsontext_str(m, "id");
		out->callback_data = jsontext_str(m, "data");
		if (out->callback_id != NULL && out->user != 0)
			out->kind = BOTAPI_CALLBACK;
	}
	if (out->kind != BOTAPI_OTHER)
		render_user_name(out->user_name, sizeof(out->user_name),
				 jsontext_str(from, "first_name"), (long long)out->user);
	return 0;
}

json_object *botapi_keyboard(const char *const *texts, const char *const *data, size_t n)
{
	json_object *kb = json_object_new_object(), *rows = json_object_new_array(),
		    *row = json_object_new_array();

	for (size_t i = 0; i < n; i++) {
		json_object *b = json_object_new_object();

		json_object_object_add(b, "text", json_object_new_string(texts[i]));
		json_object_object_add(b, "callback_data", json_object_new_string(data[i]));
		json_object_array_add(row, b);
	}
	json_object_array_add(rows, row);
	json_object_object_add(kb, "inline_keyboard", rows);
	return kb;
}
