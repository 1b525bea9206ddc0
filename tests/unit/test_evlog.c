/* The event log (core/evlog.h): batches numbered and written with one write, read back
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
static char path[64], old_path[64];

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/events.log", dir);
	snprintf(old_path, sizeof(old_path), "%s/events.log.1", dir);
}

static void teardown(void)
{
	unlink(path);
	unlink(old_path);
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

/* Appends one event; returns its id. */
static int64_t add_one(struct evlog *log, const char *name, const char *data)
{
	struct evlog_batch *b = evlog_batch_new();
	int64_t id = evlog_batch_add(log, b, name, data, strlen(data));

	cr_assert_gt(id, 0);
	cr_assert_eq(evlog_batch_write(log, b), 0);
	evlog_batch_unref(b);
	return id;
}

/* The ids of the event lines of a whole log, read back in small pieces. */
static size_t read_ids(const struct evlog *log, uint64_t *ids, size_t max)
{
	size_t n = 0;
	off_t at = 0;

	for (;;) {
		struct evlog_batch *r = NULL;

		cr_assert_eq(evlog_read(log, at, 64, &r), 0);
		if (r->len == 0) {
			evlog_batch_unref(r);
			return n;
		}
		for (size_t i = 0; i < r->n; i++)
			if (r->ev[i].id != 0 && n < max)
				ids[n++] = r->ev[i].id;
		at += (off_t)r->len;
		evlog_batch_unref(r);
	}
}

Test(evlog, rotation_continues_the_ids_and_keeps_the_old_file_readable)
{
	struct evlog log, old = {.fd = -1};
	uint64_t ids[16];

	cr_assert_eq(evlog_open(&log, path), 0);
	cr_assert_eq(evlog_first_id(&log), 0, "an empty log has no first id");
	add_one(&log, "session", "{\"a\":1}");
	add_one(&log, "session", "{\"a\":2}");
	cr_assert_eq(evlog_first_id(&log), 1);
	cr_assert_eq(evlog_rotate(&log, &old, path, old_path), 0);
	cr_assert_eq(log.end, 0);
	cr_assert_eq(add_one(&log, "permission", "{}"), 3, "ids go on in the new file");
	cr_assert_eq(evlog_first_id(&log), 3);
	cr_assert_eq(read_ids(&old, ids, 16), 2);
	cr_assert_eq(ids[0], 1);
	cr_assert_eq(ids[1], 2);
	cr_assert_eq(read_ids(&log, ids, 16), 1);
	cr_assert_eq(ids[0], 3);

	/* A second rotation drops the oldest file; the reader of the previous one keeps it. */
	cr_assert_eq(evlog_rotate(&log, &old, path, old_path), 0);
	cr_assert_eq(add_one(&log, "result", "{}"), 4);
	cr_assert_eq(read_ids(&old, ids, 16), 1);
	cr_assert_eq(ids[0], 3);
	cr_assert_eq(evlog_first_id(&old), 3);
	evlog_close(&log);
	evlog_close(&old);
}

Test(evlog, the_last_id_survives_a_reopen_after_rotation)
{
	struct evlog log, old = {.fd = -1}, back;

	cr_assert_eq(evlog_open(&log, path), 0);
	add_one(&log, "session", "{}");
	add_one(&log, "session", "{}");
	cr_assert_eq(evlog_rotate(&log, &old, path, old_path), 0);
	evlog_close(&log);
	evlog_close(&old);

	/* A crash right after the rename: events.log is empty, events.log.1 holds the ids. */
	cr_assert_eq(evlog_open(&log, path), 0);
	cr_assert_eq(log.last_id, 0);
	cr_assert_eq(evlog_open_read(&back, old_path), 0);
	cr_assert_eq(back.last_id, 2, "the rotated file holds the last id");
	evlog_close(&back);
	evlog_close(&log);
	unlink(old_path);
	cr_assert_eq(evlog_open_read(&back, old_path), -ENOENT, "no rotated file: none made");
}

Test(evlog, a_torn_first_line_is_not_the_first_id)
{
	struct evlog log;
	int fd = open(path, O_WRONLY | O_CREAT, 0600);

	cr_assert_eq(write(fd, "{\"id\":7,\"event\":\"sess", 22), 22);
	close(fd);
	cr_assert_eq(evlog_open(&log, path), 0);
	cr_assert_eq(evlog_first_id(&log), 0);
	cr_assert_eq(add_one(&log, "session", "{}"), 8, "ids go on above the torn line's");
	cr_assert_eq(evlog_first_id(&log), 8);
	evlog_close(&log);
}
