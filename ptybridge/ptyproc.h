/*
 * One pseudo-terminal with a child process on its slave side (forkpty), driven by the libuv
 * loop through a poll handle on the non-blocking master. Output is read in bursts and coalesced
 * into one callback per readiness, up to PTY_FRAME_MAX bytes, into a scratch buffer the caller
 * shares between all PTYs (the loop is single-threaded); sustained output is read at most every
 * PTY_COALESCE_MS. Flow control both ways: the owner pauses
 * reading when its client is behind; input that the PTY cannot take yet is kept, bounded by
 * PTY_INPUT_MAX, and written when the master becomes writable.
 *
 * The child is not reaped here (the owner of SIGCHLD reaps every child and tells the PTY with
 * ptyproc_set_reaped, so a signal never reaches a recycled pid).
 */
#ifndef AGENTD_BRIDGE_PTYPROC_H
#define AGENTD_BRIDGE_PTYPROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <uv.h>

#define PTY_FRAME_MAX (64 * 1024)  /* bytes read per readiness; the scratch buffer's size */
#define PTY_INPUT_MAX (192 * 1024) /* keystrokes waiting for a full PTY; beyond is -EOVERFLOW */
#define PTY_SIZE_MAX  1000         /* largest cols or rows accepted */
/* Output that keeps coming (a read soon after the previous one) is read at most once per
 * PTY_COALESCE_MS: the kernel's PTY buffer gathers the next frame meanwhile, so bulk output
 * becomes fewer, larger frames, while a lone keystroke echo is read at once. */
#define PTY_COALESCE_MS 2                 /* libuv timers count whole ms: the pause is 1 to 2 ms */
#define PTY_BURST_NS    (5 * 1000 * 1000) /* reads closer than this are a burst */

struct ptyproc;

struct ptyproc_callbacks {
	/* Output bytes; buf is the scratch buffer, borrowed for the call. */
	void (*on_output)(void *data, const char *buf, size_t len);
	/* Every pending input byte reached the PTY (after ptyproc_write kept some). */
	void (*on_drained)(void *data);
	/* The slave side is gone (the child exited or closed it): no more output will come. */
	void (*on_hangup)(void *data);
};

struct ptyproc_spec {
	const char *path;  /* the executable, an absolute path */
	char *const *argv; /* NULL-terminated */
	char *const *envp; /* NULL-terminated, the child's whole environment */
	unsigned short cols, rows;
};

/*
 * Starts spec->path on a new PTY of the given size. The child gets default signal dispositions,
 * an empty signal mask, the PTY as controlling terminal and stdio, and no other fd. scratch must
 * hold PTY_FRAME_MAX bytes and outlive the PTY. Reading starts at once. Returns 0 with *out set,
 * or -errno (forkpty or libuv failure; a failed exec shows as an exit status of 127).
 */
int ptyproc_spawn(struct ptyproc **out, uv_loop_t *loop, const struct ptyproc_spec *spec,
		  char *scratch, const struct ptyproc_callbacks *cb, void *data);

/*
 * Closes the master and sends SIGHUP to the child unless it was reaped (the tmux client detaches
 * on hangup anyway). The memory is freed when libuv has closed the handle; no callback runs
 * after this call. NULL-safe; safe to call from inside a callback of the same PTY.
 */
void ptyproc_destroy(struct ptyproc *p);

pid_t ptyproc_pid(const struct ptyproc *p);

/* The child with this pid was reaped: never signal it again. */
void ptyproc_set_reaped(struct ptyproc *p);

/*
 * Writes keystrokes, in order after any pending ones. Bytes the PTY cannot take now are kept and
 * written later; on_drained runs when none are left. Returns 0, -EOVERFLOW when the pending bytes
 * would exceed PTY_INPUT_MAX (nothing is kept from this call), -EIO when the slave is gone,
 * -ENOMEM.
 */
int ptyproc_write(struct ptyproc *p, const void *data, size_t len);

/* Bytes accepted by ptyproc_write and not yet written. */
size_t ptyproc_pending(const struct ptyproc *p);

/* Sets the window size (TIOCSWINSZ; the child gets SIGWINCH). Returns 0, -ERANGE outside
 * 1..PTY_SIZE_MAX, or -errno. */
int ptyproc_resize(struct ptyproc *p, unsigned cols, unsigned rows);

/* Stops / restarts reading output (backpressure). Idempotent. */
void ptyproc_pause(struct ptyproc *p);
void ptyproc_resume(struct ptyproc *p);
bool ptyproc_paused(const struct ptyproc *p);

#endif
