/*
 * sse: event lines as agentd-host writes them are taken apart without parsing their data, and
 * anything else is -EBADMSG; frames encode exactly sse_encoded_len bytes, with line breaks inside
 * the data turned into further data lines; event ids from clients are bounded decimals.
 */
#include "sse.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int parse(const char *line, struct hostproto_event *ev)
{
	return hostproto_event_parse(line, strlen(line), ev);
}

/* Encodes ev and checks the length promise; returns a NUL-terminated copy (caller frees). */
static char *encode(const struct hostproto_event *ev)
{
	size_t len = sse_encoded_len(ev);
	char *out = malloc(len + 1);

	cr_assert_not_null(out);
	cr_assert_eq(sse_encode(ev, out), len, "sse_encode writes sse_encoded_len bytes");
	out[len] = '\0';
	return out;
}

Test(sse, an_event_line_is_taken_apart)
{
	static const char line[] =
	    "{\"id\":17,\"event\":\"assistant\",\"data\":{\"type\":\"assistant\","
	    "\"message\":{\"content\":[]}}}";
	struct hostproto_event ev;

	cr_assert_eq(parse(line, &ev), 0);
	cr_assert_eq(ev.id, 17);
	cr_assert_eq(ev.name_len, strlen("assistant"));
	cr_assert_eq(memcmp(ev.name, "assistant", ev.name_len), 0);
	cr_assert_eq(ev.data_len, strlen("{\"type\":\"assistant\",\"message\":{\"content\":[]}}"));
	cr_assert_eq(
	    memcmp(ev.data, "{\"type\":\"assistant\",\"message\":{\"content\":[]}}", ev.data_len),
	    0);
}

Test(sse, data_may_be_any_json_value)
{
	struct hostproto_event ev;

	cr_assert_eq(parse("{\"id\":1,\"event\":\"raw\",\"data\":\"not json from claude\"}", &ev),
		     0);
	cr_assert_eq(ev.data_len, strlen("\"not json from claude\""));
	cr_assert_eq(parse("{\"id\":18446744073709551615,\"event\":\"x\",\"data\":0}", &ev), 0);
	cr_assert_eq(ev.id, UINT64_MAX);
}

Test(sse, other_lines_are_refused)
{
	static const char *const bad[] = {
	    "",
	    "{\"type\":\"ok\"}",
	    "{\"type\":\"accepted\",\"after\":3}",
	    "{\"id\":,\"event\":\"x\",\"data\":1}",
	    "{\"id\":1x,\"event\":\"x\",\"data\":1}",
	    "{\"id\":18446744073709551616,\"event\":\"x\",\"data\":1}",
	    "{\"id\":123456789012345678901,\"event\":\"x\",\"data\":1}",
	    "{\"id\":1,\"event\":\"\",\"data\":1}",
	    "{\"id\":1,\"event\":\"a b\",\"data\":1}",
	    "{\"id\":1,\"event\":\"a\\nb\",\"data\":1}",
	    "{\"id\":1,\"event\":\"x\",\"data\":}",
	    "{\"id\":1,\"event\":\"x\",\"data\":1",
	    "{\"id\":1,\"event\":\"x\"}",
	    "{\"id\":1,\"event\":\"abcdefghijklmnopqrstuvwxyz0123456\",\"data\":1}",
	    " {\"id\":1,\"event\":\"x\",\"data\":1}",
	};
	struct hostproto_event ev;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(parse(bad[i], &ev), -EBADMSG, "line %zu: %s", i, bad[i]);
}

Test(sse, a_line_is_never_read_past_its_length)
{
	static const char line[] = "{\"id\":1,\"event\":\"x\",\"data\":1}";
	struct hostproto_event ev;

	/* Every prefix of a valid line is refused, and no byte past len is looked at (ASan). */
	for (size_t len = 0; len < strlen(line); len++) {
		char *copy = malloc(len + 1);

		cr_assert_not_null(copy);
		memcpy(copy, line, len);
		cr_assert_eq(hostproto_event_parse(copy, len, &ev), -EBADMSG, "prefix of %zu bytes",
			     len);
		free(copy);
	}
}

Test(sse, a_frame_has_id_event_and_data)
{
	struct hostproto_event ev = {
	    .id = 42, .name = "result", .name_len = 6, .data = "{\"a\":1}", .data_len = 7};
	char *out = encode(&ev);

	cr_assert_str_eq(out, "id: 42\nevent: result\ndata: {\"a\":1}\n\n");
	free(out);
}

Test(sse, line_breaks_in_data_become_data_lines)
{
	static const char data[] = "{\"a\":\n1,\r\n\"b\":\r2}";
	struct hostproto_event ev = {
	    .id = 1, .name = "x", .name_len = 1, .data = data, .data_len = strlen(data)};
	char *out = encode(&ev);

	cr_assert_str_eq(out,
			 "id: 1\nevent: x\ndata: {\"a\":\ndata: 1,\ndata: \"b\":\ndata: 2}\n\n");
	free(out);
}

Test(sse, breaks_at_the_edges_of_data)
{
	static const char *const datas[] = {"\n", "\r", "\r\n", "\n\n", "\r\r\n", "x\r", "\nx"};

	for (size_t i = 0; i < sizeof(datas) / sizeof(datas[0]); i++) {
		struct hostproto_event ev = {.id = 9,
					     .name = "e",
					     .name_len = 1,
					     .data = datas[i],
					     .data_len = strlen(datas[i])};
		char *out = encode(&ev);

		/* No bare CR survives, and the frame ends with exactly one blank line. */
		cr_assert_null(strchr(out, '\r'), "data %zu", i);
		cr_assert_eq(strcmp(out + strlen(out) - 2, "\n\n"), 0);
		cr_assert_null(strstr(out, "\n\n\n"), "data %zu: %s", i, out);
		free(out);
	}
}

Test(sse, client_ids)
{
	uint64_t v = 7;

	cr_assert_eq(sse_parse_id("0", 1, &v), 0);
	cr_assert_eq(v, 0);
	cr_assert_eq(sse_parse_id(" 123\t", 5, &v), 0);
	cr_assert_eq(v, 123);
	cr_assert_eq(sse_parse_id("18446744073709551615", 20, &v), 0);
	cr_assert_eq(v, UINT64_MAX);
	cr_assert_eq(sse_parse_id("18446744073709551616", 20, &v), -EINVAL);
	cr_assert_eq(sse_parse_id("000000000000000000001", 21, &v), -EINVAL);
	cr_assert_eq(sse_parse_id("", 0, &v), -EINVAL);
	cr_assert_eq(sse_parse_id("  ", 2, &v), -EINVAL);
	cr_assert_eq(sse_parse_id("-1", 2, &v), -EINVAL);
	cr_assert_eq(sse_parse_id("+1", 2, &v), -EINVAL);
	cr_assert_eq(sse_parse_id("1 2", 3, &v), -EINVAL);
	cr_assert_eq(sse_parse_id("0x10", 4, &v), -EINVAL);
}

Test(sse, query_ids)
{
	uint64_t v = 0;

	cr_assert_eq(sse_query_id("after=5", "after", &v), 0);
	cr_assert_eq(v, 5);
	cr_assert_eq(sse_query_id("x=1&after=12&y", "after", &v), 0);
	cr_assert_eq(v, 12);
	cr_assert_eq(sse_query_id("", "after", &v), -ENOENT);
	cr_assert_eq(sse_query_id("afterwards=3&safter=2", "after", &v), -ENOENT);
	cr_assert_eq(sse_query_id("after", "after", &v), -EINVAL);
	cr_assert_eq(sse_query_id("after=", "after", &v), -EINVAL);
	cr_assert_eq(sse_query_id("after=-1", "after", &v), -EINVAL);
	cr_assert_eq(sse_query_id("after=1%20", "after", &v), -EINVAL);
}

Test(sse, the_stream_head)
{
	char head[SSE_HEAD_MAX], small[16];
	int n = sse_format_head(head, sizeof(head));

	cr_assert_gt(n, 0);
	cr_assert_eq((size_t)n, strlen(head));
	cr_assert_eq(strncmp(head, "HTTP/1.1 200 OK\r\n", 17), 0);
	cr_assert_not_null(strstr(head, "Content-Type: text/event-stream\r\n"));
	cr_assert_not_null(strstr(head, "X-Accel-Buffering: no\r\n"));
	cr_assert_eq(strcmp(head + n - 4, "\r\n\r\n"), 0);
	cr_assert_eq(sse_format_head(small, sizeof(small)), -EOVERFLOW);
}
