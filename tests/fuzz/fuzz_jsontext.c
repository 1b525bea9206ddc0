/*
 * JSON text at the edge of both daemons (core/jsontext.c over json-c). Input: one byte for the
 * nesting limit (1..16), then the text. What jsontext_parse accepts must be RFC 8259 JSON (an
 * independent recognizer below), valid UTF-8, without a duplicate key, and must survive a round
 * trip: json-c's serialization parses again to an equal value. The UTF-8 helpers must agree
 * with each other: scrubbing yields valid UTF-8, leaves valid text as it is, and is idempotent.
 */
#include "fuzz.h"

#include "jsontext.h"

#include <stdbool.h>
#include <string.h>

/* A strict RFC 8259 recognizer: returns the end of the value at p, or NULL. */
static const char *value(const char *p, const char *end, int depth);

static const char *ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static const char *string(const char *p, const char *end)
{
	if (p >= end || *p != '"')
		return NULL;
	for (p++; p < end; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '"')
			return p + 1;
		if (c < 0x20)
			return NULL;
		if (c != '\\')
			continue;
		if (++p >= end)
			return NULL;
		if (*p == 'u') {
			for (int i = 0; i < 4; i++)
				if (++p >= end || strchr("0123456789abcdefABCDEF", *p) == NULL ||
				    *p == '\0')
					return NULL;
		} else if (*p == '\0' || strchr("\"\\/bfnrt", *p) == NULL) {
			return NULL;
		}
	}
	return NULL;
}

static bool digit(const char *p, const char *end)
{
	return p < end && *p >= '0' && *p <= '9';
}

static const char *number(const char *p, const char *end)
{
	if (p < end && *p == '-')
		p++;
	if (!digit(p, end))
		return NULL;
	if (*p == '0')
		p++;
	else
		while (digit(p, end))
			p++;
	if (p < end && *p == '.') {
		if (!digit(++p, end))
			return NULL;
		while (digit(p, end))
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (!digit(p, end))
			return NULL;
		while (digit(p, end))
			p++;
	}
	return p;
}

static const char *literal(const char *p, const char *end, const char *word)
{
	size_t n = strlen(word);

	return (size_t)(end - p) >= n && memcmp(p, word, n) == 0 ? p + n : NULL;
}

static const char *container(const char *p, const char *end, int depth, char close, bool keys)
{
	p = ws(p + 1, end);
	if (p < end && *p == close)
		return p + 1;
	for (;;) {
		if (keys) {
			p = string(p, end);
			if (p == NULL)
				return NULL;
			p = ws(p, end);
			if (p >= end || *p != ':')
				return NULL;
			p = ws(p + 1, end);
		}
		p = value(p, end, depth + 1);
		if (p == NULL)
			return NULL;
		p = ws(p, end);
		if (p < end && *p == close)
			return p + 1;
		if (p >= end || *p != ',')
			return NULL;
		p = ws(p + 1, end);
	}
}

static const char *value(const char *p, const char *end, int depth)
{
	if (p >= end || depth > 64)
		return NULL;
	switch (*p) {
	case '{':
		return container(p, end, depth, '}', true);
	case '[':
		return container(p, end, depth, ']', false);
	case '"':
		return string(p, end);
	case 't':
		return literal(p, end, "true");
	case 'f':
		return literal(p, end, "false");
	case 'n':
		return literal(p, end, "null");
	default:
		return number(p, end);
	}
}

static bool is_json(const char *text, size_t len)
{
	const char *end = text + len, *p = value(ws(text, end), end, 0);

	return p != NULL && ws(p, end) == end;
}

static void check_utf8(const char *text, size_t len)
{
	bool valid = jsontext_utf8_valid(text, len);
	char *scrubbed = jsontext_utf8_scrub(text, len), *again;
	size_t slen;

	FUZZ_CHECK(scrubbed != NULL, "out of memory");
	slen = strlen(scrubbed);
	if (memchr(text, '\0', len) == NULL)
		FUZZ_CHECK(!valid || (slen == len && memcmp(scrubbed, text, len) == 0),
			   "scrubbing changed valid UTF-8");
	FUZZ_CHECK(jsontext_utf8_valid(scrubbed, slen), "scrubbed text is not valid UTF-8");
	again = jsontext_utf8_scrub(scrubbed, slen);
	FUZZ_CHECK(again != NULL && strcmp(again, scrubbed) == 0, "scrubbing is not idempotent");
	free(again);
	free(scrubbed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text;
	struct cause cause = {{0}};
	json_object *root, *back;
	const char *out;
	char *ctype;
	int depth;

	if (size < 1)
		return -1;
	depth = (data[0] & 15) + 1;
	text = (const char *)data + 1;
	size--;
	check_utf8(text, size);
	ctype = fuzz_strndup((const uint8_t *)text, size);
	(void)jsontext_content_type_ok(ctype);
	free(ctype);

	root = jsontext_parse(text, size, depth, &cause);
	if (root == NULL) {
		FUZZ_CHECK(cause.msg[0] != '\0', "refused without a cause");
		return 0;
	}
	FUZZ_CHECK(jsontext_utf8_valid(text, size), "accepted text that is not UTF-8");
	FUZZ_CHECK(is_json(text, size), "accepted text that is not RFC 8259 JSON");
	FUZZ_CHECK(!jsontext_has_duplicate_key(text, size, root), "accepted a duplicate key");
	out = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
	FUZZ_CHECK(out != NULL, "out of memory");
	back = jsontext_parse(out, strlen(out), depth, &cause);
	FUZZ_CHECK(back != NULL, "json-c's own output is refused (%s): %s", cause.msg, out);
	FUZZ_CHECK(json_object_equal(root, back), "round trip changed the value: %s", out);
	json_object_put(back);
	json_object_put(root);
	return 0;
}
