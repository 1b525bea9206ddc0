/*
 * relay: which paths are the relay's, which permission request ids pass, which client bodies
 * and frames are JSON objects, and the request lines built for agentd-host from them (the JSON
 * the host gets is always built here, never the client's text passed through).
 */
#include "relay.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

Test(relay, routes)
{
	static const struct {
		const char *path;
		int ok;
		enum relay_kind kind;
	} cases[] = {
	    {"/sessions/a-1/prompt", 1, RELAY_PROMPT},
	    {"/sessions/a-1/events", 1, RELAY_EVENTS},
	    {"/sessions/a-1/interrupt", 1, RELAY_INTERRUPT},
	    {"/sessions/a-1/stream", 1, RELAY_STREAM},
	    {"/sessions/a-1/permissions/0b7c2f4e-8a55", 1, RELAY_PERMISSION},
	    {"/sessions/a-1/terminal", 0, 0},
	    {"/sessions/a-1/permissions/", 0, 0},
	    {"/sessions/a-1/permissions/x/y", 0, 0},
	    {"/sessions/a-1/permissions", 0, 0},
	    {"/sessions/a-1/prompt/", 0, 0},
	    {"/sessions/a-1/prompts", 0, 0},
	    {"/sessions//prompt", 0, 0},
	    {"/sessions/prompt", 0, 0},
	    {"/sessions/a-1/x/prompt", 0, 0},
	    {"/session/a-1/prompt", 0, 0},
	    {"/sessions/a-1", 0, 0},
	    {"/", 0, 0},
	    {"", 0, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum relay_kind kind = RELAY_STREAM + 1;
		int r = relay_route(cases[i].path, &kind);

		cr_assert_eq(r, cases[i].ok, "%s", cases[i].path);
		if (r == 1)
			cr_assert_eq(kind, cases[i].kind, "%s", cases[i].path);
	}
}

Test(relay, request_ids)
{
	char longest[RELAY_REQUEST_ID_MAX + 2];

	cr_assert(relay_request_id_valid("0b7c2f4e-8a55-4a43-9a6b-2d0f4f0d9c12"));
	cr_assert(relay_request_id_valid("req_1:a.b"));
	cr_assert_not(relay_request_id_valid(""));
	cr_assert_not(relay_request_id_valid("a b"));
	cr_assert_not(relay_request_id_valid("a%20b"));
	cr_assert_not(relay_request_id_valid("a/b"));
	cr_assert_not(relay_request_id_valid("\"x\""));
	memset(longest, 'a', sizeof(longest));
	longest[RELAY_REQUEST_ID_MAX] = '\0';
	cr_assert(relay_request_id_valid(longest));
	longest[RELAY_REQUEST_ID_MAX] = 'a';
	longest[RELAY_REQUEST_ID_MAX + 1] = '\0';
	cr_assert_not(relay_request_id_valid(longest));
}

static json_object *obj(const char *text)
{
	return relay_parse_object(text, strlen(text));
}

Test(relay, only_one_json_object_is_a_body)
{
	static const char *const bad[] = {
	    "", " ", "[]", "\"x\"", "1", "null", "{", "{\"a\":}", "{} {}", "{}x", "{\"a\":1}]",
	};
	json_object *o;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_null(obj(bad[i]), "%s", bad[i]);
	o = obj(" \r\n{\"prompt\":\"hi\"}\n\t ");
	cr_assert_not_null(o);
	json_object_put(o);
	/* A NUL inside the text is not whitespace. */
	cr_assert_null(relay_parse_object("{}\0", 3));
}

/* Issue 8: the API's rule: a body (or /stream frame) with a key twice is refused. */
Test(relay, a_key_twice_is_no_body)
{
	static const char *const bad[] = {
	    "{\"prompt\":\"a\",\"prompt\":\"b\"}",
	    "{\"behavior\":\"deny\",\"behavior\":\"allow\"}",
	    "{\"behavior\":\"allow\",\"updatedInput\":{\"command\":\"ls\",\"comm\\u0061nd\":\"rm\"}"
	    "}",
	    "{\"type\":\"permission\",\"type\":\"prompt\"}",
	    "{\"prompt\":\"caf\xe9\"}", /* latin1, not UTF-8 */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_null(obj(bad[i]), "%s", bad[i]);
}

/* Builds the host line for kind from text; returns it parsed (without its '\n'), or NULL. */
static json_object *line_for(enum relay_kind kind, const char *text, const char *rid)
{
	json_object *msg = text != NULL ? obj(text) : NULL, *out;
	const char *why = NULL;
	size_t len = 0;
	char *line = relay_host_request(kind, msg, rid, &len, &why);

	json_object_put(msg);
	if (line == NULL) {
		cr_assert_not_null(why);
		return NULL;
	}
	cr_assert_eq(len, strlen(line));
	cr_assert_eq(line[len - 1], '\n', "one line");
	cr_assert_null(memchr(line, '\n', len - 1), "exactly one line");
	out = relay_parse_object(line, len);
	cr_assert_not_null(out);
	free(line);
	return out;
}

static const char *member(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v)
		   ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN)
		   : NULL;
}

Test(relay, prompt_requests)
{
	json_object *o =
	    line_for(RELAY_PROMPT, "{\"prompt\":\"fix\\nit \\\"now\\\"\",\"x\":1}", "");

	cr_assert_not_null(o);
	cr_assert_str_eq(member(o, "type"), "\"prompt\"");
	cr_assert_str_eq(member(o, "prompt"), "\"fix\\nit \\\"now\\\"\"");
	cr_assert_null(member(o, "x"), "other members are not passed on");
	json_object_put(o);
	cr_assert_null(line_for(RELAY_PROMPT, "{\"prompt\":\"\"}", ""));
	cr_assert_null(line_for(RELAY_PROMPT, "{\"prompt\":1}", ""));
	cr_assert_null(line_for(RELAY_PROMPT, "{\"prompt\":null}", ""));
	cr_assert_null(line_for(RELAY_PROMPT, "{}", ""));
}

Test(relay, permission_requests)
{
	json_object *o = line_for(RELAY_PERMISSION,
				  "{\"behavior\":\"deny\",\"message\":\"no\",\"interrupt\":true,"
				  "\"updatedInput\":{\"command\":\"ls\"},\"type\":\"evil\"}",
				  "r-1");

	cr_assert_not_null(o);
	cr_assert_str_eq(member(o, "type"), "\"permission\"");
	cr_assert_str_eq(member(o, "requestId"), "\"r-1\"");
	cr_assert_str_eq(member(o, "behavior"), "\"deny\"");
	cr_assert_str_eq(member(o, "message"), "\"no\"");
	cr_assert_str_eq(member(o, "interrupt"), "true");
	cr_assert_str_eq(member(o, "updatedInput"), "{\"command\":\"ls\"}");
	json_object_put(o);
	o = line_for(RELAY_PERMISSION, "{\"behavior\":\"allow\"}", "r-2");
	cr_assert_not_null(o);
	cr_assert_null(member(o, "message"));
	json_object_put(o);
	cr_assert_null(line_for(RELAY_PERMISSION, "{\"behavior\":\"maybe\"}", "r"));
	cr_assert_null(line_for(RELAY_PERMISSION, "{\"behavior\":true}", "r"));
	cr_assert_null(line_for(RELAY_PERMISSION, "{}", "r"));
	cr_assert_null(line_for(RELAY_PERMISSION, "{\"behavior\":\"deny\",\"message\":2}", "r"));
	cr_assert_null(
	    line_for(RELAY_PERMISSION, "{\"behavior\":\"allow\",\"updatedInput\":[]}", "r"));
	cr_assert_null(line_for(RELAY_PERMISSION, "{\"behavior\":\"deny\",\"interrupt\":1}", "r"));
}

Test(relay, interrupt_requests_ignore_the_body)
{
	json_object *o = line_for(RELAY_INTERRUPT, NULL, "");

	cr_assert_not_null(o);
	cr_assert_str_eq(member(o, "type"), "\"interrupt\"");
	json_object_put(o);
	o = line_for(RELAY_INTERRUPT, "{\"type\":\"prompt\",\"prompt\":\"x\"}", "");
	cr_assert_str_eq(member(o, "type"), "\"interrupt\"");
	cr_assert_null(member(o, "prompt"));
	json_object_put(o);
	cr_assert_null(line_for(RELAY_EVENTS, "{}", ""));
}

Test(relay, utf8)
{
	static const char *const good[] = {
	    "",
	    "plain",
	    "caf\xc3\xa9",
	    "\xe2\x82\xac",
	    "\xf0\x9f\x98\x80",
	    "\xef\xbf\xbf",
	    "\xf4\x8f\xbf\xbf",
	};
	static const char *const bad[] = {
	    "\x80",         "\xc3",         "\xc3\x28",         "\xc0\xaf",
	    "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xf8\x88\x80\x80\x80",
	    "\xff",         "ok\xe2\x82",
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		cr_assert(relay_utf8_valid(good[i], strlen(good[i])), "good %zu", i);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_not(relay_utf8_valid(bad[i], strlen(bad[i])), "bad %zu", i);
	cr_assert(relay_utf8_valid("a\0b", 3), "NUL is valid UTF-8");
}
