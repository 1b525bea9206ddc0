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

/* The API's rule: a body (or /stream frame) with a key twice is refused. */
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
	char *line = relay_host_request(kind, msg, rid, NULL, &len, &why);

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

/* "Allow for this session" reaches the host: updatedPermissions, validated and bounded. */
Test(relay, permission_updates_pass_through)
{
	static const char *const suggestion =
	    "[{\"type\":\"addRules\",\"rules\":[{\"toolName\":\"Bash\",\"ruleContent\":"
	    "\"touch:*\"}],\"behavior\":\"allow\",\"destination\":\"session\"}]";
	char text[4096], many[2048];
	json_object *o;
	size_t at;

	snprintf(text, sizeof(text), "{\"behavior\":\"allow\",\"updatedPermissions\":%s}",
		 suggestion);
	o = line_for(RELAY_PERMISSION, text, "r-3");
	cr_assert_not_null(o);
	cr_assert_str_eq(member(o, "updatedPermissions"), suggestion, "passed on as it is");
	cr_assert_str_eq(member(o, "behavior"), "\"allow\"");
	json_object_put(o);
	/* Without it, none is sent. */
	o = line_for(RELAY_PERMISSION, "{\"behavior\":\"allow\"}", "r-4");
	cr_assert_null(member(o, "updatedPermissions"));
	json_object_put(o);
	/* Refused: not an array, empty, an entry without a string type or not an object, with a
	 * deny, more than RELAY_PERMISSION_UPDATES_MAX entries. */
	cr_assert_null(line_for(RELAY_PERMISSION,
				"{\"behavior\":\"allow\",\"updatedPermissions\":{\"type\":\"x\"}}",
				"r"));
	cr_assert_null(
	    line_for(RELAY_PERMISSION, "{\"behavior\":\"allow\",\"updatedPermissions\":[]}", "r"));
	cr_assert_null(line_for(RELAY_PERMISSION,
				"{\"behavior\":\"allow\",\"updatedPermissions\":[{\"type\":1}]}",
				"r"));
	cr_assert_null(line_for(RELAY_PERMISSION,
				"{\"behavior\":\"allow\",\"updatedPermissions\":[\"x\"]}", "r"));
	cr_assert_null(line_for(RELAY_PERMISSION,
				"{\"behavior\":\"allow\",\"updatedPermissions\":[{}]}", "r"));
	snprintf(text, sizeof(text),
		 "{\"behavior\":\"deny\",\"message\":\"no\",\"updatedPermissions\":%s}",
		 suggestion);
	cr_assert_null(line_for(RELAY_PERMISSION, text, "r"));
	at = (size_t)snprintf(many, sizeof(many), "[");
	for (int i = 0; i < RELAY_PERMISSION_UPDATES_MAX; i++)
		at += (size_t)snprintf(many + at, sizeof(many) - at, "%s{\"type\":\"setMode\"}",
				       i ? "," : "");
	snprintf(many + at, sizeof(many) - at, "]");
	snprintf(text, sizeof(text), "{\"behavior\":\"allow\",\"updatedPermissions\":%s}", many);
	o = line_for(RELAY_PERMISSION, text, "r");
	cr_assert_not_null(o, "RELAY_PERMISSION_UPDATES_MAX entries are allowed");
	json_object_put(o);
	many[at] = '\0';
	snprintf(many + at, sizeof(many) - at, ",{\"type\":\"setMode\"}]");
	snprintf(text, sizeof(text), "{\"behavior\":\"allow\",\"updatedPermissions\":%s}", many);
	cr_assert_null(line_for(RELAY_PERMISSION, text, "r"), "one more is refused");
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
