/* The bridge↔host codec (core/hostproto.h), with scripted input: every message kind built and
 * parsed back, bad fields refused, and a byte stream cut into lines whatever the reads. */
#include "hostproto.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- requests ------------------------------------------------------------------------------ */

/* Formats req, checks it is one line, and parses it back into out. */
static void round_trip(const struct hostproto_request *req, struct hostproto_request *out)
{
	size_t len = 0;
	char *line = hostproto_request_format(req, &len);
	const char *why = NULL;

	cr_assert_not_null(line);
	cr_assert_eq(len, strlen(line));
	cr_assert_eq(line[len - 1], '\n');
	cr_assert_null(memchr(line, '\n', len - 1), "exactly one line");
	cr_assert_eq(hostproto_request_parse(line, len - 1, out, &why), 0, "%s: %s", line, why);
	free(line);
}

Test(hostproto, subscribe_round_trip)
{
	struct hostproto_request req = {.kind = HOSTPROTO_SUBSCRIBE, .after = 42}, out;
	char line[HOSTPROTO_SUBSCRIBE_MAX];
	const char *why;
	size_t n;

	round_trip(&req, &out);
	cr_assert_eq(out.kind, HOSTPROTO_SUBSCRIBE);
	cr_assert_eq(out.after, 42);
	hostproto_request_release(&out);
	n = hostproto_subscribe_format(7, line);
	cr_assert_str_eq(line, "{\"type\":\"subscribe\",\"after\":7}\n");
	cr_assert_eq(hostproto_request_parse(line, n - 1, &out, &why), 0);
	cr_assert_eq(out.after, 7);
	hostproto_request_release(&out);
	/* The largest id a client may send still fits (the host reads an int64). */
	n = hostproto_subscribe_format(UINT64_MAX, line);
	cr_assert_lt(n, HOSTPROTO_SUBSCRIBE_MAX);
	cr_assert_eq(hostproto_request_parse(line, n - 1, &out, &why), 0);
	cr_assert_eq(out.after, INT64_MAX);
	hostproto_request_release(&out);
}

Test(hostproto, prompt_round_trip)
{
	json_object *p = json_object_new_string("fix\nit \"now\" ü");
	struct hostproto_request req = {.kind = HOSTPROTO_PROMPT, .prompt = p}, out;

	round_trip(&req, &out);
	cr_assert_eq(out.kind, HOSTPROTO_PROMPT);
	cr_assert_str_eq(json_object_get_string(out.prompt), "fix\nit \"now\" ü");
	hostproto_request_release(&out);
	json_object_put(p);
}

Test(hostproto, by_travels_with_prompts_and_answers)
{
	json_object *p = json_object_new_string("hi");
	struct hostproto_request req = {.kind = HOSTPROTO_PROMPT,
					.prompt = p,
					.by = "telegram:12345"},
				 out;
	const char *why;

	round_trip(&req, &out);
	cr_assert_str_eq(out.by, "telegram:12345");
	hostproto_request_release(&out);
	req.by = "a\"b"; /* not a by: left out */
	round_trip(&req, &out);
	cr_assert_null(out.by);
	hostproto_request_release(&out);
	cr_assert_eq(
	    hostproto_request_parse("{\"type\":\"interrupt\",\"by\":\"x y\"}", 31, &out, &why), 0);
	cr_assert_null(out.by, "a malformed by reads as none");
	hostproto_request_release(&out);
	json_object_put(p);
}

Test(hostproto, permission_round_trip)
{
	json_object *input = json_tokener_parse("{\"command\":\"ls\"}"),
		    *updates = json_tokener_parse("[{\"type\":\"addRules\",\"rules\":[]}]");
	struct hostproto_request req = {.kind = HOSTPROTO_PERMISSION,
					.request_id = "0b7c2f4e-8a55",
					.allow = true,
					.updated_input = input,
					.updated_permissions = updates},
				 out;

	round_trip(&req, &out);
	cr_assert_eq(out.kind, HOSTPROTO_PERMISSION);
	cr_assert_str_eq(out.request_id, "0b7c2f4e-8a55");
	cr_assert(out.allow);
	cr_assert_null(out.message);
	cr_assert_not(out.interrupt);
	cr_assert_str_eq(json_object_to_json_string_ext(out.updated_input, JSON_C_TO_STRING_PLAIN),
			 "{\"command\":\"ls\"}");
	cr_assert_eq(json_object_array_length(out.updated_permissions), 1);
	hostproto_request_release(&out);

	req = (struct hostproto_request){.kind = HOSTPROTO_PERMISSION,
					 .request_id = "r-1",
					 .message = "no \"way\"",
					 .interrupt = true};
	round_trip(&req, &out);
	cr_assert_not(out.allow);
	cr_assert_str_eq(out.message, "no \"way\"");
	cr_assert(out.interrupt);
	cr_assert_null(out.updated_input);
	cr_assert_null(out.updated_permissions);
	hostproto_request_release(&out);
	json_object_put(input);
	json_object_put(updates);
}

Test(hostproto, interrupt_round_trip)
{
	struct hostproto_request req = {.kind = HOSTPROTO_INTERRUPT}, out;

	round_trip(&req, &out);
	cr_assert_eq(out.kind, HOSTPROTO_INTERRUPT);
	hostproto_request_release(&out);
}

Test(hostproto, requests_the_protocol_refuses_are_not_built)
{
	json_object *empty = json_object_new_string(""),
		    *updates = json_tokener_parse("[{\"type\":\"setMode\"}]");
	struct hostproto_request req = {.kind = HOSTPROTO_PROMPT, .prompt = empty};
	size_t len;

	cr_assert_null(hostproto_request_format(&req, &len));
	cr_assert_eq(errno, EINVAL);
	req = (struct hostproto_request){.kind = HOSTPROTO_PROMPT};
	cr_assert_null(hostproto_request_format(&req, &len));
	req = (struct hostproto_request){.kind = HOSTPROTO_PERMISSION, .request_id = "a/b"};
	cr_assert_null(hostproto_request_format(&req, &len), "a request id with '/'");
	req = (struct hostproto_request){
	    .kind = HOSTPROTO_PERMISSION, .request_id = "r", .updated_permissions = updates};
	cr_assert_null(hostproto_request_format(&req, &len), "updatedPermissions with a deny");
	json_object_put(empty);
	json_object_put(updates);
}

Test(hostproto, bad_request_lines)
{
	static const struct {
		const char *line;
		const char *why_has;
	} bad[] = {
	    {"", "type"},
	    {"not json", "type"},
	    {"[1,2]", "type"},
	    {"{\"type\":1}", "type"},
	    {"{\"type\":\"dance\"}", "unknown"},
	    {"{\"type\":\"prompt\"}", "prompt"},
	    {"{\"type\":\"prompt\",\"prompt\":\"\"}", "prompt"},
	    {"{\"type\":\"prompt\",\"prompt\":[\"x\"]}", "prompt"},
	    {"{\"type\":\"prompt\",\"prompt\":\"a\",\"prompt\":\"b\"}", "type"},
	    {"{\"type\":\"permission\",\"behavior\":\"allow\"}", "requestId"},
	    {"{\"type\":\"permission\",\"requestId\":\"\",\"behavior\":\"allow\"}", "requestId"},
	    {"{\"type\":\"permission\",\"requestId\":\"r\"}", "behavior"},
	    {"{\"type\":\"permission\",\"requestId\":\"r\",\"behavior\":\"maybe\"}", "behavior"},
	    {"{\"type\":\"permission\",\"requestId\":\"r\",\"behavior\":\"deny\",\"message\":2}",
	     "behavior"},
	    {"{\"type\":\"permission\",\"requestId\":\"r\",\"behavior\":\"deny\",\"interrupt\":1}",
	     "behavior"},
	    {"{\"type\":\"permission\",\"requestId\":\"r\",\"behavior\":\"allow\","
	     "\"updatedInput\":[]}",
	     "behavior"},
	    {"{\"type\":\"permission\",\"requestId\":\"r\",\"behavior\":\"deny\","
	     "\"updatedPermissions\":[{\"type\":\"x\"}]}",
	     "behavior"},
	    {"{\"type\":\"permission\",\"requestId\":\"r\",\"behavior\":\"allow\","
	     "\"updatedPermissions\":[]}",
	     "behavior"},
	    {"{\"type\":\"permission\",\"requestId\":\"r\",\"behavior\":\"allow\","
	     "\"updatedPermissions\":[{}]}",
	     "behavior"},
	};
	struct hostproto_request req;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *why = NULL;

		cr_assert_eq(hostproto_request_parse(bad[i].line, strlen(bad[i].line), &req, &why),
			     -EINVAL, "%s", bad[i].line);
		cr_assert_not_null(strstr(why, bad[i].why_has), "%s: %s", bad[i].line, why);
		cr_assert_null(req.owner);
	}
}

Test(hostproto, too_many_permission_updates)
{
	char text[4096];
	size_t at = (size_t)snprintf(text, sizeof(text),
				     "{\"behavior\":\"allow\","
				     "\"updatedPermissions\":[");
	struct hostproto_request req = {0};
	json_object *o;

	for (int i = 0; i < HOSTPROTO_PERMISSION_UPDATES; i++)
		at += (size_t)snprintf(text + at, sizeof(text) - at, "%s{\"type\":\"setMode\"}",
				       i ? "," : "");
	snprintf(text + at, sizeof(text) - at, "]}");
	o = json_tokener_parse(text);
	cr_assert_eq(hostproto_permission_fields(o, &req), 0, "the limit itself is allowed");
	json_object_put(o);
	snprintf(text + at, sizeof(text) - at, ",{\"type\":\"setMode\"}]}");
	o = json_tokener_parse(text);
	cr_assert_eq(hostproto_permission_fields(o, &req), -EINVAL, "one more is refused");
	json_object_put(o);
}

Test(hostproto, request_line_limit)
{
	size_t n = HOSTPROTO_REQUEST_MAX + 1;
	char *line = malloc(n);
	struct hostproto_request req;
	const char *why = NULL;

	memset(line, ' ', n);
	cr_assert_eq(hostproto_request_parse(line, n, &req, &why), -EMSGSIZE);
	cr_assert_not_null(why);
	free(line);
}

Test(hostproto, request_ids)
{
	char longest[HOSTPROTO_REQUEST_ID_MAX + 2];

	cr_assert(hostproto_request_id_valid("toolu_01:a.b-c"));
	cr_assert_not(hostproto_request_id_valid(""));
	cr_assert_not(hostproto_request_id_valid("a b"));
	memset(longest, 'a', sizeof(longest));
	longest[HOSTPROTO_REQUEST_ID_MAX] = '\0';
	cr_assert(hostproto_request_id_valid(longest));
	longest[HOSTPROTO_REQUEST_ID_MAX] = 'a';
	longest[HOSTPROTO_REQUEST_ID_MAX + 1] = '\0';
	cr_assert_not(hostproto_request_id_valid(longest));
}

/* ---- answers ------------------------------------------------------------------------------- */

Test(hostproto, answers_round_trip)
{
	char line[HOSTPROTO_ANSWER_MAX];
	struct hostproto_answer a;
	int n;

	n = hostproto_accepted_format(17, 0, line, sizeof(line));
	cr_assert_gt(n, 0);
	cr_assert_eq(line[n - 1], '\n');
	cr_assert_eq(hostproto_answer_parse(line, (size_t)n - 1, &a), 0);
	cr_assert_eq(a.type, HOSTPROTO_ACCEPTED);
	cr_assert_eq(a.after, 17);
	cr_assert_eq(a.queued, 0);
	hostproto_answer_release(&a);

	/* A prompt claude queues behind the running turn (and one more waiting). */
	n = hostproto_accepted_format(40, 2, line, sizeof(line));
	cr_assert_str_eq(line, "{\"type\":\"accepted\",\"after\":40,\"queued\":2}\n");
	cr_assert_eq(hostproto_answer_parse(line, (size_t)n - 1, &a), 0);
	cr_assert_eq(a.after, 40);
	cr_assert_eq(a.queued, 2);
	hostproto_answer_release(&a);

	n = hostproto_ok_format(line, sizeof(line));
	cr_assert_eq(hostproto_answer_parse(line, (size_t)n - 1, &a), 0);
	cr_assert_eq(a.type, HOSTPROTO_OK);
	hostproto_answer_release(&a);

	n = hostproto_error_format(409, "turn_running", "a turn is \"already\" running", line,
				   sizeof(line));
	cr_assert_eq(hostproto_answer_parse(line, (size_t)n - 1, &a), 0);
	cr_assert_eq(a.type, HOSTPROTO_ERROR);
	cr_assert_eq(a.status, 409);
	cr_assert_str_eq(a.code, "turn_running");
	cr_assert_str_eq(a.error, "a turn is \"already\" running");
	/* The bridge adds to what it passes on. */
	json_object_object_add(a.obj, "request", json_object_new_string("prompt"));
	hostproto_answer_release(&a);

	cr_assert_eq(hostproto_error_format(500, "x", "y", line, 10), -EOVERFLOW);
	cr_assert_eq(hostproto_ok_format(line, 4), -EOVERFLOW);
}

Test(hostproto, bad_answers)
{
	static const char *const bad[] = {
	    "",
	    "ok",
	    "{}",
	    "{\"type\":\"maybe\"}",
	    "{\"type\":2}",
	    "[\"ok\"]",
	    "{\"id\":1,\"event\":\"result\",\"data\":{}}",
	};
	struct hostproto_answer a;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(hostproto_answer_parse(bad[i], strlen(bad[i]), &a), -EBADMSG, "%s",
			     bad[i]);
		cr_assert_null(a.obj);
	}
	/* An error without its fields still is one. */
	cr_assert_eq(hostproto_answer_parse("{\"type\":\"error\"}", 16, &a), 0);
	cr_assert_eq(a.status, 0);
	cr_assert_null(a.code);
	cr_assert_null(a.error);
	hostproto_answer_release(&a);
}

/* ---- events -------------------------------------------------------------------------------- */

Test(hostproto, event_round_trip)
{
	char head[HOSTPROTO_EVENT_HEAD_MAX], line[256];
	struct hostproto_event ev;
	const char *data = "{\"type\":\"result\",\"x\":\"}\"}";
	int n = hostproto_event_head(UINT64_MAX, "result", head);

	cr_assert_gt(n, 0);
	snprintf(line, sizeof(line), "%s%s%s", head, data, HOSTPROTO_EVENT_TAIL);
	cr_assert_eq(hostproto_event_parse(line, strlen(line) - 1, &ev), 0);
	cr_assert_eq(ev.id, UINT64_MAX);
	cr_assert_eq(ev.name_len, 6);
	cr_assert_eq(memcmp(ev.name, "result", 6), 0);
	cr_assert_eq(ev.data_len, strlen(data));
	cr_assert_eq(memcmp(ev.data, data, ev.data_len), 0);

	/* The longest name fits the head. */
	memset(line, 'a', HOSTPROTO_NAME_MAX - 1);
	line[HOSTPROTO_NAME_MAX - 1] = '\0';
	cr_assert_gt(hostproto_event_head(UINT64_MAX, line, head), 0);
	line[HOSTPROTO_NAME_MAX - 1] = 'a';
	line[HOSTPROTO_NAME_MAX] = '\0';
	cr_assert_eq(hostproto_event_head(1, line, head), -EINVAL);
	cr_assert_eq(hostproto_event_head(1, "bad name", head), -EINVAL);
	cr_assert_eq(hostproto_event_head(1, "", head), -EINVAL);
}

Test(hostproto, event_head_text)
{
	char head[HOSTPROTO_EVENT_HEAD_MAX];

	cr_assert_eq(hostproto_event_head(0, "x", head), 27);
	cr_assert_str_eq(head, "{\"id\":0,\"event\":\"x\",\"data\":");
	cr_assert_gt(hostproto_event_head(1234567890, "tool_use", head), 0);
	cr_assert_str_eq(head, "{\"id\":1234567890,\"event\":\"tool_use\",\"data\":");
	cr_assert_gt(hostproto_event_head(UINT64_MAX, "a", head), 0);
	cr_assert_str_eq(head, "{\"id\":18446744073709551615,\"event\":\"a\",\"data\":");
}

Test(hostproto, bad_event_lines)
{
	static const char *const bad[] = {
	    "",
	    "{\"type\":\"ok\"}",
	    "{\"id\":,\"event\":\"a\",\"data\":1}",
	    "{\"id\":18446744073709551616,\"event\":\"a\",\"data\":1}",
	    "{\"id\":1,\"event\":\"\",\"data\":1}",
	    "{\"id\":1,\"event\":\"a b\",\"data\":1}",
	    "{\"id\":1,\"event\":\"a\",\"data\":}",
	    "{\"id\":1,\"event\":\"a\",\"data\":1",
	    "{\"id\":1,\"name\":\"a\",\"data\":1}",
	};
	struct hostproto_event ev;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(hostproto_event_parse(bad[i], strlen(bad[i]), &ev), -EBADMSG, "%s",
			     bad[i]);
}

Test(hostproto, event_names_of_claude_lines)
{
	char name[HOSTPROTO_NAME_MAX];

	hostproto_event_name("assistant", name);
	cr_assert_str_eq(name, "assistant");
	hostproto_event_name("control_request", name);
	cr_assert_str_eq(name, "control_request");
	hostproto_event_name("Assistant", name);
	cr_assert_str_eq(name, "unknown");
	hostproto_event_name("a\nb", name);
	cr_assert_str_eq(name, "unknown");
	hostproto_event_name("", name);
	cr_assert_str_eq(name, "unknown");
	hostproto_event_name(NULL, name);
	cr_assert_str_eq(name, "unknown");
	hostproto_event_name("abcdefghijklmnopqrstuvwxyzabcdefg", name);
	cr_assert_str_eq(name, "unknown", "too long");
}

/* ---- lines --------------------------------------------------------------------------------- */

struct seen {
	char lines[16][64];
	size_t n, over[4], nover;
	int stop_at; /* return 1 from the callback for this line (1-based); 0: never */
};

static int on_line(void *arg, const char *line, size_t len)
{
	struct seen *s = arg;

	if (line == NULL) {
		s->over[s->nover++] = len;
		return 0;
	}
	cr_assert_lt(len, sizeof(s->lines[0]));
	memcpy(s->lines[s->n], line, len);
	s->lines[s->n][len] = '\0';
	s->n++;
	return s->stop_at != 0 && (size_t)s->stop_at == s->n;
}

/* Feeds text in reads of the given sizes (0-terminated list; the rest in one read). */
static int feed(struct hostproto_reader *rd, struct seen *s, const char *text, const size_t *cuts)
{
	size_t at = 0, len = strlen(text);
	int r = 0;

	for (; cuts != NULL && *cuts != 0 && at < len && r == 0; cuts++) {
		size_t n = *cuts < len - at ? *cuts : len - at;

		r = hostproto_reader_feed(rd, text + at, n, on_line, s);
		at += n;
	}
	if (r == 0 && at < len)
		r = hostproto_reader_feed(rd, text + at, len - at, on_line, s);
	return r;
}

Test(hostproto, whole_lines)
{
	struct hostproto_reader rd;
	struct seen s = {0};

	hostproto_reader_init(&rd, 32);
	cr_assert_eq(feed(&rd, &s, "one\ntwo\n\nthree\n", NULL), 0);
	cr_assert_eq(s.n, 4);
	cr_assert_str_eq(s.lines[0], "one");
	cr_assert_str_eq(s.lines[1], "two");
	cr_assert_str_eq(s.lines[2], "", "an empty line is a line");
	cr_assert_str_eq(s.lines[3], "three");
	cr_assert_eq(hostproto_reader_pending(&rd), 0);
	cr_assert_null(rd.buf, "whole lines are not copied");
	hostproto_reader_free(&rd);
}

Test(hostproto, lines_split_across_reads)
{
	static const size_t one_byte[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0};
	static const size_t odd[] = {2, 7, 3, 0};
	const char *text = "alpha\nbeta\ngamma\n";
	struct hostproto_reader rd;
	struct seen s = {0};

	hostproto_reader_init(&rd, 32);
	cr_assert_eq(feed(&rd, &s, text, one_byte), 0);
	cr_assert_eq(s.n, 3);
	cr_assert_str_eq(s.lines[0], "alpha");
	cr_assert_str_eq(s.lines[2], "gamma");
	memset(&s, 0, sizeof(s));
	cr_assert_eq(feed(&rd, &s, text, odd), 0);
	cr_assert_eq(s.n, 3);
	cr_assert_str_eq(s.lines[1], "beta");
	/* An unfinished line waits for its end. */
	memset(&s, 0, sizeof(s));
	cr_assert_eq(hostproto_reader_feed(&rd, "delta", 5, on_line, &s), 0);
	cr_assert_eq(s.n, 0);
	cr_assert_eq(hostproto_reader_pending(&rd), 5);
	cr_assert_eq(hostproto_reader_feed(&rd, "!\nx", 3, on_line, &s), 0);
	cr_assert_eq(s.n, 1);
	cr_assert_str_eq(s.lines[0], "delta!");
	cr_assert_eq(hostproto_reader_pending(&rd), 1);
	hostproto_reader_free(&rd);
}

Test(hostproto, over_long_lines_are_dropped_whole)
{
	static const size_t cuts[] = {5, 5, 5, 0};
	struct hostproto_reader rd;
	struct seen s = {0};

	hostproto_reader_init(&rd, 8);
	/* In one read: the long line is reported and skipped, the next one is whole. */
	cr_assert_eq(feed(&rd, &s, "12345678\n123456789\nok\n", NULL), 0);
	cr_assert_eq(s.n, 2);
	cr_assert_str_eq(s.lines[0], "12345678", "max itself fits");
	cr_assert_str_eq(s.lines[1], "ok");
	cr_assert_eq(s.nover, 1);
	cr_assert_eq(s.over[0], 9);
	/* Across reads: reported once, when it goes over; nothing of it reaches the next line. */
	memset(&s, 0, sizeof(s));
	cr_assert_eq(feed(&rd, &s, "abcdefghijklmnop\nyes\n", cuts), 0);
	cr_assert_eq(s.nover, 1);
	cr_assert_eq(s.n, 1);
	cr_assert_str_eq(s.lines[0], "yes");
	cr_assert_eq(hostproto_reader_pending(&rd), 0);
	hostproto_reader_free(&rd);
}

Test(hostproto, a_callback_stops_the_feed)
{
	struct hostproto_reader rd;
	struct seen s = {.stop_at = 1};

	hostproto_reader_init(&rd, 32);
	cr_assert_eq(feed(&rd, &s, "first\nsecond\n", NULL), 1);
	cr_assert_eq(s.n, 1, "nothing after the line that stopped it");
	hostproto_reader_free(&rd);
}

/* POST /sessions refuses a prompt with U+0000; so does every way into a structured session. */
Test(hostproto, a_prompt_with_nul_is_refused)
{
	static const char line[] = "{\"type\":\"prompt\",\"prompt\":\"a\\u0000b\"}";
	json_object *p = json_object_new_string_len("a\0b", 3);
	struct hostproto_request req = {.kind = HOSTPROTO_PROMPT, .prompt = p};
	const char *why = NULL;
	size_t len;

	cr_assert_eq(hostproto_request_parse(line, strlen(line), &req, &why), -EINVAL);
	cr_assert_str_eq(why, "prompt must be a string without NUL bytes");
	cr_assert_null(req.owner);
	req = (struct hostproto_request){.kind = HOSTPROTO_PROMPT, .prompt = p};
	errno = 0;
	cr_assert_null(hostproto_request_format(&req, &len));
	cr_assert_eq(errno, EINVAL);
	json_object_put(p);
}
