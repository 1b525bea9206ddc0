/*
 * hooks: the hook socket on a real libuv loop, its peers real connections of this process. The
 * "tmux list-panes" is printf naming this test process as a session's pane (sh, with a count of
 * its runs, where the test needs one), so the peer is found by its ancestry as in the bridge. A
 * report is passed on and acknowledged; a PermissionRequest gets its request id at once and its
 * decision when the sink gives one, or ends as gone (the hook closed), expired (the wait ran
 * out), or untold (the bridge stops); a peer in no pane, an over-long report and a second line
 * are refused without a word to the sink; tmux is asked again only when a peer is not in the
 * list at hand.
 */
#include "hooks.h"
#include "panes.h"
#include "testdir.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define WAIT_MS 5000

static char dir[40], sock_path[64], count_path[64], list_line[64], script[512];
static uv_loop_t loop;
static struct hooks *hooks;
static char *panes_argv[8];

/* What the sink was told. */
static struct {
	int reports, asks, gones, expireds;
	enum hook_event event;
	char id[64], asked_rid[HOSTPROTO_REQUEST_ID_MAX + 1], gone_rid[64], expired_rid[64];
	json_object *payload;
	attention_decided_fn fn;
	void *fn_arg;
	int ask_result;
	json_object *decide_at_once; /* ask calls fn with it (an answer kept while away) */
} got;

static void sink_report(void *arg, const char *id, enum hook_event ev, json_object *payload)
{
	got.reports++;
	got.event = ev;
	snprintf(got.id, sizeof(got.id), "%s", id);
	json_object_put(got.payload);
	got.payload = json_object_get(payload);
}

static int sink_ask(void *arg, const char *id, json_object *payload, attention_decided_fn fn,
		    void *fn_arg, char request_id[HOSTPROTO_REQUEST_ID_MAX + 1])
{
	got.asks++;
	snprintf(got.id, sizeof(got.id), "%s", id);
	snprintf(got.asked_rid, sizeof(got.asked_rid), "%s", request_id);
	json_object_put(got.payload);
	got.payload = json_object_get(payload);
	if (got.ask_result < 0)
		return got.ask_result;
	if (request_id[0] == '\0')
		snprintf(request_id, HOSTPROTO_REQUEST_ID_MAX + 1, "r-%d", got.asks);
	got.fn = fn;
	got.fn_arg = fn_arg;
	if (got.decide_at_once != NULL) {
		got.fn = NULL;
		fn(fn_arg, got.decide_at_once);
	}
	return 0;
}

static void sink_gone(void *arg, const char *id, const char *request_id)
{
	got.gones++;
	got.fn = NULL;
	snprintf(got.gone_rid, sizeof(got.gone_rid), "%s", request_id);
}

static void sink_expired(void *arg, const char *id, const char *request_id)
{
	got.expireds++;
	got.fn = NULL;
	snprintf(got.expired_rid, sizeof(got.expired_rid), "%s", request_id);
}

static const struct hooks_sink sink = {sink_report, sink_ask, sink_gone, sink_expired, NULL};
static struct hooks_options opt;
static unsigned warn_interval_ms;                          /* 0: the default */
static uid_t (*session_uid_fn)(void *arg, const char *id); /* NULL: not checked */

/* The list names pid as the pane of session acme-widgets-1. */
static void set_pane(pid_t pid)
{
	snprintf(list_line, sizeof(list_line), "%d acme-widgets-1", (int)pid);
	snprintf(script, sizeof(script), "echo run >> %s; printf '%%s\\n' 'garbage' '%s'",
		 count_path, list_line);
}

static void open_hooks(unsigned wait_ms)
{
	struct cause c = {{0}};

	opt = (struct hooks_options){.socket_path = sock_path,
				     .panes_argv = panes_argv,
				     .proc_root = PANES_PROC_ROOT,
				     .wait_ms = wait_ms,
				     .warn_interval_ms = warn_interval_ms,
				     .sink = &sink,
				     .session_uid = session_uid_fn};
	hooks = hooks_open(&loop, &opt, &c);
	cr_assert_not_null(hooks, "%s", c.msg);
}

static void setup(void)
{
	memset(&got, 0, sizeof(got));
	session_uid_fn = NULL;
	testdir_make(dir, sizeof(dir), "/tmp/test_hooks.XXXXXX");
	snprintf(sock_path, sizeof(sock_path), "%s/hooks.sock", dir);
	snprintf(count_path, sizeof(count_path), "%s/runs", dir);
	set_pane(getpid());
	panes_argv[0] = "sh";
	panes_argv[1] = "-c";
	panes_argv[2] = script;
	panes_argv[3] = NULL;
	cr_assert_eq(uv_loop_init(&loop), 0);
	hooks = NULL;
	warn_interval_ms = 0;
}

static void teardown(void)
{
	hooks_close(hooks);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0, "every handle closed");
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	json_object_put(got.payload);
	testdir_remove(dir);
}

TestSuite(hooks, .init = setup, .fini = teardown);

static int runs(void)
{
	FILE *f = fopen(count_path, "r");
	char line[16];
	int n = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		n++;
	fclose(f);
	return n;
}

static int client(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s", strerror(errno));
	return fd;
}

static void send_text(int fd, const char *text)
{
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
}

/* A hook's connection that has sent text. */
static int hook_send(const char *text)
{
	int fd = client();

	send_text(fd, text);
	return fd;
}

/* Runs the loop until cond() or WAIT_MS. */
static bool run_until(bool (*cond)(void))
{
	uint64_t start = uv_now(&loop);

	while (!cond()) {
		uv_run(&loop, UV_RUN_NOWAIT);
		if (uv_now(&loop) - start > WAIT_MS)
			return false;
		usleep(1000);
		uv_update_time(&loop);
	}
	return true;
}

static int poll_fd;
static bool fd_readable(void)
{
	struct pollfd p = {.fd = poll_fd, .events = POLLIN};

	return poll(&p, 1, 0) == 1;
}

/* Reads what fd has (the loop runs meanwhile) up to EOF or a newline. */
static void read_line(int fd, char *buf, size_t cap)
{
	size_t got_len = 0;

	poll_fd = fd;
	for (;;) {
		ssize_t n;

		cr_assert(run_until(fd_readable), "an answer within %d ms", WAIT_MS);
		n = read(fd, buf + got_len, 1);
		if (n <= 0 || buf[got_len] == '\n')
			break;
		got_len++;
		cr_assert_lt(got_len, cap);
	}
	buf[got_len] = '\0';
}

/* The peer sees the end with nothing more: EOF, or a reset when the bridge closed with bytes of
 * ours unread. Then closes fd. */
static void expect_eof_and_close(int fd)
{
	ssize_t n;
	char c;

	poll_fd = fd;
	cr_assert(run_until(fd_readable), "closed within %d ms", WAIT_MS);
	n = read(fd, &c, 1);
	cr_assert(n == 0 || (n < 0 && errno == ECONNRESET), "nothing but the end: %zd", n);
	close(fd);
}

/* Opens the hooks (waiting wait_ms for a decision), then a hook asking for a permission: returns
 * its connection, with the first line it read in line. */
static int open_and_ask(unsigned wait_ms, char *line, size_t cap)
{
	int fd;

	open_hooks(wait_ms);
	fd = hook_send("{\"event\":\"PermissionRequest\",\"payload\":{}}\n");
	read_line(fd, line, cap);
	return fd;
}

static bool reported(void)
{
	return got.reports > 0;
}
static bool asked(void)
{
	return got.asks > 0;
}
static bool gone(void)
{
	return got.gones > 0;
}
static bool expired(void)
{
	return got.expireds > 0;
}

Test(hooks, a_report_is_passed_on_and_acknowledged)
{
	char line[256];
	int fd;

	open_hooks(60000);
	fd = hook_send("{\"event\":\"Stop\",\"payload\":{\"stop_hook_active\":false}}\n");
	cr_assert(run_until(reported));
	cr_assert_eq(got.event, HOOK_STOP);
	cr_assert_str_eq(got.id, "acme-widgets-1", "the session of the peer's pane");
	cr_assert_str_eq(json_object_to_json_string(got.payload),
			 "{ \"stop_hook_active\": false }");
	read_line(fd, line, sizeof(line));
	cr_assert_str_eq(line, "{\"decision\":null}");
	expect_eof_and_close(fd);
	cr_assert_eq(got.asks + got.gones, 0);
}

Test(hooks, the_list_is_asked_for_only_when_a_peer_is_not_in_it)
{
	char line[256];

	open_hooks(60000);
	for (int i = 0; i < 3; i++) {
		int fd = hook_send("{\"event\":\"PreToolUse\",\"payload\":{}}\n");

		read_line(fd, line, sizeof(line));
		cr_assert_str_eq(line, "{\"decision\":null}");
		close(fd);
	}
	cr_assert_eq(got.reports, 3);
	cr_assert_eq(runs(), 1, "tmux was asked once");
}

Test(hooks, a_permission_request_waits_for_its_decision)
{
	json_object *d = json_tokener_parse("{\"behavior\":\"allow\",\"updatedInput\":{\"a\":1}}");
	char line[512];
	int fd;

	open_hooks(60000);
	fd = hook_send("{\"event\":\"PermissionRequest\",\"payload\":{\"tool_name\":\"Bash\"}}\n");
	cr_assert(run_until(asked));
	cr_assert_str_eq(got.asked_rid, "", "a first ask");
	read_line(fd, line, sizeof(line));
	cr_assert_str_eq(line, "{\"requestId\":\"r-1\"}");
	cr_assert_not_null(got.fn);
	got.fn(got.fn_arg, d);
	read_line(fd, line, sizeof(line));
	cr_assert_str_eq(line,
			 "{\"decision\":{\"behavior\":\"allow\",\"updatedInput\":{\"a\":1}}}");
	expect_eof_and_close(fd);
	uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_eq(got.gones + got.expireds, 0, "answered: neither gone nor expired");
	json_object_put(d);
}

Test(hooks, an_ask_made_again_keeps_its_id_and_gets_a_kept_answer)
{
	json_object *d = json_tokener_parse("{\"behavior\":\"deny\",\"message\":\"no\"}");
	char line[512];
	int fd;

	got.decide_at_once = d;
	open_hooks(60000);
	fd = hook_send("{\"event\":\"PermissionRequest\",\"payload\":{},\"requestId\":\"r-7\"}\n");
	cr_assert(run_until(asked));
	cr_assert_str_eq(got.asked_rid, "r-7");
	read_line(fd, line, sizeof(line));
	cr_assert_str_eq(line, "{\"decision\":{\"behavior\":\"deny\",\"message\":\"no\"}}",
			 "no interim line: the decision was there");
	expect_eof_and_close(fd);
	json_object_put(d);
}

Test(hooks, a_hook_that_goes_is_gone)
{
	char line[256];
	int fd;

	fd = open_and_ask(60000, line, sizeof(line));
	cr_assert_str_eq(line, "{\"requestId\":\"r-1\"}");
	close(fd); /* claude ended the hook: the dialog was answered in the TUI */
	cr_assert(run_until(gone));
	cr_assert_str_eq(got.gone_rid, "r-1");
	cr_assert_eq(got.expireds, 0);
}

Test(hooks, the_wait_runs_out)
{
	char line[256];
	int fd;

	fd = open_and_ask(150, line, sizeof(line));
	cr_assert_str_eq(line, "{\"requestId\":\"r-1\"}");
	cr_assert(run_until(expired));
	cr_assert_str_eq(got.expired_rid, "r-1");
	read_line(fd, line, sizeof(line));
	cr_assert_str_eq(line, "{\"decision\":null}", "the TUI's dialog asks alone");
	expect_eof_and_close(fd);
	uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_eq(got.gones, 0);
}

Test(hooks, an_ask_refused_gets_no_decision)
{
	char line[256];
	int fd;

	got.ask_result = -EALREADY;
	open_hooks(60000);
	fd = hook_send("{\"event\":\"PermissionRequest\",\"payload\":{},\"requestId\":\"r-2\"}\n");
	read_line(fd, line, sizeof(line));
	cr_assert_str_eq(line, "{\"decision\":null}");
	expect_eof_and_close(fd);
	cr_assert_eq(got.gones, 0);
}

Test(hooks, closing_tells_the_sink_nothing)
{
	char line[256];
	int fd;

	fd = open_and_ask(60000, line, sizeof(line));
	hooks_close(hooks);
	hooks = NULL;
	expect_eof_and_close(fd);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(got.gones + got.expireds, 0, "the hook asks the next bridge");
	cr_assert_eq(access(sock_path, F_OK), -1, "the socket file is gone");
}

/* A process that is no ancestor of ours, for a pane the peer is not in. */
static pid_t other_pane(void)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

Test(hooks, a_peer_in_no_pane_is_refused)
{
	pid_t other = other_pane();
	int fd;

	set_pane(other);
	open_hooks(60000);
	fd = hook_send("{\"event\":\"Stop\",\"payload\":{}}\n");
	expect_eof_and_close(fd);
	cr_assert_eq(got.reports, 0);
	cr_assert_eq(runs(), 1);
	kill(other, SIGKILL);
}

Test(hooks, refused_peers_ask_tmux_at_most_so_often)
{
	pid_t other = other_pane();
	int fds[6];

	set_pane(other);
	open_hooks(60000);
	for (int i = 0; i < 6; i++) {
		fds[i] = hook_send("{\"event\":\"Stop\",\"payload\":{}}\n");
	}
	for (int i = 0; i < 6; i++) {
		expect_eof_and_close(fds[i]);
	}
	cr_assert_leq(runs(), 2, "%d runs of tmux for peers that came together", runs());
	kill(other, SIGKILL);
}

Test(hooks, an_over_long_report_or_a_second_line_is_refused)
{
	size_t len = HOOKPROTO_LINE_MAX + 2;
	char *big = malloc(len + 1);
	int fd;

	open_hooks(60000);
	memset(big, 'x', len);
	big[len] = '\0';
	fd = hook_send(big);
	expect_eof_and_close(fd);
	fd =
	    hook_send("{\"event\":\"Stop\",\"payload\":{}}\n{\"event\":\"Stop\",\"payload\":{}}\n");
	expect_eof_and_close(fd);
	fd = hook_send("{\"event\":\"Stop\"}\n");
	expect_eof_and_close(fd);
	cr_assert_eq(got.reports, 0);
	free(big);
}

Test(hooks, a_waiting_hook_that_sends_more_is_gone)
{
	char line[256];
	int fd;

	fd = open_and_ask(60000, line, sizeof(line));
	send_text(fd, "x");
	cr_assert(run_until(gone));
	expect_eof_and_close(fd);
}

static uint64_t run_until_ms;
static bool time_is_up(void)
{
	return uv_now(&loop) >= run_until_ms;
}

/* Runs the loop for ms. */
static void run_for(unsigned ms)
{
	run_until_ms = uv_now(&loop) + ms;
	while (!time_is_up()) {
		uv_run(&loop, UV_RUN_NOWAIT);
		usleep(1000);
		uv_update_time(&loop);
	}
}

Test(hooks, a_connection_that_sends_nothing_is_dropped_soon)
{
	uint64_t start;
	int fd;

	open_hooks(60000);
	start = uv_now(&loop);
	fd = client();
	expect_eof_and_close(fd);
	cr_assert_lt(uv_now(&loop) - start, HOOKS_READ_TIMEOUT_MS,
		     "before the report's own timeout");
	cr_assert_eq(got.reports, 0);
}

Test(hooks, a_hook_that_has_begun_its_report_has_its_whole_time)
{
	char line[256];
	int fd;

	open_hooks(60000);
	fd = hook_send("{\"event\":\"Stop\",");
	run_for(HOOKS_IDLE_MS + 500);
	send_text(fd, "\"payload\":{}}\n");
	read_line(fd, line, sizeof(line));
	cr_assert_str_eq(line, "{\"decision\":null}");
	cr_assert_eq(got.reports, 1);
	close(fd);
}

/* A second pane, of session other-2: a child of ours that connects when a byte comes on
 * *go and asks for a permission; it exits 0 when it got its request id. */
static pid_t second_pane(int *go)
{
	int p[2];
	pid_t pid;

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		static const char ask[] = "{\"event\":\"PermissionRequest\",\"payload\":{}}\n";
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		char b, line[128] = "";
		size_t n = 0;
		int fd;

		alarm(20);
		close(p[1]);
		if (read(p[0], &b, 1) != 1)
			_exit(2);
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
		    write(fd, ask, sizeof(ask) - 1) != (ssize_t)sizeof(ask) - 1)
			_exit(3);
		while (n + 1 < sizeof(line) && read(fd, &line[n], 1) == 1 && line[n] != '\n')
			n++;
		line[n] = '\0';
		_exit(strncmp(line, "{\"requestId\":", 13) == 0 ? 0 : 1);
	}
	close(p[0]);
	*go = p[1];
	return pid;
}

static bool other_asked(void)
{
	return got.asks > 0 && strcmp(got.id, "other-2") == 0;
}

/* One pane holds more connections than the bridge takes at once, sending nothing: another
 * session's hook is still heard at once. */
Test(hooks, a_pane_that_floods_cannot_starve_another_session)
{
	enum { FLOOD = HOOKS_CONNS_MAX + 44 };
	static int fds[FLOOD];
	int go, status;
	pid_t other;

	/* A child that is gone must fail the write below, not end the test with SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	other = second_pane(&go);

	snprintf(script, sizeof(script), "printf '%%s\\n' '%d acme-widgets-1' '%d other-2'",
		 (int)getpid(), (int)other);
	open_hooks(60000);
	for (int i = 0; i < FLOOD; i++)
		fds[i] = client();
	run_for(300);
	cr_assert_eq(write(go, "g", 1), 1, "the second pane waits: %s", strerror(errno));
	cr_assert(run_until(other_asked),
		  "the other session's PermissionRequest is asked (%d asks)", got.asks);
	cr_assert_not_null(got.fn);
	got.fn(got.fn_arg, NULL);
	cr_assert_eq(waitpid(other, &status, 0), other);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "it got its request id (%d)",
		  status);
	for (int i = 0; i < FLOOD; i++)
		close(fds[i]);
	close(go);
}

/* Lines of the file at path, and how many of them contain needle. */
static int count_lines(const char *path, const char *needle, int *with)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int n = 0;

	*with = 0;
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		n++;
		*with += strstr(line, needle) != NULL;
	}
	fclose(f);
	return n;
}

/* Every refused peer is a warning: a flood of them logs a few lines, then one that counts the
 * rest. */
Test(hooks, a_flood_of_refused_peers_logs_a_few_lines_and_a_count)
{
	enum { FLOOD = 64 };
	pid_t other = other_pane();
	char log_path[64];
	int fds[FLOOD], saved, fd, lines, counts;

	set_pane(other);
	warn_interval_ms = 1000;
	open_hooks(60000);
	snprintf(log_path, sizeof(log_path), "%s/stderr", dir);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	dup2(fd, STDERR_FILENO);
	close(fd);
	for (int i = 0; i < FLOOD; i++)
		fds[i] = hook_send("{\"event\":\"Stop\",\"payload\":{}}\n");
	for (int i = 0; i < FLOOD; i++)
		expect_eof_and_close(fds[i]);
	run_for(1500); /* the interval ends: the count is logged */
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	lines = count_lines(log_path, "were left out", &counts);
	cr_assert_leq(lines, HOOKS_WARN_BURST + 1, "%d lines for %d refused peers", lines, FLOOD);
	cr_assert_eq(counts, 1, "one line counts the warnings left out");
	cr_assert_eq(got.reports, 0);
	kill(other, SIGKILL);
}

/* The uid the test says acme-widgets-1's agent runs as. */
static uid_t session_uid_is;

static uid_t test_session_uid(void *arg, const char *id)
{
	return strcmp(id, "acme-widgets-1") == 0 ? session_uid_is : 0;
}

Test(hooks, a_peer_of_another_uid_than_the_sessions_is_refused)
{
	char line[256];
	int fd;

	/* In the session's pane, but not its uid: another session's agent cannot speak as it. */
	session_uid_is = getuid() + 1;
	session_uid_fn = test_session_uid;
	open_hooks(60000);
	fd = hook_send("{\"event\":\"Stop\",\"payload\":{}}\n");
	expect_eof_and_close(fd);
	cr_assert_eq(got.reports, 0);
	/* Its own uid is taken. */
	session_uid_is = getuid();
	fd = hook_send("{\"event\":\"Stop\",\"payload\":{}}\n");
	cr_assert(run_until(reported));
	read_line(fd, line, sizeof(line));
	cr_assert_str_eq(line, "{\"decision\":null}");
	close(fd);
	cr_assert_str_eq(got.id, "acme-widgets-1");
}
