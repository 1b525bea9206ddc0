/*
 * worktree.c against real repositories: every test builds, in its own mkdtemp directory, an
 * upstream work repository with commits (made with the git CLI, spawned with argv), a bare
 * "remote" at <tmp>/remotes/<owner>/<name>.git reached as file://, and a base directory for
 * agentd's clones and worktrees. The directory is removed by the fini hook, also on failure.
 */
#include "gitrepo.h"
#include "inventory.h"
#include "worktree.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <git2.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define P_MAX 1024

struct fixture {
	char tmp[64];
	char base[P_MAX];
	char up[P_MAX];     /* upstream work repository of acme/widgets */
	char remote[P_MAX]; /* its bare remote */
	char bare[P_MAX];   /* agentd's clone */
	char url[P_MAX];
	char home[P_MAX + 8];
	char path_env[P_MAX + 8];
};

static struct fixture fx;

/*
 * libgit2 1.5.1 (Debian 12) leaks PCRE2 match data in git_regexp_match when nothing matches
 * (fixed upstream by libgit2 PR #6382), on every git_remote_lookup and config glob. Only libgit2
 * calls PCRE2 here, so leaks allocated inside libpcre2 are that bug and nothing of ours.
 */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
	return "print_suppressions=0";
}

const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libpcre2-8.so\n";
}

/* snprintf into an array, failing the test on truncation. */
#define FMT(buf, ...) cr_assert_lt(snprintf((buf), sizeof(buf), __VA_ARGS__), (int)sizeof(buf))

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	return remove(path);
}

static void rm_tree(const char *path)
{
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void write_file(const char *path, const char *content)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "cannot write %s", path);
	fputs(content, f);
	fclose(f);
}

/* Runs git with argv in cwd, with a private HOME and no system config; returns the exit code. */
static int run_git(const char *cwd, char *const argv[])
{
	char *envp[] = {fx.home,
			fx.path_env,
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=Test",
			"GIT_AUTHOR_EMAIL=test@example.com",
			"GIT_COMMITTER_NAME=Test",
			"GIT_COMMITTER_EMAIL=test@example.com",
			NULL};
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status = -1, r;

	posix_spawn_file_actions_init(&fa);
	if (cwd != NULL)
		posix_spawn_file_actions_addchdir_np(&fa, cwd);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	r = posix_spawnp(&pid, "git", &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0)
		return -1;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void git_ok(const char *cwd, char *const argv[])
{
	cr_assert_eq(run_git(cwd, argv), 0, "git %s failed in %s", argv[1], cwd ? cwd : ".");
}

#define GIT(cwd, ...)                                                                              \
	do {                                                                                       \
		char *const argv_[] = {"git", __VA_ARGS__, NULL};                                  \
		git_ok(cwd, argv_);                                                                \
	} while (0)

static void commit_file(const char *dir, const char *file, const char *content)
{
	char path[P_MAX * 2];

	FMT(path, "%s/%s", dir, file);
	write_file(path, content);
	GIT(dir, "add", "-A");
	GIT(dir, "commit", "-q", "-m", (char *)file);
}

/* Makes <tmp>/up-<name> (main: README, .gitignore; branch dev) and its bare remote. */
static void make_remote(const char *owner, const char *name, char *up, char *remote, char *url)
{
	char dir[P_MAX];

	cr_assert_lt(snprintf(up, P_MAX, "%s/up-%s", fx.tmp, name), P_MAX);
	FMT(dir, "%s/remotes/%s", fx.tmp, owner);
	cr_assert_lt(snprintf(remote, P_MAX, "%s/%s.git", dir, name), P_MAX);
	cr_assert_lt(snprintf(url, P_MAX, "file://%s", remote), P_MAX);
	GIT(NULL, "init", "-q", "-b", "main", up);
	commit_file(up, ".gitignore", "*.log\n");
	commit_file(up, "README", "hello\n");
	GIT(up, "branch", "dev");
	GIT(NULL, "clone", "-q", "--bare", up, remote);
	GIT(up, "remote", "add", "origin", remote);
}

static void setup(void)
{
	FMT(fx.tmp, "/tmp/agentd-wt-XXXXXX");
	cr_assert_not_null(mkdtemp(fx.tmp));
	FMT(fx.home, "HOME=%s", fx.tmp);
	FMT(fx.path_env, "PATH=%s", getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	FMT(fx.base, "%s/base", fx.tmp);
	make_remote("acme", "widgets", fx.up, fx.remote, fx.url);
	cr_assert_eq(worktree_bare_path(fx.base, "acme", "widgets", fx.bare, sizeof(fx.bare)), 0);
	cr_assert_eq(worktree_global_init(), 0);
}

/* Present only in sanitizer builds: makes a leak fail the test, which a Criterion worker's exit
 * report alone does not. */
extern int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

static void teardown(void)
{
	if (fx.tmp[0] != '\0' && strncmp(fx.tmp, "/tmp/agentd-wt-", 15) == 0)
		rm_tree(fx.tmp);
	if (__lsan_do_recoverable_leak_check != NULL && __lsan_do_recoverable_leak_check() != 0) {
		fputs("memory leaked (report above)\n", stderr);
		abort(); /* an assertion in a fini hook does not fail the test; a crash does */
	}
}

TestSuite(worktree, .init = setup, .fini = teardown);

static void ensure(void)
{
	struct cause c = {{0}};
	int r = worktree_ensure_repo(fx.base, "acme", "widgets", fx.url, &c);

	cr_assert_eq(r, 0, "ensure_repo: %d %s", r, c.msg);
}

static void wt_path(long issue, char *out)
{
	cr_assert_lt(snprintf(out, P_MAX, "%s/widgets-issue-%ld", fx.base, issue), P_MAX);
}

static int add_at(const char *path, long issue, struct cause *c)
{
	char branch[32];

	FMT(branch, "feat/issue-%ld", issue);
	return worktree_add(fx.base, "acme", "widgets", path, branch, c);
}

/* Adds <base>/widgets-issue-<issue> on feat/issue-<issue>, asserting success. */
static void add(long issue, char *path)
{
	struct cause c = {{0}};
	int r;

	wt_path(issue, path);
	r = add_at(path, issue, &c);
	cr_assert_eq(r, 0, "worktree_add: %d %s", r, c.msg);
}

/* The commit refname points at in the repository at dir. */
static git_oid ref_oid(const char *dir, const char *refname)
{
	git_repository *repo;
	git_oid oid;

	cr_assert_eq(git_repository_open(&repo, dir), 0, "open %s", dir);
	cr_assert_eq(git_reference_name_to_id(&oid, repo, refname), 0, "%s in %s", refname, dir);
	git_repository_free(repo);
	return oid;
}

static bool has_ref(const char *dir, const char *refname)
{
	git_repository *repo;
	git_oid oid;
	bool found;

	cr_assert_eq(git_repository_open(&repo, dir), 0, "open %s", dir);
	found = git_reference_name_to_id(&oid, repo, refname) == 0;
	git_repository_free(repo);
	return found;
}

static void assert_head_branch(const char *path, const char *branch)
{
	git_repository *repo;
	git_reference *head;

	cr_assert_eq(git_repository_open(&repo, path), 0, "open %s", path);
	cr_assert_eq(git_repository_head(&head, repo), 0);
	cr_assert_str_eq(git_reference_shorthand(head), branch);
	git_reference_free(head);
	git_repository_free(repo);
}

static bool in_file(const char *dir, const char *file)
{
	char path[P_MAX * 2];

	FMT(path, "%s/%s", dir, file);
	return exists(path);
}

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

Test(worktree, lock_is_exclusive)
{
	char lockpath[P_MAX + 8];
	int fd, fd2;

	fd = worktree_lock(fx.base, "acme", "widgets");
	cr_assert_geq(fd, 0, "lock: %d", fd);
	FMT(lockpath, "%s.lock", fx.bare);
	cr_assert(exists(lockpath));
	fd2 = open(lockpath, O_RDWR | O_CLOEXEC);
	cr_assert_geq(fd2, 0);
	cr_assert_eq(flock(fd2, LOCK_EX | LOCK_NB), -1);
	cr_assert_eq(errno, EWOULDBLOCK);
	close(fd);
	cr_assert_eq(flock(fd2, LOCK_EX | LOCK_NB), 0);
	close(fd2);
	cr_assert_eq(worktree_lock(fx.base, "..", "widgets"), -EINVAL);
	cr_assert_eq(worktree_lock(fx.base, "acme", "../x"), -EINVAL);
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

Test(worktree, second_ensure_fetches_and_prunes)
{
	char path[P_MAX];
	git_oid a, b;

	ensure();
	cr_assert(has_ref(fx.bare, "refs/remotes/origin/dev"));
	commit_file(fx.up, "NEW", "new\n");
	GIT(fx.up, "push", "-q", "origin", "main");
	GIT(fx.up, "push", "-q", "origin", "--delete", "dev");
	ensure();
	cr_assert_not(has_ref(fx.bare, "refs/remotes/origin/dev"), "deleted branch not pruned");
	a = ref_oid(fx.remote, "refs/heads/main");
	b = ref_oid(fx.bare, "refs/remotes/origin/main");
	cr_assert(git_oid_equal(&a, &b));
	add(2, path);
	cr_assert(in_file(path, "NEW"), "new upstream commit missing from a new worktree");
}

Test(worktree, default_branch_change_repoints_origin_head)
{
	char path[P_MAX];
	git_repository *repo;
	git_reference *head;

	ensure();
	GIT(fx.up, "checkout", "-q", "-b", "trunk");
	commit_file(fx.up, "TRUNK", "t\n");
	GIT(fx.up, "push", "-q", "origin", "trunk");
	GIT(fx.remote, "symbolic-ref", "HEAD", "refs/heads/trunk");
	ensure();
	cr_assert_eq(git_repository_open(&repo, fx.bare), 0);
	cr_assert_eq(git_reference_lookup(&head, repo, "refs/remotes/origin/HEAD"), 0);
	cr_assert_eq(git_reference_type(head), GIT_REFERENCE_SYMBOLIC);
	cr_assert_str_eq(git_reference_symbolic_target(head), "refs/remotes/origin/trunk");
	git_reference_free(head);
	git_repository_free(repo);
	add(3, path);
	cr_assert(in_file(path, "TRUNK"));
}

Test(worktree, failed_fetch_of_existing_clone_is_not_fatal)
{
	char moved[P_MAX + 8], url[P_MAX + 16], got[WORKTREE_URL_MAX], path[P_MAX];
	struct cause c = {{0}};

	ensure();
	FMT(moved, "%s.gone", fx.remote);
	cr_assert_eq(rename(fx.remote, moved), 0);
	cr_assert_eq(worktree_ensure_repo(fx.base, "acme", "widgets", fx.url, &c), 1);
	cr_assert(strstr(c.msg, "fetch of ") != NULL && strstr(c.msg, fx.url) != NULL, "%s", c.msg);
	add(1, path);
	/* A changed URL (AGENTD_REPO_URL) replaces origin's URL and is fetched from. */
	commit_file(fx.up, "MOVED", "m\n");
	GIT(fx.up, "push", "-q", moved, "main");
	FMT(url, "file://%s", moved);
	cr_assert_eq(worktree_ensure_repo(fx.base, "acme", "widgets", url, &c), 0, "%s", c.msg);
	cr_assert_eq(worktree_remote_url(path, got, sizeof(got), &c), 0, "%s", c.msg);
	cr_assert_str_eq(got, url);
	add(2, path);
	cr_assert(in_file(path, "MOVED"));
}

Test(worktree, clone_of_missing_url_fails_with_cause)
{
	char url[P_MAX + 32], tmp[P_MAX + 8];
	struct cause c = {{0}};
	int r;

	FMT(url, "file://%s/nowhere/acme/widgets.git", fx.tmp);
	r = worktree_ensure_repo(fx.base, "acme", "widgets", url, &c);
	cr_assert_lt(r, 0);
	cr_assert(strstr(c.msg, "clone of ") != NULL && strstr(c.msg, url) != NULL, "%s", c.msg);
	cr_assert(strstr(c.msg, "failed: ") != NULL, "%s", c.msg);
	FMT(tmp, "%s.clone", fx.bare);
	cr_assert_not(exists(fx.bare));
	cr_assert_not(exists(tmp));
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
	rm_tree(path);
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
	rm_tree(path);
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
	rm_tree(plain);

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

Test(worktree, remote_url_from_a_subdirectory)
{
	char path[P_MAX], sub[P_MAX + 16], url[WORKTREE_URL_MAX], small[8], plain[P_MAX];
	struct cause c = {{0}};

	ensure();
	add(15, path);
	FMT(sub, "%s/sub", path);
	cr_assert_eq(mkdir(sub, 0755), 0);
	FMT(sub, "%s/sub/dir", path);
	cr_assert_eq(mkdir(sub, 0755), 0);
	cr_assert_eq(worktree_remote_url(sub, url, sizeof(url), &c), 0, "%s", c.msg);
	cr_assert_str_eq(url, fx.url);
	cr_assert_eq(worktree_remote_url(path, url, sizeof(url), &c), 0, "%s", c.msg);
	cr_assert_str_eq(url, fx.url);
	cr_assert_eq(worktree_remote_url(path, small, sizeof(small), &c), -ENAMETOOLONG);
	FMT(plain, "%s/plain", fx.tmp);
	cr_assert_eq(mkdir(plain, 0755), 0);
	cr_assert_eq(worktree_remote_url(plain, url, sizeof(url), NULL), -ENOENT);
}

struct url_case {
	const char *url;
	const char *owner, *name; /* NULL: -EINVAL expected */
};

Test(worktree, parse_url_table)
{
	static const struct url_case cases[] = {
	    {"https://github.com/o/n.git", "o", "n"},
	    {"https://github.com/o/n", "o", "n"},
	    {"https://github.com/o/n/", "o", "n"},
	    {"http://ghe.example.com/acme-co/widgets.git", "acme-co", "widgets"},
	    {"https://user:token@github.com/o/n.git", "o", "n"},
	    {"git@github.com:o/n.git", "o", "n"},
	    {"git@github.com:o/n", "o", "n"},
	    {"github.com:o/n.git", "o", "n"},
	    {"ssh://git@host/o/n.git", "o", "n"},
	    {"ssh://git@host:2222/o/n.git", "o", "n"},
	    {"git://host/o/n.git", "o", "n"},
	    {"file:///any/path/o/n.git", "o", "n"},
	    {"file:///o/n.git", "o", "n"},
	    {"/srv/git/o/n.git", "o", "n"},
	    {"https://github.com/socketio/socket.io.git", "socketio", "socket.io"},
	    {"https://github.com/socketio/socket.io", "socketio", "socket.io"},
	    {"git@github.com:vercel/next.js.git", "vercel", "next.js"},
	    {"https://github.com/o/.github.git", "o", ".github"},
	    {"", NULL, NULL},
	    {"https://x/", NULL, NULL},
	    {"https://x", NULL, NULL},
	    {"https://", NULL, NULL},
	    {"https:///o/n", NULL, NULL},
	    {"../", NULL, NULL},
	    {"..", NULL, NULL},
	    {"o/n", NULL, NULL},
	    {"https://github.com/o", NULL, NULL},
	    {"https://github.com/o/n/tree/main", NULL, NULL},
	    {"https://github.com/../n.git", NULL, NULL},
	    {"https://github.com/o/..", NULL, NULL},
	    {"https://github.com/o/.git", NULL, NULL},
	    {"https://github.com/o/n.git.git", NULL, NULL},
	    {"https://github.com/o/n?x=1", NULL, NULL},
	    {"https://github.com/o%2f/n", NULL, NULL},
	    {"https://github.com/-o/n", NULL, NULL},
	    {"file:///x/../n.git", NULL, NULL},
	    {"git@github.com:", NULL, NULL},
	    {":o/n", NULL, NULL},
	    {"HTTPS://github.com/o/n", NULL, NULL},
	    {"\x01\x02\xff\xfe://junk/\x80/\x81", NULL, NULL},
	    {"https://github.com/o/n\r\n", NULL, NULL},
	    {"https://github.com/o/a name", NULL, NULL},
	};
	char owner[40], name[101];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = worktree_parse_url(cases[i].url, owner, sizeof(owner), name, sizeof(name));

		if (cases[i].owner == NULL) {
			cr_expect_eq(r, -EINVAL, "accepted %s", cases[i].url);
			continue;
		}
		cr_expect_eq(r, 0, "rejected %s", cases[i].url);
		if (r == 0) {
			cr_expect_str_eq(owner, cases[i].owner, "%s", cases[i].url);
			cr_expect_str_eq(name, cases[i].name, "%s", cases[i].url);
		}
	}
	cr_assert_eq(worktree_parse_url(NULL, owner, sizeof(owner), name, sizeof(name)), -EINVAL);
	/* Too small output buffers. */
	cr_assert_eq(worktree_parse_url("https://github.com/owner/n", owner, 5, name, sizeof(name)),
		     -EINVAL);
	cr_assert_eq(worktree_parse_url("https://github.com/o/name", owner, sizeof(owner), name, 4),
		     -EINVAL);
}

Test(worktree, parse_url_hostile_sizes)
{
	const size_t big = 10u * 1024 * 1024;
	char owner[40], name[101];
	char *s = malloc(big + 1);
	const char *prefixes[] = {"", "https://github.com/", "git@h:", "file:///"};

	cr_assert_not_null(s);
	for (size_t p = 0; p < sizeof(prefixes) / sizeof(prefixes[0]); p++) {
		size_t n = strlen(prefixes[p]);

		memcpy(s, prefixes[p], n);
		for (size_t i = n; i < big; i++)
			s[i] = (i % 7 == 0) ? '/' : (char)('a' + i % 26);
		s[big] = '\0';
		cr_assert_eq(worktree_parse_url(s, owner, sizeof(owner), name, sizeof(name)),
			     -EINVAL);
	}
	/* A well-formed local URL of WORKTREE_URL_MAX - 1 characters fits; one more does not. */
	for (size_t len = WORKTREE_URL_MAX - 1; len <= WORKTREE_URL_MAX; len++) {
		memset(s, 'a', len);
		memcpy(s, "file:///", 8);
		memcpy(s + len - 7, "/o/repo", 7);
		s[len] = '\0';
		cr_assert_eq(worktree_parse_url(s, owner, sizeof(owner), name, sizeof(name)),
			     len < WORKTREE_URL_MAX ? 0 : -EINVAL, "length %zu", len);
	}
	cr_assert_str_eq(owner, "o");
	cr_assert_str_eq(name, "repo");
	free(s);
}

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

Test(worktree, list_and_list_branches)
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

Test(worktree, find_by_directory_name)
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
