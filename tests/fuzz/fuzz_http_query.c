/*
 * The bridge's query strings (http_query_next, http_query_int, http_has_token). Input: the query
 * text (cut at a NUL, as the head parser delivers it). The parameters must tile the query exactly
 * ("name[=value]" joined by '&'), and http_query_int must agree with a plain reading of the
 * first "name=value" for that name: 1 to 9 digits, in range. The same text, echoed in an error
 * answer (http_format_error, as the bridge echoes a bad path or query), must give a response
 * whose Content-Length is its body and whose body is API.md's JSON with the text, scrubbed to
 * UTF-8, as "error".
 */
#include "fuzz.h"

#include "http.h"
#include "jsontext.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* What http_query_int should answer, written the simple way. */
static int query_int_model(const char *q, const char *name, long min, long max, long *out)
{
	size_t nlen = strlen(name);

	while (*q != '\0') {
		size_t len = strcspn(q, "&");

		if (len > nlen && strncmp(q, name, nlen) == 0 && q[nlen] == '=') {
			const char *v = q + nlen + 1;
			size_t vlen = len - nlen - 1;
			long val = 0;

			if (vlen == 0 || vlen > 9)
				return -ERANGE;
			for (size_t i = 0; i < vlen; i++) {
				if (!isdigit((unsigned char)v[i]))
					return -ERANGE;
				val = val * 10 + (v[i] - '0');
			}
			if (val < min || val > max)
				return -ERANGE;
			*out = val;
			return 0;
		}
		q += len;
		if (*q == '&')
			q++;
	}
	return -ENOENT;
}

static void check_error_echo(const char *message)
{
	char out[HTTP_RESPONSE_MAX], *scrubbed;
	const char *body, *len;
	json_object *root, *v;
	int n = http_format_error(out, sizeof(out), 400, "bad_request", message, NULL);

	FUZZ_CHECK(n == -EOVERFLOW || (n > 0 && (size_t)n == strlen(out)),
		   "http_format_error returned %d", n);
	if (n < 0)
		return;
	body = strstr(out, "\r\n\r\n");
	len = strstr(out, "\r\nContent-Length: ");
	FUZZ_CHECK(body != NULL && len != NULL && len < body, "response without a head");
	body += 4;
	FUZZ_CHECK(strtoul(len + 18, NULL, 10) == strlen(body), "Content-Length is not the body's");
	root = jsontext_parse(body, strlen(body), 4, NULL);
	FUZZ_CHECK(root != NULL, "error body is not JSON: %s", body);
	scrubbed = jsontext_utf8_scrub(message, strlen(message));
	FUZZ_CHECK(scrubbed != NULL, "out of memory");
	FUZZ_CHECK(json_object_object_get_ex(root, "error", &v) &&
		       strcmp(json_object_get_string(v), scrubbed) == 0,
		   "error body does not carry the message");
	free(scrubbed);
	json_object_put(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = {"cols", "rows", "lastEventId", "", "a"};
	static const long ranges[][2] = {{1, 1000}, {0, 999999999}, {5, 5}, {-3, 2}};
	char *query = fuzz_strndup(data, size);
	size_t qlen = strlen(query);
	const char *q = query, *expect = query;
	struct http_param p;
	size_t params = 0;

	while (http_query_next(&q, &p)) {
		FUZZ_CHECK(p.name == expect, "parameter %zu does not start where the last ended",
			   params);
		FUZZ_CHECK(p.name + p.name_len <= query + qlen && p.value >= p.name + p.name_len &&
			       p.value + p.value_len <= query + qlen,
			   "parameter %zu outside the query", params);
		FUZZ_CHECK(memchr(p.name, '&', p.name_len) == NULL &&
			       memchr(p.name, '=', p.name_len) == NULL,
			   "a name holds '&' or '='");
		FUZZ_CHECK(memchr(p.value, '&', p.value_len) == NULL, "a value holds '&'");
		FUZZ_CHECK(p.has_value ? p.value == p.name + p.name_len + 1 && p.value[-1] == '='
				       : p.value_len == 0,
			   "value placement");
		expect = p.value + p.value_len;
		FUZZ_CHECK(q == NULL ? *expect == '\0' : *expect == '&' && q == expect + 1,
			   "the rest does not follow the parameter");
		if (q != NULL)
			expect = q;
		FUZZ_CHECK(http_param_is(&p, "cols") ==
			       (p.name_len == 4 && memcmp(p.name, "cols", 4) == 0),
			   "http_param_is");
		FUZZ_CHECK(++params <= qlen + 1, "more parameters than bytes");
	}
	FUZZ_CHECK(q == NULL || *q == '\0', "iteration stopped early");
	FUZZ_CHECK(params > 0 || qlen == 0, "a non-empty query without parameters");

	for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++) {
		for (size_t k = 0; k < sizeof(ranges) / sizeof(ranges[0]); k++) {
			long got = -1, want = -1;
			int r = http_query_int(query, names[n], ranges[k][0], ranges[k][1], &got);
			int m = query_int_model(query, names[n], ranges[k][0], ranges[k][1], &want);

			FUZZ_CHECK(r == m, "http_query_int(%s) = %d, expected %d", names[n], r, m);
			FUZZ_CHECK(r != 0 || got == want, "http_query_int(%s) = %ld, expected %ld",
				   names[n], got, want);
		}
	}
	check_error_echo(query);
	(void)http_has_token(query, "upgrade");
	(void)http_has_token(query, "");
	free(query);
	return 0;
}
