/* agentd-host's subscribers (host/subs.h) against a scripted client on host.sock: a subscriber
 * that reads nothing while megabytes of events are emitted costs the host at most its queue
 * limit, and once it reads it gets every event, in order, from the log; replies are the codec's. */
#include "host.h"

#include "hostproto.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define EVENTS 5000
#define GROUP  50 /* events of one batch (one read of claude's pipe) */

static char dir[] = "/tmp/test_subs.XXXXXX";
static struct config cfg;
static struct host h;

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	config_defaults(&cfg);
	memset(&h, 0, sizeof(h));
	h.loop = uv_default_loop();
	h.cfg = &cfg;
	snprintf(h.log_path, sizeof(h.log_path), "%s/events.log", dir);
	cr_assert_eq(evlog_open(&h.log, h.log_path), 0);
	cr_assert_eq(subs_listen(&h, dir), 0);
}

static void teardown(void)
{
	char p[128];

	subs_close(&h);
	uv_run(h.loop, UV_RUN_DEFAULT);
	evlog_close(&h.log);
	snprintf(p, sizeof(p), "%s/events.log", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/host.sock", dir);
	unlink(p);
	rmdir(dir);
}

TestSuite(subs, .init = setup, .fini = teardown);

static void spin(void)
{
	for (int i = 0; i < 20; i++)
		uv_run(h.loop, UV_RUN_NOWAIT);
}

/* A client that sends line and keeps a small receive buffer (what it leaves unread stays with the
 * host). */
static int client(const char *line)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0), small = 16 * 1024;

	snprintf(a.sun_path, sizeof(a.sun_path), "%s/host.sock", dir);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(write(fd, line, strlen(line)), (ssize_t)strlen(line));
	fcntl(fd, F_SETFL, O_NONBLOCK);
	spin();
	return fd;
}

/* Reads what is there, running the host's loop meanwhile; appends to *buf. Returns bytes read. */
static size_t drain(int fd, char **buf, size_t *len, size_t *cap)
{
	size_t got = 0;

	for (int idle = 0; idle < 50;) {
		ssize_t n;

		spin();
		if (*cap - *len < 65536) {
			*cap = *cap * 2 + 65536;
			*buf = realloc(*buf, *cap);
		}
		n = read(fd, *buf + *len, *cap - *len);
		if (n > 0) {
			*len += (size_t)n;
			got += (size_t)n;
			idle = 0;
		} else {
			if (n == 0)
				break;
			idle++;
			poll(NULL, 0, 1);
		}
	}
	return got;
}

static size_t host_queued(void)
{
	size_t q = 0;

	for (struct sub *s = h.subs.head; s != NULL; s = s->next)
		q += uv_stream_get_write_queue_size((uv_stream_t *)&s->pipe);
	return q;
}

static void emit_many(uint64_t *max_queued)
{
	char data[512];

	memset(data, 'x', sizeof(data));
	data[0] = '"';
	data[sizeof(data) - 1] = '"';
	for (int i = 0; i < EVENTS; i += GROUP) {
		host_batch_begin(&h);
		for (int k = 0; k < GROUP; k++) {
			bool last = i + k + 1 == EVENTS;
			uint64_t id = host_emit(&h, last ? "result" : "assistant", data,
						sizeof(data), NULL, NULL);

			cr_assert_gt(id, 0);
			if (last) /* what host_claude_line does with a result: prompt 1 ended */
				subs_turn_ended(&h, id, 1);
		}
		host_batch_end(&h);
		spin();
		if (host_queued() > *max_queued)
			*max_queued = host_queued();
	}
}

/* Checks buf holds events 1..EVENTS in order, after skip bytes. */
static void check_events(const char *buf, size_t len, size_t skip)
{
	uint64_t want = 1;

	for (size_t off = skip; off < len;) {
		const char *nl = memchr(buf + off, '\n', len - off);
		struct hostproto_event ev;

		cr_assert_not_null(nl);
		cr_assert_eq(hostproto_event_parse(buf + off, (size_t)(nl - buf - off), &ev), 0);
		cr_assert_eq(ev.id, want, "event %llu came as %llu", (unsigned long long)want,
			     (unsigned long long)ev.id);
		want++;
		off = (size_t)(nl - buf) + 1;
	}
	cr_assert_eq(want, EVENTS + 1, "every event came: %llu", (unsigned long long)want - 1);
}

Test(subs, a_subscriber_that_does_not_read_gets_everything_later)
{
	int fd = client("{\"type\":\"subscribe\",\"after\":0}\n");
	uint64_t max_queued = 0;
	char *buf = NULL;
	size_t len = 0, cap = 0;

	emit_many(&max_queued);
	cr_assert_gt(h.log.end, 2 * 1024 * 1024, "megabytes were emitted");
	cr_assert_leq(max_queued, SUBS_QUEUE_HIGH + GROUP * 700,
		      "the host held at most its limit and a batch: %llu",
		      (unsigned long long)max_queued);
	cr_assert_not_null(h.subs.head, "the subscriber was not dropped");
	drain(fd, &buf, &len, &cap);
	check_events(buf, len, 0);
	cr_assert_eq(h.subs.head->state, SUB_LIVE, "caught up: live again");
	close(fd);
	free(buf);
}

Test(subs, a_prompt_stream_ends_after_its_result)
{
	/* The host's prompt path without claude: the stream is a live subscriber from now on. */
	int fd = client("{\"type\":\"subscribe\",\"after\":0}\n");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	uint64_t max_queued = 0;

	sub_prompt(h.subs.head, h.log.last_id, 1, 0);
	emit_many(&max_queued);
	drain(fd, &buf, &len, &cap);
	/* An accepted line first, then the events, then the end (EOF). */
	cr_assert_eq(memcmp(buf, "{\"type\":\"accepted\",\"after\":0,\"queued\":0}\n", 41), 0);
	check_events(buf, len, 41);
	cr_assert_null(h.subs.head, "closed after the result");
	close(fd);
	free(buf);
}

/* The event names of the lines in buf after its first (the answer), space-separated. */
static void names_after_answer(const char *buf, size_t len, char *out, size_t outlen)
{
	const char *p = memchr(buf, '\n', len);
	size_t o = 0;

	out[0] = '\0';
	for (p = p != NULL ? p + 1 : buf + len; p < buf + len;) {
		const char *nl = memchr(p, '\n', (size_t)(buf + len - p));
		struct hostproto_event ev;

		cr_assert_not_null(nl);
		cr_assert_eq(hostproto_event_parse(p, (size_t)(nl - p), &ev), 0);
		o += (size_t)snprintf(out + o, outlen - o, "%s%.*s", o > 0 ? " " : "",
				      (int)ev.name_len, ev.name);
		p = nl + 1;
	}
}

/* The prompt path without claude: a connection whose request line never ends is made a
 * prompt's stream by sub_prompt, as requests.c does. */

/* Emits one turn's events: system, assistant, result (prompt done ended with it). */
static void turn(uint64_t done)
{
	host_batch_begin(&h);
	host_emit(&h, "system", "{}", 2, NULL, NULL);
	host_emit(&h, "assistant", "{}", 2, NULL, NULL);
	subs_turn_ended(&h, host_emit(&h, "result", "{}", 2, NULL, NULL), done);
	host_batch_end(&h);
	spin();
}

Test(subs, a_queued_prompt_streams_its_own_turn_only)
{
	int fd1 = client("{"), fd2;
	char *b1 = NULL, *b2 = NULL, names[256];
	size_t l1 = 0, c1 = 0, l2 = 0, c2 = 0;

	sub_prompt(h.subs.head, h.log.last_id, 1, 0);
	host_emit(&h, "system", "{}", 2, NULL, NULL);
	/* A second prompt while the first turn runs: claude queues it. */
	fd2 = client("{");
	sub_prompt(h.subs.head, h.log.last_id, 2, 1);
	host_emit(&h, "queued", "{\"position\":1}", 14, NULL, NULL);
	sub_hold(h.subs.head);
	host_batch_begin(&h);
	host_emit(&h, "assistant", "{}", 2, NULL, NULL);
	subs_turn_ended(&h, host_emit(&h, "result", "{}", 2, NULL, NULL), 1);
	host_batch_end(&h);
	spin();
	turn(2);
	drain(fd1, &b1, &l1, &c1);
	drain(fd2, &b2, &l2, &c2);
	cr_assert_eq(memcmp(b2, "{\"type\":\"accepted\",\"after\":1,\"queued\":1}\n", 41), 0);
	names_after_answer(b1, l1, names, sizeof(names));
	cr_assert_str_eq(names, "system queued assistant result", "the first prompt's stream: %s",
			 names);
	names_after_answer(b2, l2, names, sizeof(names));
	cr_assert_str_eq(names, "queued system assistant result", "the queued prompt's stream");
	cr_assert_null(h.subs.head, "both closed after their results");
	close(fd1);
	close(fd2);
	free(b1);
	free(b2);
}

/* claude may fold a queued prompt into the running turn: one result ends both prompts. */
Test(subs, a_prompt_folded_into_the_running_turn_ends_with_it)
{
	int fd1 = client("{"), fd2;
	char *b1 = NULL, *b2 = NULL, names[256];
	size_t l1 = 0, c1 = 0, l2 = 0, c2 = 0;

	sub_prompt(h.subs.head, h.log.last_id, 1, 0);
	fd2 = client("{");
	sub_prompt(h.subs.head, h.log.last_id, 2, 1);
	host_emit(&h, "queued", "{\"position\":1}", 14, NULL, NULL);
	sub_hold(h.subs.head);
	turn(2);
	drain(fd1, &b1, &l1, &c1);
	drain(fd2, &b2, &l2, &c2);
	names_after_answer(b2, l2, names, sizeof(names));
	cr_assert_str_eq(names, "queued result");
	cr_assert_null(h.subs.head, "both closed after the result");
	close(fd1);
	close(fd2);
	free(b1);
	free(b2);
}

Test(subs, bad_requests_get_the_codecs_errors)
{
	int fd = client("{\"type\":\"dance\"}\n");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	struct hostproto_answer a;

	drain(fd, &buf, &len, &cap);
	cr_assert_gt(len, 0);
	cr_assert_eq(hostproto_answer_parse(buf, len - 1, &a), 0);
	cr_assert_eq(a.type, HOSTPROTO_ERROR);
	cr_assert_eq(a.status, 400);
	cr_assert_str_eq(a.code, "invalid_request");
	hostproto_answer_release(&a);
	close(fd);
	free(buf);
}

/* A prompt while an interrupt is under way cannot be queued (claude may drop it with the turn):
 * 409, saying since when the running turn runs. */
Test(subs, a_prompt_during_an_interrupt_is_refused_with_the_turns_start)
{
	int fd;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	struct hostproto_answer a;

	h.claude.running = true;
	h.prompts = 1;
	h.interrupting = true;
	h.turn_started_ms = 1795000000123; /* 2026-11-18T11:06:40.123Z */
	fd = client("{\"type\":\"prompt\",\"prompt\":\"hi\"}\n");
	drain(fd, &buf, &len, &cap);
	cr_assert_gt(len, 0);
	cr_assert_eq(hostproto_answer_parse(buf, len - 1, &a), 0);
	cr_assert_eq(a.type, HOSTPROTO_ERROR);
	cr_assert_eq(a.status, 409);
	cr_assert_str_eq(a.code, "turn_running");
	cr_assert_not_null(strstr(a.error, "started at 2026-11-18T11:06:40.123Z"), "%s", a.error);
	cr_assert_eq(h.prompts, 1, "nothing was sent to claude");
	hostproto_answer_release(&a);
	close(fd);
	free(buf);
	h.claude.running = false;
}
