/*
 * cageseccomp: the filter agentd-cage hands to bwrap, loaded here the way bwrap loads it (read
 * from the descriptor, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP) in a child, which then tries the
 * refused ioctls and one that must still work.
 */
#include "cageseccomp.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define FILTER_MAX 4096 /* bytes of BPF: a handful of rules is a few hundred */

/* The child's verdicts, one bit each: set when the check failed. */
enum {
	BAD_LOAD = 1 << 0,
	BAD_TIOCSTI = 1 << 1,
	BAD_TIOCLINUX = 1 << 2,
	BAD_HIGH_BITS = 1 << 3,
	BAD_OTHER = 1 << 4,
};

static int run_child(const struct sock_filter *insns, size_t n)
{
	struct sock_fprog prog = {.len = (unsigned short)n, .filter = (struct sock_filter *)insns};
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int bad = 0, fd, avail = 0;
		char ch = 'x';

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
			_exit(BAD_LOAD);
		fd = open("/dev/null", O_RDONLY);
		if (ioctl(fd, TIOCSTI, &ch) == 0 || errno != EPERM)
			bad |= BAD_TIOCSTI;
		if (ioctl(fd, TIOCLINUX, &ch) == 0 || errno != EPERM)
			bad |= BAD_TIOCLINUX;
		/* The kernel reads the request as 32 bits: high bits reach TIOCSTI all the same. */
		if (syscall(SYS_ioctl, fd, (1UL << 32) | TIOCSTI, &ch) == 0 || errno != EPERM)
			bad |= BAD_HIGH_BITS;
		/* Any other ioctl is the kernel's to answer (/dev/null: not a tty, ENOTTY). */
		if (ioctl(fd, FIONREAD, &avail) < 0 && errno == EPERM)
			bad |= BAD_OTHER;
		_exit(bad);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "the child died of signal %d", WTERMSIG(st));
	return WEXITSTATUS(st);
}

Test(cageseccomp, refuses_tiocsti_and_tioclinux_with_eperm)
{
	struct sock_filter insns[FILTER_MAX / sizeof(struct sock_filter)];
	struct cause c = {{0}};
	ssize_t got;
	int fd = cage_seccomp_fd(&c), bad;

	cr_assert_geq(fd, 0, "%s", c.msg);
	cr_assert_eq(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0, "bwrap reads it after exec");
	got = read(fd, insns, sizeof(insns));
	cr_assert_gt(got, 0, "the filter is there from offset 0");
	cr_assert_eq(got % sizeof(struct sock_filter), 0);
	cr_assert_lt((size_t)got, sizeof(insns));
	close(fd);
	bad = run_child(insns, (size_t)got / sizeof(struct sock_filter));
	cr_assert_eq(bad & BAD_LOAD, 0, "the kernel loads the filter");
	cr_assert_eq(bad & BAD_TIOCSTI, 0, "TIOCSTI is refused with EPERM");
	cr_assert_eq(bad & BAD_TIOCLINUX, 0, "TIOCLINUX is refused with EPERM");
	cr_assert_eq(bad & BAD_HIGH_BITS, 0, "TIOCSTI with high bits set is refused too");
	cr_assert_eq(bad & BAD_OTHER, 0, "another ioctl is not refused");
}
