/* agentd-host's event log (host/evlog.h): batches numbered and written with one write, read back
 * from any offset in whole lines, ids continued across reopenings, torn lines passed over. */
#include "evlog.h"

#include "hostproto.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/test_evlog.XXXXXX";
static char path[64];

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/events.log", dir);
}

static void teardown(void)
{
	unlink(path);
	rmdir(dir);
}

TestSuite(evlog, .init = setup, .fini = teardown);

static char *slurp(size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 1 << 20);

	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

Test(evlog, a_batch_is_numbered_and_written_whole)
{
	struct evlog log;
	struct evlog_batch *b = evlog_batch_new();
	size_t len;
	char *text;

	cr_assert_eq(evlog_open(&log, path), 0);
	cr_assert_eq(log.last_id, 0);
	cr_assert_eq(evlog_batch_add(&log, b, "system", "{\"a\":1}", 7), 1);
	cr_assert_eq(evlog_batch_add(&log, b, "result", "{}", 2), 2);
	cr_assert_eq(b->n, 2);
	cr_assert(b->ev[1].result);
	cr_assert_not(b->ev[0].result);
	cr_assert_eq(evlog_batch_add(&log, b, "bad name", "{}", 2), -EINVAL);
	text = slurp(&len);
	cr_assert_eq(len, 0, "nothing is written before the batch is");
	free(text);
	cr_assert_eq(evlog_batch_write(&log, b), 0);
	cr_assert_eq(b->at, 0);
	text = slurp(&len);
	cr_assert_str_eq(text, "{\"id\":1,\"event\":\"system\",\"data\":{\"a\":1}}\n"
			       "{\"id\":2,\"event\":\"result\",\"data\":{}}\n");
	cr_assert_eq((off_t)len, log.end);
	free(text);
	evlog_batch_unref(b);
	evlog_close(&log);
	/* Reopened (the next host of the session): ids go on. */
	cr_assert_eq(evlog_open(&log, path), 0);
	cr_assert_eq(log.last_id, 2);
	cr_assert_eq(log.end, (off_t)len);
	evlog_close(&log);
}

Test(evlog, read_back_from_any_line)
{
	struct evlog log;
	struct evlog_batch *b = evlog_batch_new(), *r = NULL;
	char data[64];
	off_t third;

	cr_assert_eq(evlog_open(&log, path), 0);
	for (int i = 0; i < 100; i++) {
		int n = snprintf(data, sizeof(data), "{\"n\":%d}", i);

		evlog_batch_add(&log, b, i == 99 ? "result" : "assistant", data, (size_t)n);
	}
	cr_assert_eq(evlog_batch_write(&log, b), 0);
	third = (off_t)b->ev[2].off;
	/* A small want still gives whole lines, at least one. */
	cr_assert_eq(evlog_read(&log, third, 10, &r), 0);
	cr_assert_eq(r->at, third);
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->ev[0].id, 3);
	cr_assert_eq(r->len, b->ev[2].len);
	evlog_batch_unref(r);
	/* All the rest. */
	cr_assert_eq(evlog_read(&log, third, 1 << 20, &r), 0);
	cr_assert_eq(r->n, 98);
	cr_assert_eq(r->ev[97].id, 100);
	cr_assert(r->ev[97].result);
	cr_assert_eq(r->at + (off_t)r->len, log.end);
	cr_assert_eq(memcmp(r->data, b->data + third, r->len), 0);
	evlog_batch_unref(r);
	/* At the end: nothing. */
	cr_assert_eq(evlog_read(&log, log.end, 4096, &r), 0);
	cr_assert_eq(r->len, 0);
	evlog_batch_unref(r);
	evlog_batch_unref(b);
	evlog_close(&log);
}

Test(evlog, a_line_longer_than_want_is_read_whole)
{
	struct evlog log;
	struct evlog_batch *b = evlog_batch_new(), *r = NULL;
	size_t n = 300 * 1024;
	char *big = malloc(n);

	memset(big, '1', n);
	cr_assert_eq(evlog_open(&log, path), 0);
	evlog_batch_add(&log, b, "assistant", big, n);
	evlog_batch_add(&log, b, "result", "{}", 2);
	cr_assert_eq(evlog_batch_write(&log, b), 0);
	cr_assert_eq(evlog_read(&log, 0, 4096, &r), 0);
	cr_assert_geq(r->n, 1);
	cr_assert_gt(r->ev[0].len, n);
	cr_assert_eq(r->ev[0].id, 1);
	evlog_batch_unref(r);
	evlog_batch_unref(b);
	evlog_close(&log);
	free(big);
}

Test(evlog, torn_lines_are_passed_over)
{
	struct evlog log;
	struct evlog_batch *b = evlog_batch_new(), *r = NULL;
	int fd = open(path, O_WRONLY | O_CREAT, 0600);

	/* A host that crashed mid-write left half a line; the next host ends it. */
	cr_assert_eq(write(fd, "{\"id\":1,\"event\":\"system\",\"data\":{\"a\"", 36), 36);
	close(fd);
	cr_assert_eq(evlog_open(&log, path), 0);
	cr_assert_eq(log.end, 37);
	cr_assert_eq(evlog_read(&log, 0, 4096, &r), 0);
	cr_assert_eq(r->n, 1);
	cr_assert_eq(r->ev[0].id, 0, "a torn line is no event");
	evlog_batch_unref(r);
	/* The next event is a line of its own. */
	cr_assert_eq(evlog_batch_add(&log, b, "result", "{}", 2), 2);
	cr_assert_eq(evlog_batch_write(&log, b), 0);
	cr_assert_eq(evlog_read(&log, 0, 4096, &r), 0);
	cr_assert_eq(r->n, 2);
	cr_assert_eq(r->ev[0].id, 0);
	cr_assert_eq(r->ev[1].id, 2);
	cr_assert(r->ev[1].result);
	evlog_batch_unref(r);
	evlog_batch_unref(b);
	evlog_close(&log);
}
