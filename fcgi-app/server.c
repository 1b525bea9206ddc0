#include "server.h"

#include "log.h"
#include "router.h"
#include "watch.h"

#include <errno.h>
#include <fcgiapp.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

struct server {
	const struct app *app;
	int listen_fd;
	pthread_mutex_t accept_mu;
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

static void *server_worker(void *arg)
{
	struct server *srv = arg;
	FCGX_Request fcgi;

	if (FCGX_InitRequest(&fcgi, srv->listen_fd, 0) != 0)
		return NULL;
	for (;;) {
		struct request req;
		int rc;

		pthread_mutex_lock(&srv->accept_mu);
		rc = FCGX_Accept_r(&fcgi);
		pthread_mutex_unlock(&srv->accept_mu);
		if (rc < 0)
			break;
		request_init(&req, &fcgi);
		router_dispatch(srv->app, &req);
		request_finish(&req);
		FCGX_Finish_r(&fcgi);
	}
	FCGX_Free(&fcgi, 1);
	return NULL;
}

int server_run(const struct app *app, struct cause *cause)
{
	struct server srv = {.app = app, .listen_fd = -1};
	pthread_t workers[APP_WORKER_THREADS];
	struct watch *watch;
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
	pthread_mutex_init(&srv.accept_mu, NULL);
	/* Blocked before any thread starts, so only sigwait below receives them. */
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	pthread_sigmask(SIG_BLOCK, &ss, NULL);
	for (; started < APP_WORKER_THREADS; started++)
		if (pthread_create(&workers[started], NULL, server_worker, &srv) != 0)
			break;
	watch = watch_start(app);
	if (watch == NULL)
		log_error("cannot start the liveness watcher: %s", strerror(errno));
	log_info("listening on %s", path);
	sigwait(&ss, &sig);
	log_info("stopping on signal %d", sig);
	FCGX_ShutdownPending();
	shutdown(srv.listen_fd, SHUT_RDWR);
	for (int i = 0; i < started; i++)
		pthread_join(workers[i], NULL);
	watch_stop(watch);
	close(srv.listen_fd);
	unlink(path);
	return 0;
}
