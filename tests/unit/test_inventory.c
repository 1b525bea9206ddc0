/*
 * inventory.c against real repositories (git_fixture.h): worktrees and branches listed with their
 * state against origin, a worktree found by its directory name.
 */
#include "git_fixture.h"

TestSuite(inventory, .init = setup, .fini = teardown);

/* Commits in the worktree of issue and pushes per how: the five sync states. */
static void make_branch_state(long issue, enum worktree_sync how)
{
	char path[P_MAX], file[32], branch[32];

	add(issue, path);
	FMT(file, "f%ld", issue);
	FMT(branch, "feat/issue-%ld", issue);
	commit_file(path, file, "1\n");
	if (how == WORKTREE_LOCAL_ONLY)
		return;
	GIT(path, "push", "-q", "origin", branch);
	if (how == WORKTREE_AHEAD)
		commit_file(path, file, "2\n");
	if (how == WORKTREE_BEHIND || how == WORKTREE_DIVERGED)
		GIT(path, "reset", "-q", "--hard", "HEAD~1");
	if (how == WORKTREE_DIVERGED)
		commit_file(path, file, "3\n");
}

Test(inventory, list_and_list_branches)
{
	static const enum worktree_sync states[] = {WORKTREE_SYNCED, WORKTREE_LOCAL_ONLY,
						    WORKTREE_AHEAD, WORKTREE_BEHIND,
						    WORKTREE_DIVERGED};
	static const size_t ahead[] = {0, 0, 1, 0, 1}, behind[] = {0, 0, 0, 1, 1};
	struct worktree_entry *wl;
	struct worktree_branch *bl;
	char path[P_MAX];
	struct cause c = {{0}};
	size_t n;

	cr_assert_eq(worktree_list(fx.base, &wl, &n), 0, "no .repos yet");
	cr_assert_eq(n, 0);
	free(wl);
	ensure();
	for (size_t i = 0; i < 5; i++)
		make_branch_state(21 + (long)i, states[i]);
	/* A non-issue branch and a non-conforming worktree are not listed. */
	GIT(fx.bare, "branch", "other", "refs/remotes/origin/main");
	FMT(path, "%s/scratch", fx.base);
	cr_assert_eq(worktree_add(fx.base, "acme", "widgets", path, "feat/issue-30", &c), 0, "%s",
		     c.msg);

	cr_assert_eq(worktree_list(fx.base, &wl, &n), 0);
	cr_assert_eq(n, 5);
	for (size_t i = 0; i < n; i++) {
		wt_path(21 + (long)i, path);
		cr_expect_str_eq(wl[i].owner, "acme");
		cr_expect_str_eq(wl[i].name, "widgets");
		cr_expect_eq(wl[i].issue, 21 + (long)i);
		cr_expect_str_eq(wl[i].path, path);
	}
	free(wl);

	cr_assert_eq(worktree_list_branches(fx.base, &bl, &n), 0);
	cr_assert_eq(n, 6, "feat/issue-21..25 and -30, not main or other");
	for (size_t i = 0; i < 5; i++) {
		cr_expect_str_eq(bl[i].owner, "acme");
		cr_expect_str_eq(bl[i].name, "widgets");
		cr_expect_eq(bl[i].issue, 21 + (long)i);
		cr_expect_eq(bl[i].sync, states[i], "issue %ld: %s", bl[i].issue,
			     worktree_sync_name(bl[i].sync));
		cr_expect_eq(bl[i].ahead, ahead[i], "issue %ld ahead %zu", bl[i].issue,
			     bl[i].ahead);
		cr_expect_eq(bl[i].behind, behind[i], "issue %ld behind %zu", bl[i].issue,
			     bl[i].behind);
	}
	cr_expect_str_eq(bl[1].branch, "feat/issue-22");
	cr_expect_eq(bl[5].issue, 30);
	free(bl);

	/* A removed worktree leaves the list; its branch stays. */
	wt_path(25, path);
	cr_assert_eq(worktree_remove(path, &c), 0, "%s", c.msg);
	cr_assert_eq(worktree_list(fx.base, &wl, &n), 0);
	cr_assert_eq(n, 4);
	free(wl);
	cr_assert_eq(worktree_list_branches(fx.base, &bl, &n), 0);
	cr_assert_eq(n, 6);
	free(bl);
}

Test(inventory, find_by_directory_name)
{
	char path[P_MAX], plain[P_MAX];
	struct worktree_entry e;

	ensure();
	add(52, path);
	cr_assert_eq(worktree_find(fx.base, "widgets-issue-52", &e), 0);
	cr_assert_str_eq(e.owner, "acme");
	cr_assert_str_eq(e.name, "widgets");
	cr_assert_eq(e.issue, 52);
	cr_assert_str_eq(e.path, path);
	cr_assert_eq(worktree_find(fx.base, "widgets-issue-53", &e), -ENOENT);
	FMT(plain, "%s/widgets-issue-54", fx.base);
	cr_assert_eq(mkdir(plain, 0755), 0);
	cr_assert_eq(worktree_find(fx.base, "widgets-issue-54", &e), -ENOENT, "not a worktree");
	cr_assert_eq(worktree_find(fx.base, "widgets-issue-052", &e), -EINVAL);
	cr_assert_eq(worktree_find(fx.base, "widgets", &e), -EINVAL);
	cr_assert_eq(worktree_find(fx.base, "-issue-52", &e), -EINVAL);
	cr_assert_eq(worktree_find(fx.base, "..-issue-52", &e), -EINVAL);
	cr_assert_eq(worktree_find(fx.base, "widgets-issue-", &e), -EINVAL);
}
