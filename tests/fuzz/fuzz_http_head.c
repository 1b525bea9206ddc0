/*
 * The bridge's request heads (ptybridge/http.c over http-parser). Input: one byte choosing the
 * size of the reads (1..64 bytes, or everything at once), then the bytes a peer sends. Each head
 * is parsed twice, in one read and in reads of the chosen size, and both must agree. A complete
 * head must give views that lie inside the request buffer, hold exactly the bytes that arrived
 * there, and keep the documented shapes (no CR/LF in a value, no blanks around it, a query
 * preceded by '?', a Sec-WebSocket-Key accepted only in its RFC 6455 form).
 */
#include "fuzz.h"

#include "http.h"
#include "ws.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

static const char *const names[] = {
    "Host",          "Upgrade",
    "Connection",    "Sec-WebSocket-Key",
    "Origin",        "Content-Length",
    "Content-Type",  "Transfer-Encoding",
    "Last-Event-ID", "Sec-WebSocket-Version",
    "Accept",        "X",
};
#define NNAMES (sizeof(names) / sizeof(names[0]))

struct outcome {
	int r;
	char method[32];
	char *path, *query;
	char *values[NNAMES];
	unsigned counts[NNAMES];
	bool upgrade;
	int body_r;
	uint64_t body_len;
	size_t rest_len;
};

/* A view of the request buffer: inside [base, base + fed], NUL-terminated there, and made of the
 * very bytes the peer sent at that place. Views may also be "" literals (no path, no query). */
static void check_view(const char *what, const char *v, const char *base, size_t fed,
		       const uint8_t *data)
{
	size_t n;

	FUZZ_CHECK(v != NULL, "%s is NULL", what);
	if (v < base || v > base + fed) {
		FUZZ_CHECK(*v == '\0', "%s points outside the request buffer", what);
		return;
	}
	n = strnlen(v, (size_t)(base + fed - v) + 1);
	FUZZ_CHECK(v + n <= base + fed, "%s runs past the bytes that were fed", what);
	FUZZ_CHECK(memcmp(v, data + (v - base), n) == 0, "%s differs from the input bytes", what);
}

static void check_value(const char *name, const char *v)
{
	size_t n = strlen(v);

	FUZZ_CHECK(strpbrk(v, "\r\n") == NULL, "header %s holds CR or LF", name);
	FUZZ_CHECK(n == 0 || (v[n - 1] != ' ' && v[n - 1] != '\t'), "header %s ends in a blank",
		   name);
	FUZZ_CHECK(n == 0 || (v[0] != ' ' && v[0] != '\t'), "header %s starts with a blank", name);
}

static void check_accept(const char *key)
{
	char out[WS_ACCEPT_LEN + 1];

	if (ws_accept_key(key, out) != 0)
		return;
	FUZZ_CHECK(strlen(key) == 24 && key[22] == '=' && key[23] == '=',
		   "accepted a key that is not base64 of 16 bytes");
	FUZZ_CHECK(strlen(out) == WS_ACCEPT_LEN && out[WS_ACCEPT_LEN - 1] == '=',
		   "accept value has the wrong shape");
	FUZZ_CHECK(
	    strspn(out, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") ==
		WS_ACCEPT_LEN,
	    "accept value is not base64");
}

static void parse(const uint8_t *data, size_t size, size_t chunk, struct outcome *o)
{
	struct http_request *req = http_request_create();
	size_t off = 0, avail, fed, rest_len;
	const char *base, *rest;
	char *space;

	FUZZ_CHECK(req != NULL, "out of memory");
	memset(o, 0, sizeof(*o));
	do {
		size_t n = size - off < chunk ? size - off : chunk;

		space = http_request_space(req, &avail);
		if (n > avail)
			n = avail;
		memcpy(space, data + off, n);
		o->r = http_request_feed(req, n);
		off += n;
		FUZZ_CHECK(o->r == 0 || o->r == 1 || o->r == -EBADMSG || o->r == -EOVERFLOW,
			   "feed returned %d", o->r);
		if (n == 0)
			break;
	} while (o->r == 0 && off < size);
	/* Everything fed so far sits at the start of the buffer. */
	space = http_request_space(req, &avail);
	fed = HTTP_HEAD_MAX - avail;
	base = space - fed;
	FUZZ_CHECK(fed == off, "buffer holds %zu bytes, %zu were fed", fed, off);
	if (o->r == 1)
		FUZZ_CHECK(http_request_feed(req, 0) == 1, "an empty feed undid a complete head");
	else if (o->r == 0)
		FUZZ_CHECK(http_request_feed(req, 0) == (fed >= HTTP_HEAD_MAX ? -EOVERFLOW : 0),
			   "an empty feed of an incomplete head");

	rest = http_request_rest(req, &rest_len);
	o->rest_len = rest_len;
	if (o->r != 1) {
		FUZZ_CHECK(rest_len == 0, "rest of an incomplete head");
		FUZZ_CHECK(http_request_header(req, "Host", NULL) == NULL,
			   "header of an incomplete head");
		http_request_destroy(req);
		return;
	}
	if (rest_len > 0)
		FUZZ_CHECK(rest >= base && rest + rest_len == base + fed,
			   "rest is not the tail of the bytes fed");
	snprintf(o->method, sizeof(o->method), "%s", http_request_method(req));
	check_view("path", http_request_path(req), base, fed, data);
	check_view("query", http_request_query(req), base, fed, data);
	o->path = strdup(http_request_path(req));
	o->query = strdup(http_request_query(req));
	FUZZ_CHECK(o->path != NULL && o->query != NULL, "out of memory");
	/* The '?' itself became the path's NUL: look at what the peer sent. */
	if (*o->query != '\0')
		FUZZ_CHECK(data[http_request_query(req) - base - 1] == '?', "query not after '?'");
	FUZZ_CHECK(strchr(o->path, '?') == NULL, "path holds a '?'");
	for (size_t i = 0; i < NNAMES; i++) {
		const char *v = http_request_header(req, names[i], &o->counts[i]);

		FUZZ_CHECK((v != NULL) == (o->counts[i] > 0), "header %s: count disagrees",
			   names[i]);
		if (v == NULL)
			continue;
		check_view(names[i], v, base, fed, data);
		check_value(names[i], v);
		o->values[i] = strdup(v);
		FUZZ_CHECK(o->values[i] != NULL, "out of memory");
		(void)http_has_token(v, "upgrade");
	}
	check_accept(http_request_header(req, "Sec-WebSocket-Key", NULL));
	o->upgrade = http_request_is_upgrade(req);
	o->body_r = http_request_body_length(req, &o->body_len);
	FUZZ_CHECK(o->body_r == 0 || o->body_r == 1 || o->body_r == -EINVAL, "body length %d",
		   o->body_r);
	FUZZ_CHECK(!o->upgrade || o->body_r == 0, "an upgrade with a body");
	FUZZ_CHECK(o->body_r != 1 || o->body_len > 0, "an announced body of length 0");
	if (!o->upgrade && o->body_r == 0)
		FUZZ_CHECK(rest_len == 0, "rest of a request that has none");
	/* Once complete, further bytes are ignored. */
	space = http_request_space(req, &avail);
	if (avail > 0) {
		*space = 'x';
		FUZZ_CHECK(http_request_feed(req, 1) == 1, "a complete head became incomplete");
	}
	http_request_destroy(req);
}

static void release(struct outcome *o)
{
	free(o->path);
	free(o->query);
	for (size_t i = 0; i < NNAMES; i++)
		free(o->values[i]);
}

static bool same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct outcome whole, split;
	size_t chunk;

	if (size < 1 || size > HTTP_HEAD_MAX + 2)
		return -1;
	chunk = data[0] & 0x3f ? data[0] & 0x3f : SIZE_MAX;
	data++;
	size--;
	parse(data, size, SIZE_MAX, &whole);
	parse(data, size, chunk, &split);
	/* A head that is both malformed and too large may be refused for either reason first:
	 * http-parser reports a name only once it has seen its end, so reads that split the 49th
	 * name count it (-EOVERFLOW) before a bad character in it is found (-EBADMSG). */
	FUZZ_CHECK(whole.r == split.r || (whole.r < 0 && split.r < 0),
		   "one read gives %d, reads of %zu give %d", whole.r, chunk, split.r);
	if (whole.r == 1) {
		FUZZ_CHECK(strcmp(whole.method, split.method) == 0, "methods differ");
		FUZZ_CHECK(strcmp(whole.path, split.path) == 0, "paths differ: '%s' '%s'",
			   whole.path, split.path);
		FUZZ_CHECK(strcmp(whole.query, split.query) == 0, "queries differ");
		for (size_t i = 0; i < NNAMES; i++) {
			FUZZ_CHECK(whole.counts[i] == split.counts[i], "%s: counts differ",
				   names[i]);
			FUZZ_CHECK(same_str(whole.values[i], split.values[i]),
				   "%s: '%s' in one read, '%s' in pieces", names[i],
				   whole.values[i], split.values[i]);
		}
		FUZZ_CHECK(whole.upgrade == split.upgrade, "upgrade differs");
		FUZZ_CHECK(whole.body_r == split.body_r && whole.body_len == split.body_len,
			   "body length differs");
		FUZZ_CHECK(split.rest_len <= whole.rest_len, "more rest in pieces");
	}
	release(&whole);
	release(&split);
	return 0;
}
