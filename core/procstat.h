/*
 * One reader of /proc/<pid>/stat (proc(5)) for every program that asks the kernel about a
 * process: its name, state, parent, CPU time, resident size, start time and, for a zombie, its
 * exit status. The command name may hold blanks and parentheses, so the fields are counted from
 * the last ')'.
 */
#ifndef AGENTD_PROCSTAT_H
#define AGENTD_PROCSTAT_H

#include <stdbool.h>
#include <stddef.h>

/* The kernel's TASK_COMM_LEN is 16; room for more keeps a longer name whole, cut on overflow. */
#define PROCSTAT_COMM_MAX 64
/* /proc/<pid>/stat is 52 numbers and a name: well under a kilobyte. */
#define PROCSTAT_LINE_MAX 1024

struct procstat {
	char comm[PROCSTAT_COMM_MAX];                    /* field 2, without its parentheses */
	char state;                                      /* field 3: 'R', 'S', 'Z', ... */
	long ppid;                                       /* field 4 */
	unsigned long long utime, stime, cutime, cstime; /* fields 14-17, clock ticks */
	unsigned long long start_ticks;                  /* field 22, ticks since boot */
	unsigned long long rss_pages;                    /* field 24 */
	int exit_code; /* field 52, the wait status of a zombie (Linux 3.5+); -1 when absent */
};

/* Parses one line of /proc/<pid>/stat. Returns 0, or -EINVAL when it is not one. */
int procstat_parse(const char *line, struct procstat *out);

/* Reads and parses /proc/<pid>/stat. Returns 0, or -ESRCH when pid is not (or no longer) there. */
int procstat_read(long pid, struct procstat *out);

#endif
