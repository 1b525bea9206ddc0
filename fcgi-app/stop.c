#include "stop.h"

#include "log.h"
#include "procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <time.h>
#include <unistd.h>

#define STOP_WRAPPER "bwrap" /* agentd-cage execs it: the agent runs below */

/* The comm and the parent of pid. Returns 0 or -ESRCH. */
static int stop_stat(pid_t pid, char *comm, size_t commlen, pid_t *ppid)
{
	struct procstat ps;

	if (procstat_read(pid, &ps) < 0)
		return -ESRCH;
	if (snprintf(comm, commlen, "%s", ps.comm) >= (int)commlen)
		return -ESRCH; /* longer than any name looked for: none of them */
	*ppid = (pid_t)ps.ppid;
	return 0;
}

/* The one child of pid (a wrapper has one), or -ESRCH. */
static pid_t stop_child(pid_t pid)
{
	char path[64], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	return (pid_t)strtol(buf, NULL, 10) > 0 ? (pid_t)strtol(buf, NULL, 10) : -ESRCH;
}

/* The agent below the pane's process pane: past the cage's wrappers. */
static pid_t stop_agent_pid(pid_t pane)
{
	char comm[32];
	pid_t pid = pane, ppid, child;

	for (int i = 0; i < STOP_WRAPPER_DEPTH; i++) {
		if (stop_stat(pid, comm, sizeof(comm), &ppid) < 0 ||
		    strcmp(comm, STOP_WRAPPER) != 0)
			return pid;
		if ((child = stop_child(pid)) < 0)
			return pid;
		pid = child;
	}
	return pid;
}

/*
 * A pidfd of the pane's process of s. Returns the fd, 1 when the process has ended (or is no
 * longer the tmux server's child: its pid may be another's now), or -errno with cause; *pane set.
 */
static int stop_open(const struct app *app, const struct session *s, pid_t *pane,
		     struct cause *cause)
{
	char comm[32];
	pid_t ppid;
	int pid = tmux_pane_pid(&app->tmux, s->tmux_name, s->id, cause), server, fd;
	struct pollfd probe;

	if (pid < 0)
		return pid;
	server = tmux_server_pid(&app->tmux, cause);
	if (server < 0)
		return server;
	fd = pidfd_open((pid_t)pid, 0);
	if (fd < 0)
		return errno == ESRCH ? 1
				      : cause_fail(cause, errno, "pidfd_open: %s", strerror(errno));
	/* Checked after the pidfd is held: the pid cannot change owner in between any more. */
	probe = (struct pollfd){.fd = fd, .events = POLLIN};
	if (stop_stat((pid_t)pid, comm, sizeof(comm), &ppid) < 0 || ppid != server ||
	    poll(&probe, 1, 0) > 0) {
		close(fd);
		return 1;
	}
	*pane = (pid_t)pid;
	return fd;
}

/* Waits up to ms for the process of pidfd to end. Returns true when it did. */
static bool stop_wait(int pidfd, int ms)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};
	int r;

	do
		r = poll(&p, 1, ms);
	while (r < 0 && errno == EINTR);
	return r > 0;
}

/* Interrupts the agent of pane. Answers whether the signal went: one that could not (the
 * daemon lacks CAP_KILL for a session's own uid) is not waited for. */
static bool stop_signal_agent(const struct session *s, pid_t pane)
{
	pid_t agent = stop_agent_pid(pane);

	if (kill(agent, SIGINT) == 0)
		return true;
	log_warn("session %s: cannot interrupt its agent %d: %s", s->id, (int)agent,
		 strerror(errno));
	return false;
}

static void stop_signal_kill(pid_t pane)
{
	/* tmux makes the pane's process the leader of its process group. */
	kill(-pane, SIGKILL);
	kill(pane, SIGKILL);
}

int stop_interrupt(const struct app *app, const struct session *s, struct cause *cause)
{
	pid_t pane = 0;
	int fd = stop_open(app, s, &pane, cause);

	if (fd <= 1)
		return fd;
	stop_signal_agent(s, pane);
	close(fd);
	return 0;
}

int stop_kill(const struct app *app, const struct session *s, struct cause *cause)
{
	pid_t pane = 0;
	int fd = stop_open(app, s, &pane, cause);

	if (fd <= 1)
		return fd;
	log_warn("session %s: its agent did not end within %d s of the interrupt; killing it",
		 s->id, app->cfg->stop_grace);
	stop_signal_kill(pane);
	close(fd);
	return 0;
}

/* Whether pid is a zombie (ended, not reaped). */
static bool stop_zombie(pid_t pid)
{
	struct procstat ps;

	return procstat_read(pid, &ps) == 0 && ps.state == 'Z';
}

/*
 * The pane's process ended: gives tmux STOP_REAP_WAIT_MS to reap it, then makes it (tmux_reap),
 * so that no zombie of the agent outlives its stop (tmux 3.3a reaps some only with its next
 * child's exit).
 */
static void stop_reaped(const struct app *app, pid_t pane)
{
	struct timespec pause = {0, STOP_REAP_POLL_MS * 1000000L};
	struct cause cause = {{0}};

	for (int waited = 0; waited < STOP_REAP_WAIT_MS; waited += STOP_REAP_POLL_MS) {
		if (!stop_zombie(pane))
			return;
		nanosleep(&pause, NULL);
	}
	if (tmux_reap(&app->tmux, &cause) < 0)
		log_warn("cannot make tmux reap pane process %d: %s", (int)pane, cause.msg);
}

int stop_agent(const struct app *app, const struct session *s, struct cause *cause)
{
	pid_t pane = 0;
	int fd = stop_open(app, s, &pane, cause), r = 0;

	if (fd <= 1)
		return fd == 1 ? 0 : fd;
	if (!stop_signal_agent(s, pane) || !stop_wait(fd, app->cfg->stop_grace * 1000)) {
		log_warn("session %s: its agent did not end within %d s of the interrupt; killing "
			 "it",
			 s->id, app->cfg->stop_grace);
		stop_signal_kill(pane);
		stop_wait(fd, STOP_KILL_WAIT_MS);
		r = 1;
	}
	close(fd);
	stop_reaped(app, pane);
	return r;
}
