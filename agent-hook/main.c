/*
 * agentd-hook: the command claude runs for its hooks in a terminal-mode session (as the agent's
 * user). It reports the hook event to agentd-bridge and, for PermissionRequest, waits for an answer
 * given from elsewhere (the web UI, Telegram) while the TUI's own dialog is shown: claude ends this
 * process with SIGTERM when the dialog is answered "No" or with Escape in the TUI; after "Yes" it
 * leaves it running, and the bridge tells it there is no decision once claude reports the tool's
 * use (docs/claude-hooks.md). It must never harm the agent: whatever goes wrong, it exits 0 with
 * no output, which leaves claude as if there were no hook.
 */
#include "fsutil.h"
#include "hookproto.h"
#include "jsontext.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define HOOK_STDIN_MAX      (8 * 1024 * 1024) /* claude's payload; more is not read */
#define HOOK_ACK_MS         2000 /* an ordinary report waits this long for the bridge */
#define HOOK_WAIT_DEFAULT_S 3600 /* PermissionRequest: longest wait for an answer */
#define HOOK_WAIT_MAX_S     86400
#define HOOK_WAIT_GRACE_S   5   /* the bridge ends the wait; this is only the backstop */
#define HOOK_RETRY_MS       250 /* between two asks while the bridge restarts */
#define HOOK_PAYLOAD_DEPTH  64

static const char usage[] =
    "usage: agentd-hook --socket PATH [--wait SECONDS] EVENT\n"
    "\n"
    "Run by claude for a hook EVENT (SessionStart, UserPromptSubmit, PreToolUse,\n"
    "PermissionRequest, PostToolUse, PostToolUseFailure, Notification, Stop, SessionEnd) with\n"
    "the hook's JSON on stdin. Reports it to agentd-bridge on PATH. For PermissionRequest it\n"
    "waits up to SECONDS (default 3600) for an answer given from a client and prints it for\n"
    "claude; it asks again if the bridge restarts meanwhile. Always exits 0 unless the arguments\n"
    "are wrong (exit 1).\n";

struct hook_args {
	const char *socket;
	long wait_s;
	enum hook_event event;
};

static int parse_args(int argc, char **argv, struct hook_args *a)
{
	int e;

	a->socket = NULL;
	a->wait_s = HOOK_WAIT_DEFAULT_S;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
			a->socket = argv[++i];
		} else if (strcmp(argv[i], "--wait") == 0 && i + 1 < argc) {
			char *end;

			errno = 0;
			a->wait_s = strtol(argv[++i], &end, 10);
			if (errno != 0 || *end != '\0' || a->wait_s < 0 ||
			    a->wait_s > HOOK_WAIT_MAX_S)
				return -EINVAL;
		} else if (i == argc - 1 && (e = hookproto_event_parse(argv[i])) >= 0) {
			a->event = (enum hook_event)e;
			return a->socket != NULL ? 0 : -EINVAL;
		} else {
			return -EINVAL;
		}
	}
	return -EINVAL;
}

/* Reads all of fd into a fresh buffer. NULL when there is more than max bytes, or on error. */
static char *read_all(int fd, size_t max, size_t *len)
{
	size_t cap = 0, got = 0;
	char *buf = NULL;

	for (;;) {
		ssize_t n;

		if (got == cap) {
			size_t next = cap == 0 ? 4096 : cap * 2;
			char *bigger;

			if (cap > max) /* max + 1 bytes came: too many */
				break;
			next = next > max + 1 ? max + 1 : next;
			bigger = realloc(buf, next);
			if (bigger == NULL)
				break;
			buf = bigger;
			cap = next;
		}
		n = read(fd, buf + got, cap - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		if (n == 0) {
			*len = got;
			return buf;
		}
		got += (size_t)n;
	}
	free(buf);
	return NULL;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = errno;

		close(fd);
		return -err;
	}
	return fd;
}

/* Reads until buf (holding *have bytes already) has a whole line, or the deadline. Returns the
 * line's length (its newline at buf[len]), or -ETIMEDOUT, -EPIPE (closed first), -EMSGSIZE,
 * -errno. */
static ssize_t read_line(int fd, char *buf, size_t cap, size_t *have, uint64_t deadline)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		char *nl = memchr(buf, '\n', *have);
		uint64_t now = now_ms();
		ssize_t n;
		int r;

		if (nl != NULL)
			return nl - buf;
		if (*have == cap)
			return -EMSGSIZE;
		if (now >= deadline)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)(deadline - now > 60000 ? 60000 : deadline - now));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			continue;
		n = read(fd, buf + *have, cap - *have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		*have += (size_t)n;
	}
}

/*
 * One exchange with the bridge: sends the report (with the request id of an earlier ask, if
 * any) and reads answer lines until the decision. Returns 0 with *decision (NULL: none), or
 * -errno when the connection failed or broke first (request_id then holds the id an interim
 * line gave, for asking again).
 */
static int exchange(const struct hook_args *a, json_object *payload, uint64_t deadline,
		    char request_id[HOSTPROTO_REQUEST_ID_MAX + 1], json_object **decision)
{
	char *line = hookproto_report_encode(a->event, payload, request_id), *answer = NULL;
	struct cause cause = {{0}};
	int fd = -1, r;

	*decision = NULL;
	answer = malloc(HOOKPROTO_ANSWER_MAX + 1);
	if (line == NULL || answer == NULL) {
		r = -ENOMEM;
		goto out;
	}
	fd = r = connect_to(a->socket);
	if (r < 0 || (r = fsutil_write_all(fd, line, strlen(line))) < 0)
		goto out;
	for (size_t have = 0;;) {
		char rid[HOSTPROTO_REQUEST_ID_MAX + 1];
		ssize_t n = read_line(fd, answer, HOOKPROTO_ANSWER_MAX + 1, &have, deadline);

		if (n < 0) {
			r = (int)n;
			goto out;
		}
		r = hookproto_answer_decode(answer, (size_t)n, decision, rid, &cause);
		if (r < 0)
			goto out; /* not the bridge we know: no second try */
		if (r == 0)
			goto out;
		/* Interim: the request is pending under rid; the decision follows on this
		 * connection. What came after the newline is read on the next turn. */
		memcpy(request_id, rid, sizeof(rid));
		have -= (size_t)n + 1;
		memmove(answer, answer + n + 1, have);
	}
out:
	if (fd >= 0)
		close(fd);
	free(answer);
	free(line);
	return r < 0 ? r : 0;
}

/* Sends the report and, when there is one, prints the decision for claude. A PermissionRequest
 * whose connection breaks before its decision (the bridge restarts) asks again, with the id it
 * was given, until its wait ends. */
static void report(const struct hook_args *a, json_object *payload)
{
	char request_id[HOSTPROTO_REQUEST_ID_MAX + 1] = "";
	bool asks = a->event == HOOK_PERMISSION_REQUEST;
	uint64_t deadline =
	    now_ms() + (asks ? ((uint64_t)a->wait_s + HOOK_WAIT_GRACE_S) * 1000 : HOOK_ACK_MS);
	json_object *decision = NULL;
	char *out = NULL;

	for (;;) {
		int r = exchange(a, payload, deadline, request_id, &decision);
		struct timespec pause = {0, HOOK_RETRY_MS * 1000000L};

		if (r == 0 || !asks || r == -ETIMEDOUT || r == -EINVAL || r == -ENOMEM ||
		    now_ms() + HOOK_RETRY_MS >= deadline)
			break;
		nanosleep(&pause, NULL);
	}
	if (decision != NULL && asks)
		out = hookproto_claude_output(decision);
	if (out != NULL)
		fputs(out, stdout);
	json_object_put(decision);
	free(out);
}

int main(int argc, char **argv)
{
	struct cause cause = {{0}};
	struct hook_args a;
	json_object *payload;
	size_t len = 0;
	char *in;

	/* A bridge that goes away mid-request is an error to report, not a signal that kills. */
	signal(SIGPIPE, SIG_IGN);
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(usage, stdout);
		return 0;
	}
	/* Exit 2 would block the tool in claude: a usage error is 1, a non-blocking error. */
	if (parse_args(argc, argv, &a) < 0) {
		fputs(usage, stderr);
		return 1;
	}
	in = read_all(STDIN_FILENO, HOOK_STDIN_MAX, &len);
	if (in == NULL)
		return 0;
	payload = jsontext_parse(in, len, HOOK_PAYLOAD_DEPTH, &cause);
	free(in);
	if (payload != NULL && json_object_is_type(payload, json_type_object))
		report(&a, payload);
	json_object_put(payload);
	return 0;
}
