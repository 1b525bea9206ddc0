/*
 * The pane's cage: what agentd-cage (cage/main.c, a root program the tmux pane runs) does before
 * the agent starts, in the order the kernel needs it:
 *  1. join the session's cgroups (cgroup_join; where systemd is PID 1, its scope: sdunit.h), as
 *     root: the agent and everything it forks are counted and limited from their first
 *     instruction, and cannot move out (the cgroup directories stay root's);
 *  2. read the secrets directory (root's, 0700) into the environment: each launch reads it again,
 *     so a rotated key reaches the next start; the values never pass through argv (ps), a record,
 *     a log line or /events;
 *  3. set HOME, USER and LOGNAME to the session's own;
 *  4. drop to the session's uid/gid (setgroups, setresgid, setresuid: no setpriv, no shell);
 *  5. exec bubblewrap, as that uid (so it makes an unprivileged user namespace, and files the
 *     agent creates are the session uid's on the host), with a view of the filesystem where the
 *     daemons' and the other sessions' directories are empty tmpfs, the session's own ones bound
 *     back, its own /tmp, a pid namespace of its own (--unshare-pid, --proc /proc) and
 *     --die-with-parent, and a seccomp filter it loads last (cageseccomp.h: no TIOCSTI). No
 *     --new-session: it takes the TUI's controlling tty away.
 * This module holds the parts a unit test can reach: the command line, the secrets and bwrap's
 * argv.
 */
#ifndef AGENTD_CAGE_H
#define AGENTD_CAGE_H

#include "cause.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define CAGE_PATHS_MAX     32   /* --hide/--bind/--ro paths: a handful of daemon dirs and sockets */
#define CAGE_SECRETS_MAX   64   /* variables in the secrets directory */
#define CAGE_SECRET_MAX    8192 /* one secret's value: an OAuth token or a PEM key, with room */
#define CAGE_FIXED_WORDS   26   /* bwrap's words besides the paths and the agent's argv */
#define CAGE_ARGV_MAX      256  /* the agent's own words (claude's argv is far below) */
#define CAGE_BWRAP_DEFAULT "bwrap"

struct cage_opts {
	uid_t uid;
	gid_t gid;
	bool have_uid;
	const char *user;    /* USER and LOGNAME */
	const char *home;    /* HOME, bound writable */
	const char *chdir;   /* where the agent starts (its worktree) */
	const char *cgroup;  /* "PARENT/SESSION" or NULL */
	const char *systemd; /* the session id whose scope to ask systemd for, or NULL */
	const char *secrets; /* the secrets directory, or NULL */
	const char *bwrap;   /* bwrap's path or name on PATH */
	const char *hide[CAGE_PATHS_MAX]; /* tmpfs over each: not readable, not even listed */
	size_t nhide;
	const char *bind[CAGE_PATHS_MAX]; /* bound back writable (inside a hidden one too) */
	size_t nbind;
	const char *ro[CAGE_PATHS_MAX]; /* bound back read-only */
	size_t nro;
	/* bound back read-only when they exist at launch: a daemon's socket that is not there yet
	 * (the bridge starts after agentd-api brings sessions back from a reboot) */
	const char *ro_try[CAGE_PATHS_MAX];
	size_t nro_try;
	char **argv; /* the agent's command */
	/* the seccomp filter bwrap loads (cageseccomp.h), or -1; its text for bwrap's argv */
	int seccomp_fd;
	char seccomp_text[16];
};

/*
 * Parses agentd-cage's command line (argv[0] is the program):
 *   --uid N --gid N --user NAME --home DIR [--chdir DIR] [--cgroup PARENT/SESSION | --systemd ID]
 *   [--secrets DIR] [--bwrap PATH] [--hide DIR]... [--bind PATH]... [--ro PATH]...
 *   [--ro-try PATH]... -- CMD ARG...
 * Returns 0, or -EINVAL with cause. out's strings point into argv.
 */
int cage_parse(int argc, char **argv, struct cage_opts *out, struct cause *cause);

/* One secret: NAME=value, in a buffer of its own (wiped by cage_secrets_free). */
struct cage_secrets {
	char *words[CAGE_SECRETS_MAX];
	size_t n;
};

/*
 * Reads dir: one regular file per variable, its name the variable's (a valid environment name),
 * its content the value with one trailing newline (or CRLF) trimmed. Entries whose name starts
 * with '.' and anything not a regular file are skipped; a missing dir gives none. Returns 0 with
 * out filled, or a negative errno with cause (never the value): -E2BIG (too many or too long),
 * -EINVAL (a name that is not a variable's, a value with a NUL), -EIO.
 */
int cage_secrets_read(const char *dir, struct cage_secrets *out, struct cause *cause);

/* Wipes and frees the words. */
void cage_secrets_free(struct cage_secrets *s);

/* Gives bwrap the seccomp filter in fd (`--seccomp FD`: cageseccomp.h), or none for -1. */
void cage_set_seccomp(struct cage_opts *o, int fd);

/*
 * Writes bwrap's argv for o into out (room for outmax words plus the NULL); the words point into
 * o or are literals. Returns 0 or -E2BIG.
 */
int cage_bwrap_argv(const struct cage_opts *o, const char *bwrap, char **out, size_t outmax);

#endif
