/*
 * jsontext: the JSON codec rule both daemons share. Duplicate keys (top level, nested, in arrays,
 * equal only after decoding escapes), strictness, trailing data, depth, UTF-8 validation and
 * scrubbing, and the Content-Type rule (charset utf-8 or none).
 */
#include "jsontext.h"

#include <criterion/criterion.h>

#include <string.h>

static json_object *parse(const char *text, struct cause *c)
{
	return jsontext_parse(text, strlen(text), 8, c);
}

static void refused(const char *text, const char *why)
{
	struct cause c = {{0}};
	json_object *o = parse(text, &c);

	cr_assert_null(o, "accepted %s", text);
	cr_assert(strstr(c.msg, why) != NULL, "%s: cause '%s' lacks '%s'", text, c.msg, why);
}

static void accepted(const char *text)
{
	struct cause c = {{0}};
	json_object *o = parse(text, &c);

	cr_assert_not_null(o, "refused %s: %s", text, c.msg);
	json_object_put(o);
}

Test(jsontext, duplicate_keys_refused)
{
	const char *dup = "same key twice";

	refused("{\"issue\":1,\"issue\":2}", dup);
	refused("{\"repo\":{\"owner\":\"a\",\"name\":\"b\",\"owner\":\"c\"},\"issue\":1}", dup);
	refused("{\"a\":[{\"x\":1},{\"y\":1,\"y\":2}]}", dup);
	refused("[{\"k\":1,\"k\":1}]", dup);
	refused("{\"a\":{\"b\":{\"c\":{\"d\":1,\"d\":{}}}}}", dup);
	/* The same key after decoding: an escape is the same character. */
	refused("{\"ab\":1,\"a\\u0062\":2}", dup);
	refused("{\"a\\u0062\":1,\"ab\":2}", dup);
	refused("{\"\\/\":1,\"/\":2}", dup);
	refused("{\"\\u00e9\":1,\"\xc3\xa9\":2}", dup);
	/* Repeats with containers as values, where positions would shift. */
	refused("{\"a\":{\"x\":1},\"a\":{\"y\":1,\"z\":2},\"b\":3}", dup);
	refused("{\"a\":[1,2],\"b\":1,\"a\":[3]}", dup);
	refused("{\"\":1,\"\":1}", dup);
}

Test(jsontext, distinct_keys_accepted)
{
	accepted("{\"repo\":{\"owner\":\"acme\",\"name\":\"widget\"},\"issue\":41}");
	accepted("{\"a\":{\"a\":{\"a\":1}},\"b\":{\"a\":1}}"); /* same name, other objects */
	accepted("[{\"k\":1},{\"k\":2}]");
	accepted("{\"ab\":1,\"a\\u0063\":2,\"a\\\"b\":3,\"a\\\\\":4}");
	accepted(" \t\r\n{ \"x\" : [ 1 , \"}\" , { } , [ ] , null , true , -1.5e3 ] } \n");
	accepted("{\"s\":\"with \\\" quote, } brace, ] bracket, : colon\",\"t\":\"\\\\\"}");
	accepted("{}");
	accepted("[]");
	accepted("\"text\"");
	accepted("7");
	accepted("{\"n\":null,\"m\":null}");
}

Test(jsontext, has_duplicate_key_direct)
{
	const char *text = "{\"x\":1,\"x\":2}";
	json_object *o = json_tokener_parse(text);

	cr_assert_not_null(o);
	cr_assert(jsontext_has_duplicate_key(text, strlen(text), o));
	json_object_put(o);
	text = "{\"x\":1,\"y\":2}";
	o = json_tokener_parse(text);
	cr_assert_not(jsontext_has_duplicate_key(text, strlen(text), o));
	json_object_put(o);
}

Test(jsontext, malformed_refused)
{
	refused("", "not valid JSON");
	refused("{", "not valid JSON");
	refused("{\"a\":1} x", "not valid JSON");
	refused("{\"a\":1}{}", "not valid JSON");
	refused("{'a':1}", "not valid JSON");
	refused("{\"a\":'x,y'}", "not valid JSON");
	refused("{\"a\":1,}", "not valid JSON");
	/* json-c's strict mode takes these (found by tests/fuzz/fuzz_jsontext). */
	refused("1.", "not valid JSON");
	refused("[1.e5]", "not valid JSON");
	refused("{\"issue\":7.}", "not valid JSON");
	refused("-01", "not valid JSON");
	refused("{\"issue\":00}", "not valid JSON");
	refused("[-Infinity]", "not valid JSON");
	refused("{\"a\x10\":1}", "not valid JSON");
	refused("[\"tab\there\"]", "not valid JSON");
	refused("[[[[[[[[[[1]]]]]]]]]]", "not valid JSON"); /* deeper than 8 */
	refused("null", "null");
	refused("{\"a\":\"\xff\"}", "UTF-8");
	refused("{\"\xc0\xaf\":1}", "UTF-8");
	{
		struct cause c = {{0}};

		cr_assert_null(jsontext_parse("{}\0", 3, 8, &c), "a NUL after the value");
	}
}

Test(jsontext, utf8_valid)
{
	const char *good[] = {
	    "", "ascii", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf"};
	const char *bad[] = {"\xff",         "\xc3",         "\xc0\xaf",
			     "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
			     "\x80",         "a\xe2\x82"};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		cr_assert(jsontext_utf8_valid(good[i], strlen(good[i])), "good %zu", i);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_not(jsontext_utf8_valid(bad[i], strlen(bad[i])), "bad %zu", i);
}

/* The same answers with the sequence anywhere in a longer ASCII text (it is read 8 bytes at a
 * time while they are ASCII): at each offset of a word, cut by the end or not. */
Test(jsontext, utf8_valid_in_long_text)
{
	const char *good[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf"};
	const char *bad[] = {"\xff",         "\xc3",         "\xc0\xaf",
			     "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
			     "\x80",         "\xe2\x82"};
	char text[64];

	for (size_t at = 0; at < 24; at++) {
		for (size_t tail = 0; tail < 2; tail++) {
			for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
				size_t n = strlen(good[i]), len = at + n + tail * 17;

				memset(text, 'a', sizeof(text));
				memcpy(text + at, good[i], n);
				cr_assert(jsontext_utf8_valid(text, len), "good %zu at %zu", i, at);
			}
			for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
				size_t n = strlen(bad[i]), len = at + n + tail * 17;

				memset(text, 'a', sizeof(text));
				memcpy(text + at, bad[i], n);
				cr_assert_not(jsontext_utf8_valid(text, len), "bad %zu at %zu", i,
					      at);
			}
		}
	}
}

Test(jsontext, utf8_scrub)
{
	char *s = jsontext_utf8_scrub("no session \xff-1", 14);

	cr_assert_str_eq(s, "no session \xef\xbf\xbd-1");
	free(s);
	s = jsontext_utf8_scrub("\xc3\xa9\xc3", 3); /* a sequence cut short at the end */
	cr_assert_str_eq(s, "\xc3\xa9\xef\xbf\xbd");
	free(s);
	s = jsontext_utf8_scrub("", 0);
	cr_assert_str_eq(s, "");
	free(s);
}

Test(jsontext, content_type)
{
	const char *ok[] = {"application/json",
			    "Application/JSON",
			    "application/json; charset=utf-8",
			    "application/json;charset=UTF-8",
			    "application/json ; charset=\"utf-8\"",
			    "application/json; foo=bar",
			    "application/json;",
			    "application/json; charset=utf-8; foo=bar"};
	const char *bad[] = {NULL,
			     "",
			     "text/plain",
			     "application/jsonx",
			     "application/json-patch+json",
			     "application/json; charset=latin1",
			     "application/json; charset=ISO-8859-1",
			     "application/json; charset=utf-16",
			     "application/json; charset=utf8x",
			     "application/json; charset=",
			     "application/json; charset=utf-8; charset=latin1",
			     "application/json; charset",
			     "application/json x"};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		cr_assert(jsontext_content_type_ok(ok[i]), "refused '%s'", ok[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_not(jsontext_content_type_ok(bad[i]), "accepted '%s'",
			      bad[i] ? bad[i] : "(null)");
}

Test(jsontext, str_is_a_string_member_or_null)
{
	json_object *o = json_tokener_parse("{\"s\":\"x\",\"n\":1,\"z\":null,\"e\":\"\"}");

	cr_assert_not_null(o);
	cr_assert_str_eq(jsontext_str(o, "s"), "x");
	cr_assert_str_eq(jsontext_str(o, "e"), "");
	cr_assert_null(jsontext_str(o, "n"), "a number is no string");
	cr_assert_null(jsontext_str(o, "z"), "nor is null");
	cr_assert_null(jsontext_str(o, "missing"));
	cr_assert_null(jsontext_str(NULL, "s"), "no object, no member");
	json_object_put(o);
}
