/*
 * ptyproc: real children on real PTYs under a libuv loop. Output arrives and hangup follows the
 * child's exit; keystrokes reach the child; the initial size and TIOCSWINSZ are what the child
 * sees; sizes outside 1..PTY_SIZE_MAX are -ERANGE; input a child does not read is kept up to
 * PTY_INPUT_MAX and then refused with -EOVERFLOW; a paused PTY delivers nothing; a failed exec
 * hangs up; the child gets no signal mask and no fd of ours; destroy signals the child. Every
 * test ends with uv_loop_close() == 0, so no handle leaks.
 */
#include "ptyproc.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define OUT_MAX (256 * 1024)

struct seen {
	char out[OUT_MAX];
	size_t len;
	int outputs;
	int drained;
	int hangups;
};

static uv_loop_t loop;
static char scratch[PTY_FRAME_MAX];
static struct seen seen;
static uv_timer_t timer;

static void on_output(void *data, const char *buf, size_t len)
{
	struct seen *s = data;

	cr_assert_leq(len, PTY_FRAME_MAX);
	if (len > OUT_MAX - 1 - s->len)
		len = OUT_MAX - 1 - s->len;
	memcpy(s->out + s->len, buf, len);
	s->len += len;
	s->out[s->len] = '\0';
	s->outputs++;
}

static void on_drained(void *data)
{
	((struct seen *)data)->drained++;
}

static void on_hangup(void *data)
{
	((struct seen *)data)->hangups++;
}

static const struct ptyproc_callbacks cb = {
    .on_output = on_output,
    .on_drained = on_drained,
    .on_hangup = on_hangup,
};

static void setup(void)
{
	memset(&seen, 0, sizeof(seen));
	cr_assert_eq(uv_loop_init(&loop), 0);
	cr_assert_eq(uv_timer_init(&loop, &timer), 0);
}

static void teardown(void)
{
	uv_close((uv_handle_t *)&timer, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0, "a handle leaked");
}

TestSuite(ptyproc, .init = setup, .fini = teardown);

static void on_timer(uv_timer_t *t)
{
	uv_stop(t->loop);
}

/* Runs the loop until pred() holds or ms pass. Returns pred(). */
static bool run_until(bool (*pred)(void), unsigned ms)
{
	uint64_t end = uv_now(&loop) + ms;

	while (!pred() && uv_now(&loop) < end) {
		uv_timer_start(&timer, on_timer, 20, 0);
		uv_run(&loop, UV_RUN_ONCE);
		uv_update_time(&loop);
	}
	uv_timer_stop(&timer);
	return pred();
}

static bool hung_up(void)
{
	return seen.hangups > 0;
}

static const char *want_text;
static bool has_text(void)
{
	return strstr(seen.out, want_text) != NULL;
}

static struct ptyproc *spawn_sh(const char *script, unsigned short cols, unsigned short rows)
{
	char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
	char *envp[] = {"PATH=/usr/bin:/bin", "TERM=xterm-256color", NULL};
	struct ptyproc_spec spec = {
	    .path = "/bin/sh", .argv = argv, .envp = envp, .cols = cols, .rows = rows};
	struct ptyproc *p = NULL;

	cr_assert_eq(ptyproc_spawn(&p, &loop, &spec, scratch, &cb, &seen), 0);
	cr_assert_gt(ptyproc_pid(p), 0);
	return p;
}

/* Reaps the child (the bridge does it on SIGCHLD); returns its wait status. */
static int reap(struct ptyproc *p)
{
	int status = 0;

	cr_assert_eq(waitpid(ptyproc_pid(p), &status, 0), ptyproc_pid(p));
	ptyproc_set_reaped(p);
	return status;
}

Test(ptyproc, output_then_hangup)
{
	struct ptyproc *p = spawn_sh("echo hello from the child", 80, 24);

	cr_assert(run_until(hung_up, 5000), "no hangup; output: %s", seen.out);
	cr_assert_not_null(strstr(seen.out, "hello from the child\r\n"), "output: %s", seen.out);
	cr_assert_eq(seen.hangups, 1);
	cr_assert_eq(reap(p), 0);
	ptyproc_destroy(p);
}

Test(ptyproc, environment_and_size_reach_the_child)
{
	struct ptyproc *p = spawn_sh("echo \"term=$TERM size=$(stty size)\"", 123, 45);

	cr_assert(run_until(hung_up, 5000));
	cr_assert_not_null(strstr(seen.out, "term=xterm-256color size=45 123"), "output: %s",
			   seen.out);
	reap(p);
	ptyproc_destroy(p);
}

Test(ptyproc, child_has_no_mask_no_fds_of_ours)
{
	int leak = open("/dev/null", O_RDONLY); /* no O_CLOEXEC: must not reach the child */
	sigset_t block, old;
	struct ptyproc *p;
	char script[256];

	cr_assert_geq(leak, 3);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &old);
	signal(SIGHUP, SIG_IGN);
	snprintf(script, sizeof(script),
		 "if [ -e /proc/$$/fd/%d ]; then echo fd-leaked; else echo fd-clean; fi; "
		 "exec grep -E '^(SigBlk|SigIgn)' /proc/self/status",
		 leak);
	/* exec: grep reads its own mask, inherited from the shell's. Reading the shell's from a
	 * child races with dash, which blocks every signal while it waits for a child. */
	p = spawn_sh(script, 80, 24);
	cr_assert(run_until(hung_up, 5000));
	cr_assert_not_null(strstr(seen.out, "fd-clean"), "output: %s", seen.out);
	cr_assert_not_null(strstr(seen.out, "SigBlk:\t0000000000000000"), "output: %s", seen.out);
	cr_assert_not_null(strstr(seen.out, "SigIgn:\t0000000000000000"), "output: %s", seen.out);
	reap(p);
	ptyproc_destroy(p);
	signal(SIGHUP, SIG_DFL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(leak);
}

Test(ptyproc, keystrokes_reach_the_child)
{
	struct ptyproc *p = spawn_sh("read line; echo \"got:$line:\"", 80, 24);

	cr_assert_eq(ptyproc_write(p, "typed words\r", 12), 0);
	want_text = "got:typed words:";
	cr_assert(run_until(has_text, 5000), "output: %s", seen.out);
	run_until(hung_up, 5000);
	reap(p);
	ptyproc_destroy(p);
}

Test(ptyproc, resize_is_seen_by_the_child)
{
	struct ptyproc *p = spawn_sh("read x; stty size", 80, 24);

	cr_assert_eq(ptyproc_resize(p, 0, 10), -ERANGE);
	cr_assert_eq(ptyproc_resize(p, 10, 1001), -ERANGE);
	cr_assert_eq(ptyproc_resize(p, 132, 43), 0);
	cr_assert_eq(ptyproc_write(p, "\r", 1), 0);
	want_text = "43 132";
	cr_assert(run_until(has_text, 5000), "output: %s", seen.out);
	run_until(hung_up, 5000);
	reap(p);
	ptyproc_destroy(p);
}

Test(ptyproc, bad_sizes_are_erange)
{
	char *argv[] = {"/bin/true", NULL};
	char *envp[] = {NULL};
	struct ptyproc_spec spec = {.path = "/bin/true", .argv = argv, .envp = envp};
	struct ptyproc *p = NULL;

	spec.cols = 0;
	spec.rows = 24;
	cr_assert_eq(ptyproc_spawn(&p, &loop, &spec, scratch, &cb, &seen), -ERANGE);
	spec.cols = 80;
	spec.rows = PTY_SIZE_MAX + 1;
	cr_assert_eq(ptyproc_spawn(&p, &loop, &spec, scratch, &cb, &seen), -ERANGE);
	cr_assert_null(p);
}

Test(ptyproc, unread_input_is_bounded_with_eoverflow)
{
	static char chunk[32 * 1024];
	struct ptyproc *p = spawn_sh("stty -echo -icanon; sleep 30", 80, 24);
	int r = 0, calls;

	memset(chunk, 'k', sizeof(chunk));
	usleep(200 * 1000); /* let stty run: raw mode, no echo to read back */
	for (calls = 0; calls < 64; calls++) {
		r = ptyproc_write(p, chunk, sizeof(chunk));
		if (r < 0)
			break;
		cr_assert_leq(ptyproc_pending(p), PTY_INPUT_MAX);
	}
	cr_assert_eq(r, -EOVERFLOW, "after %d writes: %d", calls, r);
	cr_assert_gt(ptyproc_pending(p), PTY_INPUT_MAX - sizeof(chunk));
	cr_assert_leq(ptyproc_pending(p), PTY_INPUT_MAX);
	ptyproc_destroy(p); /* SIGHUP ends sh and its sleep */
	uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_eq(waitpid(-1, NULL, 0) > 0, true);
}

Test(ptyproc, pending_input_drains_when_the_child_reads)
{
	static char chunk[16 * 1024];
	struct ptyproc *p = spawn_sh("stty -echo -icanon; echo ready; head -c 65536 >/dev/null; "
				     "echo drained-ok",
				     80, 24);
	int i;

	want_text = "ready";
	cr_assert(run_until(has_text, 5000), "output: %s", seen.out);
	memset(chunk, 'd', sizeof(chunk));
	for (i = 0; i < 4; i++)
		cr_assert_eq(ptyproc_write(p, chunk, sizeof(chunk)), 0);
	want_text = "drained-ok";
	cr_assert(run_until(has_text, 10000), "output: %s", seen.out);
	cr_assert_eq(ptyproc_pending(p), 0);
	cr_assert_leq(seen.drained, 1);
	run_until(hung_up, 5000);
	reap(p);
	ptyproc_destroy(p);
}

Test(ptyproc, paused_pty_delivers_nothing)
{
	struct ptyproc *p = spawn_sh("sleep 0.2; echo late output; sleep 30", 80, 24);

	ptyproc_pause(p);
	cr_assert(ptyproc_paused(p));
	want_text = "late output";
	cr_assert_not(run_until(has_text, 800));
	cr_assert_eq(seen.outputs, 0);
	ptyproc_resume(p);
	cr_assert(run_until(has_text, 5000), "output: %s", seen.out);
	ptyproc_destroy(p);
	uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_eq(waitpid(-1, NULL, 0) > 0, true);
}

Test(ptyproc, failed_exec_hangs_up_with_127)
{
	char *argv[] = {"/nonexistent/tmux", NULL};
	char *envp[] = {NULL};
	struct ptyproc_spec spec = {
	    .path = "/nonexistent/tmux", .argv = argv, .envp = envp, .cols = 80, .rows = 24};
	struct ptyproc *p = NULL;
	int status;

	cr_assert_eq(ptyproc_spawn(&p, &loop, &spec, scratch, &cb, &seen), 0);
	cr_assert(run_until(hung_up, 5000));
	status = reap(p);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 127);
	cr_assert_eq(ptyproc_write(p, "x", 1), -EIO);
	ptyproc_destroy(p);
}

Test(ptyproc, destroy_hangs_up_the_child)
{
	struct ptyproc *p = spawn_sh("trap 'exit 42' HUP; while :; do sleep 0.05; done", 80, 24);
	pid_t pid = ptyproc_pid(p);
	int status = 0;

	usleep(200 * 1000);
	ptyproc_destroy(p);
	uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 42, "status %#x", status);
}

static struct ptyproc *reentrant;
static void destroy_in_callback(void *data, const char *buf, size_t len)
{
	on_output(data, buf, len);
	ptyproc_destroy(reentrant);
	ptyproc_destroy(reentrant); /* twice: idempotent */
}

Test(ptyproc, destroy_from_inside_a_callback)
{
	static const struct ptyproc_callbacks cb2 = {.on_output = destroy_in_callback,
						     .on_hangup = on_hangup};
	char *argv[] = {"/bin/sh", "-c", "echo once; sleep 30", NULL};
	char *envp[] = {NULL};
	struct ptyproc_spec spec = {
	    .path = "/bin/sh", .argv = argv, .envp = envp, .cols = 80, .rows = 24};
	pid_t pid;

	cr_assert_eq(ptyproc_spawn(&reentrant, &loop, &spec, scratch, &cb2, &seen), 0);
	pid = ptyproc_pid(reentrant);
	want_text = "once";
	cr_assert(run_until(has_text, 5000));
	cr_assert_eq(seen.outputs, 1);
	cr_assert_eq(seen.hangups, 0, "no callback after destroy");
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
}

static uint64_t out_times[4096];
static int out_ntimes;
static void timed_output(void *data, const char *buf, size_t len)
{
	if (out_ntimes < 4096)
		out_times[out_ntimes++] = uv_hrtime();
	on_output(data, buf, len);
}

Test(ptyproc, bulk_output_is_coalesced)
{
	static const struct ptyproc_callbacks tcb = {.on_output = timed_output,
						     .on_hangup = on_hangup};
	/* A line every 200 us for about half a second, like tmux redrawing under a flood. */
	char *argv[] = {"/bin/sh", "-c",
			"python3 -c 'import os, time\n"
			"for i in range(2000):\n"
			"    os.write(1, b\"line %d\\n\" % i)\n"
			"    time.sleep(0.0002)\n"
			"os.write(1, b\"bulk-done\\n\")'",
			NULL};
	char *envp[] = {"PATH=/usr/bin:/bin", NULL};
	struct ptyproc_spec spec = {
	    .path = "/bin/sh", .argv = argv, .envp = envp, .cols = 80, .rows = 24};
	struct ptyproc *p = NULL;
	int close_gaps = 0;

	cr_assert_eq(ptyproc_spawn(&p, &loop, &spec, scratch, &tcb, &seen), 0);
	want_text = "bulk-done";
	cr_assert(run_until(has_text, 20000), "output ends with: %s",
		  seen.out + (seen.len > 200 ? seen.len - 200 : 0));
	cr_assert_not_null(strstr(seen.out, "line 1999\r\n"));
	/* Read as it comes, most reads would be ~200 us apart; coalesced, a read in a burst is
	 * followed by a pause of PTY_COALESCE_MS. */
	for (int i = 1; i < out_ntimes; i++)
		if (out_times[i] - out_times[i - 1] < 500 * 1000)
			close_gaps++;
	cr_assert_lt(close_gaps * 5, out_ntimes, "%d of %d reads less than 0.5 ms apart",
		     close_gaps, out_ntimes);
	run_until(hung_up, 5000);
	reap(p);
	ptyproc_destroy(p);
}
