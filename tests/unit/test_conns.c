/*
 * conns: the poller of agentd-api's FastCGI connections, against a real listening unix socket.
 * Idle connections hold no taker; a connection is handed over when it has bytes, once; a kept
 * connection comes back with its next request; one the peer closed while idle is never handed
 * over; more ready connections than takers are all served; conns_stop releases waiting takers.
 */
#include "conns.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define CLIENTS 40

static char dir[64];
static struct sockaddr_un addr = {.sun_family = AF_UNIX};
static int listen_fd = -1;
static struct conns *pool;

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/agentd-conns-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/s", dir);
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(listen_fd, 0);
	cr_assert_eq(bind(listen_fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	cr_assert_eq(listen(listen_fd, 128), 0);
	pool = conns_start(listen_fd);
	cr_assert_not_null(pool, "conns_start: %s", strerror(errno));
}

static void teardown(void)
{
	if (pool != NULL) {
		conns_stop(pool);
		conns_free(pool);
		pool = NULL;
	}
	close(listen_fd);
	unlink(addr.sun_path);
	rmdir(dir);
}

TestSuite(conns, .init = setup, .fini = teardown, .timeout = 30);

static int client(void)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	return fd;
}

static void say(int fd, const char *text)
{
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
}

/* Reads what the server side of a connection holds (what one client said). */
static void hear(int fd, char *out, size_t outlen)
{
	ssize_t n = read(fd, out, outlen - 1);

	cr_assert_gt(n, 0);
	out[n] = '\0';
}

struct taker {
	pthread_t thread;
	int fd;
};

static void *take_thread(void *arg)
{
	struct taker *t = arg;

	t->fd = conns_take(pool);
	return NULL;
}

/* Whether a taker started in the background got a connection within ms. */
static bool taken_within(struct taker *t, int ms)
{
	for (int waited = 0; waited < ms; waited += 10) {
		if (pthread_tryjoin_np(t->thread, NULL) == 0)
			return true;
		poll(NULL, 0, 10);
	}
	return false;
}

Test(conns, idle_connections_hold_no_taker)
{
	int idle[CLIENTS], talker;
	struct taker t = {.fd = -2};
	char got[64];

	for (int i = 0; i < CLIENTS; i++)
		idle[i] = client();
	cr_assert_eq(pthread_create(&t.thread, NULL, take_thread, &t), 0);
	cr_assert(!taken_within(&t, 200), "an idle connection was handed over");
	talker = client();
	say(talker, "request");
	cr_assert(taken_within(&t, 5000), "the connection with a request was not handed over");
	cr_assert_geq(t.fd, 0);
	hear(t.fd, got, sizeof(got));
	cr_assert_str_eq(got, "request");
	close(t.fd);
	close(talker);
	for (int i = 0; i < CLIENTS; i++)
		close(idle[i]);
}

Test(conns, kept_connection_comes_back_with_its_next_request)
{
	int c = client(), fd;
	char got[64];

	say(c, "one");
	fd = conns_take(pool);
	cr_assert_geq(fd, 0);
	hear(fd, got, sizeof(got));
	cr_assert_str_eq(got, "one");
	say(fd, "answer");
	conns_keep(pool, fd);
	hear(c, got, sizeof(got));
	cr_assert_str_eq(got, "answer", "the kept connection stays open");
	say(c, "two");
	fd = conns_take(pool);
	cr_assert_geq(fd, 0);
	hear(fd, got, sizeof(got));
	cr_assert_str_eq(got, "two");
	close(fd);
	cr_assert_eq(read(c, got, sizeof(got)), 0, "closed by the taker");
	close(c);
}

Test(conns, peer_closed_while_idle_is_never_handed_over)
{
	int gone = client(), c = client(), fd;
	char got[64];

	say(gone, "x");
	fd = conns_take(pool);
	cr_assert_geq(fd, 0);
	hear(fd, got, sizeof(got));
	conns_keep(pool, fd); /* idle again; then its peer leaves */
	close(gone);
	poll(NULL, 0, 100);
	say(c, "live");
	fd = conns_take(pool);
	cr_assert_geq(fd, 0);
	hear(fd, got, sizeof(got));
	cr_assert_str_eq(got, "live", "the first connection handed over is the live one");
	close(fd);
	close(c);
}

Test(conns, more_ready_connections_than_takers_are_all_served)
{
	int cl[CLIENTS], seen[CLIENTS] = {0};
	char got[64];

	for (int i = 0; i < CLIENTS; i++) {
		cl[i] = client();
		snprintf(got, sizeof(got), "%d", i);
		say(cl[i], got);
	}
	for (int k = 0; k < CLIENTS; k++) {
		int fd = conns_take(pool), i;

		cr_assert_geq(fd, 0);
		hear(fd, got, sizeof(got));
		i = atoi(got);
		cr_assert(i >= 0 && i < CLIENTS && seen[i] == 0, "connection %s handed over twice",
			  got);
		seen[i] = 1;
		close(fd);
	}
	for (int i = 0; i < CLIENTS; i++)
		close(cl[i]);
}

Test(conns, stop_releases_waiting_takers)
{
	struct taker t[3];

	for (int i = 0; i < 3; i++) {
		t[i].fd = -2;
		cr_assert_eq(pthread_create(&t[i].thread, NULL, take_thread, &t[i]), 0);
	}
	poll(NULL, 0, 50);
	conns_stop(pool);
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i].thread, NULL);
		cr_assert_eq(t[i].fd, -ECANCELED);
	}
	cr_assert_eq(conns_take(pool), -ECANCELED);
	conns_free(pool);
	pool = NULL;
}
