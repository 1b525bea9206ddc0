#include "server.h"

#include "apimetrics.h"
#include "conns.h"
#include "log.h"
#include "prpoll.h"
#include "router.h"
#include "watch.h"

#include <errno.h>
#include <fcgiapp.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

/* The most of a request's body left unread that is read to keep its connection: nginx sends at
 * most client_max_body_size (64k, as APP_BODY_MAX). */
#define SERVER_DRAIN_MAX (2 * APP_BODY_MAX)

struct server {
	const struct app *app;
	int listen_fd;
	struct conns *conns;
};

static int server_listen(const char *path, struct cause *cause)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, probe;

	if (strlen(path) >= sizeof(sa.sun_path))
		return cause_fail(cause, ENAMETOOLONG, "socket path %s is too long", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* A socket file that still answers belongs to a running agentd-api: do not steal it. */
	probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(probe);
		return cause_fail(cause, EADDRINUSE, "another agentd-api is listening on %s", path);
	}
	if (probe >= 0)
		close(probe);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return cause_fail(cause, errno, "socket: %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0660) < 0 ||
	    listen(fd, SERVER_BACKLOG) < 0) {
		int e = errno;

		close(fd);
		return cause_fail(cause, e, "cannot listen on %s: %s", path, strerror(e));
	}
	return fd;
}

/*
 * Reads what is left of the request's body, up to its end record. libfcgi does not: on a kept
 * connection the next FCGX_Accept_r would meet the rest of this request's FCGI_STDIN (at least
 * the empty record that ends it, which nginx always sends) and drop the connection as a protocol
 * error. Returns false when more than SERVER_DRAIN_MAX is left (the connection then closes).
 */
static bool server_drain(FCGX_Request *fcgi)
{
	char buf[4096];
	size_t left = SERVER_DRAIN_MAX;
	int n;

	while ((n = FCGX_GetStr(buf, sizeof(buf), fcgi->in)) > 0) {
		if ((size_t)n > left)
			return false;
		left -= (size_t)n;
	}
	return FCGX_GetError(fcgi->in) == 0;
}

/*
 * Serves one request on the connection fd, which has bytes to read. Returns fd when the
 * connection stays open for the next request (nginx asked for FCGI_KEEP_CONN), or -1 when
 * libfcgi closed it.
 */
static int server_serve(const struct server *srv, FCGX_Request *fcgi, int fd)
{
	struct request req;
	struct timespec t0, t1;
	int route;

	/* libfcgi reads from ipcFd when it is set instead of accepting; keepConnection set keeps
	 * the FCGX_Finish_r that FCGX_Accept_r starts with from closing it (fcgiapp.c of
	 * libfcgi 2.4). */
	fcgi->ipcFd = fd;
	fcgi->keepConnection = 1;
	/* A malformed request: libfcgi closes the connection, then tries to accept on listen_sock,
	 * which is -1 (server_worker), and fails at once. */
	if (FCGX_Accept_r(fcgi) < 0)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	request_init(&req, fcgi);
	route = router_dispatch(srv->app, &req);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	apimetrics_observe(
	    srv->app->metrics, route, req.status,
	    (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000LL + t1.tv_nsec - t0.tv_nsec) / 1000);
	request_finish(&req);
	if (fcgi->keepConnection && !server_drain(fcgi))
		fcgi->keepConnection = 0;
	FCGX_Finish_r(fcgi);
	fd = fcgi->ipcFd;
	fcgi->ipcFd = -1;
	return fd;
}

static void *server_worker(void *arg)
{
	struct server *srv = arg;
	FCGX_Request fcgi;
	int fd;

	/* No listening socket: connections come from conns_take only. */
	if (FCGX_InitRequest(&fcgi, -1, 0) != 0)
		return NULL;
	while ((fd = conns_take(srv->conns)) >= 0) {
		fd = server_serve(srv, &fcgi, fd);
		if (fd >= 0)
			conns_keep(srv->conns, fd);
	}
	FCGX_Free(&fcgi, 1);
	return NULL;
}

int server_run(const struct app *app, struct cause *cause)
{
	struct server srv = {.app = app, .listen_fd = -1};
	pthread_t workers[APP_WORKER_THREADS];
	struct watch *watch;
	struct prpoll *prpoll;
	char path[CONFIG_PATH_MAX];
	sigset_t ss;
	int sig, r, started = 0;

	if ((r = config_runtime_path(app->cfg, "api.sock", path, sizeof(path))) < 0)
		return cause_fail(cause, r, "runtime directory path is too long");
	if (FCGX_Init() != 0)
		return cause_fail(cause, EIO, "FCGX_Init failed");
	srv.listen_fd = server_listen(path, cause);
	if (srv.listen_fd < 0)
		return srv.listen_fd;
	/* Blocked before any thread starts, so only sigwait below receives them. */
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	pthread_sigmask(SIG_BLOCK, &ss, NULL);
	srv.conns = conns_start(srv.listen_fd);
	if (srv.conns == NULL) {
		r = cause_fail(cause, errno, "cannot start the connection poller: %s",
			       strerror(errno));
		close(srv.listen_fd);
		unlink(path);
		return r;
	}
	for (; started < APP_WORKER_THREADS; started++)
		if (pthread_create(&workers[started], NULL, server_worker, &srv) != 0)
			break;
	watch = watch_start(app);
	if (watch == NULL)
		log_error("cannot start the liveness watcher: %s", strerror(errno));
	if ((prpoll = prpoll_start(app)) == NULL)
		log_error("cannot start the pull-request poller: %s", strerror(errno));
	log_info("listening on %s", path);
	/* systemd's Type=notify: ready once nginx can connect; nothing without NOTIFY_SOCKET. */
	sd_notifyf(0, "READY=1\nSTATUS=listening on %s", path);
	sigwait(&ss, &sig);
	sd_notify(0, "STOPPING=1");
	log_info("stopping on signal %d", sig);
	FCGX_ShutdownPending();
	conns_stop(srv.conns); /* requests being served finish; their connections then close */
	for (int i = 0; i < started; i++)
		pthread_join(workers[i], NULL);
	conns_free(srv.conns);
	watch_stop(watch);
	prpoll_stop(prpoll);
	close(srv.listen_fd);
	unlink(path);
	return 0;
}
