/*
 * cageuid in a temporary registry and drop-in directory: the lowest free uid, the same uid again
 * for the same session, another for another session or stack, users the database knows skipped,
 * entries of a removed stack freed, release only by the holder, nss-systemd's drop-ins, and many
 * processes allocating at once never sharing a uid.
 */
#include "cageuid.h"

#include "testdir.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define T_RACERS 8      /* processes allocating at once */
#define T_SPAN   32u    /* uids a test may hand out */
#define T_FIRST  61184u /* the default range's first uid */
#define T_LAST   65519u
#define T_LO     t_lo
#define T_HI     (t_lo + T_SPAN - 1)

/* The first window of T_SPAN uids that the machine's user database knows none of: a stack of
 * the integration tests running meanwhile has its cage users there (nss-systemd), which the
 * allocator rightly skips; the tests expect the lowest uids of the window to be free. */
static uid_t t_lo;

static char tmp[64], reg[128], udb[128], stateA[128], stateB[128];
static struct cageuid_dirs dirs;

static void setup(void)
{
	testdir_make(tmp, sizeof(tmp), "/tmp/agentd-cageuid-XXXXXX");
	snprintf(reg, sizeof(reg), "%s/reg", tmp);
	snprintf(udb, sizeof(udb), "%s/userdb", tmp);
	snprintf(stateA, sizeof(stateA), "%s/stateA", tmp);
	snprintf(stateB, sizeof(stateB), "%s/stateB", tmp);
	cr_assert_eq(mkdir(stateA, 0700), 0);
	cr_assert_eq(mkdir(stateB, 0700), 0);
	dirs = (struct cageuid_dirs){reg, udb};
	for (t_lo = T_FIRST; t_lo + T_SPAN - 1 <= T_LAST; t_lo += T_SPAN) {
		uid_t u = t_lo;

		while (u < t_lo + T_SPAN && getpwuid(u) == NULL && getgrgid(u) == NULL)
			u++;
		if (u == t_lo + T_SPAN)
			return;
	}
	cr_assert_fail("no window of %u unknown uids in %u-%u", T_SPAN, T_FIRST, T_LAST);
}

static void teardown(void)
{
	testdir_remove(tmp);
}

TestSuite(cageuid, .init = setup, .fini = teardown);

Test(cageuid, parse_range)
{
	uid_t lo, hi;

	cr_assert_eq(cageuid_parse_range("61184-65519", &lo, &hi), 0);
	cr_assert_eq(lo, 61184u);
	cr_assert_eq(hi, 65519u);
	cr_assert_eq(cageuid_parse_range("5-5", &lo, &hi), 0);
	cr_assert_eq(cageuid_parse_range("0-10", &lo, &hi), -EINVAL);
	cr_assert_eq(cageuid_parse_range("10-5", &lo, &hi), -EINVAL);
	cr_assert_eq(cageuid_parse_range("61184-65534", &lo, &hi), -EINVAL);
	cr_assert_eq(cageuid_parse_range("61184", &lo, &hi), -EINVAL);
	cr_assert_eq(cageuid_parse_range("-5-6", &lo, &hi), -EINVAL);
	cr_assert_eq(cageuid_parse_range("1-2x", &lo, &hi), -EINVAL);
	cr_assert_eq(cageuid_parse_range("", &lo, &hi), -EINVAL);
}

Test(cageuid, same_session_same_uid_others_another)
{
	struct cause c = {{0}};
	uid_t a, a2, b, other;

	cr_assert_eq(cageuid_alloc(&dirs, T_LO, T_HI, stateA, "r-1", "/h/a", &a, &c), 0, "%s",
		     c.msg);
	cr_assert_eq(a, T_LO);
	cr_assert_eq(cageuid_alloc(&dirs, T_LO, T_HI, stateA, "r-2", "/h/b", &b, &c), 0);
	cr_assert_eq(b, T_LO + 1);
	cr_assert_eq(cageuid_alloc(&dirs, T_LO, T_HI, stateA, "r-1", "/h/a", &a2, &c), 0);
	cr_assert_eq(a2, a, "the same session got another uid");
	/* Another stack's session of the same id is another holder. */
	cr_assert_eq(cageuid_alloc(&dirs, T_LO, T_HI, stateB, "r-1", "/h/c", &other, &c), 0);
	cr_assert_eq(other, T_LO + 2);
	/* A released uid is the lowest free one again. */
	cr_assert_eq(cageuid_release(&dirs, a, stateA, "r-1"), 0);
	cr_assert_eq(cageuid_alloc(&dirs, T_LO, T_HI, stateB, "r-9", "/h/d", &other, &c), 0);
	cr_assert_eq(other, T_LO);
}

/* The registry names the holder: its uid is found above free ones, and outside the range not. */
Test(cageuid, held_uid_wins_over_a_lower_free_one)
{
	struct cause c = {{0}};
	uid_t a, b, b2, x;

	cr_assert_eq(cageuid_alloc(&dirs, T_LO, T_HI, stateA, "r-1", "/h/a", &a, &c), 0);
	cr_assert_eq(cageuid_alloc(&dirs, T_LO, T_HI, stateA, "r-2", "/h/b", &b, &c), 0);
	cr_assert_eq(b, T_LO + 1);
	cr_assert_eq(cageuid_release(&dirs, a, stateA, "r-1"), 0);
	cr_assert_eq(cageuid_alloc(&dirs, T_LO, T_HI, stateA, "r-2", "/h/b", &b2, &c), 0);
	cr_assert_eq(b2, b, "the session got the lower free uid instead of its own");
	/* Held outside a narrower range: not its to keep there; the range's lowest free one. */
	cr_assert_eq(cageuid_alloc(&dirs, T_LO + 2, T_HI, stateA, "r-2", "/h/b", &x, &c), 0);
	cr_assert_eq(x, T_LO + 2);
}

Test(cageuid, release_only_by_holder)
{
	struct cause c = {{0}};
	char path[256];
	uid_t a, b;

	cr_assert_eq(cageuid_alloc(&dirs, T_LO, T_HI, stateA, "r-1", "/h/a", &a, &c), 0);
	cr_assert_eq(cageuid_release(&dirs, a, stateB, "r-1"), 0);
	snprintf(path, sizeof(path), "%s/%u", reg, (unsigned)a);
	cr_assert_eq(access(path, F_OK), 0, "another holder's release removed the entry");
	cr_assert_eq(cageuid_alloc(&dirs, T_LO, T_HI, stateB, "r-1", "/h/b", &b, &c), 0);
	cr_assert_neq(a, b);
	cr_assert_eq(cageuid_release(&dirs, a, stateA, "r-1"), 0);
	cr_assert_eq(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/agentd-%u.user", udb, (unsigned)a);
	cr_assert_eq(access(path, F_OK), -1, "the drop-in outlived its uid");
}

Test(cageuid, users_the_database_knows_are_skipped)
{
	struct cause c = {{0}};
	uid_t u;

	/* uid 1 (daemon) and 2 (bin) are in every Debian /etc/passwd. */
	cr_assert_eq(cageuid_alloc(&dirs, 1, 2, stateA, "r-1", "/h", &u, &c), -ENOSPC);
	cr_assert(strstr(c.msg, "AGENTD_SESSION_UIDS") != NULL, "%s", c.msg);
}

Test(cageuid, range_used_up_then_a_gone_stack_frees_its_uids)
{
	struct cause c = {{0}};
	uid_t u;

	cr_assert_eq(cageuid_alloc(&dirs, T_LO, T_LO + 1, stateA, "r-1", "/h", &u, &c), 0);
	cr_assert_eq(cageuid_alloc(&dirs, T_LO, T_LO + 1, stateA, "r-2", "/h", &u, &c), 0);
	cr_assert_eq(cageuid_alloc(&dirs, T_LO, T_LO + 1, stateB, "r-3", "/h", &u, &c), -ENOSPC);
	testdir_remove(stateA);
	cr_assert_eq(cageuid_alloc(&dirs, T_LO, T_LO + 1, stateB, "r-3", "/h", &u, &c), 0, "%s",
		     c.msg);
	cr_assert_eq(u, T_LO);
}

Test(cageuid, claim_after_reboot_and_refused_when_taken)
{
	struct cause c = {{0}};
	uid_t a;

	cr_assert_eq(cageuid_alloc(&dirs, T_LO, T_HI, stateA, "r-1", "/h/a", &a, &c), 0);
	testdir_remove(reg); /* a reboot empties /run */
	testdir_remove(udb);
	cr_assert_eq(cageuid_claim(&dirs, a, stateA, "r-1", "/h/a", &c), 0, "%s", c.msg);
	cr_assert_eq(cageuid_claim(&dirs, a, stateA, "r-1", "/h/a", &c), 0, "%s", c.msg);
	cr_assert_eq(cageuid_claim(&dirs, a, stateB, "r-1", "/h/a", &c), -EBUSY);
	cr_assert_eq(cageuid_claim(&dirs, 1, stateB, "r-1", "/h/a", &c), -EBUSY,
		     "a uid of /etc/passwd was claimed");
}

static char *slurp(const char *path)
{
	static char buf[1024];
	FILE *f = fopen(path, "r");
	size_t n;

	cr_assert_not_null(f, "%s", path);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

Test(cageuid, dropins_for_nss_systemd)
{
	struct cause c = {{0}};
	char path[256], link[64], want[64];
	ssize_t n;
	uid_t a;

	cr_assert_eq(cageuid_alloc(&dirs, T_LO, T_HI, stateA, "r-1", "/h/a \"q\"", &a, &c), 0);
	cr_assert_eq(a, T_LO);
	snprintf(path, sizeof(path), "%s/agentd-%u.user", udb, (unsigned)a);
	snprintf(want, sizeof(want), "\"userName\":\"agentd-%u\"", (unsigned)a);
	cr_assert(strstr(slurp(path), want) != NULL, "%s", slurp(path));
	snprintf(want, sizeof(want), "\"uid\":%u", (unsigned)a);
	cr_assert(strstr(slurp(path), want) != NULL);
	snprintf(want, sizeof(want), "\"gid\":%u", (unsigned)a);
	cr_assert(strstr(slurp(path), want) != NULL);
	cr_assert(strstr(slurp(path), "\"homeDirectory\":\"\\/h\\/a \\\"q\\\"\"") != NULL ||
		      strstr(slurp(path), "\"homeDirectory\":\"/h/a \\\"q\\\"\"") != NULL,
		  "%s", slurp(path));
	snprintf(path, sizeof(path), "%s/agentd-%u.group", udb, (unsigned)a);
	snprintf(want, sizeof(want), "\"groupName\":\"agentd-%u\"", (unsigned)a);
	cr_assert(strstr(slurp(path), want) != NULL);
	snprintf(path, sizeof(path), "%s/%u.user", udb, (unsigned)a);
	n = readlink(path, link, sizeof(link) - 1);
	cr_assert_gt(n, 0);
	link[n] = '\0';
	snprintf(want, sizeof(want), "agentd-%u.user", (unsigned)a);
	cr_assert_str_eq(link, want);
	snprintf(path, sizeof(path), "%s/%u.group", udb, (unsigned)a);
	cr_assert_gt(readlink(path, link, sizeof(link) - 1), 0);
}

Test(cageuid, racing_processes_never_share_a_uid)
{
	pid_t pids[T_RACERS];
	uid_t got[T_RACERS];
	int fds[T_RACERS][2];

	for (int i = 0; i < T_RACERS; i++) {
		cr_assert_eq(pipe(fds[i]), 0);
		pids[i] = fork();
		cr_assert_geq(pids[i], 0);
		if (pids[i] == 0) {
			struct cause c = {{0}};
			char id[16];
			uid_t u = 0;

			snprintf(id, sizeof(id), "r-%d", i + 1);
			int r = cageuid_alloc(&dirs, T_LO, T_HI, i % 2 ? stateA : stateB, id, "/h",
					      &u, &c);
			if (r < 0)
				u = 0;
			_exit(write(fds[i][1], &u, sizeof(u)) == sizeof(u) ? 0 : 1);
		}
		close(fds[i][1]);
	}
	for (int i = 0; i < T_RACERS; i++) {
		int st;

		cr_assert_eq(read(fds[i][0], &got[i], sizeof(got[i])), (ssize_t)sizeof(got[i]));
		close(fds[i][0]);
		cr_assert_eq(waitpid(pids[i], &st, 0), pids[i]);
		cr_assert(got[i] >= T_LO && got[i] <= T_HI);
		for (int j = 0; j < i; j++)
			cr_assert_neq(got[i], got[j], "two sessions got uid %u", (unsigned)got[i]);
	}
}
