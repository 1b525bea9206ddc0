/*
 * standby: the message that hands a session to the waiting creation worker (a payload, the
 * session's record, and exactly one fd, the worker lock, over a SOCK_SEQPACKET pair), scripted
 * from the other end, and the rewrite of the waiting worker's command line. The keeper itself (a
 * real worker started and handed sessions) is tested by the integration suites: every creation goes
 * through it.
 */
#include "standby.h"

#include "session.h"
#include "testdir.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

static int pair[2] = {-1, -1};
static char dir[64], lock_path[128];

static void setup(void)
{
	testdir_make(dir, sizeof(dir), "/tmp/agentd-standby-XXXXXX");
	snprintf(lock_path, sizeof(lock_path), "%s/big-3.worker", dir);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
}

static void teardown(void)
{
	close(pair[0]);
	close(pair[1]);
	testdir_remove(dir);
}

TestSuite(standby, .init = setup, .fini = teardown);

/* A lock taken as create_start takes it. */
static int locked_fd(void)
{
	int fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);

	cr_assert_geq(fd, 0);
	cr_assert_eq(flock(fd, LOCK_EX | LOCK_NB), 0);
	return fd;
}

static bool lock_held(void)
{
	int fd = open(lock_path, O_RDWR | O_CLOEXEC);
	bool held;

	cr_assert_geq(fd, 0);
	held = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return held;
}

/* Sends raw bytes with nfds copies of fd (0: none). */
static void send_raw(const void *buf, size_t len, int fd, int nfds)
{
	union {
		char buf[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} ctl = {{0}};
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	int fds[3] = {fd, fd, fd};

	if (nfds > 0) {
		struct cmsghdr *c;

		msg.msg_control = ctl.buf;
		msg.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
	}
	cr_assert_eq(sendmsg(pair[0], &msg, MSG_NOSIGNAL), (ssize_t)len);
}

static char buf[STANDBY_PAYLOAD_MAX + 1];
static size_t len;

Test(standby, the_lock_travels_and_stays_held_by_the_receiver_alone)
{
	static const char record[] = "{\"id\":\"big-3\"}";
	int fd = locked_fd(), got = -1;

	cr_assert_eq(standby_send(pair[0], record, strlen(record), fd), 0);
	close(fd); /* as create_handoff does once handed over */
	cr_assert_eq(standby_receive(pair[1], buf, sizeof(buf), &len, &got), 1);
	cr_assert_eq(len, strlen(record));
	cr_assert_str_eq(buf, record, "the payload whole, NUL-terminated");
	cr_assert_geq(got, 0);
	cr_assert(fcntl(got, F_GETFD) & FD_CLOEXEC, "the received lock is close-on-exec");
	cr_assert(lock_held(), "the receiver holds the lock the sender took");
	close(got);
	cr_assert_not(lock_held(), "closing the received fd releases it");
}

Test(standby, the_end_of_the_api_is_an_end_not_an_error)
{
	int got = -1;

	close(pair[0]);
	pair[0] = -1;
	cr_assert_eq(standby_receive(pair[1], buf, sizeof(buf), &len, &got), 0);
	cr_assert_eq(got, -1);
}

Test(standby, sending_to_a_dead_worker_fails_and_keeps_the_lock_ours)
{
	int fd = locked_fd();

	close(pair[1]);
	pair[1] = -1;
	cr_assert_eq(standby_send(pair[0], "big-3", 5, fd), -EPIPE);
	cr_assert(lock_held());
	close(fd);
}

/* Each malformed message is refused with -EPROTO, and every fd it carried is closed. */
static void refused(const char *what, const void *raw, size_t rawlen, int nfds, size_t room)
{
	int fd = locked_fd(), got = -1;

	send_raw(raw, rawlen, fd, nfds);
	close(fd);
	cr_assert_eq(standby_receive(pair[1], buf, room, &len, &got), -EPROTO, "%s", what);
	cr_assert_eq(got, -1, "%s", what);
	cr_assert_not(lock_held(), "%s: no fd of it stays open", what);
}

Test(standby, malformed_messages_are_refused_and_their_fds_closed)
{
	refused("no fd", "big-3", 5, 0, sizeof(buf));
	refused("two fds", "big-3", 5, 2, sizeof(buf));
	refused("three fds", "big-3", 5, 3, sizeof(buf));
	refused("an empty payload", "", 0, 1, sizeof(buf));
	refused("a payload cut short", "0123456789", 10, 1, 8);
	refused("a payload that fills the buffer (maybe cut)", "01234567", 8, 1, 8);
}

Test(standby, the_sender_refuses_what_the_receiver_would)
{
	static char big[STANDBY_PAYLOAD_MAX + 1];
	int fd = locked_fd();

	memset(big, 'x', sizeof(big));
	cr_assert_eq(standby_send(pair[0], big, 0, fd), -EMSGSIZE);
	cr_assert_eq(standby_send(pair[0], big, sizeof(big), fd), -EMSGSIZE);
	cr_assert_eq(standby_send(pair[0], big, STANDBY_PAYLOAD_MAX, fd), 0, "the largest fits");
	close(fd);
	cr_assert_eq(standby_receive(pair[1], buf, sizeof(buf), &len, &fd), 1);
	cr_assert_eq(len, STANDBY_PAYLOAD_MAX);
	close(fd);
}

Test(standby, a_valid_message_after_a_refused_one_still_arrives)
{
	int fd = locked_fd(), got = -1;

	send_raw("nope", 4, fd, 0);
	cr_assert_eq(standby_send(pair[0], "big-30", 6, fd), 0);
	close(fd);
	cr_assert_eq(standby_receive(pair[1], buf, sizeof(buf), &len, &got), -EPROTO);
	cr_assert_eq(standby_receive(pair[1], buf, sizeof(buf), &len, &got), 1);
	cr_assert_str_eq(buf, "big-30");
	close(got);
}

/* argv laid out as the kernel does: the words one after another, each ending in a NUL. */
struct fake_argv {
	char area[512];
	char *argv[8];
};

static void fake_argv(struct fake_argv *f, const char *const *words)
{
	size_t off = 0;
	int i;

	memset(f, 0, sizeof(*f));
	for (i = 0; words[i] != NULL; i++) {
		size_t w = strlen(words[i]) + 1;

		cr_assert_leq(off + w, sizeof(f->area));
		memcpy(f->area + off, words[i], w);
		f->argv[i] = f->area + off;
		off += w;
	}
	f->argv[i] = NULL;
}

/* The command line /proc/<pid>/cmdline would give: the argv area up to its last word's NUL. */
static size_t cmdline(const struct fake_argv *f, int words, char *out)
{
	const char *end = f->argv[words - 1] + strlen(f->argv[words - 1]) + 1;
	size_t n = (size_t)(end - f->area);

	memcpy(out, f->area, n);
	for (size_t i = 0; i + 1 < n; i++)
		if (out[i] == '\0')
			out[i] = ' ';
	return n;
}

Test(standby, the_title_becomes_what_a_worker_of_that_session_has)
{
	static const char room[] = "                                                             "
				   "                                                     ";
	const char *words[] = {"/usr/bin/agentd-api", STANDBY_ARG, room, "--no-tmux-start", NULL};
	struct fake_argv f;
	char line[512];
	size_t n;

	fake_argv(&f, words);
	cr_assert_eq(standby_retitle(f.argv, "big-3"), 0);
	n = cmdline(&f, 4, line);
	cr_assert_eq(strncmp(line, "/usr/bin/agentd-api --create big-3 --no-tmux-start ",
			     strlen("/usr/bin/agentd-api --create big-3 --no-tmux-start ")),
		     0, "%s", line);
	for (size_t i = strlen("/usr/bin/agentd-api --create big-3 --no-tmux-start"); i + 1 < n;
	     i++)
		cr_assert_eq(line[i], ' ', "the rest is blank");
	cr_assert_eq(line[n - 1], '\0', "the area still ends with a NUL");
}

/* A valid id of SESSION_ID_MAX characters: the longest name, the longest issue number. */
static void longest_id(char *id)
{
	memset(id, 'a', SESSION_NAME_MAX);
	snprintf(id + SESSION_NAME_MAX, SESSION_ID_MAX + 1 - SESSION_NAME_MAX, "-%d", 1999999999);
	cr_assert_eq(strlen(id), SESSION_ID_MAX);
	cr_assert(session_id_valid(id), "%s", id);
}

Test(standby, a_title_that_does_not_fit_is_left_as_it_was)
{
	char id[SESSION_ID_MAX + 1];
	const char *words[] = {"agentd-api", STANDBY_ARG, " ", NULL};
	struct fake_argv f, before;

	longest_id(id);
	fake_argv(&f, words);
	before = f;
	cr_assert_eq(standby_retitle(f.argv, id), -ENOSPC);
	cr_assert_eq(memcmp(f.area, before.area, sizeof(f.area)), 0);
}

Test(standby, the_room_agentd_api_gives_fits_the_longest_id)
{
	char id[SESSION_ID_MAX + 1], room[SESSION_ID_MAX + 2];
	const char *words[] = {"agentd-api", STANDBY_ARG, room, "--no-tmux-start", NULL};
	struct fake_argv f;

	/* standby.c's STANDBY_TITLE_ROOM: SESSION_ID_MAX + 1 spaces. */
	memset(room, ' ', SESSION_ID_MAX + 1);
	room[SESSION_ID_MAX + 1] = '\0';
	longest_id(id);
	fake_argv(&f, words);
	cr_assert_eq(standby_retitle(f.argv, id), 0);
	cr_assert_str_eq(f.argv[1], "--create");
	cr_assert_str_eq(f.argv[1] + strlen("--create") + 1, id);
}
