/*
 * fsutil in a real temporary directory: mkdir -p and its limits, rm -r that removes a symlink and
 * never what it points at, file identity through symlinks and trailing slashes, and a new file
 * written without replacing anything.
 */
#include "fsutil.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define T_MAX 256

static char tmp[64];

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/agentd-fsutil-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
}

static void teardown(void)
{
	fsutil_rm_tree(tmp);
}

TestSuite(fsutil, .init = setup, .fini = teardown);

static void at(char *out, const char *rel)
{
	cr_assert_lt(snprintf(out, T_MAX, "%s/%s", tmp, rel), T_MAX);
}

static bool is_dir(const char *path)
{
	struct stat sb;

	return lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	cr_assert_geq(fd, 0, "create %s", path);
	close(fd);
}

Test(fsutil, mkdir_p_makes_every_level_and_is_idempotent)
{
	char p[T_MAX];

	at(p, "a/b/c");
	cr_assert_eq(fsutil_mkdir_p(p), 0);
	cr_assert(is_dir(p));
	cr_assert_eq(fsutil_mkdir_p(p), 0, "an existing directory is fine");
	at(p, "x/y/leaf");
	cr_assert_eq(fsutil_mkdir_parent(p), 0);
	cr_assert(!is_dir(p), "the leaf itself is not made");
	at(p, "x/y");
	cr_assert(is_dir(p));
	cr_assert_eq(fsutil_mkdir_parent("leaf"), 0, "no parent to make");
}

Test(fsutil, mkdir_p_limits_and_errors)
{
	char *longp = malloc(FSUTIL_PATH_MAX + 1), p[T_MAX];

	cr_assert_not_null(longp);
	memset(longp, 'd', FSUTIL_PATH_MAX);
	longp[0] = '/';
	longp[FSUTIL_PATH_MAX] = '\0';
	cr_assert_eq(fsutil_mkdir_p(longp), -ENAMETOOLONG);
	cr_assert_eq(fsutil_mkdir_parent(longp), -ENAMETOOLONG);
	free(longp);
	cr_assert_eq(fsutil_mkdir_p(""), -ENAMETOOLONG);
	at(p, "file");
	touch(p);
	at(p, "file/sub");
	cr_assert_eq(fsutil_mkdir_p(p), -ENOTDIR);
}

Test(fsutil, rm_tree_removes_links_not_their_targets)
{
	char keep[T_MAX], keepf[T_MAX], tree[T_MAX], f[T_MAX], link[T_MAX];

	at(keep, "keep");
	cr_assert_eq(fsutil_mkdir_p(keep), 0);
	at(keepf, "keep/precious");
	touch(keepf);
	at(tree, "tree/deep/er");
	cr_assert_eq(fsutil_mkdir_p(tree), 0);
	at(f, "tree/deep/er/file");
	touch(f);
	at(link, "tree/link");
	cr_assert_eq(symlink(keep, link), 0);
	at(tree, "tree");
	cr_assert_eq(fsutil_rm_tree(tree), 0);
	cr_assert_eq(access(tree, F_OK), -1, "the tree is gone");
	cr_assert_eq(access(keepf, F_OK), 0, "what a link in it pointed at stays");
	cr_assert_eq(fsutil_rm_tree(tree), 0, "a missing path is fine");
	/* A symlink given itself is removed, its target stays. */
	at(link, "link");
	cr_assert_eq(symlink(keep, link), 0);
	cr_assert_eq(fsutil_rm_tree(link), 0);
	cr_assert_eq(access(keepf, F_OK), 0);
}

Test(fsutil, same_file_through_links_and_slashes)
{
	char d[T_MAX], slash[T_MAX], link[T_MAX], other[T_MAX], none[T_MAX];

	at(d, "dir");
	cr_assert_eq(fsutil_mkdir_p(d), 0);
	at(slash, "dir/");
	at(link, "link");
	cr_assert_eq(symlink(d, link), 0);
	at(other, "other");
	cr_assert_eq(fsutil_mkdir_p(other), 0);
	at(none, "none");
	cr_assert(fsutil_same_file(d, slash));
	cr_assert(fsutil_same_file(link, d));
	cr_assert(!fsutil_same_file(d, other));
	cr_assert(!fsutil_same_file(none, none), "a missing file is nobody's");
}

Test(fsutil, write_new_makes_a_file_and_never_replaces_one)
{
	char path[T_MAX], link[T_MAX], buf[32] = {0};
	struct stat st;
	int fd;

	at(path, "new");
	cr_assert_eq(fsutil_write_new(path, "gitdir: /x\n", 0644), 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(read(fd, buf, sizeof(buf) - 1), 11);
	close(fd);
	cr_assert_str_eq(buf, "gitdir: /x\n");
	cr_assert_eq(fsutil_write_new(path, "other\n", 0644), -EEXIST, "an existing file stays");
	at(link, "link");
	cr_assert_eq(symlink(path, link), 0);
	cr_assert_eq(fsutil_write_new(link, "other\n", 0644), -EEXIST, "a symlink is not followed");
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_size, 11, "its target is untouched");
}

Test(fsutil, read_file_reads_whole_files_within_the_bound_and_refuses_the_rest)
{
	char path[T_MAX], link[T_MAX], *text = (char *)1;
	size_t len = 99;

	at(path, "f");
	cr_assert_eq(fsutil_write_new(path, "{\"a\":1}\n", 0644), 0);
	cr_assert_eq(fsutil_read_file(path, 8, &text, &len), 0, "exactly the bound");
	cr_assert_str_eq(text, "{\"a\":1}\n");
	cr_assert_eq(len, 8);
	free(text);
	cr_assert_eq(fsutil_read_file(path, 7, &text, &len), -EFBIG, "one byte over");
	cr_assert_null(text);
	cr_assert_eq(fsutil_read_file(tmp, 4096, &text, NULL), -EINVAL, "a directory");
	cr_assert_null(text);
	at(link, "link");
	cr_assert_eq(symlink(path, link), 0);
	cr_assert_eq(fsutil_read_file(link, 4096, &text, NULL), -ELOOP,
		     "a symlink is not followed");
	at(path, "missing");
	cr_assert_eq(fsutil_read_file(path, 4096, &text, NULL), -ENOENT);
	at(path, "empty");
	touch(path);
	cr_assert_eq(fsutil_read_file(path, 4096, &text, &len), 0);
	cr_assert_str_eq(text, "");
	cr_assert_eq(len, 0);
	free(text);
}

Test(fsutil, write_all_writes_past_a_pipe_buffer_and_reports_a_closed_peer)
{
	static char big[256 * 1024];
	int sv[2], status;
	pid_t pid;

	memset(big, 'x', sizeof(big));
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* The reader: counts every byte, then says how many by its exit status. */
		size_t got = 0;
		ssize_t n;
		char buf[4096];

		close(sv[0]);
		while ((n = read(sv[1], buf, sizeof(buf))) > 0)
			got += (size_t)n;
		_exit(got == sizeof(big) ? 0 : 1);
	}
	close(sv[1]);
	cr_assert_eq(fsutil_write_all(sv[0], big, sizeof(big)), 0);
	close(sv[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "every byte arrived");

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	close(sv[1]);
	signal(SIGPIPE, SIG_IGN);
	cr_assert_eq(fsutil_write_all(sv[0], "x", 1), -EPIPE);
	close(sv[0]);
}

Test(fsutil, copy_tree_copies_files_dirs_and_links_as_links_and_skips_what_it_is_told)
{
	static const char *const skip[] = {".claude/projects", "big"};
	char src[T_MAX], dst[T_MAX], p[T_MAX + 64], link[T_MAX + 64];
	struct stat st;
	ssize_t n;
	int fd;

	at(src, "tpl");
	at(dst, "home");
	cr_assert_eq(fsutil_mkdir_p(src), 0);
	cr_assert_eq(fsutil_mkdir_p(dst), 0);
	snprintf(p, sizeof(p), "%s/.claude/projects/x", src);
	cr_assert_eq(fsutil_mkdir_p(p), 0);
	snprintf(p, sizeof(p), "%s/big", src);
	cr_assert_eq(fsutil_mkdir_p(p), 0);
	snprintf(p, sizeof(p), "%s/.claude/settings.json", src);
	cr_assert_eq(fsutil_write_new(p, "{}\n", 0640), 0);
	cr_assert_eq(chmod(p, 0640), 0);
	snprintf(p, sizeof(p), "%s/.gitconfig", src);
	cr_assert_eq(fsutil_write_new(p, "[user]\n", 0600), 0);
	snprintf(link, sizeof(link), "%s/root", src);
	cr_assert_eq(symlink("/", link), 0, "a link to / is copied as a link, never followed");
	snprintf(p, sizeof(p), "%s/fifo", src);
	cr_assert_eq(mkfifo(p, 0600), 0);

	cr_assert_eq(fsutil_copy_tree(src, dst, skip, 2), 0);
	snprintf(p, sizeof(p), "%s/.claude/settings.json", dst);
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0640, "the mode is the template's");
	cr_assert_eq(st.st_size, 3);
	snprintf(p, sizeof(p), "%s/.gitconfig", dst);
	cr_assert_eq(stat(p, &st), 0);
	snprintf(p, sizeof(p), "%s/root", dst);
	cr_assert_eq(lstat(p, &st), 0);
	cr_assert(S_ISLNK(st.st_mode));
	n = readlink(p, link, sizeof(link) - 1);
	cr_assert_eq(n, 1);
	snprintf(p, sizeof(p), "%s/.claude/projects", dst);
	cr_assert_eq(lstat(p, &st), -1, "a skipped directory is not copied");
	snprintf(p, sizeof(p), "%s/big", dst);
	cr_assert_eq(lstat(p, &st), -1);
	snprintf(p, sizeof(p), "%s/.claude", dst);
	cr_assert_eq(lstat(p, &st), 0, "its parent is");
	snprintf(p, sizeof(p), "%s/fifo", dst);
	cr_assert_eq(lstat(p, &st), -1, "a FIFO is no HOME's");
	fd = open(dst, O_RDONLY);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(fsutil_copy_tree(src, dst, skip, 2), -EEXIST, "never over what is there");
}

/* Two ids no one uses: the template's reader and the copy's writer. */
#define T_READER 61101
#define T_WRITER 61102

static void t_side(void *ctx, bool writing)
{
	int *calls = ctx;

	calls[writing]++;
	setfsuid(writing ? T_WRITER : T_READER);
}

Test(fsutil, copy_tree_as_reads_as_one_identity_and_writes_as_another)
{
	char src[T_MAX], dst[T_MAX], p[T_MAX + 64];
	struct fsutil_sides sides;
	int calls[2] = {0, 0};
	struct stat st;

	if (geteuid() != 0)
		cr_skip_test("needs root (setfsuid to other users)");
	sides = (struct fsutil_sides){t_side, calls};
	cr_assert_eq(chmod(tmp, 0711), 0);
	at(src, "tpl");
	at(dst, "home");
	snprintf(p, sizeof(p), "%s/sub", src);
	cr_assert_eq(fsutil_mkdir_p(p), 0);
	snprintf(p, sizeof(p), "%s/sub/secret", src);
	cr_assert_eq(fsutil_write_new(p, "mine\n", 0600), 0);
	cr_assert_eq(lchown(p, T_READER, 0), 0);
	snprintf(p, sizeof(p), "%s/sub", src);
	cr_assert_eq(lchown(p, T_READER, 0), 0);
	cr_assert_eq(chmod(p, 0700), 0);
	cr_assert_eq(lchown(src, T_READER, 0), 0);
	cr_assert_eq(chmod(src, 0700), 0);
	cr_assert_eq(mkdir(dst, 0700), 0);
	cr_assert_eq(lchown(dst, T_WRITER, 0), 0);

	/* Neither identity alone could: the writer cannot read the template, and the reader
	 * cannot write the copy. */
	setfsuid(T_WRITER);
	cr_assert_eq(fsutil_copy_tree(src, dst, NULL, 0), -EACCES);
	setfsuid(0);
	cr_assert_eq(fsutil_copy_tree_as(src, dst, NULL, 0, &sides), 0);
	setfsuid(0);
	cr_assert(calls[0] > 0 && calls[1] > 0);
	snprintf(p, sizeof(p), "%s/sub/secret", dst);
	cr_assert_eq(lstat(p, &st), 0);
	cr_assert_eq(st.st_uid, T_WRITER, "the copy is the writer's");
	cr_assert_eq(st.st_mode & 0777, 0600);
	cr_assert_eq(st.st_size, 5);
	snprintf(p, sizeof(p), "%s/sub", dst);
	cr_assert_eq(lstat(p, &st), 0);
	cr_assert_eq(st.st_uid, T_WRITER);
}

Test(fsutil, lock_makes_the_file_holds_it_and_refuses_a_symlink)
{
	char path[T_MAX], link[T_MAX];
	mode_t mask = umask(0);
	struct stat st;
	int a, b;

	umask(mask);
	at(path, "x.lock");
	a = fsutil_lock(path, LOCK_EX, 0640);
	cr_assert_geq(a, 0);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0640 & ~mask);
	/* Another open file description waits for it; with LOCK_NB it is told at once. */
	cr_assert_eq(fsutil_lock(path, LOCK_EX | LOCK_NB, 0640), -EWOULDBLOCK);
	close(a);
	b = fsutil_lock(path, LOCK_EX | LOCK_NB, 0640);
	cr_assert_geq(b, 0, "the close released it");
	close(b);
	at(link, "link.lock");
	cr_assert_eq(symlink(path, link), 0);
	cr_assert_eq(fsutil_lock(link, LOCK_EX, 0600), -ELOOP, "a symlink is not followed");
}
