/*
 * sseread (agentd-telegram): a stream read in chunks of any size, down to one byte, gives the
 * same events; LF, CR and CRLF end lines (a CR at a chunk's end included); comments and unknown
 * fields are skipped; data lines join with LF; an event over the limit keeps its id and name but
 * is flagged oversize, and the events after it are read as usual.
 */
#include "sseread.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

struct seen {
	char log[4096];
	int n;
};

static int record(void *arg, const struct sseread_event *ev)
{
	struct seen *s = arg;
	size_t len = strlen(s->log);

	snprintf(s->log + len, sizeof(s->log) - len, "[%s%llu %s %s%s]", ev->has_id ? "" : "-",
		 (unsigned long long)ev->id, ev->name, ev->data, ev->oversize ? " OVERSIZE" : "");
	s->n++;
	return 0;
}

/* Feeds text in chunks of size chunk (0: all at once) to a reader of data_max. */
static void feed(const char *text, size_t chunk, size_t data_max, struct seen *s)
{
	struct sseread r;
	size_t len = strlen(text);

	memset(s, 0, sizeof(*s));
	sseread_init(&r, data_max);
	if (chunk == 0)
		chunk = len;
	for (size_t off = 0; off < len; off += chunk)
		cr_assert_eq(
		    sseread_feed(&r, text + off, off + chunk > len ? len - off : chunk, record, s),
		    0);
	sseread_finish(&r);
}

static const char stream[] = ": ping\n\n"
			     "id: 17\nevent: assistant\ndata: {\"a\":1}\n\n"
			     "id: 18\r\nevent: result\r\ndata: {\"b\":\r\ndata: 2}\r\n\r\n"
			     "event: error\rdata: {\"error\":\"x\"}\r\r"
			     "retry: 100\nfoo: bar\ndata:nospace\n\n";

static const char expected[] = "[17 assistant {\"a\":1}][18 result {\"b\":\n2}]"
			       "[-0 error {\"error\":\"x\"}][-0 message nospace]";

Test(tg_sseread, events_whatever_the_chunks)
{
	struct seen s;
	size_t sizes[] = {0, 1, 2, 3, 7, 64};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		feed(stream, sizes[i], 1024, &s);
		cr_assert_str_eq(s.log, expected, "chunks of %zu", sizes[i]);
	}
}

Test(tg_sseread, an_oversize_event_keeps_its_place)
{
	struct seen s;

	feed("id: 1\nevent: big\ndata: 0123456789\ndata: 0123456789\n\n"
	     "id: 2\nevent: small\ndata: ok\n\n",
	     3, 12, &s);
	cr_assert_str_eq(s.log, "[1 big  OVERSIZE][2 small ok]");
	/* A single line longer than the whole limit. */
	feed("id: 1\nevent: big\ndata: 0123456789012345678901234567890123456789012345678901234"
	     "567890123456789012345678901234567890\n\nid: 2\ndata: ok\n\n",
	     5, 8, &s);
	cr_assert_str_eq(s.log, "[1 big  OVERSIZE][2 message ok]");
}

Test(tg_sseread, a_bad_id_is_no_id)
{
	struct seen s;

	feed("id: 12a\ndata: x\n\nid: 99999999999999999999999\ndata: y\n\n", 0, 64, &s);
	cr_assert_str_eq(s.log, "[-0 message x][-0 message y]");
}

Test(tg_sseread, a_partial_event_waits_and_reset_forgets_it)
{
	struct sseread r;
	struct seen s;

	memset(&s, 0, sizeof(s));
	sseread_init(&r, 64);
	cr_assert_eq(sseread_feed(&r, "id: 5\ndata: half", 16, record, &s), 0);
	cr_assert_eq(s.n, 0);
	sseread_reset(&r);
	cr_assert_eq(sseread_feed(&r, "data: new\n\n", 11, record, &s), 0);
	cr_assert_str_eq(s.log, "[-0 message new]");
	sseread_finish(&r);
}

static int stop_at_second(void *arg, const struct sseread_event *ev)
{
	int *n = arg;

	return ++*n == 2 ? -42 : 0;
}

Test(tg_sseread, a_callback_can_stop_the_reading)
{
	struct sseread r;
	int n = 0;
	const char *t = "data: a\n\ndata: b\n\ndata: c\n\n";

	sseread_init(&r, 64);
	cr_assert_eq(sseread_feed(&r, t, strlen(t), stop_at_second, &n), -42);
	cr_assert_eq(n, 2);
	sseread_finish(&r);
}
