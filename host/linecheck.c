#include "linecheck.h"

#include <stdint.h>
#include <string.h>

struct linecheck_scan {
	const unsigned char *p, *end;
	int depth;
};

static bool linecheck_value(struct linecheck_scan *s);

static void linecheck_spaces(struct linecheck_scan *s)
{
	while (s->p < s->end && *s->p == ' ')
		s->p++;
}

static bool linecheck_hex(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

#define LINECHECK_ONES  UINT64_C(0x0101010101010101)
#define LINECHECK_HIGHS UINT64_C(0x8080808080808080)

/* Whether one of the 8 bytes of w is a quote, a backslash or below 0x20 (a byte below n shows as
 * (w - n * ones) & ~w & highs, for n <= 128; a byte equal to c as one below 1 in w ^ c * ones). */
static bool linecheck_stop(uint64_t w)
{
	uint64_t q = w ^ (LINECHECK_ONES * '"'), b = w ^ (LINECHECK_ONES * '\\');

	return (((q - LINECHECK_ONES) & ~q) | ((b - LINECHECK_ONES) & ~b) |
		((w - LINECHECK_ONES * 0x20) & ~w)) &
	       LINECHECK_HIGHS;
}

/* A string from its opening quote to past its closing one; *plain: it has no escape. */
static bool linecheck_string(struct linecheck_scan *s, bool *plain)
{
	const unsigned char *bytewise = s->p; /* one byte at a time up to here */

	*plain = true;
	for (s->p++; s->p < s->end; s->p++) {
		unsigned char c;
		uint64_t w;

		/* Text is most of a line: 8 bytes at a time while none is a quote, a backslash or
		 * a control byte; the 8 bytes where one is, one at a time. */
		while (s->p >= bytewise && s->end - s->p >= 8) {
			memcpy(&w, s->p, sizeof(w));
			if (linecheck_stop(w)) {
				bytewise = s->p + 8;
				break;
			}
			s->p += 8;
		}
		if (s->p >= s->end)
			break;
		c = *s->p;
		if (c == '"') {
			s->p++;
			return true;
		}
		if (c < 0x20)
			return false; /* json-c takes raw control bytes; RFC 8259 does not */
		if (c != '\\')
			continue;
		*plain = false;
		if (s->end - s->p < 2)
			return false;
		c = s->p[1];
		if (c == 'u') {
			if (s->end - s->p < 6 || !linecheck_hex(s->p[2]) ||
			    !linecheck_hex(s->p[3]) || !linecheck_hex(s->p[4]) ||
			    !linecheck_hex(s->p[5]))
				return false;
			/* Surrogates: json-c pairs or replaces them, its own way. */
			if ((s->p[2] == 'd' || s->p[2] == 'D') &&
			    strchr("89abcdefABCDEF", s->p[3]) != NULL)
				return false;
			s->p += 5;
			continue;
		}
		if (c == '\0' || strchr("\"\\/bfnrt", c) == NULL)
			return false;
		s->p++;
	}
	return false;
}

/* An integer: -?(0|[1-9][0-9]*), at most LINECHECK_DIGITS_MAX digits. */
static bool linecheck_number(struct linecheck_scan *s)
{
	const unsigned char *digits;

	if (*s->p == '-')
		s->p++;
	digits = s->p;
	if (s->p < s->end && *s->p == '0')
		s->p++;
	else
		while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
			s->p++;
	if (s->p == digits || s->p - digits > LINECHECK_DIGITS_MAX)
		return false;
	/* A fraction or an exponent: json-c converts it (strtod), and judges it. */
	return s->p == s->end || (*s->p != '.' && *s->p != 'e' && *s->p != 'E');
}

static bool linecheck_word(struct linecheck_scan *s, const char *word, size_t n)
{
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
		return false;
	s->p += n;
	return true;
}

/* Enters a container at its opening byte. Returns 1 when it closes at once with close (consumed),
 * 0 when an item follows, -1 when nested too deep. */
static int linecheck_open(struct linecheck_scan *s, unsigned char close)
{
	if (++s->depth > LINECHECK_DEPTH_MAX)
		return -1;
	s->p++;
	linecheck_spaces(s);
	if (s->p < s->end && *s->p == close) {
		s->p++;
		s->depth--;
		return 1;
	}
	return 0;
}

/* After an item of a container: 1 when close ends it (consumed), 0 when a ',' brings another
 * item (consumed, with the spaces after it), -1 for anything else. */
static int linecheck_next(struct linecheck_scan *s, unsigned char close)
{
	linecheck_spaces(s);
	if (s->p >= s->end)
		return -1;
	if (*s->p == close) {
		s->p++;
		s->depth--;
		return 1;
	}
	if (*s->p != ',')
		return -1;
	s->p++;
	linecheck_spaces(s);
	return 0;
}

/* An object from its '{'; top: the line's own object (its "type" is kept in *top). */
static bool linecheck_object_at(struct linecheck_scan *s, struct linecheck *top)
{
	int r = linecheck_open(s, '}');

	if (r != 0)
		return r > 0;
	for (;;) {
		const unsigned char *key;
		size_t key_len;
		bool plain;

		if (s->p >= s->end || *s->p != '"')
			return false;
		key = s->p + 1;
		if (!linecheck_string(s, &plain))
			return false;
		key_len = (size_t)(s->p - 1 - key);
		linecheck_spaces(s);
		if (s->p >= s->end || *s->p != ':')
			return false;
		s->p++;
		linecheck_spaces(s);
		if (s->p >= s->end)
			return false;
		if (top != NULL && !plain)
			return false; /* a key with an escape may spell "type" */
		if (top != NULL && key_len == 4 && memcmp(key, "type", 4) == 0) {
			const unsigned char *v = s->p + 1;

			if (*s->p != '"' || !linecheck_string(s, &plain) || !plain)
				return false;
			top->type = (const char *)v;
			top->type_len = (size_t)(s->p - 1 - v);
		} else if (!linecheck_value(s)) {
			return false;
		}
		if ((r = linecheck_next(s, '}')) != 0)
			return r > 0;
	}
}

static bool linecheck_array(struct linecheck_scan *s)
{
	int r = linecheck_open(s, ']');

	if (r != 0)
		return r > 0;
	for (;;) {
		if (s->p >= s->end || !linecheck_value(s))
			return false;
		if ((r = linecheck_next(s, ']')) != 0)
			return r > 0;
	}
}

/* A value at s->p (not at the end). */
static bool linecheck_value(struct linecheck_scan *s)
{
	bool plain;

	switch (*s->p) {
	case '{':
		return linecheck_object_at(s, NULL);
	case '[':
		return linecheck_array(s);
	case '"':
		return linecheck_string(s, &plain);
	case 't':
		return linecheck_word(s, "true", 4);
	case 'f':
		return linecheck_word(s, "false", 5);
	case 'n':
		return linecheck_word(s, "null", 4);
	default:
		if (*s->p == '-' || (*s->p >= '0' && *s->p <= '9'))
			return linecheck_number(s);
		return false;
	}
}

bool linecheck_object(const char *line, size_t len, struct linecheck *out)
{
	struct linecheck_scan s = {(const unsigned char *)line, (const unsigned char *)line + len,
				   0};

	out->type = NULL;
	out->type_len = 0;
	if (len == 0 || line[0] != '{' || !linecheck_object_at(&s, out))
		return false;
	/* What claudeproc_parse lets follow the object. */
	while (s.p < s.end && (*s.p == ' ' || *s.p == '\t' || *s.p == '\r'))
		s.p++;
	return s.p == s.end;
}
