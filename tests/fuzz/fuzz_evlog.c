/*
 * The event log (core/evlog.c) opened on whatever a file holds (a torn last line, garbage,
 * very long lines), as a host restarting after a crash finds it. Input: the file's bytes, written
 * to a memfd opened through /proc/self/fd. evlog_open must end a torn line and find the id of the
 * last line that carries one exactly as a plain scan does (ids never start over); reading the log
 * back must cut it into whole lines covering it exactly; an appended event must take the next id,
 * be read back as that event, and be found again on the next open.
 */
#include "fuzz.h"

#include "evlog.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FUZZ_EVLOG_READ 4096 /* small reads: lines longer than one read are exercised */

/* The id at the head of a line, read the simple way: {"id":<digits>, with at most 24 digits
 * kept and only the line's first 40 bytes looked at. */
static uint64_t head_id_model(const uint8_t *line, size_t len)
{
	uint64_t id = 0;
	size_t i = 6;

	len = len < 40 ? len : 40;
	if (len < 6 || memcmp(line, "{\"id\":", 6) != 0)
		return 0;
	while (i < len && i < 30 && line[i] >= '0' && line[i] <= '9')
		id = id * 10 + (uint64_t)(line[i++] - '0');
	return i < len && line[i] == ',' ? id : 0;
}

/* The id of the last line that has one, in the file as evlog_open leaves it (data plus, when it
 * does not end in '\n', a '\n'). */
static uint64_t last_id_model(const uint8_t *data, size_t size)
{
	size_t end = size; /* lines are [start, next '\n' or end) */

	for (size_t i = size; i-- > 0;) {
		if (i == 0 || data[i - 1] == '\n') {
			uint64_t id = head_id_model(data + i, end - i);

			if (id > 0)
				return id;
			end = i;
		}
	}
	return 0;
}

/* Reads the whole log back; every entry is a whole line and together they cover the log. */
static void check_read_back(const struct evlog *log, uint64_t *last)
{
	off_t at = 0;

	*last = 0;
	while (at < log->end) {
		struct evlog_batch *b = NULL;
		size_t covered = 0;

		FUZZ_CHECK(evlog_read(log, at, FUZZ_EVLOG_READ, &b) == 0, "evlog_read");
		FUZZ_CHECK(b->at == at && b->len > 0, "a read at %lld moves on", (long long)at);
		for (size_t i = 0; i < b->n; i++) {
			const struct evlog_entry *e = &b->ev[i];

			FUZZ_CHECK(e->off == covered && e->len > 0 &&
				       b->data[e->off + e->len - 1] == '\n',
				   "entry %zu is a whole line in place", i);
			covered += e->len;
			if (e->id > 0)
				*last = e->id;
		}
		FUZZ_CHECK(covered == b->len, "the entries cover the read");
		at += (off_t)b->len;
		evlog_batch_unref(b);
	}
	FUZZ_CHECK(at == log->end, "read back to the end");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evlog_batch *b;
	struct evlog log;
	char path[64];
	uint64_t want, seen;
	int64_t id;
	int fd;

	fd = memfd_create("events.log", MFD_CLOEXEC);
	FUZZ_CHECK(fd >= 0, "memfd_create");
	FUZZ_CHECK(size == 0 || write(fd, data, size) == (ssize_t)size, "write");
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);

	FUZZ_CHECK(evlog_open(&log, path) == 0, "evlog_open");
	FUZZ_CHECK(log.end == (off_t)size + (size > 0 && data[size - 1] != '\n'),
		   "a torn last line is ended");
	want = last_id_model(data, size);
	FUZZ_CHECK(log.last_id == want, "last id %llu, the file says %llu",
		   (unsigned long long)log.last_id, (unsigned long long)want);
	check_read_back(&log, &seen);
	if (log.last_id < INT64_MAX - 1) {
		b = evlog_batch_new();
		FUZZ_CHECK(b != NULL, "evlog_batch_new");
		id = evlog_batch_add(&log, b, "x", "{}", 2);
		FUZZ_CHECK(id > 0 && (uint64_t)id == want + 1, "appended id %lld after %llu",
			   (long long)id, (unsigned long long)want);
		FUZZ_CHECK(evlog_batch_write(&log, b) == 0, "evlog_batch_write");
		evlog_batch_unref(b);
		check_read_back(&log, &seen);
		FUZZ_CHECK(seen == (uint64_t)id, "the appended event is read back (%llu, %lld)",
			   (unsigned long long)seen, (long long)id);
		evlog_close(&log);
		FUZZ_CHECK(evlog_open(&log, path) == 0, "evlog_open again");
		FUZZ_CHECK(log.last_id == (uint64_t)id, "reopened: last id %llu, appended %lld",
			   (unsigned long long)log.last_id, (long long)id);
	}
	evlog_close(&log);
	close(fd);
	return 0;
}
