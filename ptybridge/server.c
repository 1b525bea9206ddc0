#include "server.h"

#include "agentuser.h"
#include "attention.h"
#include "conn.h"
#include "events.h"
#include "hooks.h"
#include "http.h"
#include "log.h"
#include "panes.h"
#include "proc.h"
#include "ptyproc.h"
#include "relay.h"
#include "roster.h"
#include "route.h"
#include "stats.h"
#include "terminal.h"
#include "tmux.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

/* The services and their route tables, as fcgi-app/router.c keeps the API's. */
static const struct bridge_service *const server_services[] = {&terminal_service, &relay_service,
							       &events_service};
static const struct bridge_route *const server_routes[] = {terminal_routes, relay_routes,
							   events_routes};
#define SERVER_NSERVICES (sizeof(server_services) / sizeof(server_services[0]))
#define SERVER_NROUTES   (sizeof(server_routes) / sizeof(server_routes[0]))

/* A connection at the front door: its request head is being read, or refused. */
struct front {
	struct bridge *b;
	struct conn c;
	uint64_t accepted_ns; /* uv_hrtime() at accept: the dispatch latency GET /metrics shows */
};

struct server {
	struct bridge b;
	uv_loop_t loop;
	int listen_fd;
	uv_poll_t listen_poll;
	bool listening;
	bool accept_paused; /* out of fds: accepting resumes on the next tick */
	uv_signal_t sigterm, sigint, sigchld, sighup;
	uv_timer_t tick;
	uint64_t stop_deadline;
	char socket_path[CONFIG_PATH_MAX];
	char hooks_path[CONFIG_PATH_MAX];
	char *panes_argv[9]; /* tmux -u -S <socket> list-panes -a -F <format> */
	struct hooks_options hooks_opt;
	struct hooks_sink hooks_sink;
};

void server_options_defaults(struct bridge_options *opt)
{
	opt->ping_interval_ms = BRIDGE_PING_INTERVAL_MS;
	opt->stall_timeout_ms = BRIDGE_STALL_TIMEOUT_MS;
	opt->handshake_timeout_ms = BRIDGE_HANDSHAKE_TIMEOUT_MS;
	opt->creating_wait_ms = BRIDGE_CREATING_WAIT_MS;
	opt->max_clients = BRIDGE_CLIENTS_MAX;
	opt->max_per_identity = BRIDGE_CLIENTS_PER_IDENTITY;
	opt->events_log_max = EVENTS_LOG_MAX;
}

/* Each client costs a socket and a PTY master; the default soft limit of 1024 is too low for
 * BRIDGE_CLIENTS_MAX, so take what the hard limit allows. */
static void server_raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* The tmux clients' environment: ours, with the terminal type the browser's xterm.js speaks and
 * without TMUX (tmux refuses to attach from inside a tmux pane). */
static char **server_child_env(void)
{
	extern char **environ;
	static const char *const drop[] = {"TERM=", "TMUX=", "TMUX_PANE=", "COLUMNS=", "LINES="};

	return proc_env_edit(environ, drop, sizeof(drop) / sizeof(drop[0]), BRIDGE_CHILD_TERM);
}

static int server_listen(struct server *s, struct cause *cause)
{
	struct sockaddr_un addr;
	int fd, probe;

	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	if (strlen(s->socket_path) >= sizeof(addr.sun_path))
		return cause_fail(cause, ENAMETOOLONG, "socket path %s is too long",
				  s->socket_path);
	memcpy(addr.sun_path, s->socket_path, strlen(s->socket_path) + 1);
	/* A path that still answers belongs to a live bridge: never steal it. */
	probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (probe >= 0) {
		int r = connect(probe, (struct sockaddr *)&addr, sizeof(addr));

		close(probe);
		if (r == 0)
			return cause_fail(cause, EADDRINUSE, "another bridge listens on %s",
					  s->socket_path);
	}
	unlink(s->socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return cause_fail(cause, errno, "socket: %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    chmod(s->socket_path, SERVER_SOCKET_MODE) < 0 || listen(fd, SERVER_BACKLOG) < 0) {
		int e = errno;

		close(fd);
		return cause_fail(cause, e, "cannot listen on %s: %s", s->socket_path, strerror(e));
	}
	s->listen_fd = fd;
	return 0;
}

/* ---- the front door: read the request head, then hand the connection to its service ---- */

static const struct conn_ops front_ops;

static int front_want(struct conn *c)
{
	return UV_READABLE;
}

static void front_release(struct conn *c)
{
	struct front *f = c->data;

	conn_release(&f->c); /* fd -1 when handed over */
	free(f);
}

static void front_respond(struct front *f, int status, const char *code, const char *message)
{
	log_info("%s %s: %d %s", http_request_method(f->c.req), http_request_path(f->c.req), status,
		 code);
	stats_refused(&f->b->stats, status);
	conn_respond(&f->c, status, code, message, NULL, BRIDGE_CLOSE_TIMEOUT_MS);
}

/*
 * Whether the request may open one more connection: its credential is still good (the store may
 * have changed since nginx asked), and the limits: one identity holds at most max_per_identity,
 * read-only identities together leave 1/BRIDGE_ADMIN_SHARE of max_clients to admins, and nobody
 * gets more than max_clients. Returns true, or false with the refusal answered.
 */
static bool front_admit(struct front *f)
{
	const struct http_request *req = f->c.req;
	const char *header = http_request_header(req, AUTH_HEADER_IDENTITY, NULL);
	const char *role = http_request_header(req, AUTH_HEADER_ROLE, NULL);
	const struct bridge_options *opt = &f->b->opt;
	char identity[AUTH_IDENTITY_MAX + 1]; /* as struct conn keeps it */
	unsigned total = 0, viewers = 0, mine = 0;
	unsigned viewers_max = opt->max_clients - opt->max_clients / BRIDGE_ADMIN_SHARE;
	char message[AUTH_IDENTITY_MAX + 128];
	struct access_refusal why;
	struct access_cred cred;
	bool admin;
	struct conn *c;

	access_parse(http_request_header(req, AUTH_HEADER_CREDENTIAL, NULL), &cred);
	if (access_refresh(&f->b->access))
		conn_set_recheck(&f->b->conns);
	if (f->c.phase != CONN_SERVICE)
		return false; /* the store is broken: answered already */
	if (!access_allowed(&f->b->access, &cred, &why)) {
		front_respond(f, 401, why.code, why.message);
		return false;
	}
	snprintf(identity, sizeof(identity), "%s", header != NULL ? header : "");
	admin = role != NULL && strcmp(role, AUTH_ROLE_ADMIN) == 0 &&
		(cred.kind == ACCESS_TOKEN || cred.kind == ACCESS_TAILSCALE);
	LIST_FOREACH(c, &f->b->conns.head, link)
	{
		if (c->ops == &front_ops)
			continue; /* still at the door (this one too) */
		total++;
		viewers += !c->who.admin;
		mine += strcmp(c->identity, identity) == 0;
	}
	if (mine >= opt->max_per_identity) {
		snprintf(message, sizeof(message),
			 "%s has %u connections open, the most one identity may hold",
			 identity[0] != '\0' ? identity : "this client", mine);
		front_respond(f, 503, "too_many_connections", message);
		return false;
	}
	if (total >= opt->max_clients || (!admin && viewers >= viewers_max)) {
		snprintf(message, sizeof(message),
			 "agentd-bridge serves all the connections it may (%u%s): try again later",
			 admin ? opt->max_clients : viewers_max,
			 admin ? "" : " for read-only identities; the rest are kept for admins");
		front_respond(f, 503, "busy", message);
		return false;
	}
	return true;
}

/* GET /.agentd/metrics (stats.h): the bridge's families for agentd-api's GET /metrics, answered
 * at the door and closed. */
static void front_metrics(struct front *f)
{
	static const char head[] = "HTTP/1.1 200 OK\r\n"
				   "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
				   "Cache-Control: no-store\r\n"
				   "Connection: close\r\n"
				   "Content-Length: %zu\r\n\r\n";
	struct metrics_text t;
	char line[sizeof(head) + 32];
	int n;

	if (strcmp(http_request_method(f->c.req), "GET") != 0) {
		front_respond(f, 405, "method_not_allowed", "only GET is supported here");
		return;
	}
	metrics_text_init(&t);
	stats_write(&f->b->stats, &f->b->conns, &t);
	if (t.error != 0) {
		metrics_text_free(&t);
		front_respond(f, 500, "internal_error", "the numbers do not fit in a scrape");
		return;
	}
	n = snprintf(line, sizeof(line), head, t.len);
	conn_drop_output(&f->c);
	if (conn_queue(&f->c, line, (size_t)n) < 0 || conn_queue(&f->c, t.buf, t.len) < 0) {
		metrics_text_free(&t);
		conn_cut(&f->c);
		return;
	}
	metrics_text_free(&t);
	f->c.last_moved = uv_now(f->b->loop);
	conn_finish(&f->c, BRIDGE_CLOSE_TIMEOUT_MS);
}

/* The head is complete: the route table names the service, which takes socket and request. */
static void front_dispatch(struct front *f)
{
	const struct bridge_route *route =
	    route_find(server_routes, SERVER_NROUTES, http_request_path(f->c.req));
	struct http_request *req = f->c.req;
	struct bridge *b = f->b;
	int fd = f->c.fd;

	if (route == NULL && strcmp(http_request_path(req), STATS_PATH) == 0) {
		front_metrics(f);
		return;
	}
	if (route == NULL) {
		front_respond(f, 404, "not_found", "no such resource");
		return;
	}
	if (!front_admit(f))
		return;
	stats_request(&b->stats, route->pattern, (uv_hrtime() - f->accepted_ns) / 1000);
	f->c.req = NULL;
	f->c.fd = -1;
	conn_cut(&f->c); /* the poll handle stops watching fd right here */
	route->service->accept(b, fd, req, route->route);
}

static void front_on_poll(struct conn *c, int events)
{
	struct front *f = c->data;
	int r = conn_read_head(c, f->c.req);

	if (r == -EOVERFLOW)
		front_respond(f, 431, "head_too_large", "request head too large");
	else if (r == -EBADMSG)
		front_respond(f, 400, "bad_request", "malformed HTTP request");
	else if (r < 0)
		conn_cut(c); /* gone before a whole request */
	else if (r > 0)
		front_dispatch(f);
}

/* The whole head must come within handshake_timeout_ms. */
static void front_tick(struct conn *c, uint64_t now)
{
	if (now >= c->deadline)
		conn_cut(c);
}

static const struct conn_ops front_ops = {
    .want = front_want,
    .on_poll = front_on_poll,
    .tick = front_tick,
    .release = front_release,
};

static int front_accept(struct bridge *b, int fd)
{
	struct http_request *req = http_request_create();
	struct front *f;

	if (req == NULL) {
		close(fd);
		return -ENOMEM;
	}
	f = conn_open(sizeof(*f), offsetof(struct front, c), b->loop, fd, &b->conns, &front_ops,
		      req);
	if (f == NULL)
		return -ENOMEM;
	f->b = b;
	f->accepted_ns = uv_hrtime();
	f->c.deadline = uv_now(b->loop) + b->opt.handshake_timeout_ms;
	conn_update(&f->c);
	return 0;
}

/* ---- claude's hooks: their reports go to the attention hub ------------------------------ */

static void server_hook_report(void *arg, const char *id, enum hook_event ev, json_object *payload)
{
	struct bridge *b = arg;

	if (b->attention != NULL)
		attention_hook_report(b->attention, id, ev, payload);
}

static int server_hook_ask(void *arg, const char *id, json_object *payload, attention_decided_fn fn,
			   void *fn_arg, char request_id[HOSTPROTO_REQUEST_ID_MAX + 1])
{
	struct bridge *b = arg;

	if (b->attention == NULL)
		return -ENOENT;
	return attention_hook_ask(b->attention, id, payload, fn, fn_arg, request_id);
}

static void server_hook_gone(void *arg, const char *id, const char *request_id)
{
	struct bridge *b = arg;

	if (b->attention != NULL)
		attention_hook_gone(b->attention, id, request_id);
}

static void server_hook_expired(void *arg, const char *id, const char *request_id)
{
	struct bridge *b = arg;

	if (b->attention != NULL)
		attention_hook_expired(b->attention, id, request_id);
}

/* The records as the /events watch reads them: the attention hub's view of the sessions. */
static void server_record_seen(void *arg, const char *id, const struct session *rec)
{
	struct bridge *b = arg;

	if (b->attention != NULL)
		attention_session_changed(b->attention, id, rec);
}

/* A session's own uid from its record (0: none, or no record). */
static uid_t server_session_uid(void *arg, const char *id)
{
	struct bridge *b = arg;
	struct session *rec = malloc(sizeof(*rec));
	uid_t uid = 0;

	if (rec != NULL && store_read(&b->store, id, rec, NULL) == 0)
		uid = (uid_t)rec->uid;
	free(rec);
	return uid;
}

static int server_hooks_open(struct server *s, struct cause *cause)
{
	struct bridge *b = &s->b;
	char *const argv[] = {b->tmux_bin,  "-u", "-S", b->tmux_socket,
			      "list-panes", "-a", "-F", PANES_TMUX_FORMAT,
			      NULL};
	char dir[CONFIG_PATH_MAX], legacy[CONFIG_PATH_MAX];
	int r;

	r = config_runtime_path(b->cfg, HOOKPROTO_SOCKET_NAME, s->hooks_path,
				sizeof(s->hooks_path));
	if (r == 0)
		r = config_runtime_path(b->cfg, HOOKPROTO_SOCKET_DIR, dir, sizeof(dir));
	if (r == 0)
		r = config_runtime_path(b->cfg, HOOKPROTO_SOCKET_LEGACY, legacy, sizeof(legacy));
	if (r < 0)
		return cause_fail(cause, -r, "runtime directory path is too long");
	/* Kept across restarts (never removed): the cages bind this directory. */
	if (mkdir(dir, HOOKPROTO_SOCKET_DIR_MODE) < 0 && errno != EEXIST)
		return cause_fail(cause, errno, "cannot make %s: %s", dir, strerror(errno));
	/* A relative link: it stays right wherever the runtime dir is seen from. */
	if ((unlink(legacy) < 0 && errno != ENOENT) || symlink(HOOKPROTO_SOCKET_NAME, legacy) < 0)
		log_warn("cannot link %s to %s: %s (claudes started before it have no hooks)",
			 legacy, HOOKPROTO_SOCKET_NAME, strerror(errno));
	memcpy(s->panes_argv, argv, sizeof(argv));
	s->hooks_sink = (struct hooks_sink){server_hook_report, server_hook_ask, server_hook_gone,
					    server_hook_expired, b};
	s->hooks_opt = (struct hooks_options){
	    .socket_path = s->hooks_path,
	    .panes_argv = s->panes_argv,
	    .panes_env = b->child_env,
	    .proc_root = PANES_PROC_ROOT,
	    .wait_ms = (unsigned)b->cfg->terminal_permission_wait * 1000U,
	    .sink = &s->hooks_sink,
	    .session_uid = server_session_uid,
	    .session_uid_arg = b,
	};
	b->hooks = hooks_open(b->loop, &s->hooks_opt, cause);
	return b->hooks != NULL ? 0 : -EIO;
}

/* ---- the process ------------------------------------------------------------------------- */

static void server_on_accept(uv_poll_t *handle, int status, int events)
{
	struct server *s = handle->data;

	for (;;) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				/* EMFILE and the like: the socket stays readable, so stop watching
				 * it for a tick instead of spinning. */
				log_error("accept: %s", strerror(errno));
				uv_poll_stop(&s->listen_poll);
				s->accept_paused = true;
			}
			return;
		}
		/* Up to max_clients are served; BRIDGE_REFUSE_SPARE more are read to be refused
		 * properly (front_admit); past that, the last resort. */
		if (s->b.stopping || s->b.conns.n >= s->b.opt.max_clients + BRIDGE_REFUSE_SPARE) {
			static const char busy[] =
			    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
			    "Content-Length: 61\r\nConnection: close\r\n\r\n"
			    "{\"error\":\"agentd-bridge has too many "
			    "clients\",\"code\":\"busy\"}\n";

			log_warn("refusing a connection: %u clients", s->b.conns.n);
			/* Best effort on a fresh socket: it has room for this. */
			if (send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
				log_warn("cannot answer a refused connection: %s", strerror(errno));
			close(fd);
			continue;
		}
		front_accept(&s->b, fd);
	}
}

static void server_on_sigchld(uv_signal_t *handle, int signum)
{
	struct server *s = handle->data;
	pid_t pid;
	int status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (hooks_child_exited(s->b.hooks, pid))
			continue;
		for (size_t i = 0; i < SERVER_NSERVICES; i++)
			if (server_services[i]->child_exited != NULL &&
			    server_services[i]->child_exited(&s->b, pid))
				break;
		if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
			log_info("tmux client %d exited with status %d", (int)pid,
				 WEXITSTATUS(status));
	}
}

static void server_stop(struct server *s)
{
	if (s->b.stopping)
		return;
	log_info("stopping: closing %u clients", s->b.conns.n);
	sd_notify(0, "STOPPING=1");
	s->b.stopping = true;
	s->stop_deadline = uv_now(&s->loop) + BRIDGE_SHUTDOWN_TIMEOUT_MS;
	if (s->listening) {
		uv_close((uv_handle_t *)&s->listen_poll, NULL);
		close(s->listen_fd);
		unlink(s->socket_path);
		s->listening = false;
	}
	/* The hooks first: their waiting hooks ask the next bridge, and the hub then calls none of
	 * them. */
	hooks_close(s->b.hooks);
	s->b.hooks = NULL;
	attention_close(&s->b);
	conn_set_stop(&s->b.conns);
}

static void server_on_sigterm(uv_signal_t *handle, int signum)
{
	server_stop(handle->data);
}

static void server_on_sighup(uv_signal_t *handle, int signum)
{
	/* Nothing to reload: the configuration is read once. Ignoring SIGHUP keeps a closing
	 * terminal from killing us. */
}

/* True while a child (a tmux client that got its hangup) is not reaped yet: exiting before would
 * leave it to whoever inherits it. */
static bool server_has_children(void)
{
	siginfo_t info;

	/* WNOWAIT: only look; the SIGCHLD handler reaps and tells the terminals. */
	return !(waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD);
}

static void server_on_tick(uv_timer_t *handle)
{
	struct server *s = handle->data;
	uint64_t now = uv_now(&s->loop);
	bool abort = s->b.stopping && now >= s->stop_deadline;

	if (s->accept_paused && s->listening) {
		s->accept_paused = false;
		uv_poll_start(&s->listen_poll, UV_READABLE, server_on_accept);
	}
	if (abort)
		conn_set_abort(&s->b.conns);
	else
		conn_set_tick(&s->b.conns, now, &s->b.opt);
	/* A revoke (or a store that breaks) ends what it no longer lets in within a tick. */
	if (!abort && access_refresh(&s->b.access))
		conn_set_recheck(&s->b.conns);
	if (s->b.stopping && s->b.conns.n == 0 && !roster_busy(s->b.roster) &&
	    (!server_has_children() || now >= s->stop_deadline)) {
		/* The last handles: with them closed uv_run returns. */
		events_close(&s->b);
		uv_close((uv_handle_t *)&s->tick, NULL);
		uv_close((uv_handle_t *)&s->sigterm, NULL);
		uv_close((uv_handle_t *)&s->sigint, NULL);
		uv_close((uv_handle_t *)&s->sighup, NULL);
		uv_close((uv_handle_t *)&s->sigchld, NULL);
	}
}

static int server_signal(struct server *s, uv_signal_t *h, uv_signal_cb cb, int signum)
{
	int r = uv_signal_init(&s->loop, h);

	if (r < 0)
		return r;
	h->data = s;
	return uv_signal_start(h, cb, signum);
}

static int server_setup(struct server *s, const struct config *cfg,
			const struct bridge_options *opt, struct cause *cause)
{
	struct bridge *b = &s->b;
	struct agent_user agent;
	struct tmux tm;
	int r;

	b->loop = &s->loop;
	b->cfg = cfg;
	b->opt = *opt;
	stats_init(&b->stats);
	LIST_INIT(&b->conns.head);
	if (access_init(&b->access, cfg) < 0)
		return cause_fail(cause, ENAMETOOLONG, "state directory path is too long");
	b->conns.access = &b->access;
	r = store_init(&b->store, cfg->state_dir, cfg->runtime_dir, cause);
	if (r < 0)
		return r;
	r = tmux_init(&tm, cfg);
	if (r < 0)
		return cause_fail(cause, -r, "runtime directory path is too long");
	r = proc_which(tm.bin, b->tmux_bin, sizeof(b->tmux_bin));
	if (r < 0)
		return cause_fail(cause, -r, "tmux executable %s not found", tm.bin);
	/* agentd-host runs as the agent user: the only owner its socket may have. */
	if ((r = agentuser_resolve(cfg, &agent, cause)) < 0)
		return r;
	b->host_uid = agent.uid;
	memcpy(b->tmux_socket, tm.socket, sizeof(b->tmux_socket));
	memcpy(b->tmux_conf, tm.conf, sizeof(b->tmux_conf));
	r = config_runtime_path(cfg, SERVER_SOCKET_NAME, s->socket_path, sizeof(s->socket_path));
	if (r < 0)
		return cause_fail(cause, -r, "runtime directory path is too long");
	b->child_env = server_child_env();
	b->scratch = malloc(PTY_FRAME_MAX);
	b->roster = roster_create(&s->loop, &b->store);
	if (b->child_env == NULL || b->scratch == NULL || b->roster == NULL)
		return cause_fail(cause, ENOMEM, "out of memory");
	r = roster_reset(&b->store);
	if (r < 0)
		return cause_fail(cause, -r, "cannot list session records: %s", strerror(-r));
	r = server_listen(s, cause);
	if (r < 0)
		return r;
	if ((r = uv_poll_init(&s->loop, &s->listen_poll, s->listen_fd)) < 0 ||
	    (s->listen_poll.data = s,
	     r = uv_poll_start(&s->listen_poll, UV_READABLE, server_on_accept)) < 0)
		return cause_fail(cause, -r, "cannot watch the socket: %s", uv_strerror(r));
	s->listening = true;
	/* Only once the socket is ours: a second bridge must not write the log or the records'
	 * activity. The hub first, so the records watch that events_open starts feeds it. */
	r = attention_open(b, cause);
	if (r < 0)
		return r;
	r = server_hooks_open(s, cause);
	if (r < 0)
		return r;
	r = events_open(b, server_record_seen, b, cause);
	if (r < 0)
		return r;
	if ((r = server_signal(s, &s->sigterm, server_on_sigterm, SIGTERM)) < 0 ||
	    (r = server_signal(s, &s->sigint, server_on_sigterm, SIGINT)) < 0 ||
	    (r = server_signal(s, &s->sighup, server_on_sighup, SIGHUP)) < 0 ||
	    (r = server_signal(s, &s->sigchld, server_on_sigchld, SIGCHLD)) < 0)
		return cause_fail(cause, -r, "cannot watch signals: %s", uv_strerror(r));
	if ((r = uv_timer_init(&s->loop, &s->tick)) < 0 ||
	    (s->tick.data = s,
	     r = uv_timer_start(&s->tick, server_on_tick, BRIDGE_TICK_MS, BRIDGE_TICK_MS)) < 0)
		return cause_fail(cause, -r, "cannot start the timer: %s", uv_strerror(r));
	return 0;
}

/* Closes whatever setup left open after a failure, so the loop can be closed. */
static void server_walk_close(uv_handle_t *h, void *arg)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

int server_run(const struct config *cfg, const struct bridge_options *opt, struct cause *cause)
{
	struct server *s = calloc(1, sizeof(*s));
	int r;

	if (s == NULL)
		return cause_fail(cause, ENOMEM, "out of memory");
	s->listen_fd = -1;
	/* Writes to a vanished peer must be errors, not a fatal signal (sockets use MSG_NOSIGNAL;
	 * this covers stderr under a supervisor that went away). */
	signal(SIGPIPE, SIG_IGN);
	server_raise_fd_limit();
	/* One malloc arena: the only other threads are libuv's pool, writing a record now and
	 * then (roster.c); an arena of its own for each would cost every fresh pool thread
	 * (the first clients) its own heap pages. */
	mallopt(M_ARENA_MAX, 1);
	/* ... and one pool thread (unless the operator says otherwise): record writes are short
	 * and rare, and each thread that ever runs one keeps its stack pages. libuv reads this when
	 * the pool starts, at the first write. */
	setenv("UV_THREADPOOL_SIZE", SERVER_POOL_THREADS, 0);
	r = uv_loop_init(&s->loop);
	if (r < 0) {
		free(s);
		return cause_fail(cause, -r, "cannot start the event loop: %s", uv_strerror(r));
	}
	r = server_setup(s, cfg, opt, cause);
	if (r == 0) {
		log_info("listening on %s (tmux %s, socket %s)", s->socket_path, s->b.tmux_bin,
			 s->b.tmux_socket);
		/* systemd's Type=notify: ready once nginx can connect; nothing without
		 * NOTIFY_SOCKET. */
		sd_notifyf(0, "READY=1\nSTATUS=listening on %s", s->socket_path);
		uv_run(&s->loop, UV_RUN_DEFAULT);
		log_info("stopped");
	} else {
		if (s->listening) {
			close(s->listen_fd);
			unlink(s->socket_path);
		} else if (s->listen_fd >= 0) {
			close(s->listen_fd);
			unlink(s->socket_path);
		}
		hooks_close(s->b.hooks);
		s->b.hooks = NULL;
		attention_close(&s->b);
		events_close(&s->b);
		uv_walk(&s->loop, server_walk_close, NULL);
		uv_run(&s->loop, UV_RUN_DEFAULT);
	}
	if (uv_loop_close(&s->loop) != 0)
		log_error("the loop still had handles at exit");
	roster_destroy(s->b.roster);
	access_finish(&s->b.access);
	free(s->b.child_env);
	free(s->b.scratch);
	free(s);
	return r;
}
