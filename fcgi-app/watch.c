#include "watch.h"

#include "api_usage.h"
#include "boot.h"
#include "log.h"
#include "recovery.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <time.h>
#include <unistd.h>

struct watch {
	const struct app *app;
	pthread_t worker, waiter;
	bool worker_started, waiter_started;
	int kick[2]; /* the waiter and watch_stop write a byte: the worker runs a pass */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stopping;
};

static bool watch_stopping(struct watch *w)
{
	bool stopping;

	pthread_mutex_lock(&w->mu);
	stopping = w->stopping;
	pthread_mutex_unlock(&w->mu);
	return stopping;
}

/* Sleeps up to ms, or less when watch_stop wakes us. Returns true when stopping. */
static bool watch_pause(struct watch *w, long ms)
{
	struct timespec until;
	bool stopping;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&w->mu);
	if (!w->stopping)
		pthread_cond_timedwait(&w->cv, &w->mu, &until);
	stopping = w->stopping;
	pthread_mutex_unlock(&w->mu);
	return stopping;
}

static void watch_kick(struct watch *w)
{
	/* The pipe is non-blocking: when it is full, a pass is due anyway. */
	if (write(w->kick[1], "k", 1) < 0 && errno != EAGAIN)
		log_warn("cannot wake the liveness worker: %s", strerror(errno));
}

/*
 * Adds a pidfd of pid to fds (the worker's poll set). Returns false when pid has already ended
 * (gone, or a zombie whose pidfd would wake poll at once): it is left out.
 */
static bool watch_add_pid(struct pollfd *fds, nfds_t *nfds, long pid)
{
	struct pollfd probe;
	int fd;

	if (pid <= 0 || *nfds >= WATCH_FDS_MAX)
		return true;
	fd = pidfd_open((pid_t)pid, 0);
	if (fd < 0)
		return errno != ESRCH;
	probe = (struct pollfd){.fd = fd, .events = POLLIN};
	if (poll(&probe, 1, 0) > 0) {
		close(fd);
		return false;
	}
	fds[*nfds] = probe;
	(*nfds)++;
	return true;
}

static int64_t watch_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *watch_worker(void *arg)
{
	struct watch *w = arg;
	struct pollfd *fds = calloc(WATCH_FDS_MAX, sizeof(*fds));
	char sink[64];
	bool rechecked = false;

	if (fds == NULL) {
		log_error("liveness worker: out of memory");
		return NULL;
	}
	while (!watch_stopping(w)) {
		struct cause cause = {{0}};
		struct tmux_info *list = NULL;
		size_t n = 0;
		nfds_t nfds = 1;
		int timeout = RECOVERY_INTERVAL_S * 1000;
		int64_t wake = 0;

		/* A new tmux server first: the sessions that were running in the one before start
		 * in it before recovery judges them (a small reboot, boot.h). */
		if (boot_resume(w->app, &cause) < 0)
			log_warn("%s", cause.msg);
		cause.msg[0] = '\0';
		if (recovery_pass(w->app, &list, &n, &wake, &cause) < 0)
			log_warn("reconciliation failed: %s", cause.msg);
		/* Terminal turns' costs reach the list (whose entries are the records'). */
		usage_refresh_all(w->app);
		/* A restart's backoff, a timeout or its grace ends before the next pass is due. */
		if (wake != 0 && wake - watch_now_ms() < timeout)
			timeout = wake - watch_now_ms() > 0 ? (int)(wake - watch_now_ms()) : 0;
		fds[0].fd = w->kick[0];
		fds[0].events = POLLIN;
		fds[0].revents = 0;
		bool ended = n > 0 && !watch_add_pid(fds, &nfds, list[0].server_pid);

		for (size_t i = 0; i < n; i++)
			if (!list[i].pane_dead && !watch_add_pid(fds, &nfds, list[i].pane_pid))
				ended = true;
		free(list);
		/* A process that ended after the list was taken: one more pass soon. A zombie tmux
		 * does not reap stays one (the pass judged it already): no second quick pass. */
		if (ended && !rechecked)
			timeout = WATCH_RECHECK_MS;
		rechecked = ended && !rechecked;
		if (poll(fds, nfds, timeout) < 0 && errno != EINTR)
			log_warn("liveness worker: poll: %s", strerror(errno));
		while (read(w->kick[0], sink, sizeof(sink)) > 0)
			;
		for (nfds_t i = 1; i < nfds; i++)
			close(fds[i].fd);
	}
	free(fds);
	return NULL;
}

static void *watch_waiter(void *arg)
{
	struct watch *w = arg;
	const struct tmux *tm = &w->app->tmux;
	unsigned failures = 0;
	bool hooks = false;

	while (!watch_stopping(w)) {
		struct cause cause = {{0}};
		int r = 0;

		if (!hooks) {
			r = tmux_install_hooks(tm, &cause);
			hooks = r == 0;
			if (hooks && failures > 0)
				watch_kick(w); /* a server again: its sessions are news */
			if (hooks)
				failures = 0;
		}
		/* Hooks not installed (no server, or tmux refused): waiting now could block for
		 * good on a server that never signals, so try again after a pause instead. */
		if (!hooks) {
			if (r != -ENOENT && failures == 0)
				log_warn("cannot install the tmux hooks: %s", cause.msg);
			if (failures++ == 0)
				watch_kick(w); /* no server: its sessions are lost */
			if (watch_pause(w, WATCH_RETRY_MS))
				break;
			continue;
		}
		r = tmux_wait(tm, &cause);
		if (r == 0) {
			failures = 0;
			watch_kick(w);
			continue;
		}
		hooks = false;
		if (r != -ENOENT)
			log_warn("cannot wait for tmux: %s", cause.msg);
		if (failures++ == 0)
			watch_kick(w); /* the server went away: its sessions are lost */
		else if (watch_pause(w, WATCH_RETRY_MS))
			break;
	}
	return NULL;
}

struct watch *watch_start(const struct app *app)
{
	struct watch *w = calloc(1, sizeof(*w));
	int r;

	if (w == NULL)
		return NULL;
	w->app = app;
	w->kick[0] = w->kick[1] = -1;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	if (pipe2(w->kick, O_CLOEXEC | O_NONBLOCK) < 0) {
		r = errno;
		goto fail;
	}
	r = pthread_create(&w->worker, NULL, watch_worker, w);
	if (r != 0)
		goto fail;
	w->worker_started = true;
	r = pthread_create(&w->waiter, NULL, watch_waiter, w);
	if (r != 0)
		goto fail;
	w->waiter_started = true;
	return w;
fail:
	watch_stop(w);
	errno = r;
	return NULL;
}

/* Joins t within the deadline. Returns false when it did not end (it is detached). */
static bool watch_join(pthread_t t, const struct timespec *until)
{
	if (pthread_timedjoin_np(t, NULL, until) == 0)
		return true;
	pthread_detach(t);
	return false;
}

void watch_stop(struct watch *w)
{
	struct timespec until;
	bool ended = true;

	if (w == NULL)
		return;
	pthread_mutex_lock(&w->mu);
	w->stopping = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	if (w->worker_started)
		watch_kick(w);
	/* Wakes a waiter blocked in tmux_wait; one not waiting yet finds the signal kept. */
	if (w->waiter_started)
		tmux_signal(&w->app->tmux);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WATCH_STOP_WAIT_MS / 1000;
	if (w->worker_started)
		ended = watch_join(w->worker, &until) && ended;
	if (w->waiter_started)
		ended = watch_join(w->waiter, &until) && ended;
	if (!ended) {
		/* Blocked in a tmux that does not answer: the process exits around it, and w
		 * stays allocated for the detached thread. */
		log_warn("the liveness watcher did not stop within %d ms", WATCH_STOP_WAIT_MS);
		return;
	}
	if (w->kick[0] >= 0) {
		close(w->kick[0]);
		close(w->kick[1]);
	}
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
}
