/*
 * Which session a local process belongs to: the tmux pane of our server it runs under. A peer of
 * the hook socket (hooks.c) is known only by its pid (SO_PEERCRED): its ancestry, by the parent
 * links of /proc/<pid>/stat, leads to a pane's process, and tmux says which session each pane
 * is (`list-panes -a -F '#{pane_pid} #{@agentd_id}'`). A process's start time goes with its pid
 * everywhere, so a pid that a dead pane's process left and another process took is never taken
 * for the pane. Nothing the peer says about itself is believed.
 *
 * Pure functions over a /proc root (tests give a directory of their own) and tmux's text; no
 * process is started here.
 */
#ifndef AGENTD_BRIDGE_PANES_H
#define AGENTD_BRIDGE_PANES_H

#include "session.h"

#include <stddef.h>
#include <sys/types.h>

#define PANES_DEPTH_MAX  64   /* ancestors followed from a peer (init is reached long before) */
#define PANES_MAX        1024 /* panes a table keeps; more are left out */
#define PANES_LINE_MAX   256  /* one line of tmux's list (a pid and an id) */
#define PANES_OUTPUT_MAX (PANES_MAX * 64) /* tmux's whole list; more is cut */
#define PANES_PROC_ROOT  "/proc"

/* A process named by pid and start time (clock ticks after boot, /proc/<pid>/stat field 22). */
struct panes_proc {
	pid_t pid;
	unsigned long long start;
};

/* The panes of agentd sessions as tmux listed them. */
struct panes_entry {
	struct panes_proc proc;
	char id[SESSION_ID_MAX + 1];
};

struct panes {
	size_t n;
	struct panes_entry e[PANES_MAX];
};

/* The tmux format of one line of the list panes_parse reads. */
#define PANES_TMUX_FORMAT "#{pane_pid} #{@agentd_id}"

/*
 * Reads <proc_root>/<pid>/stat: the parent's pid and the start time. Returns 0, -ENOENT (no such
 * process), -EBADMSG (a stat line it cannot read) or another -errno.
 */
int panes_stat(const char *proc_root, pid_t pid, pid_t *ppid, unsigned long long *start);

/*
 * The ancestry of pid: pid itself first, then its parent and so on up to (not including) pid 0,
 * at most max entries. Returns how many were written (0 when pid is gone).
 */
size_t panes_ancestry(const char *proc_root, pid_t pid, struct panes_proc *chain, size_t max);

/*
 * Fills t from tmux's list (len bytes, lines of "<pane_pid> <@agentd_id>"): lines whose id is not
 * a session id (sessions agentd did not make, an empty option, tmux's own error text) and panes
 * whose process is gone are left out; each pane's start time is read from proc_root now. Returns
 * the number of entries.
 */
size_t panes_parse(struct panes *t, const char *proc_root, const char *text, size_t len);

/*
 * The session whose pane is the nearest of chain's n processes (pid and start time both equal),
 * or NULL.
 */
const char *panes_find(const struct panes *t, const struct panes_proc *chain, size_t n);

#endif
