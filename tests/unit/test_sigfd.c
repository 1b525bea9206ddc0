/* client/sigfd: blocked signals read one at a time from the descriptor, the old mask given back. */
#include "sigfd.h"

#include <criterion/criterion.h>

#include <signal.h>
#include <unistd.h>

Test(sigfd, reads_each_blocked_signal_once_and_keeps_the_old_mask)
{
	static const int signals[] = {SIGUSR1, SIGUSR2};
	sigset_t old, now;
	int fd;

	sigemptyset(&old);
	fd = sigfd_open(signals, 2, &old);
	cr_assert_geq(fd, 0);
	cr_assert_not(sigismember(&old, SIGUSR1), "the mask before had no SIGUSR1");
	cr_assert_eq(sigfd_next(fd), 0, "nothing pending yet");
	cr_assert_eq(kill(getpid(), SIGUSR2), 0, "blocked: the process lives on");
	cr_assert_eq(kill(getpid(), SIGUSR1), 0);
	/* Standard signals are delivered lowest number first. */
	cr_assert_eq(sigfd_next(fd), SIGUSR1);
	cr_assert_eq(sigfd_next(fd), SIGUSR2);
	cr_assert_eq(sigfd_next(fd), 0, "each read once");
	cr_assert_eq(sigprocmask(SIG_SETMASK, &old, NULL), 0);
	cr_assert_eq(sigprocmask(SIG_SETMASK, NULL, &now), 0);
	cr_assert_not(sigismember(&now, SIGUSR1));
	close(fd);
}
