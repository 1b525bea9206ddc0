/*
 * hookproto: the agentd-hook ↔ agentd-bridge codec. Event names, reports round-tripped and cut to
 * size, every malformed report and answer refused, decisions checked as the API checks a
 * permission answer, and the output claude reads.
 */
#include "hookproto.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static json_object *json(const char *text)
{
	json_object *o = json_tokener_parse(text);

	cr_assert_not_null(o, "test JSON %s", text);
	return o;
}

/* The line without its newline. */
static size_t body_len(const char *line)
{
	size_t n = strlen(line);

	cr_assert(n > 0 && line[n - 1] == '\n', "a line ends with a newline: %s", line);
	return n - 1;
}

Test(hookproto, event_names)
{
	for (int e = 0; e < HOOK_EVENT_COUNT; e++)
		cr_assert_eq(hookproto_event_parse(hookproto_event_name((enum hook_event)e)), e);
	cr_assert_eq(hookproto_event_parse("PermissionRequest"), HOOK_PERMISSION_REQUEST);
	cr_assert_eq(hookproto_event_parse("permissionrequest"), -EINVAL);
	cr_assert_eq(hookproto_event_parse(""), -EINVAL);
	cr_assert_eq(hookproto_event_parse("SubagentStop"), -EINVAL);
}

Test(hookproto, report_round_trip)
{
	json_object *payload = json("{\"session_id\":\"u\",\"tool_name\":\"Bash\","
				    "\"tool_input\":{\"command\":\"ls\"},\"a/b\":\"x/y\"}");
	char *line = hookproto_report_encode(HOOK_PERMISSION_REQUEST, payload, NULL);
	struct hook_report r;
	struct cause c = {{0}};

	cr_assert_not_null(line);
	cr_assert_eq(hookproto_report_decode(line, body_len(line), &r, &c), 0, "%s", c.msg);
	cr_assert_eq(r.event, HOOK_PERMISSION_REQUEST);
	cr_assert(json_object_equal(r.payload, payload), "%s", line);
	cr_assert_str_eq(r.request_id, "");
	hookproto_report_clear(&r);
	cr_assert_null(r.payload);
	free(line);
	json_object_put(payload);
}

/* A PermissionRequest asked again after a broken connection keeps its request id. */
Test(hookproto, report_asked_again_carries_its_request_id)
{
	json_object *payload = json("{\"tool_name\":\"Bash\"}");
	char *line = hookproto_report_encode(HOOK_PERMISSION_REQUEST, payload, "r-1:a.b");
	struct hook_report r;
	struct cause c = {{0}};

	cr_assert_not_null(line);
	cr_assert_eq(hookproto_report_decode(line, body_len(line), &r, &c), 0, "%s", c.msg);
	cr_assert_str_eq(r.request_id, "r-1:a.b");
	hookproto_report_clear(&r);
	free(line);
	errno = 0;
	cr_assert_null(hookproto_report_encode(HOOK_STOP, payload, "r-1"));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(hookproto_report_encode(HOOK_PERMISSION_REQUEST, payload, "a b"));
	json_object_put(payload);
}

Test(hookproto, report_refuses_a_non_object_payload)
{
	json_object *arr = json("[1]");

	errno = 0;
	cr_assert_null(hookproto_report_encode(HOOK_STOP, arr, NULL));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(hookproto_report_encode(HOOK_EVENT_COUNT, NULL, NULL));
	json_object_put(arr);
}

Test(hookproto, large_members_are_omitted_largest_first)
{
	size_t big = HOOKPROTO_PAYLOAD_MAX, mid = HOOKPROTO_PAYLOAD_MAX / 2 + 100;
	char *huge = malloc(big + 1), *half = malloc(mid + 1), *line;
	json_object *payload = json_object_new_object(), *omitted, *v;
	struct hook_report r;
	struct cause c = {{0}};

	memset(huge, 'a', big);
	huge[big] = '\0';
	memset(half, 'b', mid);
	half[mid] = '\0';
	json_object_object_add(payload, "tool_name", json_object_new_string("Write"));
	json_object_object_add(payload, "tool_input", json_object_new_string(huge));
	json_object_object_add(payload, "prompt", json_object_new_string(half));
	json_object_object_add(payload, "last", json_object_new_string(half));
	line = hookproto_report_encode(HOOK_PRE_TOOL_USE, payload, "");
	cr_assert_not_null(line);
	cr_assert_leq(strlen(line), HOOKPROTO_LINE_MAX);
	cr_assert_eq(hookproto_report_decode(line, body_len(line), &r, &c), 0, "%s", c.msg);
	cr_assert(json_object_object_get_ex(r.payload, "omitted", &omitted));
	/* tool_input (the largest) and one of the halves go; the rest stays. */
	cr_assert_eq(json_object_array_length(omitted), 2);
	cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(omitted, 0)),
			 "tool_input");
	cr_assert(json_object_object_get_ex(r.payload, "tool_name", &v));
	cr_assert_str_eq(json_object_get_string(v), "Write");
	cr_assert_not(json_object_object_get_ex(r.payload, "tool_input", NULL));
	hookproto_report_clear(&r);
	free(line);
	free(huge);
	free(half);
	json_object_put(payload);
}

static void report_refused(const char *text)
{
	struct hook_report r = {.payload = NULL};
	struct cause c = {{0}};

	cr_assert_eq(hookproto_report_decode(text, strlen(text), &r, &c), -EINVAL, "accepted %s",
		     text);
	cr_assert_null(r.payload);
	cr_assert(c.msg[0] != '\0', "a reason for %s", text);
}

Test(hookproto, malformed_reports_refused)
{
	report_refused("");
	report_refused("not json");
	report_refused("[]");
	report_refused("{\"event\":\"Stop\"}");
	report_refused("{\"payload\":{}}");
	report_refused("{\"event\":\"Stop\",\"payload\":[]}");
	report_refused("{\"event\":\"Stop\",\"payload\":{},\"extra\":1}");
	report_refused("{\"event\":\"Nope\",\"payload\":{}}");
	report_refused("{\"event\":1,\"payload\":{}}");
	report_refused("{\"event\":\"Stop\",\"event\":\"Stop\",\"payload\":{}}");
	report_refused("{\"event\":\"Stop\",\"payload\":{}} {}");
	report_refused("{\"event\":\"Stop\",\"payload\":{\"a\":\"\xff\"}}");
}

Test(hookproto, request_ids_refused_where_they_do_not_belong)
{
	static const char *const bad[] = {
	    "{\"event\":\"Stop\",\"payload\":{},\"requestId\":\"r1\"}",
	    "{\"event\":\"PermissionRequest\",\"payload\":{},\"requestId\":1}",
	    "{\"event\":\"PermissionRequest\",\"payload\":{},\"requestId\":\"\"}",
	    "{\"event\":\"PermissionRequest\",\"payload\":{},\"requestId\":\"a/b\"}",
	};
	struct hook_report r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cause c = {{0}};

		cr_assert_eq(hookproto_report_decode(bad[i], strlen(bad[i]), &r, &c), -EINVAL,
			     "accepted %s", bad[i]);
		cr_assert_null(r.payload);
	}
}

Test(hookproto, over_long_report_refused)
{
	size_t n = HOOKPROTO_LINE_MAX + 1;
	char *text = malloc(n + 1);
	struct hook_report r;
	struct cause c = {{0}};

	memset(text, ' ', n);
	text[n] = '\0';
	cr_assert_eq(hookproto_report_decode(text, n, &r, &c), -EINVAL);
	cr_assert(strstr(c.msg, "over") != NULL, "%s", c.msg);
	free(text);
}

static void decision_ok(const char *text)
{
	json_object *d = json(text);
	struct cause c = {{0}};

	cr_assert_eq(hookproto_decision_check(d, &c), 0, "%s: %s", text, c.msg);
	json_object_put(d);
}

static void decision_refused(const char *text)
{
	json_object *d = json(text);
	struct cause c = {{0}};

	cr_assert_eq(hookproto_decision_check(d, &c), -EINVAL, "accepted %s", text);
	cr_assert(c.msg[0] != '\0');
	json_object_put(d);
}

Test(hookproto, decisions)
{
	decision_ok("{\"behavior\":\"allow\"}");
	decision_ok("{\"behavior\":\"deny\",\"message\":\"no\"}");
	decision_ok("{\"behavior\":\"allow\",\"updatedInput\":{\"command\":\"ls\"}}");
	decision_ok("{\"behavior\":\"allow\",\"updatedPermissions\":[{\"type\":\"addRules\"}]}");
	decision_ok("{\"behavior\":\"deny\",\"message\":\"no\",\"interrupt\":true}");
	decision_refused("{\"behavior\":\"deny\",\"interrupt\":\"yes\"}");
	decision_refused("{}");
	decision_refused("[]");
	decision_refused("{\"behavior\":\"ask\"}");
	decision_refused("{\"behavior\":true}");
	decision_refused("{\"behavior\":\"allow\",\"message\":\"x\"}");
	decision_refused("{\"behavior\":\"deny\",\"message\":3}");
	decision_refused("{\"behavior\":\"deny\",\"updatedInput\":{}}");
	decision_refused("{\"behavior\":\"allow\",\"updatedInput\":[]}");
	decision_refused("{\"behavior\":\"deny\",\"updatedPermissions\":[{\"type\":\"a\"}]}");
	decision_refused("{\"behavior\":\"allow\",\"updatedPermissions\":[]}");
	decision_refused("{\"behavior\":\"allow\",\"updatedPermissions\":[{}]}");
	decision_refused("{\"behavior\":\"allow\",\"updatedPermissions\":{\"type\":\"a\"}}");
	decision_refused("{\"behavior\":\"allow\",\"interrupt\":true}");
}

Test(hookproto, too_many_permission_updates_or_too_long_a_message)
{
	json_object *d = json("{\"behavior\":\"allow\",\"updatedPermissions\":[]}"), *arr, *m;
	struct cause c = {{0}};
	char *text = malloc(HOOKPROTO_MESSAGE_MAX + 2);

	json_object_object_get_ex(d, "updatedPermissions", &arr);
	for (int i = 0; i < HOOKPROTO_PERMISSION_MAX; i++)
		json_object_array_add(arr, json("{\"type\":\"addRules\"}"));
	cr_assert_eq(hookproto_decision_check(d, &c), 0, "%s", c.msg);
	json_object_array_add(arr, json("{\"type\":\"addRules\"}"));
	cr_assert_eq(hookproto_decision_check(d, &c), -EINVAL);
	json_object_put(d);

	memset(text, 'm', HOOKPROTO_MESSAGE_MAX + 1);
	text[HOOKPROTO_MESSAGE_MAX + 1] = '\0';
	m = json_object_new_object();
	json_object_object_add(m, "behavior", json_object_new_string("deny"));
	json_object_object_add(m, "message", json_object_new_string(text));
	cr_assert_eq(hookproto_decision_check(m, &c), -EINVAL);
	text[HOOKPROTO_MESSAGE_MAX] = '\0';
	json_object_object_add(m, "message", json_object_new_string(text));
	cr_assert_eq(hookproto_decision_check(m, &c), 0, "%s", c.msg);
	json_object_put(m);
	free(text);
}

Test(hookproto, answers_round_trip)
{
	json_object *d = json("{\"behavior\":\"deny\",\"message\":\"not now\"}"), *got = NULL;
	char *none = hookproto_answer_encode(NULL), *one = hookproto_answer_encode(d);
	char rid[HOSTPROTO_REQUEST_ID_MAX + 1], interim[HOOKPROTO_INTERIM_MAX];
	struct cause c = {{0}};
	int n;

	cr_assert_str_eq(none, "{\"decision\":null}\n");
	cr_assert_eq(hookproto_answer_decode(none, body_len(none), &got, rid, &c), 0, "%s", c.msg);
	cr_assert_null(got);
	cr_assert_str_eq(rid, "");
	cr_assert_eq(hookproto_answer_decode(one, body_len(one), &got, rid, &c), 0, "%s", c.msg);
	cr_assert(json_object_equal(got, d));
	json_object_put(got);
	n = hookproto_interim_encode("0b7c-r:1", interim);
	cr_assert_str_eq(interim, "{\"requestId\":\"0b7c-r:1\"}\n");
	cr_assert_eq(n, (int)strlen(interim));
	cr_assert_eq(hookproto_answer_decode(interim, body_len(interim), &got, rid, &c), 1, "%s",
		     c.msg);
	cr_assert_null(got);
	cr_assert_str_eq(rid, "0b7c-r:1");
	cr_assert_eq(hookproto_interim_encode("a\"b", interim), -EINVAL);
	json_object_put(got);
	free(none);
	free(one);
	json_object_put(d);
}

static void answer_refused(const char *text)
{
	json_object *got = (json_object *)&got; /* must become NULL */
	char rid[HOSTPROTO_REQUEST_ID_MAX + 1];
	struct cause c = {{0}};

	cr_assert_eq(hookproto_answer_decode(text, strlen(text), &got, rid, &c), -EINVAL,
		     "accepted %s", text);
	cr_assert_null(got);
}

Test(hookproto, malformed_answers_refused)
{
	answer_refused("");
	answer_refused("{}");
	answer_refused("{\"decision\":null,\"x\":1}");
	answer_refused("{\"decision\":{\"behavior\":\"maybe\"}}");
	answer_refused("{\"decision\":[]}");
	answer_refused("{\"decision\":null,\"decision\":null}");
	answer_refused("null");
	answer_refused("{\"requestId\":\"\"}");
	answer_refused("{\"requestId\":7}");
	answer_refused("{\"requestId\":\"a b\"}");
	answer_refused("{\"requestId\":\"r1\",\"decision\":null}");
}

Test(hookproto, claude_output)
{
	json_object *d = json("{\"behavior\":\"allow\",\"updatedInput\":{\"command\":\"ls\"}}");
	json_object *want = json("{\"hookSpecificOutput\":{\"hookEventName\":\"PermissionRequest\","
				 "\"decision\":{\"behavior\":\"allow\",\"updatedInput\":"
				 "{\"command\":\"ls\"}}}}");
	char *out = hookproto_claude_output(d);
	json_object *got = json_tokener_parse(out);

	cr_assert(json_object_equal(got, want), "%s", out);
	cr_assert_eq(out[strlen(out) - 1], '\n');
	json_object_put(got);
	json_object_put(want);
	json_object_put(d);
	free(out);
}
