#include "evlog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EVLOG_TAIL_CHUNK (64 * 1024)

uint64_t evlog_line_id(const char *line, size_t len)
{
	static const char prefix[] = "{\"id\":";
	uint64_t id = 0;
	size_t i = sizeof(prefix) - 1;

	if (len < i || memcmp(line, prefix, i) != 0)
		return 0;
	for (; i < len && line[i] >= '0' && line[i] <= '9' && i < 30; i++)
		id = id * 10 + (uint64_t)(line[i] - '0');
	return i < len && line[i] == ',' ? id : 0;
}

/* The last id is in the last complete line; lines can be long, so scan back chunk by chunk. */
static uint64_t evlog_scan_last(int fd)
{
	off_t end = lseek(fd, 0, SEEK_END), pos;
	char *buf = malloc(EVLOG_TAIL_CHUNK);
	uint64_t id = 0;

	if (buf == NULL || end <= 0)
		goto out;
	/* Find the start of the last line: the byte after the second-to-last '\n'. */
	for (pos = end - 1; pos > 0 && id == 0;) {
		off_t from = pos > EVLOG_TAIL_CHUNK ? pos - EVLOG_TAIL_CHUNK : 0;
		ssize_t n = pread(fd, buf, (size_t)(pos - from), from);

		if (n <= 0)
			break;
		for (ssize_t i = n - 1; i >= 0; i--) {
			if (buf[i] == '\n' && from + i < end - 1) {
				char head[40];
				ssize_t h = pread(fd, head, sizeof(head), from + i + 1);

				id = h > 0 ? evlog_line_id(head, (size_t)h) : 0;
				goto out;
			}
		}
		pos = from;
	}
	{
		char head[40];
		ssize_t h = pread(fd, head, sizeof(head), 0);

		id = h > 0 ? evlog_line_id(head, (size_t)h) : 0;
	}
out:
	free(buf);
	return id;
}

int evlog_open(struct evlog *log, const char *path)
{
	log->fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	if (log->fd < 0)
		return -errno;
	log->last_id = evlog_scan_last(log->fd);
	return 0;
}

void evlog_close(struct evlog *log)
{
	if (log->fd >= 0)
		close(log->fd);
	log->fd = -1;
}

int64_t evlog_append(struct evlog *log, const char *event, const char *data, size_t data_len,
		     char **line, size_t *line_len)
{
	char head[160];
	uint64_t id = log->last_id + 1;
	int hn = snprintf(head, sizeof(head),
			  "{\"id\":%llu,\"event\":\"%s\",\"data\":", (unsigned long long)id, event);
	size_t len;
	char *buf;

	if (hn < 0 || (size_t)hn >= sizeof(head))
		return -EINVAL;
	len = (size_t)hn + data_len + 2;
	buf = malloc(len + 1);
	if (buf == NULL)
		return -ENOMEM;
	memcpy(buf, head, (size_t)hn);
	memcpy(buf + hn, data, data_len);
	buf[len - 2] = '}';
	buf[len - 1] = '\n';
	buf[len] = '\0';
	/* One write with O_APPEND: a reader sees whole lines or nothing of this one. */
	if (write(log->fd, buf, len) != (ssize_t)len) {
		int e = errno ? errno : EIO;
		free(buf);
		return -e;
	}
	log->last_id = id;
	*line = buf;
	*line_len = len;
	return (int64_t)id;
}
