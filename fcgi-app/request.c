#include "request.h"

#include "auth.h"
#include "httpstatus.h"
#include "jsontext.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *request_param(FCGX_Request *f, const char *name)
{
	const char *v = FCGX_GetParam(name, f->envp);

	return v != NULL && v[0] != '\0' ? v : NULL;
}

/*
 * nginx 1.22 passes a header the client repeated as that many HTTP_* parameters of the same name,
 * and FCGX_GetParam returns only the first: count them, so two Origin headers cannot pass the
 * check on the first one alone (the bridge refuses them too).
 */
static unsigned request_param_count(FCGX_Request *f, const char *name)
{
	size_t len = strlen(name);
	unsigned n = 0;

	for (char **e = f->envp; e != NULL && *e != NULL; e++)
		if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
			n++;
	return n;
}

void request_init(struct request *req, FCGX_Request *fcgi)
{
	const char *v;

	memset(req, 0, sizeof(*req));
	req->fcgi = fcgi;
	req->method = (v = request_param(fcgi, "REQUEST_METHOD")) ? v : "GET";
	req->path = (v = request_param(fcgi, "DOCUMENT_URI")) ? v : "/";
	req->query = (v = request_param(fcgi, "QUERY_STRING")) ? v : "";
	req->origin = request_param(fcgi, "HTTP_ORIGIN");
	req->origin_repeated = request_param_count(fcgi, "HTTP_ORIGIN") > 1;
	req->host = (v = request_param(fcgi, "AGENTD_HOST")) ? v : request_param(fcgi, "HTTP_HOST");
	req->scheme = (v = request_param(fcgi, "AGENTD_SCHEME")) ? v : "http";
	req->content_type = request_param(fcgi, "CONTENT_TYPE");
	req->by =
	    (v = request_param(fcgi, "AGENTD_BY")) != NULL && auth_by_valid(v) ? v : "unknown";
}

void request_finish(struct request *req)
{
	free(req->body);
	req->body = NULL;
}

int request_read_body(struct request *req, size_t max)
{
	const char *cl = request_param(req->fcgi, "CONTENT_LENGTH");
	unsigned long long n = 0;
	size_t got = 0;
	char *end;

	if (cl != NULL) {
		errno = 0;
		n = strtoull(cl, &end, 10);
		if (errno != 0 || *end != '\0')
			return -EINVAL;
	}
	if (n > max)
		return -EFBIG;
	req->body = malloc((size_t)n + 1);
	if (req->body == NULL)
		return -ENOMEM;
	while (got < n) {
		int k = FCGX_GetStr(req->body + got, (int)(n - got), req->fcgi->in);

		if (k <= 0)
			break;
		got += (size_t)k;
	}
	req->body[got] = '\0';
	req->body_len = got;
	return got == n ? 0 : -EIO;
}

bool request_is_json(const struct request *req)
{
	return jsontext_content_type_ok(req->content_type);
}

json_object *request_json_body(struct request *req, size_t max, int depth)
{
	struct cause cause = {{0}};
	json_object *root;
	int r;

	if (!request_is_json(req)) {
		request_error(req, 415, "unsupported_media_type",
			      "send the body with Content-Type: application/json (charset utf-8)");
		return NULL;
	}
	if ((r = request_read_body(req, max)) == -EFBIG) {
		request_error(req, 413, "body_too_large", "request body is larger than %zu KiB",
			      max / 1024);
		return NULL;
	}
	if (r < 0) {
		request_error(req, 400, "bad_body", "the body could not be read");
		return NULL;
	}
	root = jsontext_parse(req->body, req->body_len, depth, &cause);
	if (root == NULL)
		request_error(req, 400, "invalid_request", "%s", cause.msg);
	return root;
}

const char *request_query(const struct request *req, const char *key, char *out, size_t outlen)
{
	size_t klen = strlen(key);

	for (const char *p = req->query; *p != '\0';) {
		size_t len = strcspn(p, "&");

		if (len > klen && strncmp(p, key, klen) == 0 && p[klen] == '=') {
			size_t vlen = len - klen - 1;

			if (vlen >= outlen)
				return NULL;
			memcpy(out, p + klen + 1, vlen);
			out[vlen] = '\0';
			return out;
		}
		if (len == klen && strncmp(p, key, klen) == 0) {
			if (outlen == 0)
				return NULL;
			out[0] = '\0';
			return out;
		}
		p += len;
		if (*p == '&')
			p++;
	}
	return NULL;
}

void request_reply(struct request *req, int status, json_object *body, const char *extra_headers)
{
	const char *text = body != NULL
			       ? json_object_to_json_string_ext(
				     body, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
			       : NULL;
	char *scrubbed = NULL;

	/* json-c copies string bytes as they are: an id echoed from the path may not be UTF-8. */
	if (text != NULL && !jsontext_utf8_valid(text, strlen(text))) {
		scrubbed = jsontext_utf8_scrub(text, strlen(text));
		text = scrubbed != NULL
			   ? scrubbed
			   : "{\"error\":\"out of memory\",\"code\":\"out_of_memory\"}";
	}

	req->status = status;
	FCGX_FPrintF(req->fcgi->out,
		     "Status: %d %s\r\n"
		     "Content-Type: application/json\r\n"
		     "Cache-Control: no-store\r\n"
		     "%s\r\n",
		     status, httpstatus_reason(status), extra_headers ? extra_headers : "");
	if (text != NULL) {
		FCGX_PutStr(text, (int)strlen(text), req->fcgi->out);
		FCGX_PutChar('\n', req->fcgi->out);
	}
	free(scrubbed);
	json_object_put(body);
}

void request_reply_bytes(struct request *req, int status, const char *content_type,
			 const char *body, size_t len, const char *extra_headers)
{
	req->status = status;
	FCGX_FPrintF(req->fcgi->out,
		     "Status: %d %s\r\n"
		     "Content-Type: %s\r\n"
		     "Cache-Control: no-store\r\n"
		     "%s\r\n",
		     status, httpstatus_reason(status), content_type,
		     extra_headers ? extra_headers : "");
	/* FCGX_PutStr takes an int: the callers' bodies are capped far below INT_MAX. */
	if (len > 0)
		FCGX_PutStr(body, (int)len, req->fcgi->out);
}

const char *request_param_value(const struct request *req, const char *name)
{
	return request_param(req->fcgi, name);
}

void request_reply_head(struct request *req, int status, const char *extra_headers)
{
	req->status = status;
	FCGX_FPrintF(req->fcgi->out,
		     "Status: %d %s\r\n"
		     "Cache-Control: no-store\r\n"
		     "%s\r\n",
		     status, httpstatus_reason(status), extra_headers ? extra_headers : "");
}

void request_reply_head_reusable(struct request *req, int status, int secs,
				 const char *extra_headers)
{
	req->status = status;
	/* No Cache-Control: X-Accel-Expires alone says how long, whatever the order of headers. */
	FCGX_FPrintF(req->fcgi->out,
		     "Status: %d %s\r\n"
		     "X-Accel-Expires: %d\r\n"
		     "%s\r\n",
		     status, httpstatus_reason(status), secs, extra_headers ? extra_headers : "");
}

void request_error(struct request *req, int status, const char *code, const char *fmt, ...)
{
	char msg[1024];
	json_object *o = json_object_new_object();
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object_object_add(o, "error", json_object_new_string(msg));
	json_object_object_add(o, "code", json_object_new_string(code));
	request_reply(req, status, o, NULL);
}
