/*
 * The fixture of the git modules' tests (test_gitrepo.c, test_inventory.c, test_worktree.c):
 * every test builds, in its own mkdtemp directory, an upstream work repository with commits (made
 * with the git CLI, spawned with argv), a bare "remote" at <tmp>/remotes/<owner>/<name>.git
 * reached as file://, and a base directory for agentd's clones and worktrees. The directory is
 * removed by the fini hook, also on failure. Each test file includes it once.
 */
#ifndef AGENTD_GIT_FIXTURE_H
#define AGENTD_GIT_FIXTURE_H

#include "gitrepo.h"
#include "inventory.h"
#include "testdir.h"
#include "worktree.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
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

static inline bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static inline void write_file(const char *path, const char *content)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "cannot write %s", path);
	fputs(content, f);
	fclose(f);
}

/* Runs git with argv in cwd, with a private HOME and no system config; returns the exit code. */
static inline int run_git(const char *cwd, char *const argv[])
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

static inline void git_ok(const char *cwd, char *const argv[])
{
	cr_assert_eq(run_git(cwd, argv), 0, "git %s failed in %s", argv[1], cwd ? cwd : ".");
}

#define GIT(cwd, ...)                                                                              \
	do {                                                                                       \
		char *const argv_[] = {"git", __VA_ARGS__, NULL};                                  \
		git_ok(cwd, argv_);                                                                \
	} while (0)

static inline void commit_file(const char *dir, const char *file, const char *content)
{
	char path[P_MAX * 2];

	FMT(path, "%s/%s", dir, file);
	write_file(path, content);
	GIT(dir, "add", "-A");
	GIT(dir, "commit", "-q", "-m", (char *)file);
}

/* Makes <tmp>/up-<name> (main: README, .gitignore; branch dev) and its bare remote. */
static inline void make_remote(const char *owner, const char *name, char *up, char *remote,
			       char *url)
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

static inline void setup(void)
{
	FMT(fx.tmp, "/tmp/agentd-wt-XXXXXX");
	cr_assert_not_null(mkdtemp(fx.tmp));
	FMT(fx.home, "HOME=%s", fx.tmp);
	FMT(fx.path_env, "PATH=%s", getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	FMT(fx.base, "%s/base", fx.tmp);
	make_remote("acme", "widgets", fx.up, fx.remote, fx.url);
	cr_assert_eq(worktree_bare_path(fx.base, "acme", "widgets", fx.bare, sizeof(fx.bare)), 0);
	/* The agent's HOME is the one the git CLI of the fixture has. */
	cr_assert_eq(worktree_global_init(fx.tmp), 0);
}

/* Present only in sanitizer builds: makes a leak fail the test, which a Criterion worker's exit
 * report alone does not. */
extern int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

static inline void teardown(void)
{
	if (fx.tmp[0] != '\0' && strncmp(fx.tmp, "/tmp/agentd-wt-", 15) == 0)
		testdir_remove(fx.tmp);
	if (__lsan_do_recoverable_leak_check != NULL && __lsan_do_recoverable_leak_check() != 0) {
		fputs("memory leaked (report above)\n", stderr);
		abort(); /* an assertion in a fini hook does not fail the test; a crash does */
	}
}

static inline void ensure(void)
{
	struct cause c = {{0}};
	int r = worktree_ensure_repo(fx.base, "acme", "widgets", fx.url, &c);

	cr_assert_eq(r, 0, "ensure_repo: %d %s", r, c.msg);
}

static inline void wt_path(long issue, char *out)
{
	cr_assert_lt(snprintf(out, P_MAX, "%s/widgets-issue-%ld", fx.base, issue), P_MAX);
}

static inline int add_at(const char *path, long issue, struct cause *c)
{
	char branch[32];

	FMT(branch, "feat/issue-%ld", issue);
	return worktree_add(fx.base, "acme", "widgets", path, branch, c);
}

/* Adds <base>/widgets-issue-<issue> on feat/issue-<issue>, asserting success. */
static inline void add(long issue, char *path)
{
	struct cause c = {{0}};
	int r;

	wt_path(issue, path);
	r = add_at(path, issue, &c);
	cr_assert_eq(r, 0, "worktree_add: %d %s", r, c.msg);
}

/* The commit refname points at in the repository at dir. */
static inline git_oid ref_oid(const char *dir, const char *refname)
{
	git_repository *repo;
	git_oid oid;

	cr_assert_eq(git_repository_open(&repo, dir), 0, "open %s", dir);
	cr_assert_eq(git_reference_name_to_id(&oid, repo, refname), 0, "%s in %s", refname, dir);
	git_repository_free(repo);
	return oid;
}

static inline bool has_ref(const char *dir, const char *refname)
{
	git_repository *repo;
	git_oid oid;
	bool found;

	cr_assert_eq(git_repository_open(&repo, dir), 0, "open %s", dir);
	found = git_reference_name_to_id(&oid, repo, refname) == 0;
	git_repository_free(repo);
	return found;
}

static inline void assert_head_branch(const char *path, const char *branch)
{
	git_repository *repo;
	git_reference *head;

	cr_assert_eq(git_repository_open(&repo, path), 0, "open %s", path);
	cr_assert_eq(git_repository_head(&head, repo), 0);
	cr_assert_str_eq(git_reference_shorthand(head), branch);
	git_reference_free(head);
	git_repository_free(repo);
}

static inline bool in_file(const char *dir, const char *file)
{
	char path[P_MAX * 2];

	FMT(path, "%s/%s", dir, file);
	return exists(path);
}

#endif
