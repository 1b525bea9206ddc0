#include "conns.h"

#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

/* After an accept failure that is not about one connection (EMFILE, ENOBUFS...), the listener
 * rests this long instead of waking poll(2) at once again. */
#define CONNS_ACCEPT_REST_MS 100

struct conns {
	int listen_fd;
	int wake_fd; /* eventfd: a connection was given back, or stop */
	pthread_t poller;
	pthread_mutex_t mu;
	pthread_cond_t ready_cv; /* a connection was queued, or stop */
	pthread_cond_t space_cv; /* the queue has room again, or stop */
	bool stop;
	/* Under mu: connections ready to read (a ring), and those given back for the poller. */
	int ready[CONNS_IDLE_MAX];
	size_t ready_head, ready_n;
	int back[CONNS_IDLE_MAX];
	size_t back_n;
	/* The poller's own: idle connections, the one idle longest first. */
	int idle[CONNS_IDLE_MAX];
	size_t idle_n;
	struct pollfd pfd[CONNS_IDLE_MAX + 2];
};

static void conns_wake(struct conns *c)
{
	uint64_t one = 1;

	while (write(c->wake_fd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

/* Adds fd to the idle set, closing the connection idle longest when the set is full. */
static void conns_idle_add(struct conns *c, int fd)
{
	if (c->idle_n == CONNS_IDLE_MAX) {
		close(c->idle[0]);
		memmove(c->idle, c->idle + 1, (CONNS_IDLE_MAX - 1) * sizeof(c->idle[0]));
		c->idle_n--;
	}
	c->idle[c->idle_n++] = fd;
}

/* Queues fd for conns_take, waiting for room; closes it after stop. */
static void conns_queue(struct conns *c, int fd)
{
	pthread_mutex_lock(&c->mu);
	while (c->ready_n == CONNS_IDLE_MAX && !c->stop)
		pthread_cond_wait(&c->space_cv, &c->mu);
	if (c->stop) {
		close(fd);
	} else {
		c->ready[(c->ready_head + c->ready_n) % CONNS_IDLE_MAX] = fd;
		c->ready_n++;
		pthread_cond_signal(&c->ready_cv);
	}
	pthread_mutex_unlock(&c->mu);
}

/* Whether the idle connection fd, which poll(2) reported, has bytes to read: false when the
 * peer closed it (or it failed), or when the report was spurious (*keep then set). */
static bool conns_readable(int fd, bool *keep)
{
	char b;
	ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

	*keep = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
	return n > 0;
}

/* Accepts every pending connection into the idle set. Returns false when the listener should
 * rest (an error that is not about one connection). */
static bool conns_accept(struct conns *c)
{
	for (;;) {
		int fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC);

		if (fd >= 0) {
			conns_idle_add(c, fd);
			continue;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return true;
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		log_warn("accept on the FastCGI socket: %s", strerror(errno));
		return false;
	}
}

/* Moves the connections given back into the idle set. Returns false once stopped. */
static bool conns_take_back(struct conns *c)
{
	bool go;

	pthread_mutex_lock(&c->mu);
	go = !c->stop;
	for (size_t i = 0; i < c->back_n; i++)
		conns_idle_add(c, c->back[i]);
	c->back_n = 0;
	pthread_mutex_unlock(&c->mu);
	return go;
}

/* Hands every idle connection poll(2) reported to the queue, closes those the peer closed, and
 * keeps the rest in order. */
static void conns_sweep(struct conns *c)
{
	size_t n = c->idle_n, kept = 0;

	for (size_t i = 0; i < n; i++) {
		int fd = c->idle[i];
		bool keep = true;

		if (c->pfd[2 + i].revents != 0) {
			if (conns_readable(fd, &keep)) {
				conns_queue(c, fd);
				continue;
			}
			if (!keep) {
				close(fd);
				continue;
			}
		}
		c->idle[kept++] = fd;
	}
	c->idle_n = kept;
}

static void *conns_poller(void *arg)
{
	struct conns *c = arg;
	bool listening = true;

	while (conns_take_back(c)) {
		size_t n = 2 + c->idle_n;
		int r;

		c->pfd[0] = (struct pollfd){.fd = c->wake_fd, .events = POLLIN};
		c->pfd[1] = (struct pollfd){.fd = listening ? c->listen_fd : -1, .events = POLLIN};
		for (size_t i = 0; i < c->idle_n; i++)
			c->pfd[2 + i] = (struct pollfd){.fd = c->idle[i], .events = POLLIN};
		r = poll(c->pfd, n, listening ? -1 : CONNS_ACCEPT_REST_MS);
		if (r < 0 && errno != EINTR) {
			log_error("poll on the FastCGI connections: %s", strerror(errno));
			break;
		}
		if (r <= 0) {
			listening = true;
			continue;
		}
		if (c->pfd[0].revents != 0) {
			uint64_t v;

			while (read(c->wake_fd, &v, sizeof(v)) < 0 && errno == EINTR)
				;
		}
		/* Idle ones first: pfd[2..] describes the set as it was before accept adds to it.
		 */
		conns_sweep(c);
		if (c->pfd[1].revents != 0)
			listening = conns_accept(c);
	}
	for (size_t i = 0; i < c->idle_n; i++)
		close(c->idle[i]);
	c->idle_n = 0;
	return NULL;
}

struct conns *conns_start(int listen_fd)
{
	struct conns *c = calloc(1, sizeof(*c));
	int fl, e;

	if (c == NULL)
		return NULL;
	c->listen_fd = listen_fd;
	c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	fl = fcntl(listen_fd, F_GETFL);
	if (c->wake_fd < 0 || fl < 0 || fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		goto fail;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->ready_cv, NULL);
	pthread_cond_init(&c->space_cv, NULL);
	e = pthread_create(&c->poller, NULL, conns_poller, c);
	if (e == 0)
		return c;
	pthread_cond_destroy(&c->space_cv);
	pthread_cond_destroy(&c->ready_cv);
	pthread_mutex_destroy(&c->mu);
	errno = e;
fail:
	e = errno;
	if (c->wake_fd >= 0)
		close(c->wake_fd);
	free(c);
	errno = e;
	return NULL;
}

int conns_take(struct conns *c)
{
	int fd;

	pthread_mutex_lock(&c->mu);
	while (c->ready_n == 0 && !c->stop)
		pthread_cond_wait(&c->ready_cv, &c->mu);
	if (c->stop) {
		pthread_mutex_unlock(&c->mu);
		return -ECANCELED;
	}
	fd = c->ready[c->ready_head];
	c->ready_head = (c->ready_head + 1) % CONNS_IDLE_MAX;
	c->ready_n--;
	pthread_cond_signal(&c->space_cv);
	pthread_mutex_unlock(&c->mu);
	return fd;
}

void conns_keep(struct conns *c, int fd)
{
	pthread_mutex_lock(&c->mu);
	/* back holds at most one per request thread; the check only bounds the array. */
	if (c->stop || c->back_n == CONNS_IDLE_MAX)
		close(fd);
	else
		c->back[c->back_n++] = fd;
	pthread_mutex_unlock(&c->mu);
	conns_wake(c);
}

void conns_stop(struct conns *c)
{
	pthread_mutex_lock(&c->mu);
	c->stop = true;
	pthread_cond_broadcast(&c->ready_cv);
	pthread_cond_broadcast(&c->space_cv);
	pthread_mutex_unlock(&c->mu);
	conns_wake(c);
	pthread_join(c->poller, NULL);
	pthread_mutex_lock(&c->mu);
	for (; c->ready_n > 0; c->ready_n--) {
		close(c->ready[c->ready_head]);
		c->ready_head = (c->ready_head + 1) % CONNS_IDLE_MAX;
	}
	for (size_t i = 0; i < c->back_n; i++)
		close(c->back[i]);
	c->back_n = 0;
	pthread_mutex_unlock(&c->mu);
}

void conns_free(struct conns *c)
{
	if (c == NULL)
		return;
	pthread_cond_destroy(&c->space_cv);
	pthread_cond_destroy(&c->ready_cv);
	pthread_mutex_destroy(&c->mu);
	close(c->wake_fd);
	free(c);
}
