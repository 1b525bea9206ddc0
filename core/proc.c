#include "proc.h"

#include "procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define PROC_STATUS_MAX 4096 /* /proc/<pid>/status up to its Gid: line (the 9th) */

int proc_which(const char *prog, char *out, size_t outlen)
{
	const char *path = getenv("PATH");
	int saw_eacces = 0, saw_toolong = 0;

	if (prog == NULL || prog[0] == '\0')
		return -ENOENT;
	if (strchr(prog, '/') != NULL) {
		struct stat sb;

		if (strlen(prog) >= outlen)
			return -ENAMETOOLONG;
		if (stat(prog, &sb) < 0)
			return -errno;
		if (!S_ISREG(sb.st_mode))
			return -EACCES;
		if (faccessat(AT_FDCWD, prog, X_OK, AT_EACCESS) < 0)
			return -errno;
		snprintf(out, outlen, "%s", prog);
		return 0;
	}
	if (path == NULL)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path != '\0') {
		const char *colon = strchrnul(path, ':');
		size_t dlen = (size_t)(colon - path);
		struct stat sb;
		int n;

		n = snprintf(out, outlen, "%.*s/%s", (int)(dlen ? dlen : 1), dlen ? path : ".",
			     prog);
		if (n < 0 || (size_t)n >= outlen) {
			saw_toolong = 1;
		} else if (stat(out, &sb) == 0 && S_ISREG(sb.st_mode)) {
			if (faccessat(AT_FDCWD, out, X_OK, AT_EACCESS) == 0)
				return 0;
			saw_eacces = 1;
		}
		path = *colon ? colon + 1 : colon;
	}
	if (saw_eacces)
		return -EACCES;
	return saw_toolong ? -ENAMETOOLONG : -ENOENT;
}

static int proc_setup(posix_spawn_file_actions_t *fa, posix_spawnattr_t *at,
		      const struct proc_opts *opts, int out_fd)
{
	sigset_t none, dfl;
	short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
	int r;

	if ((r = posix_spawn_file_actions_init(fa)) != 0)
		return -r;
	if ((r = posix_spawnattr_init(at)) != 0) {
		posix_spawn_file_actions_destroy(fa);
		return -r;
	}
	r = posix_spawn_file_actions_addopen(fa, 0, "/dev/null", O_RDONLY, 0);
	if (r == 0 && out_fd >= 0) {
		r = posix_spawn_file_actions_adddup2(fa, out_fd, 1);
		if (r == 0)
			r = posix_spawn_file_actions_adddup2(fa, out_fd, 2);
	} else if (r == 0 && !(opts != NULL && opts->keep_output)) {
		r = posix_spawn_file_actions_addopen(fa, 1, "/dev/null", O_WRONLY, 0);
		if (r == 0)
			r = posix_spawn_file_actions_addopen(fa, 2, "/dev/null", O_WRONLY, 0);
	}
	if (r == 0 && opts != NULL && opts->keep_fd >= 0)
		r = posix_spawn_file_actions_adddup2(fa, opts->keep_fd, 3);
	if (r == 0)
		r = posix_spawn_file_actions_addclosefrom_np(
		    fa, opts != NULL && opts->keep_fd >= 0 ? 4 : 3);
	if (r == 0 && opts != NULL && opts->cwd != NULL)
		r = posix_spawn_file_actions_addchdir_np(fa, opts->cwd);
	sigemptyset(&none);
	sigfillset(&dfl);
	sigdelset(&dfl, SIGKILL);
	sigdelset(&dfl, SIGSTOP);
	if (opts != NULL && opts->new_session)
		flags |= POSIX_SPAWN_SETSID;
	if (r == 0)
		r = posix_spawnattr_setsigmask(at, &none);
	if (r == 0)
		r = posix_spawnattr_setsigdefault(at, &dfl);
	if (r == 0)
		r = posix_spawnattr_setflags(at, flags);
	if (r != 0) {
		posix_spawn_file_actions_destroy(fa);
		posix_spawnattr_destroy(at);
		return -r;
	}
	return 0;
}

int proc_run(char *const argv[], const struct proc_opts *opts, char *out, size_t outlen,
	     int *status)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	int pipefd[2] = {-1, -1};
	size_t got = 0;
	pid_t pid;
	int r, st = 0;

	if (out != NULL && outlen > 0) {
		out[0] = '\0';
		if (pipe2(pipefd, O_CLOEXEC) < 0)
			return -errno;
	}
	r = proc_setup(&fa, &at, opts, pipefd[1]);
	if (r < 0)
		goto out;
	r = posix_spawnp(&pid, argv[0], &fa, &at, argv,
			 opts != NULL && opts->envp != NULL ? opts->envp : environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (r != 0) {
		r = -r;
		goto out;
	}
	if (pipefd[1] >= 0) {
		close(pipefd[1]);
		pipefd[1] = -1;
		for (;;) {
			char sink[4096];
			char *dst = got + 1 < outlen ? out + got : sink;
			size_t room = got + 1 < outlen ? outlen - 1 - got : sizeof(sink);
			ssize_t n = read(pipefd[0], dst, room);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			if (dst != sink)
				got += (size_t)n;
		}
		out[got] = '\0';
	}
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			r = -errno;
			goto out;
		}
	}
	/* posix_spawnp reports a missing program as exit status 127 from the child. */
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127 && got == 0) {
		char path[4096];
		if (proc_which(argv[0], path, sizeof(path)) == -ENOENT) {
			r = -ENOENT;
			goto out;
		}
	}
	if (status != NULL)
		*status = st;
	r = 0;
out:
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	return r;
}

int proc_start(char *const argv[], const struct proc_opts *opts, int *out_fd, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	int pipefd[2], r;

	if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	r = proc_setup(&fa, &at, opts, pipefd[1]);
	if (r < 0)
		goto fail;
	r = -posix_spawnp(pid, argv[0], &fa, &at, argv,
			  opts != NULL && opts->envp != NULL ? opts->envp : environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (r < 0)
		goto fail;
	close(pipefd[1]);
	*out_fd = pipefd[0];
	return 0;
fail:
	close(pipefd[0]);
	close(pipefd[1]);
	return r;
}

char **proc_env_edit(char *const *env, const char *const *drop, size_t ndrop, const char *add)
{
	size_t n = 0, k = 0, name_len = add != NULL ? strcspn(add, "=") + 1 : 0;
	bool has_add = false;
	char **out;

	while (env[n] != NULL)
		n++;
	out = calloc(n + 2, sizeof(*out));
	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		bool skip = false;

		for (size_t d = 0; d < ndrop && !skip; d++)
			skip = strncmp(env[i], drop[d], strlen(drop[d])) == 0;
		if (skip)
			continue;
		if (add != NULL && strncmp(env[i], add, name_len) == 0)
			has_add = true;
		out[k++] = env[i];
	}
	if (add != NULL && !has_add)
		out[k++] = (char *)add;
	out[k] = NULL;
	return out;
}

/* The three ids after key ("Uid:", "Gid:": real, effective, saved, then fs) in status text. */
static bool proc_ids(const char *text, const char *key, unsigned long ids[3])
{
	const char *l = strstr(text, key);

	return l != NULL && (l == text || l[-1] == '\n') &&
	       sscanf(l + strlen(key), "%lu %lu %lu", &ids[0], &ids[1], &ids[2]) == 3;
}

/*
 * Whether the kernel shows this thread pid's exit code: /proc/<pid>/stat gives it only to a
 * reader that may inspect pid (ptrace's PTRACE_MODE_READ: every one of pid's uids and gids the
 * reader's, or CAP_SYS_PTRACE), and a plain 0 to any other. agentd-api under its unit holds no
 * CAP_SYS_PTRACE, and a caged pane runs as its session's uid: the 0 would read as "exited 0"
 * for an agent the OOM killer ended.
 */
static bool proc_exit_code_shown(long pid)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
	char path[64], buf[PROC_STATUS_MAX];
	unsigned long uids[3], gids[3];
	ssize_t n;
	int fd;

	if (syscall(SYS_capget, &h, caps) == 0 &&
	    (caps[CAP_TO_INDEX(CAP_SYS_PTRACE)].effective & CAP_TO_MASK(CAP_SYS_PTRACE)) != 0)
		return true;
	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	if (!proc_ids(buf, "Uid:", uids) || !proc_ids(buf, "Gid:", gids))
		return false;
	/* The kernel compares the reader's filesystem ids, which are its effective ones here. */
	for (int i = 0; i < 3; i++)
		if (uids[i] != (unsigned long)geteuid() || gids[i] != (unsigned long)getegid())
			return false;
	return true;
}

int proc_zombie_status(long pid, long parent, int *status)
{
	struct procstat ps;

	/* A zombie of parent (the tmux server) is the pane's own process: its pid cannot have been
	 * reused. */
	if (procstat_read(pid, &ps) < 0 || ps.state != 'Z' || ps.ppid != parent || ps.exit_code < 0)
		return -ESRCH;
	if (!proc_exit_code_shown(pid))
		return -EACCES;
	*status = ps.exit_code;
	return 0;
}
