#include "procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* proc(5) numbers the fields from 1: the pid, the name, then the state. */
#define PROCSTAT_FIELD_STATE 3

int procstat_parse(const char *line, struct procstat *out)
{
	const char *open_paren = strchr(line, '('), *close_paren = strrchr(line, ')');
	const char *p;
	int field;

	memset(out, 0, sizeof(*out));
	out->exit_code = -1;
	out->ppid = -1;
	if (open_paren == NULL || close_paren == NULL || close_paren < open_paren ||
	    close_paren[1] != ' ' || close_paren[2] == '\0')
		return -EINVAL;
	snprintf(out->comm, sizeof(out->comm), "%.*s", (int)(close_paren - open_paren - 1),
		 open_paren + 1);
	out->state = close_paren[2];
	p = close_paren + 2;
	for (field = PROCSTAT_FIELD_STATE; *p != '\0' && *p != '\n'; field++) {
		unsigned long long v = strtoull(p, NULL, 10);

		switch (field) {
		case 4:
			out->ppid = strtol(p, NULL, 10);
			break;
		case 14:
			out->utime = v;
			break;
		case 15:
			out->stime = v;
			break;
		case 16:
			out->cutime = v;
			break;
		case 17:
			out->cstime = v;
			break;
		case 22:
			out->start_ticks = v;
			break;
		case 24:
			out->rss_pages = v;
			break;
		case 52:
			out->exit_code = (int)strtol(p, NULL, 10);
			break;
		}
		p += strcspn(p, " \n");
		p += strspn(p, " ");
	}
	/* The state and the parent at least: a line cut before them is not a stat line. */
	return field > 4 ? 0 : -EINVAL;
}

int procstat_read(long pid, struct procstat *out)
{
	char path[64], buf[PROCSTAT_LINE_MAX];
	ssize_t n;
	int fd;

	if (pid <= 0 || snprintf(path, sizeof(path), "/proc/%ld/stat", pid) >= (int)sizeof(path))
		return -ESRCH;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	return procstat_parse(buf, out) < 0 ? -ESRCH : 0;
}
