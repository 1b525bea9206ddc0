/*
 * Starting programs without a shell and without leaking anything of ours into them: posix_spawn
 * with argv, an empty signal mask, default dispositions, stdin from /dev/null and every fd >= 3
 * closed (a tmux server must never inherit the FastCGI sockets; see integration notes §3.3).
 */
#ifndef AGENTD_PROC_H
#define AGENTD_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PROC_OUTPUT_MAX (256 * 1024)

struct proc_opts {
	char *const *envp; /* NULL: inherit environ */
	const char *cwd;   /* NULL: inherit */
	int keep_fd;       /* >= 0: passed to the child as fd 3 (e.g. a lock); -1: none */
	bool new_session;  /* setsid() in the child */
	bool keep_output;  /* stdout/stderr stay ours (when out is NULL), not /dev/null */
};

/*
 * Runs argv[0] (searched on PATH) and waits for it. stdout and stderr are captured together into
 * out (NUL-terminated, truncated to outlen-1; out may be NULL to discard). *status gets the wait
 * status. Returns 0 when the program ran (whatever its exit code), -ENOENT when it was not found,
 * or another -errno.
 */
int proc_run(char *const argv[], const struct proc_opts *opts, char *out, size_t outlen,
	     int *status);

/*
 * Starts argv[0] (searched on PATH) as proc_run does, without waiting: its stdout and stderr go
 * to a pipe whose read end (non-blocking, close-on-exec) is *out_fd; *pid is the child, which the
 * caller reaps. Returns 0 or -errno (nothing started).
 */
int proc_start(char *const argv[], const struct proc_opts *opts, int *out_fd, pid_t *pid);

/* Resolves prog on PATH (or checks it when it contains '/'); writes the path into out. The check
 * is the calling thread's filesystem identity's (faccessat AT_EACCESS): under the agent's
 * (agentuser_fs_enter) it tells whether the agent can run prog. Returns 0, -ENOENT, -EACCES or
 * -ENAMETOOLONG. */
int proc_which(const char *prog, char *out, size_t outlen);

/*
 * A child's environment made from env: every entry that starts with one of the ndrop prefixes
 * (e.g. "TERM=") left out, then add ("NAME=value", or NULL) appended unless an entry of that
 * name is still there. The array points into env and at add (the caller frees only the array).
 * NULL with errno ENOMEM.
 */
char **proc_env_edit(char *const *env, const char *const *drop, size_t ndrop, const char *add);

/*
 * The wait status of pid while it is a zombie child of parent (a pane's process the tmux server
 * has not reaped), from /proc/<pid>/stat. tmux 3.3a sometimes sees a pane's terminal close before
 * it reaps the process, and then reaps it only with the next child that exits: until then the
 * pane is dead without a status. Returns 0 with *status set, -ESRCH when pid is no zombie of
 * parent, or -EACCES when the kernel withholds its exit code from this thread (pid is another
 * uid's and it lacks CAP_SYS_PTRACE): then only parent's own wait can tell.
 */
int proc_zombie_status(long pid, long parent, int *status);

#endif
