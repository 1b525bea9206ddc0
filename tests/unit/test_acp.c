/* The ACP codec (core/acp.h): JSON-RPC lines built and parsed back, bad messages refused, the
 * permission options mapped, and session/update turned into the common event shape. */
#include "acp.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- messages ------------------------------------------------------------------------------ */

/* line is one line ending in '\n'; parses it (without the '\n') into m. */
static void parse_line(const char *line, size_t len, struct acp_msg *m)
{
	cr_assert_not_null(line);
	cr_assert_eq(len, strlen(line));
	cr_assert_eq(line[len - 1], '\n');
	cr_assert_null(memchr(line, '\n', len - 1), "exactly one line: %s", line);
	cr_assert_eq(acp_parse(line, len - 1, m), 0, "%s", line);
}

Test(acp, request_round_trip)
{
	size_t len = 0;
	char *line =
	    acp_request(7, "session/prompt", acp_prompt_params("s-1", "fix\nit \"now\""), &len);
	struct acp_msg m;
	json_object *p, *b;

	parse_line(line, len, &m);
	cr_assert_eq(m.type, ACP_REQUEST);
	cr_assert_str_eq(m.method, "session/prompt");
	cr_assert_eq(json_object_get_int(m.id), 7);
	cr_assert_str_eq(json_object_get_string(json_object_object_get(m.params, "sessionId")),
			 "s-1");
	p = json_object_object_get(m.params, "prompt");
	cr_assert_eq(json_object_array_length(p), 1);
	b = json_object_array_get_idx(p, 0);
	cr_assert_str_eq(json_object_get_string(json_object_object_get(b, "type")), "text");
	cr_assert_str_eq(json_object_get_string(json_object_object_get(b, "text")),
			 "fix\nit \"now\"");
	acp_msg_release(&m);
	free(line);
}

Test(acp, notification_has_no_id)
{
	size_t len = 0;
	char *line = acp_notification("session/cancel", acp_cancel_params("s-1"), &len);
	struct acp_msg m;

	parse_line(line, len, &m);
	cr_assert_eq(m.type, ACP_NOTIFICATION);
	cr_assert_null(m.id);
	cr_assert_str_eq(m.method, "session/cancel");
	cr_assert_null(strstr(line, "\"id\""));
	acp_msg_release(&m);
	free(line);
}

Test(acp, initialize_advertises_no_fs_nor_terminal)
{
	size_t len = 0;
	char *line = acp_request(1, "initialize", acp_initialize_params("agentd", "1"), &len);
	struct acp_msg m;
	json_object *caps;

	parse_line(line, len, &m);
	cr_assert_eq(json_object_get_int(json_object_object_get(m.params, "protocolVersion")), 1);
	caps = json_object_object_get(m.params, "clientCapabilities");
	cr_assert_not(json_object_get_boolean(json_object_object_get(caps, "terminal")));
	cr_assert_not(json_object_get_boolean(
	    json_object_object_get(json_object_object_get(caps, "fs"), "readTextFile")));
	cr_assert_not(json_object_get_boolean(
	    json_object_object_get(json_object_object_get(caps, "fs"), "writeTextFile")));
	acp_msg_release(&m);
	free(line);
}

Test(acp, session_new_and_load_params)
{
	json_object *n = acp_session_new_params("/w"), *l = acp_session_load_params("abc", "/w");

	cr_assert_str_eq(json_object_get_string(json_object_object_get(n, "cwd")), "/w");
	cr_assert_eq(json_object_array_length(json_object_object_get(n, "mcpServers")), 0);
	cr_assert_null(json_object_object_get(n, "sessionId"));
	cr_assert_str_eq(json_object_get_string(json_object_object_get(l, "sessionId")), "abc");
	cr_assert_str_eq(json_object_get_string(json_object_object_get(l, "cwd")), "/w");
	json_object_put(n);
	json_object_put(l);
}

Test(acp, responses_and_errors)
{
	const char ok[] = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"sessionId\":\"x\"}}";
	const char err[] =
	    "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"error\":{\"code\":-32000,\"message\":\"nope\"}}";
	const char null_result[] = "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":null}";
	struct acp_msg m;

	cr_assert_eq(acp_parse(ok, strlen(ok), &m), 0);
	cr_assert_eq(m.type, ACP_RESPONSE);
	cr_assert_str_eq(acp_session_id(m.result), "x");
	cr_assert_eq(acp_error_code(&m), 0);
	acp_msg_release(&m);
	cr_assert_eq(acp_parse(err, strlen(err), &m), 0);
	cr_assert_eq(m.type, ACP_RESPONSE);
	cr_assert_null(m.result);
	cr_assert_eq(acp_error_code(&m), -32000);
	cr_assert_str_eq(acp_error_message(&m), "nope");
	acp_msg_release(&m);
	cr_assert_eq(acp_parse(null_result, strlen(null_result), &m), 0);
	cr_assert_eq(m.type, ACP_RESPONSE);
	cr_assert_null(m.error);
	acp_msg_release(&m);
}

Test(acp, bad_messages_refused)
{
	static const char *const bad[] = {
	    "",
	    "[]",
	    "not json",
	    "{\"id\":1,\"method\":\"x\"}",                     /* no jsonrpc */
	    "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"x\"}", /* wrong version */
	    "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"x\"}",
	    "{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{}}",
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}",
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}",
	    "{\"jsonrpc\":\"2.0\",\"id\":1}",                            /* neither */
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{}}", /* both */
	    "{\"jsonrpc\":\"2.0\",\"result\":{}}",                       /* no id */
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":\"x\"}",            /* error not object */
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}} {\"x\":1}",    /* two values */
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xff\"}",        /* not UTF-8 */
	};
	struct acp_msg m;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(acp_parse(bad[i], strlen(bad[i]), &m), -EBADMSG, "%s", bad[i]);
		cr_assert_null(m.obj);
	}
}

Test(acp, line_size_is_bounded)
{
	size_t big = ACP_LINE_MAX + 1, len = 0;
	char *text = malloc(big + 1);
	struct acp_msg m;
	char *line;

	cr_assert_not_null(text);
	memset(text, 'a', big);
	text[big] = '\0';
	cr_assert_eq(acp_parse(text, big, &m), -EMSGSIZE);
	/* A message that would not fit one line is not built. */
	errno = 0;
	line = acp_request(1, "session/prompt", acp_prompt_params("s", text), &len);
	cr_assert_null(line);
	cr_assert_eq(errno, EMSGSIZE);
	free(text);
}

Test(acp, error_response_for_unknown_method)
{
	const char req[] = "{\"jsonrpc\":\"2.0\",\"id\":\"fs-1\",\"method\":\"fs/read_text_file\","
			   "\"params\":{\"path\":\"/etc/passwd\"}}";
	struct acp_msg m, r;
	size_t len = 0;
	char *line;

	cr_assert_eq(acp_parse(req, strlen(req), &m), 0);
	cr_assert_eq(m.type, ACP_REQUEST);
	line = acp_error_response(m.id, ACP_METHOD_NOT_FOUND, "method not found", &len);
	parse_line(line, len, &r);
	cr_assert_eq(r.type, ACP_RESPONSE);
	cr_assert_str_eq(json_object_get_string(r.id), "fs-1");
	cr_assert_eq(acp_error_code(&r), -32601);
	acp_msg_release(&r);
	acp_msg_release(&m);
	free(line);
}

/* ---- permissions --------------------------------------------------------------------------- */

static json_object *options(const char *json)
{
	json_object *o = json_tokener_parse(json);

	cr_assert_not_null(o);
	return o;
}

Test(acp, permission_options_map_allow_and_deny)
{
	/* gemini's, opencode's and codex-acp's option sets (notes: agent-clis.md §2-4). */
	json_object *gemini =
	    options("{\"options\":[{\"optionId\":\"proceed_always\",\"kind\":\"allow_always\"},"
		    "{\"optionId\":\"proceed_once\",\"kind\":\"allow_once\"},"
		    "{\"optionId\":\"cancel\",\"kind\":\"reject_once\"}]}");
	json_object *opencode =
	    options("{\"options\":[{\"optionId\":\"once\",\"kind\":\"allow_once\"},"
		    "{\"optionId\":\"always\",\"kind\":\"allow_always\"},"
		    "{\"optionId\":\"reject\",\"kind\":\"reject_once\"}]}");
	json_object *codex =
	    options("{\"options\":[{\"optionId\":\"approved\",\"kind\":\"allow_once\"},"
		    "{\"optionId\":\"approved-execpolicy-amendment\",\"kind\":\"allow_always\"},"
		    "{\"optionId\":\"abort\",\"kind\":\"reject_always\"}]}");
	json_object *none = options("{\"options\":[{\"optionId\":\"x\",\"kind\":\"other\"}]}");

	cr_assert_str_eq(acp_permission_option(gemini, true), "proceed_once");
	cr_assert_str_eq(acp_permission_option(gemini, false), "cancel");
	cr_assert_str_eq(acp_permission_option(opencode, true), "once");
	cr_assert_str_eq(acp_permission_option(opencode, false), "reject");
	cr_assert_str_eq(acp_permission_option(codex, true), "approved");
	cr_assert_str_eq(acp_permission_option(codex, false), "abort");
	cr_assert_null(acp_permission_option(none, true));
	cr_assert_null(acp_permission_option(none, false));
	cr_assert_null(acp_permission_option(NULL, true));
	json_object_put(gemini);
	json_object_put(opencode);
	json_object_put(codex);
	json_object_put(none);
}

Test(acp, permission_result_selected_or_cancelled)
{
	json_object *s = acp_permission_result("once"), *c = acp_permission_result(NULL);

	cr_assert_str_eq(json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN),
			 "{\"outcome\":{\"outcome\":\"selected\",\"optionId\":\"once\"}}");
	cr_assert_str_eq(json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN),
			 "{\"outcome\":{\"outcome\":\"cancelled\"}}");
	json_object_put(s);
	json_object_put(c);
}

Test(acp, permission_event_has_the_common_fields)
{
	json_object *p = options(
	    "{\"sessionId\":\"s\",\"toolCall\":{\"toolCallId\":\"t1\",\"title\":\"Shell: ls\","
	    "\"kind\":\"execute\",\"rawInput\":{\"command\":\"ls\"}},"
	    "\"options\":[{\"optionId\":\"once\",\"kind\":\"allow_once\",\"name\":\"Allow\"}]}");
	json_object *ev = acp_permission_event(p, "acp-1");

	cr_assert_str_eq(json_object_get_string(json_object_object_get(ev, "requestId")), "acp-1");
	cr_assert_str_eq(json_object_get_string(json_object_object_get(ev, "toolName")),
			 "Shell: ls");
	cr_assert_str_eq(json_object_get_string(json_object_object_get(
			     json_object_object_get(ev, "input"), "command")),
			 "ls");
	cr_assert_str_eq(json_object_get_string(json_object_object_get(ev, "toolUseId")), "t1");
	cr_assert(json_object_object_get_ex(ev, "suggestions", NULL));
	cr_assert_eq(json_object_array_length(json_object_object_get(ev, "options")), 1);
	cr_assert_str_eq(json_object_get_string(json_object_object_get(ev, "kind")), "execute");
	json_object_put(ev);
	json_object_put(p);
}

/* ---- the common event shape ---------------------------------------------------------------- */

#define EVENTS_MAX 32

struct events {
	size_t n;
	char name[EVENTS_MAX][32];
	json_object *data[EVENTS_MAX];
};

static void collect(void *arg, const char *name, json_object *data)
{
	struct events *e = arg;

	cr_assert_lt(e->n, EVENTS_MAX);
	snprintf(e->name[e->n], sizeof(e->name[e->n]), "%s", name);
	e->data[e->n++] = data;
}

static void events_free(struct events *e)
{
	for (size_t i = 0; i < e->n; i++)
		json_object_put(e->data[i]);
	e->n = 0;
}

static const char *path_str(json_object *o, const char *a, const char *b)
{
	json_object *v = json_object_object_get(o, a);

	if (b != NULL)
		v = json_object_object_get(v, b);
	return json_object_get_string(v);
}

/* Feeds one session/update params (JSON text) to the turn. */
static bool feed(struct acp_turn *t, const char *params, struct events *e)
{
	json_object *p = json_tokener_parse(params), *u;
	enum acp_update_kind k;
	bool made;

	cr_assert_not_null(p, "%s", params);
	k = acp_update_kind(p, &u);
	made = acp_turn_update(t, k, u, collect, e);
	json_object_put(p);
	return made;
}

Test(acp, update_kinds)
{
	json_object *p = json_tokener_parse(
	    "{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":\"tool_call_update\"}}");
	json_object *q = json_tokener_parse("{\"update\":{\"sessionUpdate\":\"brand_new\"}}");
	json_object *u;

	cr_assert_eq(acp_update_kind(p, &u), ACP_UPDATE_TOOL_CALL_UPDATE);
	cr_assert_not_null(u);
	cr_assert_eq(acp_update_kind(q, &u), ACP_UPDATE_UNKNOWN);
	cr_assert_eq(acp_update_kind(NULL, &u), ACP_UPDATE_UNKNOWN);
	cr_assert_null(u);
	json_object_put(p);
	json_object_put(q);
}

Test(acp, a_turn_in_the_common_shape)
{
	struct acp_turn t;
	struct events e = {0};
	json_object *content, *b, *usage;

	acp_turn_begin(&t, "gemini", "sess-1", "fake-model", "say hi", 1000, collect, &e);
	cr_assert_eq(e.n, 2);
	cr_assert_str_eq(e.name[0], "system");
	cr_assert_str_eq(path_str(e.data[0], "subtype", NULL), "init");
	cr_assert_str_eq(path_str(e.data[0], "agent", NULL), "gemini");
	cr_assert_str_eq(path_str(e.data[0], "model", NULL), "fake-model");
	cr_assert_str_eq(e.name[1], "user");
	cr_assert(json_object_get_boolean(json_object_object_get(e.data[1], "isReplay")));
	cr_assert_str_eq(path_str(e.data[1], "message", "content"), "say hi");
	events_free(&e);

	/* Text streams as partial events, then is whole in one assistant event before a tool. */
	cr_assert(feed(&t,
		       "{\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":"
		       "{\"type\":\"text\",\"text\":\"Hel\"}}}",
		       &e));
	cr_assert(feed(&t,
		       "{\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":"
		       "{\"type\":\"text\",\"text\":\"lo\"}}}",
		       &e));
	cr_assert_eq(e.n, 2);
	cr_assert_str_eq(e.name[0], "stream_event");
	cr_assert_str_eq(path_str(json_object_object_get(e.data[0], "event"), "delta", "text"),
			 "Hel");
	events_free(&e);
	/* A pending call: the text before it is said; the call waits until it runs (a pending
	 * call's input may not be whole yet). */
	cr_assert(feed(&t,
		       "{\"update\":{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"c1\","
		       "\"title\":\"ls\",\"kind\":\"execute\",\"status\":\"pending\","
		       "\"rawInput\":{\"command\":\"ls\"}}}",
		       &e));
	cr_assert_eq(e.n, 1);
	cr_assert_str_eq(e.name[0], "assistant");
	content = json_object_object_get(json_object_object_get(e.data[0], "message"), "content");
	cr_assert_str_eq(path_str(json_object_array_get_idx(content, 0), "text", NULL), "Hello");
	events_free(&e);
	cr_assert(feed(&t,
		       "{\"update\":{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":"
		       "\"c1\",\"status\":\"in_progress\"}}",
		       &e));
	cr_assert_eq(e.n, 1);
	cr_assert_str_eq(e.name[0], "assistant");
	content = json_object_object_get(json_object_object_get(e.data[0], "message"), "content");
	b = json_object_array_get_idx(content, 0);
	cr_assert_str_eq(path_str(b, "type", NULL), "tool_use");
	cr_assert_str_eq(path_str(b, "id", NULL), "c1");
	cr_assert_str_eq(path_str(b, "name", NULL), "ls");
	cr_assert_str_eq(path_str(b, "input", "command"), "ls");
	events_free(&e);

	/* Progress is no event; the end of the call is a tool_result. */
	cr_assert_not(feed(&t,
			   "{\"update\":{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":"
			   "\"c1\",\"status\":\"in_progress\"}}",
			   &e));
	cr_assert(feed(&t,
		       "{\"update\":{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"c1\","
		       "\"status\":\"completed\",\"content\":[{\"type\":\"content\",\"content\":"
		       "{\"type\":\"text\",\"text\":\"a.txt\"}}]}}",
		       &e));
	cr_assert_eq(e.n, 1);
	cr_assert_str_eq(e.name[0], "user");
	content = json_object_object_get(json_object_object_get(e.data[0], "message"), "content");
	b = json_object_array_get_idx(content, 0);
	cr_assert_str_eq(path_str(b, "type", NULL), "tool_result");
	cr_assert_str_eq(path_str(b, "tool_use_id", NULL), "c1");
	cr_assert_str_eq(path_str(b, "content", NULL), "a.txt");
	cr_assert_not(json_object_get_boolean(json_object_object_get(b, "is_error")));
	events_free(&e);

	cr_assert_not(feed(&t,
			   "{\"update\":{\"sessionUpdate\":\"usage_update\",\"used\":10,"
			   "\"size\":100,\"cost\":{\"amount\":0.25,\"currency\":\"USD\"}}}",
			   &e));
	cr_assert(feed(&t,
		       "{\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":"
		       "{\"type\":\"text\",\"text\":\"done\"}}}",
		       &e));
	events_free(&e);
	usage = json_tokener_parse("{\"inputTokens\":5,\"outputTokens\":7}");
	acp_turn_end(&t, "end_turn", usage, NULL, 0, 3500, collect, &e);
	json_object_put(usage);
	cr_assert_eq(e.n, 2);
	cr_assert_str_eq(e.name[0], "assistant");
	cr_assert_str_eq(e.name[1], "result");
	cr_assert_str_eq(path_str(e.data[1], "type", NULL), "result");
	cr_assert_str_eq(path_str(e.data[1], "subtype", NULL), "success");
	cr_assert_not(json_object_get_boolean(json_object_object_get(e.data[1], "is_error")));
	cr_assert_str_eq(path_str(e.data[1], "result", NULL), "done");
	cr_assert_eq(json_object_get_int(json_object_object_get(e.data[1], "duration_ms")), 2500);
	cr_assert_eq(json_object_get_int(json_object_object_get(e.data[1], "queued_turn_count")),
		     0);
	cr_assert_eq(json_object_get_int(json_object_object_get(
			 json_object_object_get(e.data[1], "usage"), "input_tokens")),
		     5);
	cr_assert_eq(json_object_get_int(json_object_object_get(
			 json_object_object_get(e.data[1], "usage"), "context_used")),
		     10);
	cr_assert_float_eq(
	    json_object_get_double(json_object_object_get(e.data[1], "total_cost_usd")), 0.25,
	    1e-9);
	events_free(&e);
}

Test(acp, failed_and_cancelled_turns)
{
	struct acp_turn t;
	struct events e = {0};

	acp_turn_begin(&t, "opencode", "s", NULL, "x", 0, collect, &e);
	events_free(&e);
	acp_turn_end(&t, NULL, NULL, "the agent failed", 2, 10, collect, &e);
	cr_assert_eq(e.n, 1);
	cr_assert_str_eq(path_str(e.data[0], "subtype", NULL), "error_during_execution");
	cr_assert(json_object_get_boolean(json_object_object_get(e.data[0], "is_error")));
	cr_assert_str_eq(path_str(e.data[0], "result", NULL), "the agent failed");
	cr_assert_eq(json_object_get_int(json_object_object_get(e.data[0], "queued_turn_count")),
		     2);
	cr_assert_null(json_object_object_get(e.data[0], "total_cost_usd"));
	events_free(&e);
	acp_turn_begin(&t, "opencode", "s", NULL, "x", 0, collect, &e);
	events_free(&e);
	acp_turn_end(&t, "cancelled", NULL, NULL, 0, 10, collect, &e);
	cr_assert_str_eq(path_str(e.data[0], "subtype", NULL), "cancelled");
	cr_assert_str_eq(path_str(e.data[0], "stop_reason", NULL), "cancelled");
	events_free(&e);
}

Test(acp, long_text_is_cut_into_bounded_events)
{
	struct acp_turn t;
	struct events e = {0};
	size_t piece = 64 * 1024, total = 0;
	char *text = malloc(piece + 1);
	json_object *p, *u;

	cr_assert_not_null(text);
	memset(text, 'x', piece);
	text[piece] = '\0';
	p = json_object_new_object();
	u = json_object_new_object();
	json_object_object_add(u, "sessionUpdate", json_object_new_string("agent_message_chunk"));
	json_object_object_add(u, "content", json_object_new_object());
	json_object_object_add(json_object_object_get(u, "content"), "text",
			       json_object_new_string(text));
	json_object_object_add(p, "update", u);
	acp_turn_begin(&t, "gemini", "s", NULL, "x", 0, collect, &e);
	events_free(&e);
	for (size_t i = 0; i < 5; i++) {
		acp_turn_update(&t, ACP_UPDATE_AGENT_MESSAGE_CHUNK, u, collect, &e);
		for (size_t k = 0; k < e.n; k++)
			if (strcmp(e.name[k], "assistant") == 0) {
				json_object *c = json_object_object_get(
				    json_object_object_get(e.data[k], "message"), "content");
				size_t n =
				    strlen(path_str(json_object_array_get_idx(c, 0), "text", NULL));

				cr_assert_leq(n, ACP_TEXT_MAX);
				total += n;
			}
		events_free(&e);
	}
	acp_turn_end(&t, "end_turn", NULL, NULL, 0, 0, collect, &e);
	cr_assert_str_eq(e.name[0], "assistant");
	total += strlen(path_str(
	    json_object_array_get_idx(
		json_object_object_get(json_object_object_get(e.data[0], "message"), "content"), 0),
	    "text", NULL));
	cr_assert_eq(total, 5 * piece);
	events_free(&e);
	json_object_put(p);
	free(text);
}

Test(acp, every_tool_result_has_its_tool_use)
{
	struct acp_turn t;
	struct events e = {0};
	json_object *perm = options("{\"toolCall\":{\"toolCallId\":\"g1\",\"title\":\"touch x\"},"
				    "\"options\":[]}");

	acp_turn_begin(&t, "gemini", "s", NULL, "x", 0, collect, &e);
	events_free(&e);
	/* gemini asks before it announces the call: the tool_use comes with the request. */
	acp_turn_permission(&t, perm, collect, &e);
	cr_assert_eq(e.n, 1);
	cr_assert_str_eq(path_str(json_object_array_get_idx(
				      json_object_object_get(
					  json_object_object_get(e.data[0], "message"), "content"),
				      0),
				  "id", NULL),
			 "g1");
	events_free(&e);
	/* ... and ends it: the result only, no second tool_use. */
	cr_assert(feed(&t,
		       "{\"update\":{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"g1\","
		       "\"status\":\"completed\"}}",
		       &e));
	cr_assert_eq(e.n, 1);
	cr_assert_str_eq(e.name[0], "user");
	events_free(&e);
	/* A call ended that was never announced nor asked for: its tool_use first. */
	cr_assert(feed(&t,
		       "{\"update\":{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"g2\","
		       "\"status\":\"failed\"}}",
		       &e));
	cr_assert_eq(e.n, 2);
	cr_assert_str_eq(e.name[0], "assistant");
	cr_assert_str_eq(e.name[1], "user");
	events_free(&e);
	/* A call announced twice (pending, then in progress) is one tool_use, made once it runs. */
	cr_assert_not(feed(&t,
			   "{\"update\":{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"o1\","
			   "\"status\":\"pending\"}}",
			   &e));
	feed(&t,
	     "{\"update\":{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"o1\","
	     "\"status\":\"in_progress\"}}",
	     &e);
	cr_assert_eq(e.n, 1);
	events_free(&e);
	/* Pending until the turn ends: said then, before the result. */
	cr_assert_not(feed(&t,
			   "{\"update\":{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"o2\","
			   "\"status\":\"pending\"}}",
			   &e));
	acp_turn_end(&t, "end_turn", NULL, NULL, 0, 0, collect, &e);
	cr_assert_eq(e.n, 2);
	cr_assert_str_eq(e.name[0], "assistant");
	cr_assert_str_eq(e.name[1], "result");
	events_free(&e);
	json_object_put(perm);
}

/* opencode announces a call before its input ("bash", rawInput {}) and gives the input in a
 * later update: the tool_use waits for it, with the title and kind of the first. */
Test(acp, a_call_announced_before_its_input_is_said_with_it)
{
	struct acp_turn t;
	struct events e = {0};
	json_object *b;

	acp_turn_begin(&t, "opencode", "s", NULL, "x", 0, collect, &e);
	events_free(&e);
	cr_assert_not(feed(&t,
			   "{\"update\":{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"b1\","
			   "\"title\":\"bash\",\"kind\":\"execute\",\"status\":\"pending\","
			   "\"rawInput\":{}}}",
			   &e));
	cr_assert_eq(e.n, 0);
	cr_assert(feed(&t,
		       "{\"update\":{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"b1\","
		       "\"status\":\"in_progress\",\"rawInput\":{\"command\":\"make test\"}}}",
		       &e));
	cr_assert_eq(e.n, 1);
	b = json_object_array_get_idx(
	    json_object_object_get(json_object_object_get(e.data[0], "message"), "content"), 0);
	cr_assert_str_eq(path_str(b, "type", NULL), "tool_use");
	cr_assert_str_eq(path_str(b, "name", NULL), "bash");
	cr_assert_str_eq(path_str(b, "kind", NULL), "execute");
	cr_assert_str_eq(path_str(b, "input", "command"), "make test");
	events_free(&e);
	/* Its end: the result alone. */
	cr_assert(feed(&t,
		       "{\"update\":{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"b1\","
		       "\"status\":\"completed\"}}",
		       &e));
	cr_assert_eq(e.n, 1);
	cr_assert_str_eq(e.name[0], "user");
	events_free(&e);
	/* Held, then ended without input: the tool_use (as announced), then the result. */
	cr_assert_not(feed(&t,
			   "{\"update\":{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"b2\","
			   "\"title\":\"read\",\"status\":\"pending\"}}",
			   &e));
	cr_assert(feed(&t,
		       "{\"update\":{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"b2\","
		       "\"status\":\"failed\"}}",
		       &e));
	cr_assert_eq(e.n, 2);
	cr_assert_str_eq(e.name[0], "assistant");
	cr_assert_str_eq(e.name[1], "user");
	events_free(&e);
	/* Held (opencode's first input is its cwd alone), then asked for: the request's call,
	 * with its command, is the tool_use. */
	cr_assert_not(
	    feed(&t,
		 "{\"update\":{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"b3\","
		 "\"title\":\"bash\",\"status\":\"pending\",\"rawInput\":{\"cwd\":\"/w\"}}}",
		 &e));
	{
		json_object *perm = options("{\"toolCall\":{\"toolCallId\":\"b3\",\"rawInput\":"
					    "{\"command\":\"rm x\"}},\"options\":[]}");

		acp_turn_permission(&t, perm, collect, &e);
		json_object_put(perm);
	}
	cr_assert_eq(e.n, 1);
	b = json_object_array_get_idx(
	    json_object_object_get(json_object_object_get(e.data[0], "message"), "content"), 0);
	cr_assert_str_eq(path_str(b, "name", NULL), "bash");
	cr_assert_str_eq(path_str(b, "input", "command"), "rm x");
	events_free(&e);
	acp_turn_end(&t, "end_turn", NULL, NULL, 0, 0, collect, &e);
	cr_assert_eq(e.n, 1, "no call was held past its announcement");
	events_free(&e);
}

Test(acp, session_list_capability_and_newest_session)
{
	json_object *init = json_tokener_parse(
	    "{\"agentCapabilities\":{\"loadSession\":true,\"sessionCapabilities\":{\"list\":{}}}}");
	json_object *none = json_tokener_parse("{\"agentCapabilities\":{\"loadSession\":true}}");
	json_object *list = json_tokener_parse(
	    "{\"sessions\":[{\"sessionId\":\"a\",\"cwd\":\"/"
	    "w\",\"updatedAt\":\"2026-11-28T10:00:00Z\"},"
	    "{\"sessionId\":\"b\",\"cwd\":\"/w\",\"updatedAt\":\"2026-11-28T11:00:00Z\"},"
	    "{\"sessionId\":\"c\",\"cwd\":\"/elsewhere\",\"updatedAt\":\"2026-11-28T12:00:00Z\"},"
	    "{\"sessionId\":\"d\",\"cwd\":\"/w\"}]}");
	json_object *empty = json_tokener_parse("{\"sessions\":[]}");
	json_object *p = acp_session_list_params("/w");

	cr_assert(acp_can_list(init));
	cr_assert_not(acp_can_list(none));
	/* The one updated last in the directory, not one of another directory. */
	cr_assert_str_eq(acp_session_list_newest(list, "/w"), "b");
	cr_assert_str_eq(acp_session_list_newest(list, "/elsewhere"), "c");
	cr_assert_null(acp_session_list_newest(empty, "/w"));
	cr_assert_null(acp_session_list_newest(NULL, "/w"));
	cr_assert_str_eq(json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN),
			 "{\"cwd\":\"\\/w\"}");
	json_object_put(init);
	json_object_put(none);
	json_object_put(list);
	json_object_put(empty);
	json_object_put(p);
}
