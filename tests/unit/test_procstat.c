/* core/procstat: /proc/<pid>/stat lines as the kernel writes them, names that try to confuse. */
#include "procstat.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* A zombie's line from Linux 6.1: exit_code (field 52) is the wait status 256 (exit 1). */
static const char zombie[] =
    "4242 (a) b)) Z 17 4242 4242 0 -1 4194564 120 0 0 0 7 3 11 13 20 0 1 0 987654 0 0 "
    "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 256\n";

Test(procstat, parses_the_fields_counted_from_the_last_paren)
{
	struct procstat ps;

	cr_assert_eq(procstat_parse(zombie, &ps), 0);
	cr_assert_str_eq(ps.comm, "a) b)", "the name keeps its blanks and parentheses");
	cr_assert_eq(ps.state, 'Z');
	cr_assert_eq(ps.ppid, 17);
	cr_assert_eq(ps.utime, 7);
	cr_assert_eq(ps.stime, 3);
	cr_assert_eq(ps.cutime, 11);
	cr_assert_eq(ps.cstime, 13);
	cr_assert_eq(ps.start_ticks, 987654);
	cr_assert_eq(ps.rss_pages, 0);
	cr_assert_eq(ps.exit_code, 256);
}

Test(procstat, an_old_kernel_line_has_no_exit_code)
{
	struct procstat ps;

	cr_assert_eq(procstat_parse("1 (init) S 0 1 1 0 -1 4194560 5 6 7 8 9 10 11 12 20 0 1 0 "
				    "33 1000 44\n",
				    &ps),
		     0);
	cr_assert_eq(ps.exit_code, -1);
	cr_assert_eq(ps.start_ticks, 33);
	cr_assert_eq(ps.rss_pages, 44);
}

Test(procstat, refuses_what_is_not_a_stat_line)
{
	struct procstat ps;

	cr_assert_eq(procstat_parse("", &ps), -EINVAL);
	cr_assert_eq(procstat_parse("12 noparen S 1", &ps), -EINVAL);
	cr_assert_eq(procstat_parse("12 (x)", &ps), -EINVAL, "cut after the name");
	cr_assert_eq(procstat_parse("12 (x) S", &ps), -EINVAL, "no parent");
	cr_assert_eq(procstat_parse(") 12 (x", &ps), -EINVAL, "parentheses the wrong way");
}

Test(procstat, reads_a_live_process_and_a_zombie_child)
{
	struct procstat ps;
	pid_t child;
	int status;

	cr_assert_eq(procstat_read(getpid(), &ps), 0);
	cr_assert_eq(ps.ppid, getppid());
	cr_assert_neq(ps.state, 'Z');
	cr_assert_gt(ps.start_ticks, 0);
	cr_assert_gt(ps.rss_pages, 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0)
		_exit(3);
	/* Wait until the child is a zombie without reaping it. */
	for (int i = 0; i < 500; i++) {
		cr_assert_eq(procstat_read(child, &ps), 0);
		if (ps.state == 'Z')
			break;
		usleep(10000);
	}
	cr_assert_eq(ps.state, 'Z');
	cr_assert_eq(ps.ppid, getpid());
	cr_assert(WIFEXITED(ps.exit_code) && WEXITSTATUS(ps.exit_code) == 3);
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert_eq(procstat_read(child, &ps), -ESRCH, "reaped: gone");
	cr_assert_eq(procstat_read(0, &ps), -ESRCH);
	cr_assert_eq(procstat_read(-5, &ps), -ESRCH);
}
