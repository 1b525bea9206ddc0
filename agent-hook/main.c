/*
 * agentd-hook: the command claude runs for its hooks in a terminal-mode session (as the agent's
 * user). It reports the hook event to agentd-bridge and, for PermissionRequest, waits for an answer
 * given from elsewhere (the web UI, Telegram) while the TUI's own dialog is shown: claude ends this
 * process with SIGTERM when the dialog is answered first. It must never harm the agent: whatever
 * goes wrong, it exits 0 with no output, which leaves claude as if there were no hook.
 */
#include "hookproto.h"
#include "jsontext.h"

#include <errno.h>
#include <poll.h>
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
#define HOOK_PAYLOAD_DEPTH  64

static const char usage[] =
    "usage: agentd-hook --socket PATH [--wait SECONDS] EVENT\n"
    "\n"
    "Run by claude for a hook EVENT (SessionStart, UserPromptSubmit, PreToolUse,\n"
    "PermissionRequest, PostToolUse, PostToolUseFailure, Notification, Stop, SessionEnd) with\n"
    "the hook's JSON on stdin. Reports it to agentd-bridge on PATH. For PermissionRequest it\n"
    "waits up to SECONDS (default 3600) for an answer given from a client and prints it for\n"
    "claude. Always exits 0 unless the arguments are wrong (exit 1).\n";

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

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads one answer line (newline excluded) into buf until deadline. Returns its length, or
 * -ETIMEDOUT, -EPIPE (closed first), -EMSGSIZE, -errno. */
static ssize_t read_line(int fd, char *buf, size_t cap, uint64_t deadline)
{
	size_t got = 0;

	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint64_t now = now_ms();
		char *nl;
		ssize_t n;
		int r;

		if (now >= deadline)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)(deadline - now > 60000 ? 60000 : deadline - now));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			continue;
		if (got == cap)
			return -EMSGSIZE;
		n = read(fd, buf + got, cap - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		nl = memchr(buf + got, '\n', (size_t)n);
		got += (size_t)n;
		if (nl != NULL)
			return nl - buf;
	}
}

/* Sends the report and, when there is one, prints the decision for claude. */
static void report(const struct hook_args *a, json_object *payload)
{
	char *line = hookproto_report_encode(a->event, payload), *answer = NULL, *out = NULL;
	bool asks = a->event == HOOK_PERMISSION_REQUEST;
	uint64_t deadline = now_ms() + (asks ? (uint64_t)a->wait_s * 1000 : HOOK_ACK_MS);
	json_object *decision = NULL;
	struct cause cause = {{0}};
	int fd = -1;
	ssize_t n;

	if (line == NULL)
		goto out;
	fd = connect_to(a->socket);
	if (fd < 0 || write_all(fd, line, strlen(line)) < 0)
		goto out;
	answer = malloc(HOOKPROTO_ANSWER_MAX + 1);
	if (answer == NULL)
		goto out;
	n = read_line(fd, answer, HOOKPROTO_ANSWER_MAX + 1, deadline);
	if (n < 0 || hookproto_answer_decode(answer, (size_t)n, &decision, &cause) < 0)
		goto out;
	if (decision != NULL && asks)
		out = hookproto_claude_output(decision);
	if (out != NULL)
		fputs(out, stdout);
out:
	if (fd >= 0)
		close(fd);
	json_object_put(decision);
	free(out);
	free(answer);
	free(line);
}

int main(int argc, char **argv)
{
	struct cause cause = {{0}};
	struct hook_args a;
	json_object *payload;
	size_t len = 0;
	char *in;

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
