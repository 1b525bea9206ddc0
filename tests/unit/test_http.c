/*
 * http: request heads fed whole, byte by byte and in odd chunks give the same views; upgrade
 * detection and the bytes after the head; malformed input is -EBADMSG; heads over the buffer and
 * too many headers are -EOVERFLOW; header lookup, tokens, query integers and the error body.
 */
#include "http.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdlib.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define UPGRADE_HEAD                                                                               \
	"GET /sessions/widgets-1/terminal?cols=120&rows=40 HTTP/1.1\r\n"                           \
	"Host: 127.0.0.1:8080\r\n"                                                                 \
	"Upgrade: websocket\r\n"                                                                   \
	"Connection: keep-alive, Upgrade\r\n"                                                      \
	"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"                                          \
	"Sec-WebSocket-Version: 13\r\n"                                                            \
	"Origin: http://127.0.0.1:8080\r\n"                                                        \
	"X-Padded:   spaced value \t \r\n"                                                         \
	"\r\n"

/* Feeds len bytes in chunks of step (0: all at once); returns the last feed result. */
static int feed(struct http_request *req, const char *data, size_t len, size_t step)
{
	size_t off = 0;
	int r = 0;

	while (off < len) {
		size_t avail, n = step == 0 ? len - off : step;
		char *space = http_request_space(req, &avail);

		if (n > len - off)
			n = len - off;
		if (n > avail)
			n = avail;
		if (n == 0)
			return http_request_feed(req, 0);
		memcpy(space, data + off, n);
		off += n;
		r = http_request_feed(req, n);
		if (r != 0 && off < len && r < 0)
			return r;
		if (r == 1)
			break;
	}
	return r;
}

static void check_upgrade_head(struct http_request *req)
{
	unsigned n = 0;

	cr_assert_str_eq(http_request_method(req), "GET");
	cr_assert_str_eq(http_request_path(req), "/sessions/widgets-1/terminal");
	cr_assert_str_eq(http_request_query(req), "cols=120&rows=40");
	cr_assert_str_eq(http_request_header(req, "host", &n), "127.0.0.1:8080");
	cr_assert_eq(n, 1);
	cr_assert_str_eq(http_request_header(req, "SEC-WEBSOCKET-KEY", NULL),
			 "dGhlIHNhbXBsZSBub25jZQ==");
	cr_assert_str_eq(http_request_header(req, "X-Padded", NULL), "spaced value");
	cr_assert_null(http_request_header(req, "Cookie", &n));
	cr_assert_eq(n, 0);
	cr_assert(http_request_is_upgrade(req));
}

Test(http, whole_head)
{
	struct http_request *req = http_request_create();
	size_t rest_len;

	cr_assert_eq(feed(req, UPGRADE_HEAD, strlen(UPGRADE_HEAD), 0), 1);
	check_upgrade_head(req);
	http_request_rest(req, &rest_len);
	cr_assert_eq(rest_len, 0);
	http_request_destroy(req);
}

Test(http, byte_by_byte_and_odd_chunks)
{
	static const size_t steps[] = {1, 2, 3, 7, 13, 64};

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct http_request *req = http_request_create();

		cr_assert_eq(feed(req, UPGRADE_HEAD, strlen(UPGRADE_HEAD), steps[i]), 1, "step %zu",
			     steps[i]);
		check_upgrade_head(req);
		http_request_destroy(req);
	}
}

Test(http, partial_head_is_incomplete)
{
	struct http_request *req = http_request_create();

	cr_assert_eq(feed(req, UPGRADE_HEAD, strlen(UPGRADE_HEAD) - 2, 0), 0);
	cr_assert_null(http_request_header(req, "Host", NULL), "no views before completion");
	http_request_destroy(req);
}

Test(http, bytes_after_an_upgrade_head_are_kept)
{
	char buf[sizeof(UPGRADE_HEAD) + 8];
	struct http_request *req = http_request_create();
	const char *rest;
	size_t rest_len;

	memcpy(buf, UPGRADE_HEAD, strlen(UPGRADE_HEAD));
	memcpy(buf + strlen(UPGRADE_HEAD), "\x82\x85XYZ", 5);
	cr_assert_eq(feed(req, buf, strlen(UPGRADE_HEAD) + 5, 0), 1);
	check_upgrade_head(req);
	rest = http_request_rest(req, &rest_len);
	cr_assert_eq(rest_len, 5);
	cr_assert_eq(memcmp(rest, "\x82\x85XYZ", 5), 0);
	http_request_destroy(req);
}

Test(http, plain_get_is_not_an_upgrade)
{
	static const char head[] = "GET /sessions/a-1/terminal HTTP/1.1\r\nHost: x\r\n\r\n";
	struct http_request *req = http_request_create();
	size_t rest_len;

	cr_assert_eq(feed(req, head, strlen(head), 0), 1);
	cr_assert_not(http_request_is_upgrade(req));
	http_request_rest(req, &rest_len);
	cr_assert_eq(rest_len, 0);
	http_request_destroy(req);
}

Test(http, upgrade_without_connection_token_or_http10_is_not_an_upgrade)
{
	static const char *const heads[] = {
	    "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n",
	    "GET / HTTP/1.0\r\nHost: x\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
	    "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: upgrade\r\n"
	    "Content-Length: 3\r\n\r\nabc",
	};

	for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		struct http_request *req = http_request_create();

		cr_assert_eq(feed(req, heads[i], strlen(heads[i]), 0), 1, "head %zu", i);
		cr_assert_not(http_request_is_upgrade(req), "head %zu", i);
		http_request_destroy(req);
	}
}

Test(http, malformed_heads_are_ebadmsg)
{
	static const char *const heads[] = {
	    "GARBAGE\r\n\r\n",
	    "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", /* a TLS ClientHello */
	    "GET / HTTP/1.1\r\nNo colon here\r\n\r\n",
	    "GET / HTTP/9.9.9\r\n\r\n",
	    "GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",
	    "GET / HTTP/1.1\r\nHost: a\0b\r\n\r\n",
	};
	static const size_t lens[] = {11, 11, 34, 20, 36, 27};

	for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		struct http_request *req = http_request_create();

		cr_assert_eq(feed(req, heads[i], lens[i], 0), -EBADMSG, "head %zu", i);
		http_request_destroy(req);
	}
}

Test(http, oversize_head_is_eoverflow)
{
	static char big[HTTP_HEAD_MAX + 100];
	struct http_request *req = http_request_create();
	int n = snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nX-Long: ");
	int r;

	memset(big + n, 'a', sizeof(big) - (size_t)n);
	r = feed(req, big, sizeof(big), 1000);
	cr_assert_eq(r, -EOVERFLOW, "got %d", r);
	http_request_destroy(req);
}

Test(http, too_many_headers_is_eoverflow)
{
	char head[HTTP_HEAD_MAX];
	struct http_request *req = http_request_create();
	size_t len = (size_t)snprintf(head, sizeof(head), "GET / HTTP/1.1\r\n");

	for (int i = 0; i <= HTTP_HEADERS_MAX; i++)
		len += (size_t)snprintf(head + len, sizeof(head) - len, "X-%d: v\r\n", i);
	len += (size_t)snprintf(head + len, sizeof(head) - len, "\r\n");
	cr_assert_eq(feed(req, head, len, 0), -EOVERFLOW);
	http_request_destroy(req);
}

Test(http, full_buffer_reports_overflow_on_empty_feed)
{
	struct http_request *req = http_request_create();
	size_t avail;
	char *space = http_request_space(req, &avail);

	cr_assert_eq(avail, HTTP_HEAD_MAX);
	memcpy(space, "GET / HTTP/1.1\r\n", 16);
	memset(space + 16, 'a', avail - 16);
	cr_assert_eq(http_request_feed(req, avail), -EOVERFLOW);
	http_request_space(req, &avail);
	cr_assert_eq(avail, 0);
	cr_assert_eq(http_request_feed(req, 0), -EOVERFLOW);
	http_request_destroy(req);
}

Test(http, duplicate_headers_are_counted)
{
	static const char head[] = "GET / HTTP/1.1\r\nOrigin: http://a\r\norigin: http://b\r\n\r\n";
	struct http_request *req = http_request_create();
	unsigned n = 0;

	cr_assert_eq(feed(req, head, strlen(head), 0), 1);
	cr_assert_str_eq(http_request_header(req, "Origin", &n), "http://a");
	cr_assert_eq(n, 2);
	http_request_destroy(req);
}

Test(http, empty_header_value)
{
	static const char head[] = "GET / HTTP/1.1\r\nX-Empty:\r\nHost: h\r\n\r\n";
	struct http_request *req = http_request_create();

	cr_assert_eq(feed(req, head, strlen(head), 0), 1);
	cr_assert_str_eq(http_request_header(req, "X-Empty", NULL), "");
	cr_assert_str_eq(http_request_header(req, "Host", NULL), "h");
	http_request_destroy(req);
}

Test(http, tokens)
{
	cr_assert(http_has_token("Upgrade", "upgrade"));
	cr_assert(http_has_token("keep-alive, Upgrade", "upgrade"));
	cr_assert(http_has_token(" keep-alive ,upgrade ", "upgrade"));
	cr_assert_not(http_has_token("upgrades", "upgrade"));
	cr_assert_not(http_has_token("", "upgrade"));
	cr_assert_not(http_has_token(NULL, "upgrade"));
}

Test(http, query_integers)
{
	long v = 0;

	cr_assert_eq(http_query_int("cols=120&rows=40", "cols", 1, 1000, &v), 0);
	cr_assert_eq(v, 120);
	cr_assert_eq(http_query_int("cols=120&rows=40", "rows", 1, 1000, &v), 0);
	cr_assert_eq(v, 40);
	cr_assert_eq(http_query_int("xcols=1", "cols", 1, 1000, &v), -ENOENT);
	cr_assert_eq(http_query_int("", "cols", 1, 1000, &v), -ENOENT);
	cr_assert_eq(http_query_int("cols=", "cols", 1, 1000, &v), -ERANGE);
	cr_assert_eq(http_query_int("cols=0", "cols", 1, 1000, &v), -ERANGE);
	cr_assert_eq(http_query_int("cols=1001", "cols", 1, 1000, &v), -ERANGE);
	cr_assert_eq(http_query_int("cols=-5", "cols", 1, 1000, &v), -ERANGE);
	cr_assert_eq(http_query_int("cols=12a", "cols", 1, 1000, &v), -ERANGE);
	cr_assert_eq(http_query_int("cols=99999999999999999999", "cols", 1, 1000, &v), -ERANGE);
}

Test(http, query_parameters_split)
{
	const char *q = "a=1&bare&&c=x=y&d=";
	struct http_param p;

	cr_assert(http_query_next(&q, &p));
	cr_assert(http_param_is(&p, "a") && p.has_value && p.value_len == 1 && p.value[0] == '1');
	cr_assert(http_query_next(&q, &p));
	cr_assert(http_param_is(&p, "bare") && !p.has_value && p.value_len == 0);
	cr_assert(http_query_next(&q, &p));
	cr_assert(p.name_len == 0 && !p.has_value, "an empty parameter between && is empty");
	cr_assert(http_query_next(&q, &p));
	cr_assert(http_param_is(&p, "c") && p.value_len == 3 && strncmp(p.value, "x=y", 3) == 0);
	cr_assert(http_query_next(&q, &p));
	cr_assert(http_param_is(&p, "d") && p.has_value && p.value_len == 0);
	cr_assert_not(http_query_next(&q, &p));
	cr_assert_not(http_param_is(&(struct http_param){"ab", 2, "", 0, false}, "a"));
	q = NULL;
	cr_assert_not(http_query_next(&q, &p));
	/* A bare name is skipped by http_query_int; the next one with a value counts. */
	long v = 0;
	cr_assert_eq(http_query_int("cols&cols=7", "cols", 1, 1000, &v), 0);
	cr_assert_eq(v, 7);
}

Test(http, error_response)
{
	char out[HTTP_RESPONSE_MAX];
	int n = http_format_error(out, sizeof(out), 404, "not_found", "no \"such\" session\n",
				  "X-A: b\r\n");
	const char *body;

	cr_assert_gt(n, 0);
	cr_assert_eq((size_t)n, strlen(out));
	cr_assert(strncmp(out, "HTTP/1.1 404 Not Found\r\n", 24) == 0);
	cr_assert_not_null(strstr(out, "\r\nX-A: b\r\n"));
	cr_assert_not_null(strstr(out, "Connection: close\r\n"));
	body = strstr(out, "\r\n\r\n") + 4;
	cr_assert_str_eq(body,
			 "{\"error\":\"no \\\"such\\\" session\\n\",\"code\":\"not_found\"}\n");
	cr_assert_eq(http_format_error(out, 40, 404, "not_found", "x", NULL), -EOVERFLOW);
}

/* Whatever bytes a message echoes, the body is valid UTF-8 JSON of the length sent. */
Test(http, error_body_is_utf8)
{
	char out[HTTP_RESPONSE_MAX];
	int n = http_format_error(out, sizeof(out), 400, "invalid_id", "no session \xff-1 \xc3\xa9",
				  NULL);
	const char *body, *cl;
	json_object *o;

	cr_assert_gt(n, 0);
	body = strstr(out, "\r\n\r\n") + 4;
	cr_assert_str_eq(body, "{\"error\":\"no session \xef\xbf\xbd-1 \xc3\xa9\",\"code\":"
			       "\"invalid_id\"}\n");
	cl = strstr(out, "Content-Length: ");
	cr_assert_not_null(cl);
	cr_assert_eq(strtoul(cl + 16, NULL, 10), strlen(body));
	o = json_tokener_parse(body);
	cr_assert_not_null(o);
	cr_assert_str_eq(json_object_get_string(json_object_object_get(o, "error")),
			 "no session \xef\xbf\xbd-1 \xc3\xa9");
	json_object_put(o);
}

Test(http, upgrade_response)
{
	char out[HTTP_RESPONSE_MAX];
	int n = http_format_upgrade(out, sizeof(out), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");

	cr_assert_gt(n, 0);
	cr_assert_str_eq(out, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
			      "Connection: Upgrade\r\nSec-WebSocket-Accept: "
			      "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n");
	cr_assert_eq(http_format_upgrade(out, 10, "x"), -EOVERFLOW);
}

Test(http, a_request_with_a_body_is_complete_at_the_end_of_its_head)
{
	static const char head[] =
	    "POST /sessions/a-1/prompt HTTP/1.1\r\nHost: x\r\n"
	    "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n";
	static const char lf_head[] = "POST /p HTTP/1.1\nHost: x\nContent-Length: 5\n\n";
	char buf[sizeof(head) + 16];
	struct http_request *req = http_request_create();
	const char *rest;
	size_t rest_len;
	uint64_t len = 0;

	/* The body may be far larger than the head buffer: it is the caller's to read. */
	memcpy(buf, head, strlen(head));
	memcpy(buf + strlen(head), "{\"pro", 5);
	cr_assert_eq(feed(req, buf, strlen(head) + 5, 0), 1);
	cr_assert_str_eq(http_request_method(req), "POST");
	cr_assert_str_eq(http_request_path(req), "/sessions/a-1/prompt");
	cr_assert_eq(http_request_body_length(req, &len), 1);
	cr_assert_eq(len, 100000);
	cr_assert_not(http_request_is_upgrade(req));
	rest = http_request_rest(req, &rest_len);
	cr_assert_eq(rest_len, 5);
	cr_assert_eq(memcmp(rest, "{\"pro", 5), 0);
	http_request_destroy(req);

	/* The same with bare LFs, fed byte by byte. */
	req = http_request_create();
	memcpy(buf, lf_head, strlen(lf_head));
	memcpy(buf + strlen(lf_head), "hello", 5);
	cr_assert_eq(feed(req, buf, strlen(lf_head) + 5, 1), 1);
	rest = http_request_rest(req, &rest_len);
	cr_assert_eq(rest_len, 0, "bytes fed after completion are ignored");
	http_request_destroy(req);
	req = http_request_create();
	cr_assert_eq(feed(req, buf, strlen(lf_head) + 5, 0), 1);
	rest = http_request_rest(req, &rest_len);
	cr_assert_eq(rest_len, 5);
	cr_assert_eq(memcmp(rest, "hello", 5), 0);
	http_request_destroy(req);
}

Test(http, chunked_bodies_have_no_length)
{
	static const char head[] =
	    "POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
	struct http_request *req = http_request_create();
	uint64_t len = 1;

	cr_assert_eq(feed(req, head, strlen(head), 0), 1);
	cr_assert_eq(http_request_body_length(req, &len), -EINVAL);
	http_request_destroy(req);
	req = http_request_create();
	cr_assert_eq(feed(req, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27, 0), 1);
	cr_assert_eq(http_request_body_length(req, &len), 0);
	cr_assert_eq(len, 0);
	http_request_destroy(req);
}
