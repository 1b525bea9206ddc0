#include "panes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PANES_STAT_MAX 1024 /* /proc/<pid>/stat is about 300 bytes; comm is at most 16 */

int panes_stat(const char *proc_root, pid_t pid, pid_t *ppid, unsigned long long *start)
{
	char path[256], buf[PANES_STAT_MAX], *p, *end;
	unsigned long long v = 0;
	ssize_t n;
	int fd;

	if (pid <= 0 ||
	    snprintf(path, sizeof(path), "%s/%d/stat", proc_root, (int)pid) >= (int)sizeof(path))
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? -ENOENT : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return errno == ESRCH ? -ENOENT : -errno;
	buf[n] = '\0';
	/* "pid (comm) state ppid ...": comm may hold blanks and parentheses, so the fields start
	 * after the last ')'. */
	p = strrchr(buf, ')');
	if (p == NULL)
		return -EBADMSG;
	p++;
	/* Field 3 is the state; ppid is 4 and starttime 22: skip 1 field, read one, skip 17. */
	for (int field = 3; field <= 22; field++) {
		while (*p == ' ')
			p++;
		if (*p == '\0')
			return -EBADMSG;
		if (field == 4 || field == 22) {
			errno = 0;
			v = strtoull(p, &end, 10);
			if (errno != 0 || end == p || (*end != ' ' && *end != '\0' && *end != '\n'))
				return -EBADMSG;
			if (field == 4)
				*ppid = (pid_t)v;
			p = end;
		} else {
			p += strcspn(p, " ");
		}
	}
	*start = v;
	return 0;
}

size_t panes_ancestry(const char *proc_root, pid_t pid, struct panes_proc *chain, size_t max)
{
	size_t n = 0;

	while (pid > 0 && n < max) {
		pid_t ppid;
		unsigned long long start;

		if (panes_stat(proc_root, pid, &ppid, &start) < 0)
			break;
		chain[n].pid = pid;
		chain[n].start = start;
		n++;
		if (ppid == pid)
			break;
		pid = ppid;
	}
	return n;
}

/* One line "<pid> <id>" into e (its start time from proc_root). 0, or -EINVAL to skip it. */
static int panes_line(const char *proc_root, const char *line, size_t len, struct panes_entry *e)
{
	char buf[PANES_LINE_MAX], *sp, *end;
	unsigned long long start;
	long pid;
	pid_t ppid;

	if (len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, line, len);
	buf[len] = '\0';
	sp = strchr(buf, ' ');
	if (sp == NULL)
		return -EINVAL;
	*sp = '\0';
	errno = 0;
	pid = strtol(buf, &end, 10);
	if (errno != 0 || end == buf || *end != '\0' || pid <= 0 || pid > INT32_MAX ||
	    !session_id_valid(sp + 1) || strlen(sp + 1) >= sizeof(e->id))
		return -EINVAL;
	if (panes_stat(proc_root, (pid_t)pid, &ppid, &start) < 0)
		return -EINVAL; /* gone since tmux listed it */
	e->proc.pid = (pid_t)pid;
	e->proc.start = start;
	memcpy(e->id, sp + 1, strlen(sp + 1) + 1);
	return 0;
}

size_t panes_parse(struct panes *t, const char *proc_root, const char *text, size_t len)
{
	const char *p = text, *stop = text + len;

	t->n = 0;
	while (p < stop && t->n < PANES_MAX) {
		const char *nl = memchr(p, '\n', (size_t)(stop - p));
		size_t linelen = (size_t)((nl != NULL ? nl : stop) - p);

		if (panes_line(proc_root, p, linelen, &t->e[t->n]) == 0)
			t->n++;
		p += linelen + 1;
	}
	return t->n;
}

const char *panes_find(const struct panes *t, const struct panes_proc *chain, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < t->n; k++)
			if (t->e[k].proc.pid == chain[i].pid &&
			    t->e[k].proc.start == chain[i].start)
				return t->e[k].id;
	return NULL;
}
