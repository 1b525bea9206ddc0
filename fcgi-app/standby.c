#include "standby.h"

#include "app.h"
#include "log.h"
#include "proc.h"
#include "session.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define STANDBY_RETRY_MIN_MS 1000 /* after a worker that could not start, doubling */
#define STANDBY_RETRY_MAX_MS 60000
/* Spaces after --standby: the room standby_retitle writes `--create <id>` into. */
#define STANDBY_TITLE_ROOM (SESSION_ID_MAX + 1)

struct standby {
	const struct app *app;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int fd; /* our end of the waiting worker's pair; -1 while none waits */
	bool stopping;
	pthread_t thread;
};

/* Starts one waiting worker: returns our end of its pair, or -errno. */
static int standby_spawn(const struct app *app)
{
	char room[STANDBY_TITLE_ROOM + 1];
	char *argv[] = {(char *)app->self_exe, STANDBY_ARG, room,
			app->tmux.no_start ? APP_NO_TMUX_START : NULL, NULL};
	struct proc_opts opts = {.cwd = "/", .new_session = true, .keep_output = true};
	int sv[2], st = 0, r;

	memset(room, ' ', STANDBY_TITLE_ROOM);
	room[STANDBY_TITLE_ROOM] = '\0';
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	opts.keep_fd = sv[1];
	/* Waits only for the first process, which detaches the worker (create_detach). */
	r = proc_run(argv, &opts, NULL, 0, &st);
	close(sv[1]);
	if (r == 0 && st != 0)
		r = -ECHILD;
	if (r < 0) {
		close(sv[0]);
		return r;
	}
	return sv[0];
}

static void *standby_keeper(void *arg)
{
	struct standby *sb = arg;
	int retry_ms = STANDBY_RETRY_MIN_MS;

	pthread_mutex_lock(&sb->mu);
	while (!sb->stopping) {
		struct timespec until;
		int fd;

		if (sb->fd >= 0) {
			pthread_cond_wait(&sb->cv, &sb->mu);
			continue;
		}
		pthread_mutex_unlock(&sb->mu);
		fd = standby_spawn(sb->app);
		pthread_mutex_lock(&sb->mu);
		if (fd >= 0) {
			sb->fd = fd;
			retry_ms = STANDBY_RETRY_MIN_MS;
			continue;
		}
		log_warn("cannot start a waiting creation worker (%s); retrying in %d ms",
			 strerror(-fd), retry_ms);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += retry_ms / 1000;
		pthread_cond_timedwait(&sb->cv, &sb->mu, &until);
		retry_ms =
		    retry_ms * 2 > STANDBY_RETRY_MAX_MS ? STANDBY_RETRY_MAX_MS : retry_ms * 2;
	}
	if (sb->fd >= 0)
		close(sb->fd);
	sb->fd = -1;
	pthread_mutex_unlock(&sb->mu);
	return NULL;
}

struct standby *standby_start(const struct app *app)
{
	struct standby *sb = calloc(1, sizeof(*sb));
	sigset_t all, old;
	int e;

	if (sb == NULL)
		return NULL;
	sb->app = app;
	sb->fd = -1;
	pthread_mutex_init(&sb->mu, NULL);
	pthread_cond_init(&sb->cv, NULL);
	/* The keeper takes no signal: SIGTERM is for the main thread's sigwait, whenever this is
	 * called. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	e = pthread_create(&sb->thread, NULL, standby_keeper, sb);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e != 0) {
		pthread_cond_destroy(&sb->cv);
		pthread_mutex_destroy(&sb->mu);
		free(sb);
		errno = e;
		return NULL;
	}
	return sb;
}

void standby_stop(struct standby *sb)
{
	if (sb == NULL)
		return;
	pthread_mutex_lock(&sb->mu);
	sb->stopping = true;
	pthread_cond_signal(&sb->cv);
	pthread_mutex_unlock(&sb->mu);
	pthread_join(sb->thread, NULL);
	pthread_cond_destroy(&sb->cv);
	pthread_mutex_destroy(&sb->mu);
	free(sb);
}

int standby_send(int fd, const char *payload, size_t len, int lock_fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl = {{0}};
	struct iovec iov = {.iov_base = (void *)payload, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	ssize_t n;

	if (len == 0 || len > STANDBY_PAYLOAD_MAX)
		return -EMSGSIZE;
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &lock_fd, sizeof(int));
	do
		n = sendmsg(fd, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == (ssize_t)iov.iov_len ? 0 : -EIO;
}

int standby_handoff(struct standby *sb, const char *payload, size_t len, int lock_fd)
{
	int fd, r;

	if (sb == NULL)
		return -EAGAIN;
	pthread_mutex_lock(&sb->mu);
	fd = sb->fd;
	sb->fd = -1;
	pthread_cond_signal(&sb->cv); /* the keeper starts the next one */
	pthread_mutex_unlock(&sb->mu);
	if (fd < 0)
		return -EAGAIN;
	r = standby_send(fd, payload, len, lock_fd);
	close(fd);
	/* EPIPE and its kin: the worker died waiting; the caller starts one itself. */
	return r < 0 ? -EAGAIN : 0;
}

int standby_receive(int fd, char *buf, size_t buflen, size_t *len, int *lock_fd)
{
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))]; /* room to see a second fd, and refuse it */
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = buf, .iov_len = buflen};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf)};
	struct cmsghdr *c;
	int nfds = 0, fds[2] = {-1, -1};
	ssize_t n;

	do
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
		size_t k = c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS
			       ? (c->cmsg_len - CMSG_LEN(0)) / sizeof(int)
			       : 0;

		for (size_t i = 0; i < k; i++, nfds++) {
			int got;

			memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (nfds < 2)
				fds[nfds] = got;
			else
				close(got);
		}
	}
	if (n == 0 && nfds == 0)
		return 0; /* the API's end closed */
	/* The payload must fit with a byte to spare: a full buffer may be a cut message. */
	if (nfds != 1 || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || n == 0 ||
	    (size_t)n >= buflen)
		goto bad;
	buf[n] = '\0';
	*len = (size_t)n;
	*lock_fd = fds[0];
	return 1;
bad:
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return -EPROTO;
}

/* Appends word and its NUL to title (len so far). Returns false when it does not fit. */
static bool standby_title_add(char *title, size_t size, size_t *len, const char *word)
{
	size_t w = strlen(word) + 1;

	if (*len + w > size)
		return false;
	memcpy(title + *len, word, w);
	*len += w;
	return true;
}

int standby_retitle(char **argv, const char *id)
{
	char title[STANDBY_TITLE_ROOM * 4];
	size_t len = 0, room;
	int n;

	/* Contiguous words, as the kernel lays them out: argv[1] up to the last one's NUL. */
	if (argv[0] == NULL || argv[1] == NULL || argv[2] == NULL)
		return -EINVAL;
	for (n = 1; argv[n + 1] != NULL; n++)
		if (argv[n + 1] != argv[n] + strlen(argv[n]) + 1)
			return -ENOSPC;
	room = (size_t)(argv[n] + strlen(argv[n]) + 1 - argv[1]);
	/* --create <id>, then the words after the room (--no-tmux-start). */
	if (!standby_title_add(title, sizeof(title), &len, "--create") ||
	    !standby_title_add(title, sizeof(title), &len, id))
		return -ENOSPC;
	for (int i = 3; argv[i] != NULL; i++)
		if (!standby_title_add(title, sizeof(title), &len, argv[i]))
			return -ENOSPC;
	if (len > room)
		return -ENOSPC;
	memcpy(argv[1], title, len);
	memset(argv[1] + len, '\0', room - len);
	return 0;
}
