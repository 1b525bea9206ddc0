#include "jsontext.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Length of the valid UTF-8 sequence at p (at most end - p bytes), or 0 when it is invalid. */
static size_t jsontext_utf8_seq(const unsigned char *p, const unsigned char *end)
{
	unsigned char c = *p;
	size_t more, i;
	uint32_t cp, min;

	if (c < 0x80)
		return 1;
	if ((c & 0xe0) == 0xc0)
		more = 1, cp = c & 0x1f, min = 0x80;
	else if ((c & 0xf0) == 0xe0)
		more = 2, cp = c & 0x0f, min = 0x800;
	else if ((c & 0xf8) == 0xf0)
		more = 3, cp = c & 0x07, min = 0x10000;
	else
		return 0;
	if ((size_t)(end - p) <= more)
		return 0;
	for (i = 1; i <= more; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	/* Overlong forms, UTF-16 surrogates and code points past U+10FFFF are invalid. */
	if (cp < min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return more + 1;
}

bool jsontext_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;

	while (p < end) {
		uint64_t w;
		size_t n;

		/* claude's lines are mostly ASCII: 8 bytes at a time while none has its high bit
		 * (one byte at a time, this loop was 8 % of agentd-host's instructions a line). */
		if (end - p >= 8) {
			memcpy(&w, p, sizeof(w));
			if ((w & UINT64_C(0x8080808080808080)) == 0) {
				p += 8;
				continue;
			}
		}
		n = jsontext_utf8_seq(p, end);
		if (n == 0)
			return false;
		p += n;
	}
	return true;
}

char *jsontext_utf8_scrub(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	const size_t rlen = strlen(JSONTEXT_UTF8_REPLACEMENT);
	char *out = malloc(len * rlen + 1), *o = out;

	if (out == NULL)
		return NULL;
	while (p < end) {
		size_t n = jsontext_utf8_seq(p, end);

		if (n == 0) {
			memcpy(o, JSONTEXT_UTF8_REPLACEMENT, rlen);
			o += rlen;
			p++;
			continue;
		}
		memcpy(o, p, n);
		o += n;
		p += n;
	}
	*o = '\0';
	return out;
}

/* Skips blanks (RFC 9110 OWS). */
static const char *jsontext_ows(const char *p)
{
	return p + strspn(p, " \t");
}

bool jsontext_content_type_ok(const char *value)
{
	static const char type[] = "application/json";
	const char *p;

	if (value == NULL)
		return false;
	p = jsontext_ows(value);
	if (strncasecmp(p, type, strlen(type)) != 0)
		return false;
	p = jsontext_ows(p + strlen(type));
	while (*p == ';') {
		size_t nlen, vlen;
		const char *name, *val;

		name = jsontext_ows(p + 1);
		nlen = strcspn(name, "=; \t");
		val = name + nlen;
		if (nlen == 0 && (*val == '\0' || *val == ';')) { /* an empty parameter: "json;" */
			p = val;
			continue;
		}
		if (*val != '=')
			return false; /* a parameter is name=value */
		val++;
		if (*val == '"') {
			const char *close = strchr(val + 1, '"');

			if (close == NULL)
				return false;
			vlen = (size_t)(close - val) + 1;
		} else {
			vlen = strcspn(val, "; \t");
		}
		if (nlen == strlen("charset") && strncasecmp(name, "charset", nlen) == 0) {
			bool quoted = vlen >= 2 && val[0] == '"';
			const char *cs = quoted ? val + 1 : val;
			size_t cslen = quoted ? vlen - 2 : vlen;

			if (cslen != strlen("utf-8") || strncasecmp(cs, "utf-8", cslen) != 0)
				return false;
		}
		p = jsontext_ows(val + vlen);
	}
	return *p == '\0';
}

/*
 * The duplicate-key check walks the text alongside what json-c built from it. json-c keeps the
 * last value of a repeated key, so an object of the text with more members than its json-c object
 * has entries repeats a key; json-c compared the decoded keys, escapes included. Without a
 * repeat, the i-th member of the text is the i-th entry (json-c keeps insertion order), and the
 * walk goes down into it. The text was parsed in strict mode, so the scanner below only has to
 * find where values end; any disagreement with the tree can only come from a repeated key.
 */
struct jsontext_scan {
	const char *p, *end;
};

static void jsontext_skip_ws(struct jsontext_scan *s)
{
	while (s->p < s->end && strchr(" \t\r\n", *s->p) != NULL && *s->p != '\0')
		s->p++;
}

/* Skips a string; false when it holds a raw control character, which json-c's strict mode takes
 * but RFC 8259 does not. */
static bool jsontext_skip_string(struct jsontext_scan *s)
{
	for (s->p++; s->p < s->end && *s->p != '"'; s->p++) {
		if ((unsigned char)*s->p < 0x20)
			return false;
		if (*s->p == '\\' && s->p + 1 < s->end)
			s->p++;
	}
	if (s->p < s->end)
		s->p++;
	return true;
}

static bool jsontext_at(struct jsontext_scan *s, char c)
{
	jsontext_skip_ws(s);
	if (s->p < s->end && *s->p == c) {
		s->p++;
		return true;
	}
	return false;
}

enum jsontext_walk {
	JT_OK,
	JT_DUPLICATE,
	JT_NOT_JSON, /* what json-c tolerates even in strict mode (single quotes, "-01", "1.",
		      * raw control characters in strings) */
};

static bool jsontext_digit(const char *p, const char *end)
{
	return p < end && *p >= '0' && *p <= '9';
}

/*
 * True when [p, end) is a number as RFC 8259 §6 writes it. json-c's strict mode also takes "-01",
 * "00", "1.", "1.e5" and "-Infinity".
 */
static bool jsontext_number_ok(const char *p, const char *end)
{
	if (p < end && *p == '-')
		p++;
	if (!jsontext_digit(p, end))
		return false;
	if (*p++ != '0')
		while (jsontext_digit(p, end))
			p++;
	if (p < end && *p == '.') {
		if (!jsontext_digit(++p, end))
			return false;
		while (jsontext_digit(p, end))
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (!jsontext_digit(p, end))
			return false;
		while (jsontext_digit(p, end))
			p++;
	}
	return p == end;
}

/* Walks the value at s->p along v. */
static enum jsontext_walk jsontext_walk(struct jsontext_scan *s, json_object *v)
{
	enum jsontext_walk w;
	const char *tok;

	jsontext_skip_ws(s);
	if (s->p >= s->end)
		return JT_NOT_JSON;
	if (*s->p == '{') {
		struct lh_entry *e;

		if (!json_object_is_type(v, json_type_object))
			return JT_DUPLICATE;
		s->p++;
		e = lh_table_head(json_object_get_object(v));
		if (jsontext_at(s, '}'))
			return e != NULL ? JT_DUPLICATE : JT_OK;
		do {
			jsontext_skip_ws(s);
			if (s->p >= s->end || *s->p != '"')
				return JT_NOT_JSON;
			if (e == NULL)
				return JT_DUPLICATE; /* more members than entries */
			if (!jsontext_skip_string(s) || !jsontext_at(s, ':'))
				return JT_NOT_JSON;
			if ((w = jsontext_walk(s, (json_object *)lh_entry_v(e))) != JT_OK)
				return w;
			e = lh_entry_next(e);
		} while (jsontext_at(s, ','));
		if (!jsontext_at(s, '}'))
			return JT_NOT_JSON;
		return e != NULL ? JT_DUPLICATE : JT_OK;
	}
	if (*s->p == '[') {
		size_t i = 0, n;

		if (!json_object_is_type(v, json_type_array))
			return JT_DUPLICATE;
		s->p++;
		n = json_object_array_length(v);
		if (jsontext_at(s, ']'))
			return n != 0 ? JT_DUPLICATE : JT_OK;
		do {
			if (i >= n)
				return JT_DUPLICATE;
			if ((w = jsontext_walk(s, json_object_array_get_idx(v, i))) != JT_OK)
				return w;
			i++;
		} while (jsontext_at(s, ','));
		if (!jsontext_at(s, ']'))
			return JT_NOT_JSON;
		return i != n ? JT_DUPLICATE : JT_OK;
	}
	if (*s->p == '"')
		return jsontext_skip_string(s) ? JT_OK : JT_NOT_JSON;
	if (strchr("-0123456789tfn", *s->p) == NULL || *s->p == '\0')
		return JT_NOT_JSON;
	tok = s->p;
	while (s->p < s->end && strchr(",]} \t\r\n", *s->p) == NULL)
		s->p++;
	if ((*tok == '-' || (*tok >= '0' && *tok <= '9')) && !jsontext_number_ok(tok, s->p))
		return JT_NOT_JSON;
	return JT_OK;
}

static enum jsontext_walk jsontext_check(const char *text, size_t len, json_object *root)
{
	struct jsontext_scan s = {text, text + len};
	enum jsontext_walk w = jsontext_walk(&s, root);

	jsontext_skip_ws(&s);
	return w == JT_OK && s.p != s.end ? JT_NOT_JSON : w;
}

bool jsontext_has_duplicate_key(const char *text, size_t len, json_object *root)
{
	return jsontext_check(text, len, root) != JT_OK;
}

json_object *jsontext_parse(const char *text, size_t len, int depth, struct cause *cause)
{
	json_tokener *tok;
	json_object *root = NULL;
	size_t end;

	if (len > INT32_MAX) {
		cause_set(cause, "the JSON text is too large");
		return NULL;
	}
	if (!jsontext_utf8_valid(text, len)) {
		cause_set(cause, "the JSON text is not valid UTF-8");
		return NULL;
	}
	tok = json_tokener_new_ex(depth);
	if (tok == NULL) {
		cause_set(cause, "out of memory");
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	root = json_tokener_parse_ex(tok, text, (int)len);
	end = json_tokener_get_parse_end(tok);
	/* A number at the very end may go on in json-c's view: a NUL ends the text. */
	if (root == NULL && json_tokener_get_error(tok) == json_tokener_continue) {
		root = json_tokener_parse_ex(tok, "", 1);
		end = len;
	}
	if (root == NULL) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		cause_set(cause, "the body is not valid JSON: %s",
			  e == json_tokener_success    ? "null is not a value here"
			  : e == json_tokener_continue ? "it ends too early"
						       : json_tokener_error_desc(e));
		goto fail;
	}
	/* json-c stops after the first value: only blanks may follow it. */
	for (; end < len; end++)
		if (strchr(" \t\r\n", text[end]) == NULL || text[end] == '\0') {
			cause_set(cause, "the body is not valid JSON: trailing data");
			goto fail;
		}
	switch (jsontext_check(text, len, root)) {
	case JT_OK:
		break;
	case JT_DUPLICATE:
		cause_set(cause, "the body has an object with the same key twice");
		goto fail;
	case JT_NOT_JSON:
		cause_set(cause, "the body is not valid JSON: a malformed string or number");
		goto fail;
	}
	json_tokener_free(tok);
	return root;
fail:
	json_object_put(root);
	json_tokener_free(tok);
	return NULL;
}

const char *jsontext_str(json_object *o, const char *key)
{
	json_object *v;

	if (o == NULL || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}
