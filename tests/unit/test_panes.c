/*
 * panes: a peer's ancestry from /proc (a /proc of the test's own making, with names that hold
 * blanks and parentheses, and the real one), tmux's list of panes parsed with everything a
 * session did not make left out, and the nearest pane found only when pid and start time agree.
 */
#include "panes.h"

#include "testdir.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[64];

static void setup(void)
{
	testdir_make(root, sizeof(root), "/tmp/test_panes.XXXXXX");
}

static void teardown(void)
{
	testdir_remove(root);
}

TestSuite(panes, .init = setup, .fini = teardown);

/* A process of the fake /proc: its stat line as the kernel writes it. */
static void fake_proc(int pid, const char *comm, int ppid, unsigned long long start)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d", root, pid);
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/%d/stat", root, pid);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f,
		"%d (%s) S %d %d %d 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 %llu 2000000 300 "
		"18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
		pid, comm, ppid, pid, pid, start);
	fclose(f);
}

Test(panes, stat_reads_parent_and_start_past_a_strange_name)
{
	pid_t ppid = 0;
	unsigned long long start = 0;

	fake_proc(42, "a) (b c) S 9 9", 7, 123456789ULL);
	cr_assert_eq(panes_stat(root, 42, &ppid, &start), 0);
	cr_assert_eq(ppid, 7);
	cr_assert_eq(start, 123456789ULL);
	cr_assert_eq(panes_stat(root, 43, &ppid, &start), -ENOENT);
	cr_assert_eq(panes_stat(root, 0, &ppid, &start), -EINVAL);
}

Test(panes, stat_refuses_a_line_it_cannot_read)
{
	char path[256];
	pid_t ppid;
	unsigned long long start;
	FILE *f;

	snprintf(path, sizeof(path), "%s/5", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/5/stat", root);
	f = fopen(path, "w");
	fputs("5 (short) S 1 2 3\n", f);
	fclose(f);
	cr_assert_eq(panes_stat(root, 5, &ppid, &start), -EBADMSG);
	f = fopen(path, "w");
	fputs("5 no parentheses S 1\n", f);
	fclose(f);
	cr_assert_eq(panes_stat(root, 5, &ppid, &start), -EBADMSG);
}

Test(panes, ancestry_up_to_init)
{
	struct panes_proc chain[PANES_DEPTH_MAX];
	size_t n;

	fake_proc(1, "init", 0, 1);
	fake_proc(300, "tmux: server", 1, 50);
	fake_proc(400, "claude", 300, 60);
	fake_proc(500, "sh", 400, 70);
	fake_proc(501, "agentd-hook", 500, 71);
	n = panes_ancestry(root, 501, chain, PANES_DEPTH_MAX);
	cr_assert_eq(n, 5);
	cr_assert_eq(chain[0].pid, 501);
	cr_assert_eq(chain[0].start, 71);
	cr_assert_eq(chain[2].pid, 400);
	cr_assert_eq(chain[4].pid, 1);
	cr_assert_eq(panes_ancestry(root, 501, chain, 2), 2, "at most max");
	cr_assert_eq(panes_ancestry(root, 999, chain, PANES_DEPTH_MAX), 0, "a process gone");
}

Test(panes, ancestry_of_a_real_process)
{
	struct panes_proc chain[PANES_DEPTH_MAX];
	size_t n = panes_ancestry(PANES_PROC_ROOT, getpid(), chain, PANES_DEPTH_MAX);

	cr_assert_geq(n, 2);
	cr_assert_eq(chain[0].pid, getpid());
	cr_assert_eq(chain[1].pid, getppid());
	cr_assert_gt(chain[0].start, 0);
}

Test(panes, parse_keeps_only_agentd_panes_that_live)
{
	static const char list[] = "400 acme-widgets-1\n"
				   "401 \n"               /* a session agentd did not make */
				   "402 ../../etc\n"      /* not a session id */
				   "999 acme-widgets-2\n" /* gone since tmux listed it */
				   "no server running on /x\n"
				   "-3 acme-widgets-3\n"
				   "403 acme-widgets-3"; /* no final newline */
	struct panes *t = calloc(1, sizeof(*t));

	fake_proc(400, "claude", 1, 60);
	fake_proc(401, "bash", 1, 61);
	fake_proc(402, "bash", 1, 62);
	fake_proc(403, "agentd-host", 1, 63);
	cr_assert_eq(panes_parse(t, root, list, strlen(list)), 2);
	cr_assert_eq(t->e[0].proc.pid, 400);
	cr_assert_eq(t->e[0].proc.start, 60);
	cr_assert_str_eq(t->e[0].id, "acme-widgets-1");
	cr_assert_eq(t->e[1].proc.pid, 403);
	cr_assert_str_eq(t->e[1].id, "acme-widgets-3");
	cr_assert_eq(panes_parse(t, root, "", 0), 0);
	free(t);
}

Test(panes, an_over_long_line_is_skipped)
{
	struct panes *t = calloc(1, sizeof(*t));
	char *list = malloc(PANES_LINE_MAX + 64);

	fake_proc(400, "claude", 1, 60);
	memset(list, 'x', PANES_LINE_MAX + 10);
	memcpy(list, "400 ", 4);
	strcpy(list + PANES_LINE_MAX + 10, "\n400 a-b-1\n");
	cr_assert_eq(panes_parse(t, root, list, strlen(list)), 1);
	cr_assert_str_eq(t->e[0].id, "a-b-1");
	free(list);
	free(t);
}

Test(panes, find_the_nearest_pane_with_the_same_start)
{
	struct panes *t = calloc(1, sizeof(*t));
	struct panes_proc chain[] = {{501, 71}, {500, 70}, {400, 60}, {300, 50}, {1, 1}};

	t->n = 2;
	t->e[0] = (struct panes_entry){{300, 50}, "outer-x-1"};
	t->e[1] = (struct panes_entry){{400, 60}, "acme-widgets-1"};
	cr_assert_str_eq(panes_find(t, chain, 5), "acme-widgets-1");
	/* The pane's pid now names another process (the pane died, the pid was taken). */
	t->e[1].proc.start = 61;
	cr_assert_str_eq(panes_find(t, chain, 5), "outer-x-1");
	t->n = 0;
	cr_assert_null(panes_find(t, chain, 5));
	free(t);
}
