/* agentd-host's pane transcript (host/transcript.h): its budget (a token bucket of bytes with a
 * burst), and through a loop with stdout on a file: a real turn prints whole, a flood prints its
 * burst then one line saying how many events were not shown (before the turn's end, or once the
 * flood is quiet), and what always prints (prompts, permission requests, turn ends) does. */
#include "transcript.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TEXT     200 /* a streaming line's text: a few hundred bytes */
#define PRINTED  (sizeof("claude: ") - 1 + TEXT + 1) /* its line in the pane */
#define FLOOD    20000                               /* events of the bench's burst */
#define FLOOD_IN ((TRANSCRIPT_BURST_BYTES + PRINTED - 1) / PRINTED) /* the first of them */

/* ---- the budget, with times of our own ------------------------------------------------------ */

Test(budget, a_full_bucket_takes_a_burst_then_skips_and_counts)
{
	struct transcript_budget b;
	int in = 0;

	transcript_budget_init(&b, 1000);
	for (int i = 0; i < 10000; i++) {
		if (transcript_budget_admit(&b, 1000)) {
			transcript_budget_charge(&b, 1000);
			in++;
		}
	}
	cr_assert_eq(in, (TRANSCRIPT_BURST_BYTES + 999) / 1000);
	cr_assert_eq(b.skipped, (uint64_t)(10000 - in));
	cr_assert_eq(transcript_budget_over(&b, 1000, false), 0, "not over while events come");
	cr_assert_eq(transcript_budget_over(&b, 1000 + TRANSCRIPT_QUIET_MS - 1, false), 0);
	cr_assert_eq(transcript_budget_over(&b, 1000 + TRANSCRIPT_QUIET_MS, false),
		     (uint64_t)(10000 - in));
	cr_assert_eq(transcript_budget_over(&b, 1000 + TRANSCRIPT_QUIET_MS, true), 0,
		     "the count starts again");
}

Test(budget, refills_at_its_rate_up_to_its_burst)
{
	struct transcript_budget b;

	transcript_budget_init(&b, 0);
	transcript_budget_charge(&b, TRANSCRIPT_BURST_BYTES);
	cr_assert_not(transcript_budget_admit(&b, 0), "spent");
	transcript_budget_over(&b, 0, true);
	cr_assert(transcript_budget_admit(&b, 1), "a millisecond later, a few bytes");
	cr_assert_eq(b.tokens, TRANSCRIPT_RATE_BYTES / 1000);
	transcript_budget_init(&b, 0);
	transcript_budget_charge(&b, TRANSCRIPT_BURST_BYTES);
	cr_assert(transcript_budget_admit(&b, 1000));
	cr_assert_eq(b.tokens, TRANSCRIPT_RATE_BYTES, "one second: the rate");
	cr_assert(transcript_budget_admit(&b, 1000000));
	cr_assert_eq(b.tokens, TRANSCRIPT_BURST_BYTES, "never more than the burst");
}

Test(budget, a_line_longer_than_the_bucket_prints_then_is_paid_for)
{
	struct transcript_budget b;

	transcript_budget_init(&b, 0);
	cr_assert(transcript_budget_admit(&b, 0));
	transcript_budget_charge(&b, 2 * TRANSCRIPT_BURST_BYTES);
	cr_assert_not(transcript_budget_admit(&b, 1000), "still below 0 a second later");
	transcript_budget_over(&b, 1000, true);
	cr_assert(transcript_budget_admit(
	    &b, (uint64_t)TRANSCRIPT_BURST_BYTES * 1000 / TRANSCRIPT_RATE_BYTES + 1));
}

Test(budget, skipping_goes_on_until_a_quiet_spell)
{
	struct transcript_budget b;
	uint64_t now = 0;

	transcript_budget_init(&b, now);
	transcript_budget_charge(&b, TRANSCRIPT_BURST_BYTES);
	/* A flood a line a millisecond: the refill would let one in now and then, but no event
	 * prints until the flood stops for TRANSCRIPT_QUIET_MS. */
	for (; now < 5000; now++)
		cr_assert_not(transcript_budget_admit(&b, now), "at %llu ms",
			      (unsigned long long)now);
	cr_assert_eq(b.skipped, 5000);
	cr_assert_not(transcript_budget_admit(&b, 4999 + TRANSCRIPT_QUIET_MS - 1));
	cr_assert_eq(transcript_budget_over(&b, 4999 + 2 * TRANSCRIPT_QUIET_MS - 2, false), 0);
	cr_assert(transcript_budget_admit(&b, 4999 + 2 * TRANSCRIPT_QUIET_MS));
	cr_assert_eq(transcript_budget_over(&b, 4999 + 2 * TRANSCRIPT_QUIET_MS, false), 5001);
}

/* ---- the transcript, its stdout a file ---------------------------------------------------- */

static char path[] = "/tmp/test_transcript.XXXXXX";
static int saved_stdout = -1;
static uv_loop_t loop;
static struct transcript t;

static void setup(void)
{
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	fflush(stdout);
	saved_stdout = dup(STDOUT_FILENO);
	cr_assert_geq(dup2(fd, STDOUT_FILENO), 0);
	close(fd);
	cr_assert_eq(uv_loop_init(&loop), 0);
	transcript_init(&t, &loop, "widgets-9");
	cr_assert_lt(t.fd, 0, "stdout is no tty here: written blocking");
}

static void teardown(void)
{
	transcript_close(&t);
	uv_run(&loop, UV_RUN_DEFAULT);
	transcript_free(&t);
	uv_loop_close(&loop);
	dup2(saved_stdout, STDOUT_FILENO);
	close(saved_stdout);
	unlink(path);
}

TestSuite(transcript, .init = setup, .fini = teardown);

/* What the pane got so far. */
static char *pane(void)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 16 << 20);
	size_t n;

	cr_assert_not_null(f);
	n = fread(buf, 1, (16 << 20) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static size_t count(const char *text, const char *needle)
{
	size_t n = 0;

	for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

static void event(const char *line)
{
	json_object *obj = json_tokener_parse(line);
	json_object *type = NULL;

	cr_assert_not_null(obj, "%s", line);
	json_object_object_get_ex(obj, "type", &type);
	transcript_event(&t, json_object_get_string(type), obj);
	json_object_put(obj);
}

/* An assistant line with text n: "<n>xxx…" of TEXT bytes. */
static void assistant(int n)
{
	char text[TEXT + 1], line[TEXT + 200];
	int len = snprintf(text, sizeof(text), "%06d", n);

	memset(text + len, 'x', (size_t)(TEXT - len));
	text[TEXT] = '\0';
	snprintf(line, sizeof(line),
		 "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":"
		 "\"%s\"}]}}",
		 text);
	event(line);
}

static void result(void)
{
	event("{\"type\":\"result\",\"subtype\":\"success\"}");
}

/* The line for n events not shown (n ≥ 1,000). */
static void note_line(char *out, size_t size, int n)
{
	snprintf(out, size,
		 "-- %d,%03d events not shown here (GET /sessions/widgets-9/events has them all)\n",
		 n / 1000, n % 1000);
}

Test(transcript, a_real_turn_prints_whole_twice_in_a_row)
{
	char *out;

	for (int turn = 0; turn < 2; turn++) {
		transcript_note(&t, "user: turn %d", turn);
		for (int i = 0; i < 500; i++)
			assistant(i);
		result();
		transcript_flush(&t);
	}
	transcript_close(&t);
	out = pane();
	cr_assert_eq(count(out, "claude: "), 1000, "500 lines of %zu bytes, twice", PRINTED);
	cr_assert_eq(count(out, "-- turn finished: success\n"), 2);
	cr_assert_eq(count(out, "not shown"), 0);
	free(out);
}

Test(transcript, a_flood_prints_its_burst_then_says_how_many_were_not_shown)
{
	char *out, want[1024], first[160], second[160], last[32];
	const char *tail;
	int half = FLOOD / 2;

	transcript_note(&t, "user: flood");
	for (int i = 0; i < FLOOD; i++) {
		assistant(i);
		if (i == half)
			event("{\"type\":\"control_request\",\"request_id\":\"r1\",\"request\":{"
			      "\"subtype\":\"can_use_tool\",\"tool_name\":\"Bash\"}}");
		if (i % 50 == 0)
			transcript_flush(&t);
	}
	result();
	transcript_close(&t);
	out = pane();
	/* The loop's time does not move while the test runs (uv_now is the loop's): no refill,
	 * so exactly the burst's lines print, in order, then what always prints. */
	cr_assert_eq(count(out, "claude: "), FLOOD_IN);
	snprintf(last, sizeof(last), "claude: %06d", (int)FLOOD_IN - 1);
	tail = strstr(out, last);
	cr_assert_not_null(tail);
	tail = strchr(tail, '\n') + 1;
	note_line(first, sizeof(first), half + 1 - (int)FLOOD_IN);
	note_line(second, sizeof(second), FLOOD - half - 1);
	snprintf(want, sizeof(want),
		 "%s-- permission requested for Bash (answer it from the API)\n%s"
		 "-- turn finished: success\n",
		 first, second);
	cr_assert_str_eq(tail, want);
	free(out);
}

Test(transcript, the_line_comes_once_the_flood_is_quiet, .timeout = 10)
{
	char *out, want[160];

	for (int i = 0; i < FLOOD; i++)
		assistant(i);
	transcript_flush(&t);
	out = pane();
	cr_assert_eq(count(out, "not shown"), 0, "not while the flood may go on");
	free(out);
	uv_run(&loop, UV_RUN_DEFAULT); /* the quiet timer, TRANSCRIPT_QUIET_MS on */
	out = pane();
	note_line(want, sizeof(want), FLOOD - (int)FLOOD_IN);
	cr_assert_not_null(strstr(out, want), "%s", out + strlen(out) - 300);
	cr_assert_eq(count(out, "not shown"), 1);
	free(out);
	/* Then events print again. */
	uv_update_time(&loop);
	assistant(FLOOD);
	transcript_flush(&t);
	out = pane();
	cr_assert_eq(count(out, "claude: "), FLOOD_IN + 1);
	free(out);
}

Test(transcript, a_note_always_prints)
{
	char *out, want[160];

	for (int i = 0; i < FLOOD; i++)
		assistant(i);
	transcript_note(&t, "user: %s", "still here");
	transcript_close(&t);
	out = pane();
	note_line(want, sizeof(want), FLOOD - (int)FLOOD_IN);
	cr_assert_not_null(strstr(out, want));
	cr_assert_not_null(strstr(out, "user: still here\n"));
	cr_assert_gt(strstr(out, "user: still here\n"), strstr(out, want));
	free(out);
}

/* A byte the pane's terminal would obey: an escape, a bell, a C1 control, DEL. */
static bool has_control(const char *text)
{
	for (const unsigned char *p = (const unsigned char *)text; *p != '\0'; p++)
		if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f ||
		    (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
			return true;
	return false;
}

Test(transcript, claude_text_with_escapes_is_shown_not_obeyed)
{
	char *out;

	/* A title, a bell, a clear, a C1 CSI, a DEL, then a second line and a tab. */
	event("{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":"
	      "\"a\\u001b]0;owned\\u0007\\u001b[2J\\u009b1m\\u007fb\\nc\\td\"}]}}");
	event("{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"tool_use\",\"name\":"
	      "\"Bash\\u001b[2J\",\"input\":{\"command\":\"\\u009b2J\"}}]}}");
	event("{\"type\":\"user\",\"message\":{\"content\":\"u\\u001b[2Jv\"}}");
	transcript_close(&t);
	out = pane();
	cr_assert_not(has_control(out), "the pane got a control character: %s", out);
	cr_assert_not_null(
	    strstr(out, "claude: a\\u001b]0;owned\\u0007\\u001b[2J\\u009b1m\\u007fb\nc\td\n"), "%s",
	    out);
	cr_assert_not_null(strstr(out, "claude wants to use Bash\\u001b[2J: "), "%s", out);
	cr_assert_not_null(strstr(out, "\\u009b2J"), "%s", out);
	cr_assert_not_null(strstr(out, "user: u\\u001b[2Jv\n"), "%s", out);
	free(out);
}

Test(transcript, a_prompt_with_escapes_is_shown_not_obeyed)
{
	char *out;

	transcript_said(&t, "user",
			"hi\x1b]0;owned\x07\x1b[2J\xc2\x9b"
			"1m there");
	transcript_close(&t);
	out = pane();
	cr_assert_not(has_control(out), "the pane got a control character: %s", out);
	cr_assert_str_eq(out, "user: hi\\u001b]0;owned\\u0007\\u001b[2J\\u009b1m there\n");
	free(out);
}
