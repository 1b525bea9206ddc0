#include "http.h"

#include "httpstatus.h"
#include "jsontext.h"

#include <json-c/json.h>

#include <http_parser.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A header line as offsets into the request buffer (the buffer is stable, so callbacks that
 * deliver one name or value in several pieces only extend the range). */
struct http_field {
	size_t name_off, name_len;
	size_t value_off, value_len;
	bool has_value;
};

struct http_request {
	http_parser parser;
	size_t len;      /* bytes in buf */
	size_t head_len; /* bytes of the head once complete */
	size_t url_off, url_len;
	bool have_url;
	bool complete;
	bool last_was_value;
	bool has_body;
	bool body_follows; /* complete at the end of a head announcing a body */
	int err;           /* set by a callback that refuses the input */
	const char *path, *query;
	struct http_field fields[HTTP_HEADERS_MAX];
	unsigned nfields;
	char buf[HTTP_HEAD_MAX + 1]; /* + 1: room for the NUL after the last byte */
};

static int http_on_url(http_parser *p, const char *at, size_t len)
{
	struct http_request *req = p->data;

	if (!req->have_url) {
		req->have_url = true;
		req->url_off = (size_t)(at - req->buf);
	}
	req->url_len = (size_t)(at + len - req->buf) - req->url_off;
	return 0;
}

static int http_on_header_field(http_parser *p, const char *at, size_t len)
{
	struct http_request *req = p->data;
	struct http_field *f;

	/* A piece continues the previous name only when it is adjacent to it (the name was split
	 * between two reads); http-parser may skip the value callback of an empty value. */
	f = req->nfields > 0 ? &req->fields[req->nfields - 1] : NULL;
	if (f == NULL || req->last_was_value || f->has_value ||
	    at != req->buf + f->name_off + f->name_len) {
		if (req->nfields >= HTTP_HEADERS_MAX) {
			req->err = -EOVERFLOW;
			return 1;
		}
		f = &req->fields[req->nfields++];
		memset(f, 0, sizeof(*f));
		f->name_off = (size_t)(at - req->buf);
	}
	f = &req->fields[req->nfields - 1];
	f->name_len = (size_t)(at + len - req->buf) - f->name_off;
	req->last_was_value = false;
	return 0;
}

static int http_on_header_value(http_parser *p, const char *at, size_t len)
{
	struct http_request *req = p->data;
	struct http_field *f;

	if (req->nfields == 0)
		return 1;
	f = &req->fields[req->nfields - 1];
	if (!f->has_value) {
		f->has_value = true;
		f->value_off = (size_t)(at - req->buf);
	}
	f->value_len = (size_t)(at + len - req->buf) - f->value_off;
	req->last_was_value = true;
	return 0;
}

static int http_on_headers_complete(http_parser *p)
{
	struct http_request *req = p->data;

	req->has_body =
	    (p->flags & F_CHUNKED) || (p->content_length > 0 && p->content_length != ULLONG_MAX);
	if (req->has_body) {
		/* The body is the reader's business (it may be larger than the head buffer). */
		req->complete = true;
		req->body_follows = true;
		http_parser_pause(p, 1);
	}
	return 0;
}

static int http_on_message_complete(http_parser *p)
{
	struct http_request *req = p->data;

	req->complete = true;
	/* Stop here: anything after this request is not ours to parse as HTTP. */
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings http_settings = {
    .on_url = http_on_url,
    .on_header_field = http_on_header_field,
    .on_header_value = http_on_header_value,
    .on_headers_complete = http_on_headers_complete,
    .on_message_complete = http_on_message_complete,
};

struct http_request *http_request_create(void)
{
	struct http_request *req = calloc(1, sizeof(*req));

	if (req == NULL)
		return NULL;
	http_parser_init(&req->parser, HTTP_REQUEST);
	req->parser.data = req;
	req->path = req->query = "";
	return req;
}

void http_request_destroy(struct http_request *req)
{
	free(req);
}

char *http_request_space(struct http_request *req, size_t *avail)
{
	*avail = HTTP_HEAD_MAX - req->len;
	return req->buf + req->len;
}

static bool http_has_ctl(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] == '\r' || s[i] == '\n' || s[i] == '\0')
			return true;
	return false;
}

/* Turns the offsets into NUL-terminated strings in place, once the head is complete. The byte
 * after each name, value and the target is a separator (':', CR, LF, ' '), never data. */
static int http_request_finish(struct http_request *req)
{
	struct http_parser_url u;
	char *url;

	if (!req->have_url || req->url_len == 0)
		return -EBADMSG;
	for (unsigned i = 0; i < req->nfields; i++) {
		struct http_field *f = &req->fields[i];

		if (http_has_ctl(req->buf + f->name_off, f->name_len) ||
		    (f->has_value && http_has_ctl(req->buf + f->value_off, f->value_len)))
			return -EBADMSG; /* obsolete line folding or NULs: refuse rather than guess
					  */
		while (f->value_len > 0 && (req->buf[f->value_off + f->value_len - 1] == ' ' ||
					    req->buf[f->value_off + f->value_len - 1] == '\t'))
			f->value_len--;
		req->buf[f->name_off + f->name_len] = '\0';
		/* An empty value's offset is where the next line starts: leave that byte alone. */
		if (f->value_len > 0)
			req->buf[f->value_off + f->value_len] = '\0';
	}
	url = req->buf + req->url_off;
	http_parser_url_init(&u);
	if (http_parser_parse_url(url, req->url_len, req->parser.method == HTTP_CONNECT, &u) != 0)
		return -EBADMSG;
	url[req->url_len] = '\0';
	if (u.field_set & (1 << UF_PATH)) {
		req->path = url + u.field_data[UF_PATH].off;
		url[u.field_data[UF_PATH].off + u.field_data[UF_PATH].len] = '\0';
	}
	if (u.field_set & (1 << UF_QUERY)) {
		req->query = url + u.field_data[UF_QUERY].off;
		url[u.field_data[UF_QUERY].off + u.field_data[UF_QUERY].len] = '\0';
	}
	return 0;
}

int http_request_feed(struct http_request *req, size_t n)
{
	size_t start = req->len, used;
	enum http_errno e;
	int r;

	if (req->complete)
		return 1;
	if (n == 0)
		return req->len >= HTTP_HEAD_MAX ? -EOVERFLOW : 0;
	if (n > HTTP_HEAD_MAX - req->len)
		return -EOVERFLOW;
	req->len += n;
	used = http_parser_execute(&req->parser, &http_settings, req->buf + start, n);
	if (req->err < 0)
		return req->err;
	e = HTTP_PARSER_ERRNO(&req->parser);
	if (e == HPE_HEADER_OVERFLOW)
		return -EOVERFLOW;
	if (e != HPE_OK && !(e == HPE_PAUSED && req->complete))
		return -EBADMSG;
	if (!req->complete)
		return req->len >= HTTP_HEAD_MAX ? -EOVERFLOW : 0;
	req->head_len = start + used;
	/* Paused in on_headers_complete, http-parser has not consumed the head's final LF. */
	if (req->body_follows && req->head_len < req->len && req->buf[req->head_len] == '\n')
		req->head_len++;
	r = http_request_finish(req);
	if (r < 0) {
		req->complete = false;
		req->err = r;
		return r;
	}
	return 1;
}

const char *http_request_rest(const struct http_request *req, size_t *len)
{
	if (!req->complete || (!http_request_is_upgrade(req) && !req->body_follows)) {
		*len = 0;
		return req->buf;
	}
	*len = req->len - req->head_len;
	return req->buf + req->head_len;
}

const char *http_request_method(const struct http_request *req)
{
	return http_method_str((enum http_method)req->parser.method);
}

const char *http_request_path(const struct http_request *req)
{
	return req->path;
}

const char *http_request_query(const struct http_request *req)
{
	return req->query;
}

const char *http_request_header(const struct http_request *req, const char *name, unsigned *count)
{
	const char *found = NULL;
	unsigned n = 0;

	if (req->complete) {
		for (unsigned i = 0; i < req->nfields; i++) {
			const struct http_field *f = &req->fields[i];

			if (strcasecmp(req->buf + f->name_off, name) != 0)
				continue;
			if (n++ == 0)
				found = f->value_len > 0 ? req->buf + f->value_off : "";
		}
	}
	if (count != NULL)
		*count = n;
	return found;
}

int http_request_body_length(const struct http_request *req, uint64_t *len)
{
	*len = 0;
	if (!req->complete || !req->has_body)
		return 0;
	if (req->parser.flags & F_CHUNKED)
		return -EINVAL;
	*len = req->parser.content_length;
	return 1;
}

bool http_request_is_upgrade(const struct http_request *req)
{
	const http_parser *p = &req->parser;

	/* A body would be read as WebSocket frames; no client sends one with an upgrade. */
	return req->complete && p->upgrade && (p->http_major > 1 || p->http_minor >= 1) &&
	       !req->has_body;
}

bool http_has_token(const char *value, const char *token)
{
	size_t tlen = strlen(token);

	if (value == NULL)
		return false;
	while (*value != '\0') {
		const char *end;
		size_t len;

		while (*value == ' ' || *value == '\t' || *value == ',')
			value++;
		end = value;
		while (*end != '\0' && *end != ',')
			end++;
		len = (size_t)(end - value);
		while (len > 0 && (value[len - 1] == ' ' || value[len - 1] == '\t'))
			len--;
		if (len == tlen && strncasecmp(value, token, tlen) == 0)
			return true;
		value = end;
	}
	return false;
}

#define HTTP_QUERY_DIGITS_MAX 9 /* keeps the value inside a long without overflow checks */

bool http_query_next(const char **query, struct http_param *p)
{
	const char *q = *query, *end, *eq;
	size_t len;

	if (q == NULL || *q == '\0')
		return false;
	end = strchr(q, '&');
	len = end != NULL ? (size_t)(end - q) : strlen(q);
	eq = memchr(q, '=', len);
	p->name = q;
	p->name_len = eq != NULL ? (size_t)(eq - q) : len;
	p->has_value = eq != NULL;
	p->value = eq != NULL ? eq + 1 : q + len;
	p->value_len = eq != NULL ? len - p->name_len - 1 : 0;
	*query = end != NULL ? end + 1 : NULL;
	return true;
}

bool http_param_is(const struct http_param *p, const char *name)
{
	return p->name_len == strlen(name) && memcmp(p->name, name, p->name_len) == 0;
}

int http_query_int(const char *query, const char *name, long min, long max, long *out)
{
	struct http_param p;

	while (http_query_next(&query, &p)) {
		long val = 0;

		if (!p.has_value || !http_param_is(&p, name))
			continue;
		if (p.value_len == 0 || p.value_len > HTTP_QUERY_DIGITS_MAX)
			return -ERANGE;
		for (size_t i = 0; i < p.value_len; i++) {
			if (!isdigit((unsigned char)p.value[i]))
				return -ERANGE;
			val = val * 10 + (p.value[i] - '0');
		}
		if (val < min || val > max)
			return -ERANGE;
		*out = val;
		return 0;
	}
	return -ENOENT;
}

/* A JSON string value whose bytes are valid UTF-8 (invalid bytes become U+FFFD). */
static json_object *http_json_string(const char *s)
{
	char *clean = jsontext_utf8_scrub(s, strlen(s));
	json_object *v = clean != NULL ? json_object_new_string(clean) : NULL;

	free(clean);
	return v;
}

int http_format_error(char *out, size_t outlen, int status, const char *code, const char *message,
		      const char *extra)
{
	json_object *o = json_object_new_object(), *m = http_json_string(message),
		    *c = http_json_string(code);
	const char *body;
	int n = -EOVERFLOW;

	if (o == NULL || m == NULL || c == NULL) {
		json_object_put(m);
		json_object_put(c);
		goto out;
	}
	json_object_object_add(o, "error", m);
	json_object_object_add(o, "code", c);
	body = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
						     JSON_C_TO_STRING_NOSLASHESCAPE);
	n = snprintf(out, outlen,
		     "HTTP/1.1 %d %s\r\n"
		     "Content-Type: application/json\r\n"
		     "Content-Length: %zu\r\n"
		     "Cache-Control: no-store\r\n"
		     "Connection: close\r\n"
		     "%s"
		     "\r\n"
		     "%s\n",
		     status, httpstatus_reason(status), strlen(body) + 1,
		     extra != NULL ? extra : "", body);
	n = n < 0 || (size_t)n >= outlen ? -EOVERFLOW : n;
out:
	json_object_put(o);
	return n;
}

int http_format_upgrade(char *out, size_t outlen, const char *accept)
{
	int n = snprintf(out, outlen,
			 "HTTP/1.1 101 Switching Protocols\r\n"
			 "Upgrade: websocket\r\n"
			 "Connection: Upgrade\r\n"
			 "Sec-WebSocket-Accept: %s\r\n"
			 "\r\n",
			 accept);

	return n < 0 || (size_t)n >= outlen ? -EOVERFLOW : n;
}
