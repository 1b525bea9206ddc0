#include "reap.h"

#include "procstat.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int reap_init(void)
{
	return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0 ? -errno : 0;
}

void reap_orphans(pid_t agent)
{
	siginfo_t si;

	/* Looked at without reaping: the agent's own end is libuv's to collect. */
	for (;;) {
		si.si_pid = 0;
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0 ||
		    si.si_pid == agent)
			return;
		waitpid(si.si_pid, NULL, WNOHANG);
	}
}

/* This process's children, as /proc says: up to max pids into out. Returns how many. */
static size_t reap_children(pid_t self, pid_t *out, size_t max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	size_t n = 0;

	if (d == NULL)
		return 0;
	while (n < max && (e = readdir(d)) != NULL) {
		struct procstat st;
		char *end;
		long pid;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		pid = strtol(e->d_name, &end, 10);
		if (*end == '\0' && procstat_read(pid, &st) == 0 && st.ppid == (long)self)
			out[n++] = (pid_t)pid;
	}
	closedir(d);
	return n;
}

/* Signals pid and, when it leads one, its process group. */
static void reap_signal(pid_t pid, int sig)
{
	kill(pid, sig);
	if (getpgid(pid) == pid)
		kill(-pid, sig);
}

/* Reaps what of kids[0..n) has ended; the rest stay in kids. Returns how many are left. */
static size_t reap_ended(pid_t *kids, size_t n)
{
	size_t left = 0;

	for (size_t i = 0; i < n; i++)
		if (waitpid(kids[i], NULL, WNOHANG) == 0)
			kids[left++] = kids[i];
	return left;
}

void reap_leftovers(void)
{
	pid_t self = getpid(), *kids = malloc(REAP_BATCH_MAX * sizeof(*kids));
	const struct timespec poll = {0, REAP_POLL_MS * 1000000L};

	if (kids == NULL)
		return;
	for (int round = 0; round < REAP_ROUNDS_MAX; round++) {
		size_t n = reap_children(self, kids, REAP_BATCH_MAX);

		if (n == 0)
			break;
		for (size_t i = 0; i < n; i++)
			reap_signal(kids[i], SIGTERM);
		for (int waited = 0; (n = reap_ended(kids, n)) > 0 && waited < REAP_GRACE_MS;
		     waited += REAP_POLL_MS)
			nanosleep(&poll, NULL);
		for (size_t i = 0; i < n; i++) {
			reap_signal(kids[i], SIGKILL);
			waitpid(kids[i], NULL, 0);
		}
	}
	free(kids);
}
