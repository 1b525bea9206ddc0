#include "cost.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A line as claude 2.1 writes it for one content block of an assistant message. */
static char *line(const char *entry, const char *id, const char *model, int in, int out, int cread,
		  int cwrite, const char *stop)
{
	char *l = NULL;
	char stopjson[32];

	if (stop == NULL)
		snprintf(stopjson, sizeof(stopjson), "null");
	else
		snprintf(stopjson, sizeof(stopjson), "\"%s\"", stop);
	cr_assert(
	    asprintf(&l,
		     "{\"type\":\"assistant\",\"entrypoint\":\"%s\",\"message\":{\"id\":\"%s\","
		     "\"model\":\"%s\",\"stop_reason\":%s,\"usage\":{\"input_tokens\":%d,"
		     "\"output_tokens\":%d,\"cache_read_input_tokens\":%d,"
		     "\"cache_creation_input_tokens\":%d}}}",
		     entry, id, model, stopjson, in, out, cread, cwrite) > 0);
	return l;
}

static bool take(struct cost_transcript *t, char *l)
{
	bool changed = cost_transcript_line(t, l, strlen(l));

	free(l);
	return changed;
}

Test(cost, parse_usd)
{
	uint64_t m;

	cr_assert_eq(cost_parse_usd("0.5", &m), 0);
	cr_assert_eq(m, 500000);
	cr_assert_eq(cost_parse_usd("12", &m), 0);
	cr_assert_eq(m, 12000000);
	cr_assert_eq(cost_parse_usd("0.000001", &m), 0);
	cr_assert_eq(m, 1);
	cr_assert_eq(cost_parse_usd("1000000", &m), 0);
	cr_assert_eq(m, COST_BUDGET_MAX_MICROS);
	cr_assert_lt(cost_parse_usd("", &m), 0);
	cr_assert_lt(cost_parse_usd("0", &m), 0, "no budget of nothing");
	cr_assert_lt(cost_parse_usd("0.0000001", &m), 0, "finer than a millionth");
	cr_assert_lt(cost_parse_usd("1000000.000001", &m), 0);
	cr_assert_lt(cost_parse_usd("99999999999999999999999", &m), 0, "no overflow");
	cr_assert_lt(cost_parse_usd("-1", &m), 0);
	cr_assert_lt(cost_parse_usd("1e3", &m), 0);
	cr_assert_lt(cost_parse_usd(".5", &m), 0);
	cr_assert_lt(cost_parse_usd("5 ", &m), 0);
}

Test(cost, usd_from_json)
{
	json_object *v;
	uint64_t m;

	v = json_object_new_double(0.1);
	cr_assert_eq(cost_usd_from_json(v, &m), 0);
	cr_assert_eq(m, 100000, "0.1 is a tenth, not 0.1000000000000000055");
	json_object_put(v);
	v = json_object_new_int(3);
	cr_assert_eq(cost_usd_from_json(v, &m), 0);
	cr_assert_eq(m, 3000000);
	json_object_put(v);
	v = json_object_new_string("3");
	cr_assert_lt(cost_usd_from_json(v, &m), 0, "a string is no amount");
	json_object_put(v);
	v = json_object_new_double(-0.5);
	cr_assert_lt(cost_usd_from_json(v, &m), 0);
	json_object_put(v);
}

Test(cost, prices)
{
	cr_assert_str_eq(cost_price("claude-sonnet-4-5-20250929")->prefix, "claude-sonnet-4");
	cr_assert_str_eq(cost_price("claude-opus-4-5-20251101")->prefix, "claude-opus-4-5");
	cr_assert_eq(cost_price("claude-opus-4-6")->output, 25, "Opus 4.6 priced as Opus 4");
	cr_assert_eq(cost_price("claude-sonnet-4-6")->input, 3);
	cr_assert_eq(cost_price("claude-haiku-4-5-20251001")->cache_read, 0.10);
	cr_assert_str_eq(cost_price("claude-opus-4-1-20250805")->prefix, "claude-opus-4-1");
	cr_assert_str_eq(cost_price("claude-3-5-haiku-20241022")->prefix, "claude-3-5-haiku");
	/* Unknown: the dearest line, so a budget stops early. */
	for (size_t i = 0; i < 3; i++) {
		const char *m = i == 0 ? "gpt-9" : i == 1 ? "" : NULL;
		const struct cost_price *p = cost_price(m);

		cr_assert_eq(p->output, 75);
	}
}

Test(cost, each_message_once_with_its_largest_usage)
{
	struct cost_transcript t;

	memset(&t, 0, sizeof(t));
	/* Two lines of one message (a text block, then a tool_use block), a tool answer's
	 * message, then the turn's last answer. */
	cr_assert(take(&t, line("cli", "msg_a", "claude-sonnet-4-5", 10, 1, 100, 0, NULL)));
	cr_assert(take(&t, line("cli", "msg_a", "claude-sonnet-4-5", 10, 5, 100, 0, "tool_use")));
	cr_assert(take(&t, line("cli", "msg_b", "claude-sonnet-4-5", 20, 7, 0, 40, "end_turn")));
	cr_assert_eq(t.cost.input_tokens, 30);
	cr_assert_eq(t.cost.output_tokens, 12);
	cr_assert_eq(t.cost.cache_read_tokens, 100);
	cr_assert_eq(t.cost.turns, 1, "a tool_use answer ends no turn");
	/* $3/$15/$0.30/$3.75 per million: 30*3 + 12*15 + 100*0.3 + 40*3.75 millionths. */
	cr_assert_eq(t.cost.usd_micros, 90 + 180 + 30 + 150);
	/* The same line again (a read that saw it twice) adds nothing. */
	take(&t, line("cli", "msg_b", "claude-sonnet-4-5", 20, 7, 0, 40, "end_turn"));
	cr_assert_eq(t.cost.input_tokens, 30);
	cr_assert_eq(t.cost.turns, 1);
}

Test(cost, print_mode_lines_and_others_are_not_counted)
{
	struct cost_transcript t;
	const char *other[] = {
	    "{\"type\":\"user\",\"message\":{\"id\":\"x\",\"usage\":{\"input_tokens\":5}}}",
	    "{\"type\":\"assistant\",\"message\":{\"usage\":{\"input_tokens\":5}}}",
	    "{\"type\":\"assistant\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":-5}}}",
	    "{\"type\":\"assistant\",\"message\":{\"id\":\"m\"}}",
	    "not json",
	    "{\"type\":\"assistant\"} trailing",
	    "",
	};

	memset(&t, 0, sizeof(t));
	cr_assert_not(
	    take(&t, line("sdk-cli", "msg_s", "claude-sonnet-4-5", 10, 5, 0, 0, "end_turn")),
	    "a structured turn: its result counted it");
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		cr_assert_not(cost_transcript_line(&t, other[i], strlen(other[i])), "%s", other[i]);
	cr_assert_eq(t.cost.input_tokens, 0);
	/* No entrypoint (an older claude): counted. */
	const char *old = "{\"type\":\"assistant\",\"message\":{\"id\":\"m\",\"usage\":{"
			  "\"input_tokens\":5}}}";
	cr_assert(cost_transcript_line(&t, old, strlen(old)));
	cr_assert_eq(t.cost.input_tokens, 5);
}

static int temp_file(const char *text)
{
	char path[] = "/tmp/test_cost.XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	unlink(path);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	return fd;
}

Test(cost, read_whole_lines_incrementally)
{
	struct cost_transcript t, back;
	char *a = line("cli", "msg_1", "claude-sonnet-4-5", 10, 5, 0, 0, "end_turn");
	char *b = line("cli", "msg_2", "claude-sonnet-4-5", 1, 2, 0, 0, "end_turn");
	json_object *o;
	bool changed;
	int fd;

	memset(&t, 0, sizeof(t));
	fd = temp_file(a);
	/* A line without its newline is being written: left for later. */
	cr_assert_eq(cost_transcript_read(&t, fd, &changed), 0);
	cr_assert_not(changed);
	cr_assert_eq(t.offset, 0);
	cr_assert_eq(write(fd, "\n", 1), 1);
	cr_assert_eq(write(fd, b, strlen(b)), (ssize_t)strlen(b));
	cr_assert_eq(write(fd, "\n", 1), 1);
	cr_assert_eq(cost_transcript_read(&t, fd, &changed), 0);
	cr_assert(changed);
	cr_assert_eq(t.offset, strlen(a) + strlen(b) + 2);
	cr_assert_eq(t.cost.turns, 2);
	cr_assert_eq(t.cost.input_tokens, 11);
	/* Nothing new: nothing read, nothing changed. */
	cr_assert_eq(cost_transcript_read(&t, fd, &changed), 0);
	cr_assert_not(changed);
	/* The record's form reads back the same, and goes on from where it was. */
	o = cost_transcript_json(&t);
	cr_assert_eq(cost_transcript_from_json(o, &back), 0);
	json_object_put(o);
	cr_assert_eq(back.offset, t.offset);
	cr_assert_eq(back.cost.usd_micros, t.cost.usd_micros);
	cr_assert_eq(back.next, t.next);
	cr_assert_str_eq(back.seen[0].id, "msg_1");
	cr_assert_eq(write(fd, a, strlen(a)), (ssize_t)strlen(a));
	cr_assert_eq(write(fd, "\n", 1), 1);
	cr_assert_eq(cost_transcript_read(&back, fd, &changed), 0);
	cr_assert_eq(back.cost.turns, 2, "msg_1 again (a line read twice) is not a new message");
	/* A file shorter than what was read was replaced: nothing counts twice. */
	cr_assert_eq(ftruncate(fd, 10), 0);
	cr_assert_eq(cost_transcript_read(&back, fd, &changed), 0);
	cr_assert(changed);
	cr_assert_eq(back.offset, 10);
	cr_assert_eq(back.cost.turns, 2);
	close(fd);
	free(a);
	free(b);
}

Test(cost, an_over_long_line_is_skipped)
{
	struct cost_transcript t;
	char *b = line("cli", "msg_2", "claude-sonnet-4-5", 1, 2, 0, 0, "end_turn");
	char *big = malloc(COST_LINE_MAX + 2);
	bool changed;
	int fd;

	cr_assert_not_null(big);
	memset(big, 'x', COST_LINE_MAX + 1);
	big[COST_LINE_MAX + 1] = '\0';
	memset(&t, 0, sizeof(t));
	fd = temp_file(big);
	cr_assert_eq(write(fd, "\n", 1), 1);
	cr_assert_eq(write(fd, b, strlen(b)), (ssize_t)strlen(b));
	cr_assert_eq(write(fd, "\n", 1), 1);
	cr_assert_eq(cost_transcript_read(&t, fd, &changed), 0);
	cr_assert_eq(t.offset, COST_LINE_MAX + 2 + strlen(b) + 1);
	cr_assert_eq(t.cost.turns, 1, "the line after it counts");
	close(fd);
	free(big);
	free(b);
}

Test(cost, json_forms)
{
	struct session_cost c = {.usd_micros = 100, .input_tokens = 1, .turns = 2}, back;
	json_object *o = cost_json(&c), *v;

	cr_assert(json_object_object_get_ex(o, "usd", &v));
	cr_assert_str_eq(json_object_to_json_string(v), "0.0001");
	cr_assert_eq(cost_from_json(o, &back), 0);
	cr_assert_eq(back.usd_micros, 100);
	cr_assert_eq(back.turns, 2);
	json_object_put(o);
	v = json_object_new_string("x");
	cr_assert_lt(cost_from_json(v, &back), 0);
	json_object_put(v);
}

Test(cost, days_keep_a_month_by_utc_day)
{
	struct cost_days days, back;
	struct session_cost one = {.usd_micros = 10, .input_tokens = 1, .turns = 1}, none = {0};
	json_object *o;

	memset(&days, 0, sizeof(days));
	cost_days_add(&days, 86400 * 100 + 5, &one);
	cost_days_add(&days, 86400 * 101 - 1, &one); /* the same UTC day */
	cost_days_add(&days, 86400 * 100, &none);    /* nothing: no day */
	cr_assert_eq(days.n, 1);
	cr_assert_eq(days.d[0].day, 100);
	cr_assert_eq(days.d[0].cost.usd_micros, 20);
	for (int i = 1; i <= COST_DAYS_MAX; i++)
		cost_days_add(&days, 86400 * (100 + i), &one);
	cr_assert_eq(days.n, COST_DAYS_MAX, "a month at most");
	cr_assert_eq(days.d[0].day, 101, "the oldest day went");
	cr_assert_eq(days.d[COST_DAYS_MAX - 1].day, 100 + COST_DAYS_MAX);
	/* A clock that went back adds to the latest day. */
	cost_days_add(&days, 86400 * 50, &one);
	cr_assert_eq(days.d[COST_DAYS_MAX - 1].cost.turns, 2);
	o = cost_days_json(&days);
	cr_assert_eq(cost_days_from_json(o, &back), 0);
	json_object_put(o);
	cr_assert_eq(back.n, days.n);
	cr_assert_eq(back.d[3].day, days.d[3].day);
	o = json_tokener_parse("[{\"day\":5,\"cost\":{}},{\"day\":5,\"cost\":{}}]");
	cr_assert_lt(cost_days_from_json(o, &back), 0, "days in order, each once");
	json_object_put(o);
}

Test(cost, delta_never_below_zero)
{
	struct session_cost now = {.usd_micros = 5, .input_tokens = 10},
			    was = {.usd_micros = 7, .input_tokens = 4}, d;

	cost_delta(&now, &was, &d);
	cr_assert_eq(d.usd_micros, 0);
	cr_assert_eq(d.input_tokens, 6);
}
