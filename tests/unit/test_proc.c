/*
 * proc: real children. Output capture and truncation, exit status, missing programs, what the
 * child inherits (signal mask, dispositions, fds, stdin, cwd, environment, session), proc_which.
 */
#include "proc.h"

#include "testdir.h"

#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[64];

static void setup(void)
{
	testdir_make(tmpdir, sizeof(tmpdir), "/tmp/agentd-proc-XXXXXX");
	testdir_janitor(tmpdir, NULL, NULL);
}

static void teardown(void)
{
	testdir_remove(tmpdir);
}

TestSuite(proc, .init = setup, .fini = teardown);

#define ARGV(...) ((char *const[]){__VA_ARGS__, NULL})

static const struct proc_opts no_opts = {.keep_fd = -1};

/* Runs argv, expects it to run, returns its exit code (asserting a normal exit). */
static int run(char *const argv[], const struct proc_opts *opts, char *out, size_t outlen)
{
	int status = -1;
	int r = proc_run(argv, opts, out, outlen, &status);

	cr_assert_eq(r, 0, "proc_run(%s): %d", argv[0], r);
	cr_assert(WIFEXITED(status), "%s did not exit normally: %#x", argv[0], status);
	return WEXITSTATUS(status);
}

static void make_file(const char *leaf, const char *text, mode_t mode, char *path, size_t len)
{
	int fd;

	snprintf(path, len, "%s/%s", tmpdir, leaf);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	cr_assert_eq(chmod(path, mode), 0);
}

Test(proc, captures_stdout_and_stderr)
{
	char out[256];

	cr_assert_eq(
	    run(ARGV("/bin/sh", "-c", "echo out; echo err >&2; echo out2"), &no_opts, out, 256), 0);
	cr_assert_str_eq(out, "out\nerr\nout2\n");
	/* opts may be NULL. */
	cr_assert_eq(run(ARGV("echo", "hello"), NULL, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "hello\n");
}

Test(proc, argv_words_verbatim)
{
	char out[512];

	/* No shell between us and the program: nothing is expanded, split or ended. */
	cr_assert_eq(run(ARGV("printf", "[%s]\\n", "a b", ";", "x;", "$HOME", "'q'", "\"d\"", "*",
			      "`id`", "", "\xff\xfe", "a\nb"),
			 &no_opts, out, sizeof(out)),
		     0);
	cr_assert_str_eq(out, "[a b]\n[;]\n[x;]\n[$HOME]\n['q']\n[\"d\"]\n[*]\n[`id`]\n[]\n["
			      "\xff\xfe]\n[a\nb]\n");
}

Test(proc, exit_status)
{
	int status = 0;

	cr_assert_eq(run(ARGV("/bin/sh", "-c", "exit 7"), &no_opts, NULL, 0), 7);
	cr_assert_eq(run(ARGV("false"), &no_opts, NULL, 0), 1);
	cr_assert_eq(run(ARGV("true"), &no_opts, NULL, 0), 0);
	/* A program that exists and exits 127 is not "not found". */
	cr_assert_eq(run(ARGV("/bin/sh", "-c", "exit 127"), &no_opts, NULL, 0), 127);
	/* Killed by a signal. */
	cr_assert_eq(proc_run(ARGV("/bin/sh", "-c", "kill -TERM $$"), &no_opts, NULL, 0, &status),
		     0);
	cr_assert(WIFSIGNALED(status));
	cr_assert_eq(WTERMSIG(status), SIGTERM);
	/* status may be NULL. */
	cr_assert_eq(proc_run(ARGV("true"), &no_opts, NULL, 0, NULL), 0);
}

Test(proc, missing_program_is_enoent)
{
	char out[64];
	int status = 12345;

	cr_assert_eq(
	    proc_run(ARGV("agentd-no-such-program-xyz"), &no_opts, out, sizeof(out), &status),
	    -ENOENT);
	cr_assert_eq(proc_run(ARGV("agentd-no-such-program-xyz"), &no_opts, NULL, 0, &status),
		     -ENOENT);
	cr_assert_eq(proc_run(ARGV("/nonexistent/dir/prog"), &no_opts, NULL, 0, &status), -ENOENT);
	cr_assert_eq(proc_run(ARGV("/nonexistent/dir/prog"), &no_opts, out, sizeof(out), &status),
		     -ENOENT);
}

Test(proc, non_executable_is_eacces)
{
	char path[128];

	make_file("noexec", "#!/bin/sh\necho hi\n", 0644, path, sizeof(path));
	cr_assert_eq(proc_run(ARGV(path), &no_opts, NULL, 0, NULL), -EACCES);
}

#define GLIBC_INTERNAL_SIGNALS ((1ULL << (32 - 1)) | (1ULL << (33 - 1)))

/* Reads "<field>:\t<hex>" from /proc/<pid>/status text. */
static unsigned long long status_mask(const char *text, const char *field)
{
	char key[32];
	const char *p;

	snprintf(key, sizeof(key), "\n%s:", field);
	p = strstr(text, key);
	cr_assert_not_null(p, "no %s in status", field);
	return strtoull(p + strlen(key), NULL, 16);
}

static void read_self_status(char *buf, size_t len)
{
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	cr_assert_geq(fd, 0);
	n = read(fd, buf, len - 1);
	cr_assert_gt(n, 0);
	buf[n] = '\0';
	close(fd);
}

Test(proc, child_gets_empty_mask_and_default_dispositions)
{
	char out[8192], mine[8192];
	sigset_t block;

	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGCHLD);
	cr_assert_eq(sigprocmask(SIG_BLOCK, &block, NULL), 0);
	signal(SIGINT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	/* The parent really is in that state (else the test proves nothing). */
	read_self_status(mine, sizeof(mine));
	cr_assert(status_mask(mine, "SigBlk") & (1ULL << (SIGTERM - 1)));
	cr_assert(status_mask(mine, "SigIgn") & (1ULL << (SIGINT - 1)));

	cr_assert_eq(run(ARGV("cat", "/proc/self/status"), &no_opts, out, sizeof(out)), 0);
	cr_assert_eq(status_mask(out, "SigBlk"), 0, "child blocks %llx",
		     status_mask(out, "SigBlk"));
	/* glibc 2.36's posix_spawn leaves its two internal signals (32 and 33, below SIGRTMIN)
	 * ignored in every child, whatever the attributes say; no libc API reaches them. */
	cr_assert_eq(status_mask(out, "SigIgn") & ~GLIBC_INTERNAL_SIGNALS, 0, "child ignores %llx",
		     status_mask(out, "SigIgn"));
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

/*
 * Lists the fds of the shell that runs the listing ("0 1 2 "). ls is a child of that shell and
 * the shell runs nothing else, so the listing shows exactly what the shell inherited.
 */
static void child_fds(const struct proc_opts *opts, char *out, size_t len)
{
	char text[1024], *line, *save = NULL;
	long fds[128];
	size_t n = 0, o = 0;

	cr_assert_eq(run(ARGV("/bin/sh", "-c", "ls /proc/$$/fd"), opts, text, sizeof(text)), 0);
	for (line = strtok_r(text, "\n", &save); line != NULL && n < 128;
	     line = strtok_r(NULL, "\n", &save))
		fds[n++] = strtol(line, NULL, 10);
	qsort(fds, n, sizeof(fds[0]), cmp_long);
	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(out + o, len - o, "%ld ", fds[i]);
}

Test(proc, child_has_no_fds_above_2)
{
	char out[256];
	int p[2], dupped, plain;

	/* Descriptors without O_CLOEXEC, as a careless library would leave them. */
	cr_assert_eq(pipe(p), 0);
	plain = open("/dev/null", O_RDONLY);
	cr_assert_geq(plain, 0);
	dupped = dup2(p[1], 200);
	cr_assert_eq(dupped, 200);
	child_fds(&no_opts, out, sizeof(out));
	cr_assert_str_eq(out, "0 1 2 ", "the child inherited: %s", out);
	close(p[0]);
	close(p[1]);
	close(plain);
	close(dupped);
}

Test(proc, keep_fd_becomes_fd_3)
{
	struct proc_opts opts = {.keep_fd = -1};
	char out[256], want[128], mine[64];
	int p[2];
	ssize_t n;

	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(dup2(p[1], 150), 150);
	opts.keep_fd = 150;
	child_fds(&opts, out, sizeof(out));
	cr_assert_str_eq(out, "0 1 2 3 ", "with keep_fd the child has: %s", out);
	/* fd 3 is the very pipe we passed: the child can write into it. */
	cr_assert_eq(run(ARGV("/bin/sh", "-c", "readlink /proc/$$/fd/3; echo via3 >&3"), &opts, out,
			 sizeof(out)),
		     0);
	snprintf(want, sizeof(want), "/proc/self/fd/%d", p[1]);
	n = readlink(want, mine, sizeof(mine) - 1);
	cr_assert_gt(n, 0);
	mine[n] = '\0';
	snprintf(want, sizeof(want), "%s\n", mine);
	cr_assert_str_eq(out, want);
	close(p[1]);
	close(150);
	n = read(p[0], out, sizeof(out) - 1);
	cr_assert_eq(n, 5);
	out[n] = '\0';
	cr_assert_str_eq(out, "via3\n");
	close(p[0]);
}

Test(proc, keep_fd_3_itself)
{
	struct proc_opts opts = {.keep_fd = 3};
	char out[256];
	int saved, flags, nullfd;

	/* keep_fd already equal to 3 must survive (dup2 onto itself must clear FD_CLOEXEC). The
	 * runner may use fd 3 itself: park it and put it back afterwards. */
	flags = fcntl(3, F_GETFD);
	saved = flags >= 0 ? fcntl(3, F_DUPFD_CLOEXEC, 100) : -1;
	nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	cr_assert_geq(nullfd, 0);
	cr_assert_eq(dup3(nullfd, 3, O_CLOEXEC), 3);
	child_fds(&opts, out, sizeof(out));
	if (saved >= 0) {
		dup3(saved, 3, (flags & FD_CLOEXEC) ? O_CLOEXEC : 0);
		close(saved);
	} else {
		close(3);
	}
	close(nullfd);
	cr_assert_str_eq(out, "0 1 2 3 ", "with keep_fd 3 the child has: %s", out);
}

Test(proc, stdin_is_dev_null)
{
	char out[256];

	cr_assert_eq(run(ARGV("/bin/sh", "-c", "readlink /proc/$$/fd/0; cat; echo end"), &no_opts,
			 out, sizeof(out)),
		     0);
	cr_assert_str_eq(out, "/dev/null\nend\n");
}

/* Where the shell's fd n points, recorded as a symlink so that no redirection is involved. */
static void fd_target(int n, char *out, size_t len)
{
	char link[128];
	ssize_t r;

	snprintf(link, sizeof(link), "%s/fd%d", tmpdir, n);
	r = readlink(link, out, len - 1);
	cr_assert_gt(r, 0, "no record of fd %d", n);
	out[r] = '\0';
}

Test(proc, discarded_output_goes_to_dev_null)
{
	char cmd[512], target[256];

	snprintf(cmd, sizeof(cmd),
		 "ln -s \"$(readlink /proc/$$/fd/1)\" %s/fd1; ln -s \"$(readlink /proc/$$/fd/2)\" "
		 "%s/fd2",
		 tmpdir, tmpdir);
	cr_assert_eq(run(ARGV("/bin/sh", "-c", cmd), &no_opts, NULL, 0), 0);
	fd_target(1, target, sizeof(target));
	cr_assert_str_eq(target, "/dev/null");
	fd_target(2, target, sizeof(target));
	cr_assert_str_eq(target, "/dev/null");
}

Test(proc, keep_output_inherits_ours)
{
	char cmd[512], target[256], mine[256];
	ssize_t n;

	snprintf(cmd, sizeof(cmd), "ln -s \"$(readlink /proc/$$/fd/1)\" %s/fd1", tmpdir);
	cr_assert_eq(run(ARGV("/bin/sh", "-c", cmd),
			 &(struct proc_opts){.keep_fd = -1, .keep_output = true}, NULL, 0),
		     0);
	fd_target(1, target, sizeof(target));
	n = readlink("/proc/self/fd/1", mine, sizeof(mine) - 1);
	cr_assert_gt(n, 0);
	mine[n] = '\0';
	cr_assert_str_eq(target, mine);
}

Test(proc, cwd_option)
{
	char out[256], want[256], sub[128];

	cr_assert_eq(
	    run(ARGV("pwd"), &(struct proc_opts){.keep_fd = -1, .cwd = tmpdir}, out, sizeof(out)),
	    0);
	snprintf(want, sizeof(want), "%s\n", tmpdir);
	cr_assert_str_eq(out, want);
	/* A directory name with blanks and ';' is just a path. */
	snprintf(sub, sizeof(sub), "%s/a dir; x", tmpdir);
	cr_assert_eq(mkdir(sub, 0700), 0);
	cr_assert_eq(
	    run(ARGV("pwd"), &(struct proc_opts){.keep_fd = -1, .cwd = sub}, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s\n", sub);
	cr_assert_str_eq(out, want);
	/* The parent's cwd is unchanged. */
	cr_assert_not_null(getcwd(out, sizeof(out)));
	cr_assert_str_neq(out, sub);
}

Test(proc, missing_cwd_fails)
{
	char path[128];
	int r;

	snprintf(path, sizeof(path), "%s/absent", tmpdir);
	r = proc_run(ARGV("true"), &(struct proc_opts){.keep_fd = -1, .cwd = path}, NULL, 0, NULL);
	cr_assert_lt(r, 0, "running in a missing directory returned %d", r);
}

Test(proc, envp_option)
{
	char out[256];
	char *const env[] = {"FOO=bar baz", "EMPTY=", NULL};

	cr_assert_eq(run(ARGV("/usr/bin/env"), &(struct proc_opts){.keep_fd = -1, .envp = env}, out,
			 sizeof(out)),
		     0);
	cr_assert_str_eq(out, "FOO=bar baz\nEMPTY=\n");
	/* NULL envp inherits ours. */
	cr_assert_eq(setenv("AGENTD_PROC_TEST", "inherited", 1), 0);
	cr_assert_eq(
	    run(ARGV("/bin/sh", "-c", "echo $AGENTD_PROC_TEST"), &no_opts, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "inherited\n");
}

/* Field 6 (session id) and field 1 (pid) of /proc/self/stat, read by the program itself. */
static void sid_and_pid(const struct proc_opts *opts, long *sid, long *pid)
{
	char out[1024];
	const char *p;

	cr_assert_eq(run(ARGV("cat", "/proc/self/stat"), opts, out, sizeof(out)), 0);
	*pid = strtol(out, NULL, 10);
	p = strrchr(out, ')'); /* after the command name, which may contain blanks */
	cr_assert_not_null(p);
	cr_assert_eq(sscanf(p + 2, "%*c %*d %*d %ld", sid), 1, "stat: %s", out);
}

Test(proc, new_session_option)
{
	long sid, pid;

	sid_and_pid(&(struct proc_opts){.keep_fd = -1, .new_session = true}, &sid, &pid);
	cr_assert_eq(sid, pid, "new_session: the child leads its own session");
	sid_and_pid(&no_opts, &sid, &pid);
	cr_assert_eq(sid, getsid(0), "without it the child stays in ours");
	cr_assert_neq(sid, pid);
}

Test(proc, output_truncated_at_outlen)
{
	char out[16];

	memset(out, '#', sizeof(out));
	/* 100 KB, more than a pipe holds: the child must be drained, not blocked. */
	cr_assert_eq(run(ARGV("/bin/sh", "-c", "head -c 100000 /dev/zero | tr '\\0' a; echo done"),
			 &no_opts, out, sizeof(out)),
		     0);
	cr_assert_eq(strlen(out), sizeof(out) - 1);
	cr_assert_eq(strspn(out, "a"), sizeof(out) - 1);
	/* outlen 1: only the terminator. */
	cr_assert_eq(run(ARGV("echo", "abc"), &no_opts, out, 1), 0);
	cr_assert_str_eq(out, "");
	/* Exactly fitting output is not cut. */
	cr_assert_eq(run(ARGV("printf", "0123456789abcde"), &no_opts, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "0123456789abcde");
}

Test(proc, large_output_capped_at_proc_output_max, .timeout = 60)
{
	char *out = malloc(PROC_OUTPUT_MAX);

	cr_assert_not_null(out);
	cr_assert_eq(run(ARGV("/bin/sh", "-c", "head -c 10485760 /dev/zero | tr '\\0' z"), &no_opts,
			 out, PROC_OUTPUT_MAX),
		     0);
	cr_assert_eq(strlen(out), PROC_OUTPUT_MAX - 1);
	free(out);
}

Test(proc, output_bytes_verbatim)
{
	char out[64];

	cr_assert_eq(
	    run(ARGV("printf", "\\377\\376\\001\\033[0m\\r\\n"), &no_opts, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "\xff\xfe\x01\x1b[0m\r\n");
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	cr_assert_not_null(d);
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

Test(proc, no_fd_or_child_leak)
{
	char out[64];
	int before = count_fds();

	for (int i = 0; i < 100; i++) {
		run(ARGV("true"), &no_opts, out, sizeof(out));
		run(ARGV("true"), &no_opts, NULL, 0);
		cr_assert_eq(
		    proc_run(ARGV("agentd-no-such-program-xyz"), &no_opts, out, sizeof(out), NULL),
		    -ENOENT);
	}
	cr_assert_eq(count_fds(), before, "fds leaked");
	cr_assert_eq(waitpid(-1, NULL, WNOHANG), -1, "a child was left unreaped");
	cr_assert_eq(errno, ECHILD);
}

/* ---- proc_which ---- */

static void which_setup(char *bin, size_t len)
{
	char path[256];

	snprintf(bin, len, "%s/bin", tmpdir);
	cr_assert_eq(mkdir(bin, 0755), 0);
	make_file("bin/tool", "#!/bin/sh\n", 0755, path, sizeof(path));
	make_file("bin/noexec", "#!/bin/sh\n", 0644, path, sizeof(path));
	snprintf(path, sizeof(path), "%s/bin/subdir", tmpdir);
	cr_assert_eq(mkdir(path, 0755), 0);
}

Test(proc, which_searches_path)
{
	char bin[128], out[256], want[256], pathvar[512];

	which_setup(bin, sizeof(bin));
	snprintf(pathvar, sizeof(pathvar), "/nonexistent::%s:/usr/bin", bin);
	cr_assert_eq(setenv("PATH", pathvar, 1), 0);
	cr_assert_eq(proc_which("tool", out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s/tool", bin);
	cr_assert_str_eq(out, want);
	cr_assert_eq(proc_which("sh", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/usr/bin/sh");
	cr_assert_eq(proc_which("agentd-no-such-program-xyz", out, sizeof(out)), -ENOENT);
	cr_assert_eq(proc_which("noexec", out, sizeof(out)), -EACCES);
	cr_assert_eq(proc_which("subdir", out, sizeof(out)), -ENOENT, "directories are skipped");
	cr_assert_eq(proc_which("", out, sizeof(out)), -ENOENT);
	cr_assert_eq(proc_which(NULL, out, sizeof(out)), -ENOENT);
}

Test(proc, which_empty_path_entry_is_cwd)
{
	char bin[128], out[256];

	which_setup(bin, sizeof(bin));
	cr_assert_eq(chdir(bin), 0);
	cr_assert_eq(setenv("PATH", ":/nonexistent", 1), 0);
	cr_assert_eq(proc_which("tool", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "./tool");
}

Test(proc, which_with_slash_checks_the_file)
{
	char bin[128], prog[256], out[256];

	which_setup(bin, sizeof(bin));
	snprintf(prog, sizeof(prog), "%s/tool", bin);
	cr_assert_eq(proc_which(prog, out, sizeof(out)), 0);
	cr_assert_str_eq(out, prog);
	snprintf(prog, sizeof(prog), "%s/noexec", bin);
	cr_assert_eq(proc_which(prog, out, sizeof(out)), -EACCES);
	snprintf(prog, sizeof(prog), "%s/absent", bin);
	cr_assert_eq(proc_which(prog, out, sizeof(out)), -ENOENT);
	cr_assert_eq(proc_which("./agentd-no-such-program-xyz", out, sizeof(out)), -ENOENT);
}

Test(proc, which_rejects_directory_path)
{
	char bin[128], out[256];

	/* A directory is searchable (X_OK) but cannot be executed. */
	which_setup(bin, sizeof(bin));
	cr_assert_neq(proc_which(bin, out, sizeof(out)), 0, "proc_which accepted directory %s",
		      bin);
}

Test(proc, which_too_long)
{
	char bin[128], out[8], pathvar[256];
	char *huge;

	which_setup(bin, sizeof(bin));
	cr_assert_eq(proc_which("/usr/bin/sh", out, sizeof(out)), -ENAMETOOLONG);
	snprintf(pathvar, sizeof(pathvar), "%s", bin);
	cr_assert_eq(setenv("PATH", pathvar, 1), 0);
	cr_assert_eq(proc_which("tool", out, sizeof(out)), -ENAMETOOLONG,
		     "found on PATH but too long for out");
	/* A 10 MB program name is simply not found. */
	huge = malloc(10 * 1024 * 1024 + 1);
	cr_assert_not_null(huge);
	memset(huge, 'p', 10 * 1024 * 1024);
	huge[10 * 1024 * 1024] = '\0';
	{
		char big[4096];

		cr_assert_lt(proc_which(huge, big, sizeof(big)), 0);
	}
	free(huge);
}

Test(proc, which_without_path_uses_default)
{
	char out[256];

	cr_assert_eq(unsetenv("PATH"), 0);
	cr_assert_eq(proc_which("sh", out, sizeof(out)), 0);
	cr_assert(strcmp(out, "/usr/bin/sh") == 0 || strcmp(out, "/bin/sh") == 0, "%s", out);
}

Test(proc, env_edit_drops_prefixes_and_adds_once)
{
	char *env[] = {"A=1", "TERM=dumb", "TMUX=/x", "B=2", NULL};
	static const char *const drop[] = {"TERM=", "TMUX="};
	char **out = proc_env_edit(env, drop, 2, "TERM=xterm-256color");

	cr_assert_not_null(out);
	cr_assert_str_eq(out[0], "A=1");
	cr_assert_str_eq(out[1], "B=2");
	cr_assert_str_eq(out[2], "TERM=xterm-256color");
	cr_assert_null(out[3]);
	free(out);
}

Test(proc, env_edit_keeps_an_entry_of_the_added_name)
{
	char *env[] = {"CLAUDECODE=1", "CLAUDE_CODE_ENTRYPOINT=cli", "CLAUDECODE_X=2", NULL};
	static const char *const drop[] = {"CLAUDECODE="};
	char **out = proc_env_edit(env, drop, 1, "CLAUDE_CODE_ENTRYPOINT=sdk-ts");

	cr_assert_not_null(out);
	cr_assert_str_eq(out[0], "CLAUDE_CODE_ENTRYPOINT=cli");
	cr_assert_str_eq(out[1], "CLAUDECODE_X=2");
	cr_assert_null(out[2]);
	free(out);
	out = proc_env_edit(env, NULL, 0, NULL);
	cr_assert_str_eq(out[0], "CLAUDECODE=1");
	cr_assert_null(out[3]);
	free(out);
}

/* proc_start: the child runs while the caller reads its output from a non-blocking pipe. */
Test(proc, start_gives_the_output_pipe)
{
	char *argv[] = {"sh", "-c", "echo out; echo err >&2", NULL};
	char buf[64];
	size_t got = 0;
	pid_t pid;
	int fd, st, flags;

	cr_assert_eq(proc_start(argv, NULL, &fd, &pid), 0);
	flags = fcntl(fd, F_GETFL);
	cr_assert(flags & O_NONBLOCK);
	cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		cr_assert(poll(&p, 1, 5000) == 1);
		n = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	cr_assert_str_eq(buf, "out\nerr\n");
	close(fd);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* The zombie helper's verdicts (its exit code). */
enum { ZOMBIE_TRUE = 0, ZOMBIE_WRONG = 1, ZOMBIE_REFUSED = 2, ZOMBIE_SETUP = 3 };
#define ZOMBIE_CODE 7 /* the zombie's exit code: neither 0 nor a signal's */

/*
 * In a child of the test (so the test keeps its capabilities): makes a zombie child, as another
 * uid when other_uid, after dropping CAP_SYS_PTRACE from the effective set when drop_ptrace (as
 * agentd-api runs under its unit), and asks proc_zombie_status about it.
 */
static int zombie_verdict(bool other_uid, bool drop_ptrace)
{
	pid_t helper = fork(), z;
	int ws;

	cr_assert_geq(helper, 0);
	if (helper == 0) {
		struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
		struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
		int st = -1, r = -ESRCH;

		if (drop_ptrace) {
			if (syscall(SYS_capget, &h, d) < 0)
				_exit(ZOMBIE_SETUP);
			d[CAP_TO_INDEX(CAP_SYS_PTRACE)].effective &= ~CAP_TO_MASK(CAP_SYS_PTRACE);
			if (syscall(SYS_capset, &h, d) < 0)
				_exit(ZOMBIE_SETUP);
		}
		z = fork();
		if (z == 0) {
			if (other_uid && (setresgid(65534, 65534, 65534) < 0 ||
					  setresuid(65534, 65534, 65534) < 0))
				_exit(100);
			_exit(ZOMBIE_CODE);
		}
		/* Not reaped: waited for as a zombie, as tmux leaves a pane's process. */
		for (int i = 0; i < 2000 && r != 0 && r != -EACCES; i++) {
			r = proc_zombie_status(z, getpid(), &st);
			if (r != 0 && r != -EACCES)
				usleep(1000);
		}
		if (r == -EACCES)
			_exit(ZOMBIE_REFUSED);
		if (r == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 100)
			_exit(ZOMBIE_SETUP);
		_exit(r == 0 && WIFEXITED(st) && WEXITSTATUS(st) == ZOMBIE_CODE ? ZOMBIE_TRUE
										: ZOMBIE_WRONG);
	}
	cr_assert_eq(waitpid(helper, &ws, 0), helper);
	cr_assert(WIFEXITED(ws));
	return WEXITSTATUS(ws);
}

Test(proc, zombie_status_of_own_uid)
{
	cr_assert_eq(zombie_verdict(false, false), ZOMBIE_TRUE);
}

/* The kernel shows a zombie's exit code only to a reader that may inspect it (its uid, or
 * CAP_SYS_PTRACE), and a plain 0 to any other: a status read then would say "exited 0" for an
 * agent the OOM killer ended. */
Test(proc, zombie_status_never_guessed_for_another_uid)
{
	int v;

	if (geteuid() != 0)
		cr_skip_test("needs root: the zombie runs as another uid");
	v = zombie_verdict(true, true);
	cr_assert_neq(v, ZOMBIE_SETUP, "the zombie could not be made");
	cr_assert_neq(v, ZOMBIE_WRONG, "a withheld exit code was taken for the zombie's status");
	cr_assert_eq(v, ZOMBIE_REFUSED);
	/* With CAP_SYS_PTRACE (root under deploy/up) the kernel tells the truth. */
	cr_assert_eq(zombie_verdict(true, false), ZOMBIE_TRUE);
}
