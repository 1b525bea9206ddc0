/*
 * gitstore.c against real repositories (git_fixture.h): the store and its settings, a session
 * repository borrowing its objects, reuse and refusal of an existing path, and the delete steps
 * that copy every commit of a session into the store before its directory goes.
 */
#include "git_fixture.h"
#include "gitstore.h"

TestSuite(gitstore, .init = setup, .fini = teardown);

static char store_dir[P_MAX], store[P_MAX];

static void store_ensure(void)
{
	struct cause c = {{0}};
	int r;

	FMT(store_dir, "%s/store", fx.tmp);
	cr_assert_eq(gitstore_path(store_dir, "acme", "widgets", store, sizeof(store)), 0);
	r = gitstore_ensure(store_dir, "acme", "widgets", fx.url, &c);
	cr_assert_eq(r, 0, "gitstore_ensure: %d %s", r, c.msg);
}

static void session_add(long issue, char *path)
{
	struct cause c = {{0}};
	char branch[32];
	int r;

	wt_path(issue, path);
	FMT(branch, "feat/issue-%ld", issue);
	r = gitstore_session_add(store_dir, "acme", "widgets", path, branch, fx.url, &c);
	cr_assert_eq(r, 0, "gitstore_session_add: %d %s", r, c.msg);
}

/* The three delete steps, as DELETE runs them; returns what happened. */
static struct worktree_removal session_delete(const char *path, long issue, bool force)
{
	struct worktree_removal rm;
	struct gitstore_keep *keep = NULL;
	struct cause c = {{0}};
	char branch[32], id[32];
	int r;

	FMT(branch, "feat/issue-%ld", issue);
	FMT(id, "widgets-%ld", issue);
	r = gitstore_keep_collect(store_dir, "acme", "widgets", path, force, &rm, &keep, &c);
	cr_assert_geq(r, 0, "collect: %d %s", r, c.msg);
	if (r == 0)
		return rm;
	r = gitstore_keep_store(store_dir, "acme", "widgets", branch, id, keep, &rm, &c);
	gitstore_keep_free(keep);
	cr_assert_eq(r, 0, "keep_store: %d %s", r, c.msg);
	cr_assert_eq(gitstore_session_remove(path, &rm, &c), 0, "%s", c.msg);
	return rm;
}

Test(gitstore, store_is_never_pruned_and_session_borrows_it)
{
	char path[P_MAX], file[P_MAX * 2], text[P_MAX * 2], want[P_MAX + 16];
	git_repository *repo;
	git_config *cfg;
	const char *url;
	int fd;
	ssize_t n;

	store_ensure();
	cr_assert_eq(git_repository_open_bare(&repo, store), 0);
	cr_assert_eq(git_repository_config_snapshot(&cfg, repo), 0);
	cr_assert_eq(git_config_get_string(&url, cfg, "gc.pruneExpire"), 0);
	cr_assert_str_eq(url, "never");
	git_config_free(cfg);
	git_repository_free(repo);

	session_add(1, path);
	cr_assert(gitstore_is_session(store_dir, "acme", "widgets", path));
	FMT(file, "%s/.git/objects/info/alternates", path);
	fd = open(file, O_RDONLY);
	cr_assert_geq(fd, 0);
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	cr_assert_gt(n, 0);
	text[n] = '\0';
	FMT(want, "%s/objects\n", store);
	cr_assert_str_eq(text, want);
	assert_head_branch(path, "feat/issue-1");
	FMT(file, "%s/README", path);
	cr_assert(exists(file), "checked out");
	{
		git_oid main = ref_oid(store, "refs/remotes/origin/main"),
			head = ref_oid(path, "refs/heads/feat/issue-1"),
			copied = ref_oid(path, "refs/remotes/origin/main");

		cr_assert(git_oid_equal(&main, &head), "starts at origin's default branch");
		cr_assert(git_oid_equal(&main, &copied), "origin's refs copied from the store");
	}
	cr_assert_not(has_ref(store, "refs/heads/feat/issue-1"), "the store is not written");
	cr_assert_eq(git_repository_open(&repo, path), 0);
	cr_assert_eq(git_repository_config_snapshot(&cfg, repo), 0);
	cr_assert_eq(git_config_get_string(&url, cfg, "remote.origin.url"), 0);
	cr_assert_str_eq(url, fx.url);
	git_config_free(cfg);
	git_repository_free(repo);
}

Test(gitstore, existing_path_is_reused_or_refused)
{
	char path[P_MAX], other[P_MAX];
	struct cause c = {{0}};

	store_ensure();
	session_add(1, path);
	session_add(1, path); /* the same session again: reused */
	cr_assert_eq(
	    gitstore_session_add(store_dir, "acme", "widgets", path, "feat/issue-2", fx.url, &c),
	    -EEXIST, "on another branch: %s", c.msg);
	wt_path(3, other);
	cr_assert_eq(mkdir(other, 0755), 0);
	cr_assert_eq(
	    gitstore_session_add(store_dir, "acme", "widgets", other, "feat/issue-3", fx.url, &c),
	    -EEXIST);
	cr_assert(exists(other), "an ordinary directory is left alone");
}

Test(gitstore, delete_keeps_every_commit_in_the_store)
{
	char path[P_MAX], file[P_MAX * 2];
	struct worktree_removal rm;
	git_oid tip, side, head;

	store_ensure();
	session_add(1, path);
	commit_file(path, "a.txt", "a\n");
	GIT(path, "checkout", "-q", "-b", "side");
	commit_file(path, "s.txt", "s\n");
	side = ref_oid(path, "refs/heads/side");
	GIT(path, "checkout", "-q", "feat/issue-1");
	commit_file(path, "b.txt", "b\n");
	tip = ref_oid(path, "refs/heads/feat/issue-1");
	GIT(path, "checkout", "-q", "--detach");
	commit_file(path, "d.txt", "d\n");
	head = ref_oid(path, "HEAD");
	FMT(file, "%s/x.log", path);
	write_file(file, "ignored\n");

	rm = session_delete(path, 1, false);
	cr_assert_eq(rm.fate, WORKTREE_REMOVED, "%s", rm.reason);
	cr_assert_eq(rm.ignored_removed, 1);
	cr_assert_not(exists(path));
	{
		git_oid stored = ref_oid(store, "refs/heads/feat/issue-1"),
			kept = ref_oid(store, rm.kept_ref);

		cr_assert(git_oid_equal(&stored, &tip), "the branch is the store's now");
		cr_assert(git_oid_equal(&kept, &head), "the detached HEAD is kept");
		cr_assert_eq(rm.kept_commits, 1);
	}
	{
		char ref[WORKTREE_REF_MAX + 32];
		git_oid kept;

		FMT(ref, "%s-branches/side", rm.kept_ref);
		kept = ref_oid(store, ref);
		cr_assert(git_oid_equal(&kept, &side), "the other branch is kept");
	}
	GIT(store, "fsck", "--connectivity-only", "--no-dangling");

	/* The issue again: its branch continues from the store. */
	session_add(1, path);
	{
		git_oid again = ref_oid(path, "refs/heads/feat/issue-1");

		cr_assert(git_oid_equal(&again, &tip));
	}
}

Test(gitstore, dirty_session_is_kept_unless_forced)
{
	char path[P_MAX], file[P_MAX * 2];
	struct worktree_removal rm;

	store_ensure();
	session_add(1, path);
	FMT(file, "%s/new.txt", path);
	write_file(file, "untracked\n");
	rm = session_delete(path, 1, false);
	cr_assert_eq(rm.fate, WORKTREE_KEPT);
	cr_assert_str_eq(rm.reason, "uncommitted changes");
	cr_assert(exists(file));
	rm = session_delete(path, 1, true);
	cr_assert_eq(rm.fate, WORKTREE_REMOVED, "%s", rm.reason);
	cr_assert_not(exists(path));
}

Test(gitstore, rewritten_branch_keeps_the_old_tip)
{
	char path[P_MAX];
	struct worktree_removal rm;
	git_oid first;

	store_ensure();
	session_add(1, path);
	commit_file(path, "a.txt", "a\n");
	first = ref_oid(path, "refs/heads/feat/issue-1");
	rm = session_delete(path, 1, false);
	cr_assert_eq(rm.fate, WORKTREE_REMOVED, "%s", rm.reason);
	session_add(1, path);
	GIT(path, "reset", "-q", "--hard", "HEAD~1");
	commit_file(path, "b.txt", "b\n");
	rm = session_delete(path, 1, false);
	cr_assert_eq(rm.fate, WORKTREE_REMOVED, "%s", rm.reason);
	{
		char out[P_MAX] = "";
		git_repository *repo;
		git_reference_iterator *it;
		git_reference *ref;
		bool found = false;

		cr_assert_eq(git_repository_open_bare(&repo, store), 0);
		cr_assert_eq(git_reference_iterator_glob_new(&it, repo, "refs/agentd/kept/*"), 0);
		while (git_reference_next(&ref, it) == 0) {
			if (strstr(git_reference_name(ref), "-replaced/feat/issue-1") != NULL &&
			    git_oid_equal(git_reference_target(ref), &first))
				found = true;
			FMT(out, "%s", git_reference_name(ref));
			git_reference_free(ref);
		}
		git_reference_iterator_free(it);
		git_repository_free(repo);
		cr_assert(found, "the replaced tip is kept (last ref seen: %s)", out);
	}
}

Test(gitstore, too_many_branches_keep_the_directory)
{
	char path[P_MAX], file[P_MAX * 2], line[128], hex[GIT_OID_HEXSZ + 1];
	struct worktree_removal rm;
	struct gitstore_keep *keep = NULL;
	struct cause c = {{0}};
	git_oid tip;
	FILE *f;
	int r;

	store_ensure();
	session_add(1, path);
	tip = ref_oid(path, "refs/heads/feat/issue-1");
	git_oid_tostr(hex, sizeof(hex), &tip);
	/* More branches than a kept session may bring (GITSTORE_REFS_MAX, 1024), as packed refs. */
	FMT(file, "%s/.git/packed-refs", path);
	f = fopen(file, "w");
	cr_assert_not_null(f);
	fputs("# pack-refs with: peeled fully-peeled sorted \n", f);
	for (int i = 0; i < 1100; i++) {
		FMT(line, "%s refs/heads/b%04d\n", hex, i);
		fputs(line, f);
	}
	cr_assert_eq(fclose(f), 0);
	r = gitstore_keep_collect(store_dir, "acme", "widgets", path, false, &rm, &keep, &c);
	cr_assert_eq(r, -E2BIG, "%d %s", r, c.msg);
	cr_assert_null(keep);
	cr_assert_eq(rm.fate, WORKTREE_KEPT);
	cr_assert(exists(path));
}

Test(gitstore, parse_head)
{
	char out[32];

	cr_assert_eq(gitstore_parse_head("ref: refs/heads/feat/issue-1\n", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "feat/issue-1");
	cr_assert_eq(gitstore_parse_head("ref: refs/heads/main", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "main");
	cr_assert_eq(
	    gitstore_parse_head("0123456789abcdef0123456789abcdef01234567\n", out, sizeof(out)),
	    -EINVAL, "a detached HEAD is on no branch");
	cr_assert_eq(gitstore_parse_head("ref: refs/heads/\n", out, sizeof(out)), -EINVAL);
	cr_assert_eq(
	    gitstore_parse_head("ref: refs/heads/a\nref: refs/heads/b\n", out, sizeof(out)),
	    -EINVAL, "one line only");
	cr_assert_eq(gitstore_parse_head("ref: refs/tags/v1\n", out, sizeof(out)), -EINVAL);
	cr_assert_eq(gitstore_parse_head("ref: refs/heads/feat/issue-1234567890123456789012345\n",
					 out, sizeof(out)),
		     -EINVAL, "longer than out");
	cr_assert_eq(gitstore_parse_head("", out, sizeof(out)), -EINVAL);
}

Test(gitstore, store_branches_listed_and_deleted_only_when_nothing_is_lost)
{
	char p1[P_MAX], p2[P_MAX], where[P_MAX];
	struct worktree_branch *bl;
	struct cause c = {{0}};
	git_oid tip;
	size_t n;

	store_ensure();
	session_add(1, p1);
	commit_file(p1, "a.txt", "a\n");
	tip = ref_oid(p1, "refs/heads/feat/issue-1");
	cr_assert_eq(session_delete(p1, 1, false).fate, WORKTREE_REMOVED);
	session_add(2, p2);
	cr_assert_eq(session_delete(p2, 2, false).fate, WORKTREE_REMOVED);
	session_add(1, p1); /* issue 1 again: its repository has the store's branch checked out */
	GIT(store, "update-ref", "refs/agentd/kept/widgets-9-1", "refs/heads/feat/issue-1");

	cr_assert_eq(worktree_list_store_branches("", &bl, &n), 0);
	cr_assert_eq(n, 0, "no store dir: nothing");
	free(bl);
	cr_assert_eq(worktree_list_store_branches(store_dir, &bl, &n), 0);
	cr_assert_eq(n, 2);
	cr_expect_str_eq(bl[0].owner, "acme");
	cr_expect_str_eq(bl[0].name, "widgets");
	cr_expect_eq(bl[0].issue, 1);
	cr_expect_str_eq(bl[0].branch, "feat/issue-1");
	cr_expect_eq(bl[0].sync, WORKTREE_LOCAL_ONLY);
	cr_expect_eq(bl[1].issue, 2);
	free(bl);

	cr_assert_eq(gitstore_checked_out(fx.base, store_dir, "acme", "widgets", "feat/issue-1",
					  where, sizeof(where)),
		     1);
	cr_assert_str_eq(where, p1);
	cr_assert_eq(gitstore_checked_out(fx.base, store_dir, "acme", "widgets", "feat/issue-2",
					  where, sizeof(where)),
		     0, "issue 2's repository is gone");
	cr_assert_eq(gitstore_checked_out(fx.base, store_dir, "acme", "widgets", "main", where,
					  sizeof(where)),
		     -EINVAL);
	GIT(p1, "checkout", "-q", "--detach");
	cr_assert_eq(gitstore_checked_out(fx.base, store_dir, "acme", "widgets", "feat/issue-1",
					  where, sizeof(where)),
		     0, "a detached HEAD has no branch checked out");

	cr_assert_eq(gitstore_branch_delete(store_dir, "acme", "widgets", "feat/issue-1", &c),
		     -ENOTEMPTY, "%s", c.msg);
	cr_assert(strstr(c.msg, "1 commit ") != NULL, "%s", c.msg);
	{
		git_oid now = ref_oid(store, "refs/heads/feat/issue-1");

		cr_assert(git_oid_equal(&now, &tip), "a refused branch is unchanged");
	}
	cr_assert_eq(gitstore_branch_delete(store_dir, "acme", "widgets", "feat/issue-2", &c), 0,
		     "merged into the default branch: %s", c.msg);
	cr_assert_not(has_ref(store, "refs/heads/feat/issue-2"));
	cr_assert_eq(gitstore_branch_delete(store_dir, "acme", "widgets", "feat/issue-2", &c),
		     -ENOENT);
	cr_assert_eq(gitstore_branch_delete(store_dir, "acme", "widgets", "feat/issue-x", &c),
		     -EINVAL);
	cr_assert_eq(gitstore_branch_delete(store_dir, "acme", "gadgets", "feat/issue-1", &c),
		     -ENOENT, "no such store");
	{
		git_oid still = ref_oid(store, "refs/agentd/kept/widgets-9-1");

		cr_assert(git_oid_equal(&still, &tip), "kept refs are untouched");
	}
}
