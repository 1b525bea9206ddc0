/*
 * worktree.c against real repositories (git_fixture.h): add (new and existing branches, reuse,
 * debris, failures), dirty checks, remove and the delete that loses nothing, branch deletion; and
 * the calls of every git module at once from several threads.
 */
#include "git_fixture.h"

#include "fsutil.h"

#include <signal.h>
#include <sys/resource.h>

TestSuite(worktree, .init = setup, .fini = teardown);

Test(worktree, bare_path_and_sync_names)
{
	char out[64];

	cr_assert_eq(worktree_bare_path("/b", "o", "n", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/b/.repos/o/n.git");
	cr_assert_eq(worktree_bare_path("/b", "o", "n", out, 10), -ENAMETOOLONG);
	cr_assert_str_eq(worktree_sync_name(WORKTREE_SYNCED), "synced");
	cr_assert_str_eq(worktree_sync_name(WORKTREE_LOCAL_ONLY), "local-only");
	cr_assert_str_eq(worktree_sync_name(WORKTREE_AHEAD), "ahead");
	cr_assert_str_eq(worktree_sync_name(WORKTREE_BEHIND), "behind");
	cr_assert_str_eq(worktree_sync_name(WORKTREE_DIVERGED), "diverged");
}

Test(worktree, clone_and_add_on_new_branch_from_default)
{
	char path[P_MAX];
	git_oid main_oid, head_oid;

	ensure();
	cr_assert(exists(fx.bare));
	cr_assert(has_ref(fx.bare, "refs/remotes/origin/HEAD"));
	add(7, path);
	cr_assert(in_file(path, "README"));
	assert_head_branch(path, "feat/issue-7");
	main_oid = ref_oid(fx.remote, "refs/heads/main");
	head_oid = ref_oid(path, "HEAD");
	cr_assert(git_oid_equal(&main_oid, &head_oid));
	cr_assert_eq(worktree_is_dirty(path, NULL), 0);
}

/* worktree_add writes the admin files itself (not git_worktree_add): git must know the worktree
 * as its own, with a clean index whose stat data is current, on the branch. */
Test(worktree, git_itself_knows_the_worktree)
{
	char path[P_MAX];
	git_oid a, b;

	ensure();
	add(9, path);
	GIT(path, "update-index", "--refresh"); /* fails on an entry that needs an update */
	GIT(path, "diff", "--quiet");
	GIT(path, "diff", "--cached", "--quiet");
	GIT(fx.bare, "worktree", "lock", path); /* finds it by its path */
	GIT(fx.bare, "worktree", "unlock", path);
	GIT(path, "commit", "-q", "--allow-empty", "-m", "on the branch");
	a = ref_oid(fx.bare, "refs/heads/feat/issue-9");
	b = ref_oid(path, "HEAD");
	cr_assert(git_oid_equal(&a, &b), "a commit in the worktree moves its branch");
	GIT(fx.bare, "worktree", "remove", path);
	cr_assert_not(exists(path));
}

/* Entries of the index of the worktree at path. */
static int count_tracked(const char *path)
{
	git_repository *repo = NULL;
	git_index *index = NULL;
	int n;

	cr_assert_eq(git_repository_open(&repo, path), 0);
	cr_assert_eq(git_repository_index(&index, repo), 0);
	n = (int)git_index_entrycount(index);
	git_index_free(index);
	git_repository_free(repo);
	return n;
}

/* Commits to origin's main 6 directories of 100 small files, an executable and a symlink: 604
 * files with .gitignore and README, enough for a checkout in parts (WT_SPLIT_MIN, 256). */
static int commit_many_files(void)
{
	char file[P_MAX + 64], dir[P_MAX + 32];
	int files = 0;

	for (int d = 0; d < 6; d++) {
		FMT(dir, "%s/src/m%d", fx.up, d);
		cr_assert_eq(fsutil_mkdir_p(dir), 0);
		for (int i = 0; i < 100; i++, files++) {
			FMT(file, "%s/f%d.c", dir, i);
			write_file(file, "int f(void) { return 1; }\n");
		}
	}
	FMT(file, "%s/run.sh", fx.up);
	write_file(file, "#!/bin/sh\necho run\n");
	cr_assert_eq(chmod(file, 0755), 0);
	FMT(file, "%s/link", fx.up);
	cr_assert_eq(symlink("README", file), 0);
	GIT(fx.up, "add", "-A");
	GIT(fx.up, "commit", "-q", "-m", "many files");
	GIT(fx.up, "push", "-q", "origin", "main");
	return files + 2 + 2; /* and .gitignore, README */
}

/* A tree of 600 files in 6 directories checks out whole (in two parts, then one index): every
 * file, its mode (an executable, a symlink) and the index's stat data as git expects. */
Test(worktree, a_large_tree_checks_out_whole)
{
	char path[P_MAX], file[P_MAX + 64], target[64];
	struct stat st;
	int files = commit_many_files();

	ensure();
	add(13, path);
	GIT(path, "update-index", "--refresh");
	GIT(path, "diff", "--quiet");
	GIT(path, "diff", "--cached", "--quiet");
	cr_assert(in_file(path, "src/m5/f99.c"), "the last file of the last part");
	cr_assert(in_file(path, "src/m0/f0.c"), "the first of the first");
	FMT(file, "%s/run.sh", path);
	cr_assert_eq(stat(file, &st), 0);
	cr_assert(st.st_mode & S_IXUSR, "run.sh is executable");
	FMT(file, "%s/link", path);
	cr_assert_eq(readlink(file, target, sizeof(target)), 6);
	cr_assert_eq(strncmp(target, "README", 6), 0);
	cr_assert_eq(count_tracked(path), files);
}

/* A part of a checkout that fails (here a file larger than the process may write, as on a full
 * disk) fails the add with that part's reason, and leaves nothing: no directory, branch or
 * metadata. The same add succeeds once it can write. */
Test(worktree, a_failing_part_leaves_nothing)
{
	char path[P_MAX], file[P_MAX + 64], meta[P_MAX + 32], *large;
	struct cause c = {{0}};
	struct rlimit before, small;
	int r;

	commit_many_files();
	/* Last in the tree's order: the second part's. */
	FMT(file, "%s/src/m5/zz-large.txt", fx.up);
	cr_assert_not_null(large = malloc(65536 + 1));
	memset(large, 'x', 65536);
	large[65536] = '\0';
	write_file(file, large);
	free(large);
	GIT(fx.up, "add", "-A");
	GIT(fx.up, "commit", "-q", "-m", "a large file");
	GIT(fx.up, "push", "-q", "origin", "main");
	ensure();
	signal(SIGXFSZ, SIG_IGN); /* a write past the limit fails with EFBIG instead */
	cr_assert_eq(getrlimit(RLIMIT_FSIZE, &before), 0);
	small = (struct rlimit){16384, before.rlim_max}; /* the soft limit only: it goes back */
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
	wt_path(14, path);
	r = add_at(path, 14, &c);
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &before), 0);
	cr_assert_lt(r, 0);
	cr_assert(strstr(c.msg, "cannot check out refs/heads/feat/issue-14") != NULL &&
		      strstr(c.msg, "too large") != NULL,
		  "%s", c.msg);
	cr_assert_not(exists(path), "worktree directory left behind");
	cr_assert_not(has_ref(fx.bare, "refs/heads/feat/issue-14"), "new branch left behind");
	FMT(meta, "%s/worktrees/issue-14", fx.bare);
	cr_assert_not(exists(meta), "metadata left behind");
	add(14, path);
	cr_assert(in_file(path, "src/m5/zz-large.txt"));
}

Test(worktree, add_from_origin_branch_when_no_local_branch)
{
	char path[P_MAX];
	git_oid a, b;

	GIT(fx.up, "checkout", "-q", "-b", "feat/issue-12");
	commit_file(fx.up, "PUSHED", "from elsewhere\n");
	GIT(fx.up, "push", "-q", "origin", "feat/issue-12");
	ensure();
	add(12, path);
	cr_assert(in_file(path, "PUSHED"));
	a = ref_oid(fx.remote, "refs/heads/feat/issue-12");
	b = ref_oid(path, "HEAD");
	cr_assert(git_oid_equal(&a, &b));
}

Test(worktree, remove_then_add_reuses_branch_with_commits)
{
	char path[P_MAX];
	struct cause c = {{0}};
	git_oid before, after;

	ensure();
	add(4, path);
	commit_file(path, "work.txt", "agent work\n");
	before = ref_oid(fx.bare, "refs/heads/feat/issue-4");
	cr_assert_eq(worktree_remove(path, &c), 0, "%s", c.msg);
	cr_assert_not(exists(path));
	cr_assert(has_ref(fx.bare, "refs/heads/feat/issue-4"), "branch deleted");
	add(4, path);
	cr_assert(in_file(path, "work.txt"));
	after = ref_oid(path, "HEAD");
	cr_assert(git_oid_equal(&before, &after));
	assert_head_branch(path, "feat/issue-4");
}

Test(worktree, existing_worktree_is_reused)
{
	char path[P_MAX], other[P_MAX + 8];
	struct cause c = {{0}};
	int r;

	ensure();
	add(5, path);
	commit_file(path, "keep.txt", "x\n");
	add(5, path); /* same path, same branch: 0 and untouched */
	cr_assert(in_file(path, "keep.txt"));
	r = worktree_add(fx.base, "acme", "widgets", path, "feat/issue-6", &c);
	cr_assert_eq(r, -EEXIST);
	cr_assert(strstr(c.msg, "on feat/issue-5, not on feat/issue-6") != NULL, "%s", c.msg);
	FMT(other, "%s/elsewhere", fx.base);
	r = worktree_add(fx.base, "acme", "widgets", other, "feat/issue-5", &c);
	cr_assert_lt(r, 0);
	cr_assert(strstr(c.msg, "branch feat/issue-5 is checked out in another worktree: ") != NULL,
		  "%s", c.msg);
	cr_assert(strstr(c.msg, "widgets-issue-5") != NULL, "%s", c.msg);
	cr_assert_not(exists(other));
}

/* A worktree holds its own branch only: not one whose name extends it, nor one it extends
 * (its HEAD file is compared whole). */
Test(worktree, checked_out_branch_is_matched_whole)
{
	char a[P_MAX], b[P_MAX], c[P_MAX];

	ensure();
	add(31, a);
	add(310, b);
	add(3, c);
	assert_head_branch(a, "feat/issue-31");
	assert_head_branch(b, "feat/issue-310");
	assert_head_branch(c, "feat/issue-3");
}

Test(worktree, debris_of_failed_add_is_cleaned)
{
	char path[P_MAX], debris[P_MAX + 32];

	ensure();
	FMT(debris, "%s/worktrees", fx.bare);
	mkdir(debris, 0755);
	FMT(debris, "%s/worktrees/issue-8", fx.bare);
	cr_assert_eq(mkdir(debris, 0755), 0);
	add(8, path);
	assert_head_branch(path, "feat/issue-8");
	/* A worktree whose directory vanished keeps its branch "checked out" until pruned. */
	testdir_remove(path);
	add(8, path);
	assert_head_branch(path, "feat/issue-8");
}

Test(worktree, plain_directory_at_path_is_an_error_and_left_alone)
{
	char path[P_MAX], meta[P_MAX + 32], file[P_MAX + 8];
	struct cause c = {{0}};
	int r;

	ensure();
	wt_path(9, path);
	cr_assert_eq(mkdir(fx.base, 0755) == 0 || errno == EEXIST, 1);
	cr_assert_eq(mkdir(path, 0755), 0);
	FMT(file, "%s/mine", path);
	write_file(file, "someone's file\n");
	r = add_at(path, 9, &c);
	cr_assert_eq(r, -EEXIST);
	cr_assert(strstr(c.msg, "exists and is not a worktree of acme/widgets") != NULL, "%s",
		  c.msg);
	cr_assert(strstr(c.msg, path) != NULL, "%s", c.msg);
	cr_assert(exists(file), "the user's file was touched");
	cr_assert_not(has_ref(fx.bare, "refs/heads/feat/issue-9"), "branch left behind");
	FMT(meta, "%s/worktrees/issue-9", fx.bare);
	cr_assert_not(exists(meta), "metadata left behind");
}

Test(worktree, failure_after_branch_creation_leaves_nothing)
{
	char blocker[P_MAX], path[P_MAX * 2], meta[P_MAX + 32];
	struct cause c = {{0}};
	int r;

	ensure();
	/* <bare>/worktrees is a file: git_worktree_add fails after the branch was made for it. */
	FMT(meta, "%s/worktrees", fx.bare);
	write_file(meta, "");
	wt_path(10, path);
	r = add_at(path, 10, &c);
	cr_assert_lt(r, 0);
	cr_assert(strstr(c.msg, "cannot add worktree ") != NULL && strstr(c.msg, path) != NULL,
		  "%s", c.msg);
	cr_assert_not(has_ref(fx.bare, "refs/heads/feat/issue-10"), "new branch left behind");
	cr_assert_not(exists(path), "worktree directory left behind");
	/* An existing branch is never deleted by a failed add. */
	GIT(fx.bare, "branch", "feat/issue-10", "refs/remotes/origin/main");
	cr_assert_lt(add_at(path, 10, &c), 0);
	cr_assert(has_ref(fx.bare, "refs/heads/feat/issue-10"), "existing branch deleted");
	cr_assert_eq(unlink(meta), 0);
	add(10, path);

	/* A path below a file is refused up front. */
	FMT(blocker, "%s/blocker", fx.tmp);
	write_file(blocker, "");
	FMT(path, "%s/widgets-issue-11", blocker);
	cr_assert_lt(add_at(path, 11, &c), 0);
	cr_assert(strstr(c.msg, path) != NULL, "%s", c.msg);
	cr_assert_not(has_ref(fx.bare, "refs/heads/feat/issue-11"));
}

Test(worktree, worktrees_made_by_the_git_cli)
{
	char path[P_MAX], gitdir[P_MAX + 16];

	/* The original daemon ran `git worktree add /code/<name>-issue-<N>`: its internal name is
	 * the directory name. Such a worktree is reused, and once its directory is gone, pruned. */
	ensure();
	wt_path(16, path);
	FMT(gitdir, "--git-dir=%s", fx.bare);
	GIT(NULL, gitdir, "worktree", "add", "-q", "-b", "feat/issue-16", path,
	    "refs/remotes/origin/main");
	add(16, path);
	assert_head_branch(path, "feat/issue-16");
	testdir_remove(path);
	add(16, path);
	assert_head_branch(path, "feat/issue-16");
	cr_assert_eq(worktree_is_dirty(path, NULL), 0);
	FMT(gitdir, "%s/worktrees/widgets-issue-16", fx.bare);
	cr_assert_not(exists(gitdir), "stale worktree metadata not pruned");
}

Test(worktree, add_rejects_bad_input)
{
	char path[P_MAX];
	struct cause c = {{0}};

	wt_path(11, path);
	cr_assert_eq(worktree_add(fx.base, "acme", "widgets", path, "feat/issue-11", &c), -ENOENT,
		     "not cloned yet");
	cr_assert(strstr(c.msg, "acme/widgets") != NULL, "%s", c.msg);
	ensure();
	cr_assert_eq(worktree_add(fx.base, "acme", "widgets", "rel/path", "feat/issue-11", &c),
		     -EINVAL);
	cr_assert_eq(worktree_add(fx.base, "acme", "widgets", path, "feat/bad..name", &c), -EINVAL);
	cr_assert_eq(worktree_add(fx.base, "acme", "widgets", path, "", &c), -EINVAL);
	cr_assert_eq(worktree_add(fx.base, "acme", "..", path, "feat/issue-11", &c), -EINVAL);
	cr_assert_not(exists(path));
}

Test(worktree, dirty_detection)
{
	char path[P_MAX], f[P_MAX + 32], plain[P_MAX];
	struct cause c = {{0}};

	ensure();
	add(13, path);
	cr_assert_eq(worktree_is_dirty(path, &c), 0, "%s", c.msg);

	FMT(f, "%s/README", path);
	write_file(f, "changed\n");
	cr_assert_eq(worktree_is_dirty(path, &c), 1, "modified file not seen");
	write_file(f, "hello\n");
	cr_assert_eq(worktree_is_dirty(path, &c), 0, "restored file still dirty");

	FMT(f, "%s/deep/er/untracked.txt", path);
	FMT(plain, "%s/deep", path);
	mkdir(plain, 0755);
	FMT(plain, "%s/deep/er", path);
	mkdir(plain, 0755);
	write_file(f, "u\n");
	cr_assert_eq(worktree_is_dirty(path, &c), 1, "untracked file not seen");
	FMT(plain, "%s/deep", path);
	testdir_remove(plain);

	FMT(f, "%s/build.log", path);
	write_file(f, "ignored\n");
	cr_assert_eq(worktree_is_dirty(path, &c), 0, "ignored file counted as dirty");

	FMT(f, "%s/staged.txt", path);
	write_file(f, "s\n");
	GIT(path, "add", "staged.txt");
	cr_assert_eq(worktree_is_dirty(path, &c), 1, "staged file not seen");
	GIT(path, "commit", "-q", "-m", "staged");
	cr_assert_eq(worktree_is_dirty(path, &c), 0);

	FMT(plain, "%s/plain", fx.tmp);
	cr_assert_eq(mkdir(plain, 0755), 0);
	cr_assert_eq(worktree_is_dirty(plain, &c), -ENOENT);
	FMT(plain, "%s/missing", fx.tmp);
	cr_assert_eq(worktree_is_dirty(plain, &c), -ENOENT);
	/* A subdirectory of a worktree is not the worktree. */
	FMT(plain, "%s/sub", path);
	mkdir(plain, 0755);
	cr_assert_eq(worktree_is_dirty(plain, &c), -ENOENT);
}

Test(worktree, remove_keeps_branch_and_refuses_non_worktrees)
{
	char path[P_MAX], meta[P_MAX + 32], plain[P_MAX], f[P_MAX + 8];
	struct cause c = {{0}};

	ensure();
	add(14, path);
	FMT(f, "%s/untracked", path);
	write_file(f, "x\n"); /* callers decide about dirty trees; remove removes */
	cr_assert_eq(worktree_remove(path, &c), 0, "%s", c.msg);
	cr_assert_not(exists(path));
	FMT(meta, "%s/worktrees/issue-14", fx.bare);
	cr_assert_not(exists(meta));
	cr_assert(has_ref(fx.bare, "refs/heads/feat/issue-14"));

	cr_assert_eq(worktree_remove(path, &c), -ENOENT);
	FMT(plain, "%s/plain", fx.tmp);
	cr_assert_eq(mkdir(plain, 0755), 0);
	cr_assert_eq(worktree_remove(plain, &c), -ENOENT);
	cr_assert(exists(plain));
	cr_assert_eq(worktree_remove(fx.bare, &c), -ENOENT);
	cr_assert(exists(fx.bare));
	cr_assert_eq(worktree_remove(fx.up, &c), -ENOENT);
	cr_assert(in_file(fx.up, "README"));
}

Test(worktree, remove_refuses_a_copy_registered_elsewhere)
{
	char path[P_MAX], copy[P_MAX + 8], gitfile[P_MAX + 16];
	struct cause c = {{0}};
	char content[P_MAX + 64];
	int r;

	ensure();
	add(17, path);
	/* copy's .git points at the metadata of path: pruning would delete path, not copy. */
	FMT(copy, "%s/copy", fx.tmp);
	cr_assert_eq(mkdir(copy, 0755), 0);
	FMT(gitfile, "%s/.git", copy);
	FMT(content, "gitdir: %s/worktrees/issue-17\n", fx.bare);
	write_file(gitfile, content);
	r = worktree_remove(copy, &c);
	cr_assert_lt(r, 0);
	cr_assert_neq(r, -ENOENT);
	cr_assert(strstr(c.msg, "registered at") != NULL, "%s", c.msg);
	cr_assert(in_file(path, "README"), "the registered worktree was deleted");
	cr_assert(exists(gitfile));
}

#define THREADS    4
#define ITERATIONS 25

/* What agentd-api's request threads do at once, each call on its own repository objects. */
static void *reader_thread(void *arg)
{
	const char *path = arg;
	char url[WORKTREE_URL_MAX];
	long bad = 0;

	for (int i = 0; i < ITERATIONS; i++) {
		struct worktree_entry *wl = NULL;
		struct worktree_branch *bl = NULL;
		size_t n = 0, m = 0;

		bad += worktree_list(fx.base, &wl, &n) != 0 || n != 2;
		bad += worktree_list_branches(fx.base, &bl, &m) != 0 || m != 2;
		bad += worktree_is_dirty(path, NULL) != 1;
		bad += worktree_remote_url(path, url, sizeof(url), NULL) != 0 ||
		       strcmp(url, fx.url) != 0;
		free(wl);
		free(bl);
	}
	return (void *)bad;
}

Test(worktree, concurrent_readers)
{
	char a[P_MAX], b[P_MAX], f[P_MAX + 8];
	pthread_t t[THREADS];

	ensure();
	add(31, a);
	add(32, b);
	FMT(f, "%s/untracked", a);
	write_file(f, "x\n");
	FMT(f, "%s/untracked", b);
	write_file(f, "x\n");
	for (int i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, reader_thread, i % 2 ? a : b), 0);
	for (int i = 0; i < THREADS; i++) {
		void *bad;

		cr_assert_eq(pthread_join(t[i], &bad), 0);
		cr_expect_null(bad, "thread %d saw %ld wrong results", i, (long)bad);
	}
}

Test(worktree, repository_named_socket_io)
{
	char up[P_MAX], remote[P_MAX], url[P_MAX], path[P_MAX], owner[40], name[101];
	struct worktree_entry *wl;
	struct worktree_branch *bl;
	struct cause c = {{0}};
	size_t n;
	int fd;

	make_remote("socketio", "socket.io", up, remote, url);
	cr_assert_eq(worktree_parse_url(url, owner, sizeof(owner), name, sizeof(name)), 0);
	cr_assert_str_eq(owner, "socketio");
	cr_assert_str_eq(name, "socket.io");
	fd = worktree_lock(fx.base, owner, name);
	cr_assert_geq(fd, 0);
	cr_assert_eq(worktree_ensure_repo(fx.base, owner, name, url, &c), 0, "%s", c.msg);
	ensure(); /* a second repository beside it */
	FMT(path, "%s/socket.io-issue-3", fx.base);
	cr_assert_eq(worktree_add(fx.base, owner, name, path, "feat/issue-3", &c), 0, "%s", c.msg);
	close(fd);
	assert_head_branch(path, "feat/issue-3");
	cr_assert_eq(worktree_ensure_repo(fx.base, owner, name, url, &c), 0, "%s", c.msg);

	cr_assert_eq(worktree_list(fx.base, &wl, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(wl[0].owner, "socketio");
	cr_assert_str_eq(wl[0].name, "socket.io");
	cr_assert_eq(wl[0].issue, 3);
	free(wl);
	cr_assert_eq(worktree_list_branches(fx.base, &bl, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(bl[0].name, "socket.io");
	cr_assert_eq(bl[0].sync, WORKTREE_LOCAL_ONLY);
	free(bl);
	cr_assert_eq(worktree_remote_url(path, url, sizeof(url), &c), 0);
	cr_assert_eq(worktree_parse_url(url, owner, sizeof(owner), name, sizeof(name)), 0);
	cr_assert_str_eq(name, "socket.io");
}

/* Checkout skips attribute lookups only when nothing could convert a file: a .gitattributes deep
 * in the tree must still give CRLF line endings, as the git CLI would. */
Test(worktree, gitattributes_in_a_subdirectory_still_apply)
{
	char path[P_MAX], file[P_MAX * 2], buf[64] = {0};
	FILE *f;

	FMT(file, "%s/sub", fx.up);
	cr_assert_eq(mkdir(file, 0755), 0);
	FMT(file, "%s/sub/dir", fx.up);
	cr_assert_eq(mkdir(file, 0755), 0);
	commit_file(fx.up, "sub/dir/.gitattributes", "*.txt text eol=crlf\n");
	commit_file(fx.up, "sub/dir/a.txt", "one\ntwo\n");
	GIT(fx.up, "push", "-q", "origin", "main");
	ensure();
	add(12, path);
	FMT(file, "%s/sub/dir/a.txt", path);
	f = fopen(file, "rb");
	cr_assert_not_null(f, "%s", file);
	cr_assert_eq(fread(buf, 1, sizeof(buf) - 1, f), 10);
	fclose(f);
	cr_assert_str_eq(buf, "one\r\ntwo\r\n");
	cr_assert_eq(worktree_is_dirty(path, NULL), 0);
}

/* Writes the global attributes file of the HOME home (<home>/.config/git/attributes). */
static void write_global_attributes(const char *home, const char *text)
{
	char path[P_MAX * 2];

	FMT(path, "%s/.config/git/attributes", home);
	cr_assert_eq(fsutil_mkdir_parent(path), 0);
	write_file(path, text);
}

static void assert_readme(const char *path, const char *want)
{
	char file[P_MAX * 2], buf[64] = {0};
	FILE *f;

	FMT(file, "%s/README", path);
	f = fopen(file, "rb");
	cr_assert_not_null(f, "%s", file);
	cr_assert_gt(fread(buf, 1, sizeof(buf) - 1, f), 0);
	fclose(f);
	cr_assert_str_eq(buf, want);
}

/* The agent's HOME is fx.tmp (the fixture's worktree_global_init); the daemon's is another. */
Test(worktree, the_agents_global_attributes_apply_whatever_the_daemons_home)
{
	char daemon[P_MAX], path[P_MAX];

	FMT(daemon, "%s/roothome", fx.tmp);
	cr_assert_eq(mkdir(daemon, 0700), 0);
	cr_assert_eq(setenv("HOME", daemon, 1), 0);
	cr_assert_eq(unsetenv("XDG_CONFIG_HOME"), 0);
	write_global_attributes(fx.tmp, "README text eol=crlf\n");
	ensure();
	add(13, path);
	assert_readme(path, "hello\r\n");
}

Test(worktree, the_daemons_global_attributes_do_not_apply)
{
	char daemon[P_MAX], path[P_MAX];

	FMT(daemon, "%s/roothome", fx.tmp);
	write_global_attributes(daemon, "README text eol=crlf\n");
	cr_assert_eq(setenv("HOME", daemon, 1), 0);
	cr_assert_eq(unsetenv("XDG_CONFIG_HOME"), 0);
	cr_assert_eq(worktree_global_init(fx.tmp), 0);
	ensure();
	add(14, path);
	assert_readme(path, "hello\n");
}

/* worktree_delete as DELETE /sessions/<id> calls it: without force unless said. */
static int del(const char *path, long issue, bool force, struct worktree_removal *rm)
{
	char branch[32], id[32];
	struct cause c = {{0}};
	int r;

	FMT(branch, "feat/issue-%ld", issue);
	FMT(id, "widgets-%ld", issue);
	r = worktree_delete(fx.base, "acme", "widgets", path, branch, id, force, rm, &c);
	cr_assert_eq(r, 0, "worktree_delete: %d %s", r, c.msg);
	return r;
}

static void assert_kept(const struct worktree_removal *rm, const char *path, const char *reason)
{
	cr_assert_eq(rm->fate, WORKTREE_KEPT, "not kept (fate %d)", rm->fate);
	cr_assert(strstr(rm->reason, reason) != NULL, "reason '%s' lacks '%s'", rm->reason, reason);
	cr_assert(exists(path), "a kept worktree is gone");
	cr_assert_str_eq(rm->kept_ref, "");
}

static void assert_removed(const struct worktree_removal *rm, const char *path)
{
	cr_assert_eq(rm->fate, WORKTREE_REMOVED, "not removed (fate %d): %s", rm->fate, rm->reason);
	cr_assert_not(exists(path), "removed, but the directory stayed");
}

Test(worktree, delete_clean_worktree_keeps_branch)
{
	char path[P_MAX];
	struct worktree_removal rm;

	ensure();
	add(40, path);
	commit_file(path, "work.txt", "committed work\n");
	del(path, 40, false, &rm);
	assert_removed(&rm, path);
	cr_assert_eq(rm.ignored_removed, 0);
	cr_assert_str_eq(rm.kept_ref, "");
	cr_assert(has_ref(fx.bare, "refs/heads/feat/issue-40"));
	del(path, 40, false, &rm);
	cr_assert_eq(rm.fate, WORKTREE_ABSENT, "nothing at the path is not 'removed'");
}

Test(worktree, delete_keeps_uncommitted_and_untracked)
{
	char path[P_MAX], f[P_MAX + 16];
	struct worktree_removal rm;

	ensure();
	add(41, path);
	FMT(f, "%s/README", path);
	write_file(f, "changed\n");
	del(path, 41, false, &rm);
	assert_kept(&rm, path, "uncommitted changes");
	write_file(f, "hello\n");
	FMT(f, "%s/notes.txt", path);
	write_file(f, "untracked\n");
	del(path, 41, false, &rm);
	assert_kept(&rm, path, "uncommitted changes");
	del(path, 41, true, &rm);
	assert_removed(&rm, path);
	cr_assert_str_eq(rm.kept_ref, "", "no commit needed keeping");
}

Test(worktree, delete_counts_ignored_files)
{
	char path[P_MAX], f[P_MAX + 32];
	struct worktree_removal rm;

	ensure();
	add(42, path);
	FMT(f, "%s/build.log", path);
	write_file(f, "ignored\n");
	FMT(f, "%s/out", path);
	cr_assert_eq(mkdir(f, 0755), 0);
	FMT(f, "%s/out/a.log", path);
	write_file(f, "ignored\n");
	FMT(f, "%s/out/b.log", path);
	write_file(f, "ignored\n");
	del(path, 42, false, &rm);
	assert_removed(&rm, path);
	cr_assert_eq(rm.ignored_removed, 3, "ignored files counted: %zu", rm.ignored_removed);
}

Test(worktree, delete_keeps_detached_head_commit_and_force_keeps_a_ref)
{
	char path[P_MAX], sha[GIT_OID_HEXSZ + 1];
	struct worktree_removal rm;
	git_oid lost, kept;

	ensure();
	add(43, path);
	GIT(path, "checkout", "-q", "--detach");
	del(path, 43, false, &rm);
	assert_kept(&rm, path, "HEAD is detached at ");
	cr_assert_null(strstr(rm.reason, "no branch"), "%s", rm.reason);
	commit_file(path, "lost.txt", "made on a detached HEAD\n");
	lost = ref_oid(path, "HEAD");
	git_oid_tostr(sha, 8, &lost);
	del(path, 43, false, &rm);
	assert_kept(&rm, path, "HEAD is detached at ");
	cr_assert(strstr(rm.reason, sha) != NULL, "%s lacks %s", rm.reason, sha);
	cr_assert(strstr(rm.reason, "(1 commit on no branch)") != NULL, "%s", rm.reason);

	del(path, 43, true, &rm);
	assert_removed(&rm, path);
	cr_assert_eq(strncmp(rm.kept_ref, "refs/agentd/kept/widgets-43-", 28), 0, "%s",
		     rm.kept_ref);
	cr_assert_eq(rm.kept_commits, 1);
	kept = ref_oid(fx.bare, rm.kept_ref);
	cr_assert(git_oid_equal(&lost, &kept), "the kept ref does not reach the commit");
}

Test(worktree, delete_keeps_a_worktree_on_another_branch)
{
	char path[P_MAX];
	struct worktree_removal rm;

	ensure();
	add(44, path);
	GIT(path, "checkout", "-q", "-b", "experiment");
	commit_file(path, "exp.txt", "x\n");
	del(path, 44, false, &rm);
	assert_kept(&rm, path, "HEAD is on branch experiment, not feat/issue-44");
	del(path, 44, true, &rm);
	assert_removed(&rm, path);
	cr_assert_str_eq(rm.kept_ref, "", "branch experiment reaches the commit");
	cr_assert(has_ref(fx.bare, "refs/heads/experiment"));
}

Test(worktree, delete_keeps_a_locked_worktree)
{
	char path[P_MAX], gitdir[P_MAX + 16];
	struct worktree_removal rm;

	ensure();
	add(45, path);
	FMT(gitdir, "--git-dir=%s", fx.bare);
	GIT(NULL, gitdir, "worktree", "lock", "--reason", "on a USB disk", path);
	del(path, 45, false, &rm);
	assert_kept(&rm, path, "the worktree is locked: on a USB disk");
	del(path, 45, true, &rm);
	assert_removed(&rm, path);
}

Test(worktree, delete_never_removes_an_ordinary_directory)
{
	char path[P_MAX], file[P_MAX + 8], other[P_MAX];
	struct worktree_removal rm;
	struct cause c = {{0}};

	ensure();
	wt_path(46, path);
	cr_assert_eq(mkdir(fx.base, 0755) == 0 || errno == EEXIST, 1);
	cr_assert_eq(mkdir(path, 0755), 0);
	FMT(file, "%s/mine", path);
	write_file(file, "someone's file\n");
	for (int force = 0; force < 2; force++) {
		del(path, 46, force, &rm);
		assert_kept(&rm, path, "is not a worktree of acme/widgets");
		cr_assert(exists(file));
	}
	/* A worktree of another repository (here: the upstream's own) is not ours either. */
	FMT(other, "%s/up-other-wt", fx.tmp);
	GIT(fx.up, "worktree", "add", "-q", "-b", "x", other);
	del(other, 46, true, &rm);
	assert_kept(&rm, other, "is not a worktree of acme/widgets");
	/* No clone at all: still an error-free "kept" for an existing directory. */
	cr_assert_eq(worktree_delete(fx.base, "acme", "nothing", path, "feat/issue-46", "x-46",
				     true, &rm, &c),
		     0, "%s", c.msg);
	assert_kept(&rm, path, "is not a worktree of acme/nothing");
}

Test(worktree, delete_keeps_a_modified_submodule)
{
	char path[P_MAX], up[P_MAX], remote[P_MAX], url[P_MAX], f[P_MAX + 32], sub[P_MAX + 8];
	struct worktree_removal rm;

	make_remote("acme", "lib", up, remote, url);
	ensure();
	add(47, path);
	GIT(path, "-c", "protocol.file.allow=always", "submodule", "add", "-q", url, "lib");
	GIT(path, "commit", "-q", "-m", "add lib");
	FMT(sub, "%s/lib", path);

	FMT(f, "%s/lib/README", path);
	write_file(f, "changed inside the submodule\n");
	del(path, 47, false, &rm);
	assert_kept(&rm, path, "modified submodule lib");
	write_file(f, "hello\n");

	FMT(f, "%s/lib/new.txt", path);
	write_file(f, "untracked inside the submodule\n");
	del(path, 47, false, &rm);
	assert_kept(&rm, path, "modified submodule lib");
	cr_assert_eq(unlink(f), 0);

	/* A commit inside it, recorded by the worktree: clean, but only this clone has it. */
	commit_file(sub, "sub-work.txt", "x\n");
	del(path, 47, false, &rm);
	assert_kept(&rm, path, "modified submodule lib");
	GIT(path, "commit", "-q", "-am", "bump lib");
	del(path, 47, false, &rm);
	assert_kept(&rm, path, "submodule lib has 1 commit its remote does not have");

	GIT(sub, "push", "-q", "origin", "HEAD:refs/heads/main");
	del(path, 47, false, &rm);
	assert_removed(&rm, path);
}

Test(worktree, delete_branch_only_when_origin_has_its_commits)
{
	char path[P_MAX], gitdir[P_MAX + 16];
	struct cause c = {{0}};

	ensure();
	cr_assert_eq(worktree_branch_delete(fx.base, "acme", "widgets", "main", &c), -EINVAL);
	cr_assert_eq(worktree_branch_delete(fx.base, "acme", "widgets", "feat/issue-07", &c),
		     -EINVAL);
	cr_assert_eq(worktree_branch_delete(fx.base, "acme", "widgets", "feat/issue-1/x", &c),
		     -EINVAL);
	cr_assert_eq(worktree_branch_delete(fx.base, "..", "widgets", "feat/issue-1", &c), -EINVAL);
	cr_assert_eq(worktree_branch_delete(fx.base, "acme", "none", "feat/issue-1", &c), -ENOENT);
	cr_assert_eq(worktree_branch_delete(fx.base, "acme", "widgets", "feat/issue-50", &c),
		     -ENOENT);

	add(50, path);
	commit_file(path, "w.txt", "unpushed\n");
	cr_assert_eq(worktree_branch_delete(fx.base, "acme", "widgets", "feat/issue-50", &c),
		     -EBUSY);
	cr_assert(strstr(c.msg, "checked out") != NULL && strstr(c.msg, path) != NULL, "%s", c.msg);
	cr_assert_eq(worktree_remove(path, &c), 0, "%s", c.msg);
	cr_assert_eq(worktree_branch_delete(fx.base, "acme", "widgets", "feat/issue-50", &c),
		     -ENOTEMPTY);
	cr_assert(strstr(c.msg, "1 commit ") != NULL, "%s", c.msg);
	cr_assert(has_ref(fx.bare, "refs/heads/feat/issue-50"));

	/* Pushed: origin/feat/issue-50 has it. */
	FMT(gitdir, "--git-dir=%s", fx.bare);
	GIT(NULL, gitdir, "push", "-q", fx.remote, "feat/issue-50");
	ensure();
	cr_assert_eq(worktree_branch_delete(fx.base, "acme", "widgets", "feat/issue-50", &c), 0,
		     "%s", c.msg);
	cr_assert_not(has_ref(fx.bare, "refs/heads/feat/issue-50"));

	/* Merged: origin's default branch has it, the branch itself was never pushed. */
	add(51, path);
	commit_file(path, "m.txt", "merged\n");
	cr_assert_eq(worktree_remove(path, &c), 0, "%s", c.msg);
	GIT(NULL, gitdir, "push", "-q", fx.remote, "feat/issue-51:main");
	cr_assert_eq(worktree_branch_delete(fx.base, "acme", "widgets", "feat/issue-51", &c),
		     -ENOTEMPTY, "not fetched yet: origin/main does not have it here");
	ensure();
	cr_assert_eq(worktree_branch_delete(fx.base, "acme", "widgets", "feat/issue-51", &c), 0,
		     "%s", c.msg);
	cr_assert_not(has_ref(fx.bare, "refs/heads/feat/issue-51"));
}
