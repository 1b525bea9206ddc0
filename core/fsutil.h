/*
 * Filesystem helpers: directories made as `mkdir -p` would, trees removed as `rm -r` would (never
 * following a symlink), whether two paths name one file, a file replaced atomically, and lock
 * files.
 */
#ifndef AGENTD_FSUTIL_H
#define AGENTD_FSUTIL_H

#include <stdbool.h>
#include <sys/types.h>

#define FSUTIL_PATH_MAX 1200 /* the longest path these helpers take (worktrees, clones) */

/* mkdir -p path (mode 0755). Returns 0, -ENAMETOOLONG (FSUTIL_PATH_MAX), or -errno. */
int fsutil_mkdir_p(const char *path);

/* Creates the parent directories of path. Returns 0 or -errno as fsutil_mkdir_p. */
int fsutil_mkdir_parent(const char *path);

/* rm -r without following symlinks; a missing path is fine. Returns 0 or -errno. */
int fsutil_rm_tree(const char *path);

#define FSUTIL_COPY_DEPTH_MAX 64 /* directories deep in a copied tree (a HOME template) */

/*
 * Copies the tree under the directory src into the existing directory dst: directories, regular
 * files (content and permission bits, no set-id bits) and symbolic links (as links: never
 * followed); other kinds of file are left out, and so is every entry whose path relative to src
 * is one of the nskip names in skip (with all below it). Every lookup is the calling thread's
 * file identity's (agentuser_fs_enter: the agent's). Returns 0, -ELOOP past
 * FSUTIL_COPY_DEPTH_MAX, -ENAMETOOLONG, or another -errno (what was copied stays).
 */
int fsutil_copy_tree(const char *src, const char *dst, const char *const *skip, size_t nskip);

/* Who reads the source and who writes the copy: side(ctx, false) is called before every lookup
 * in src, side(ctx, true) before every change in dst (a HOME template read as the agent user,
 * copied as a session's own uid). */
struct fsutil_sides {
	void (*side)(void *ctx, bool writing);
	void *ctx;
};

/* As fsutil_copy_tree, each side with its own identity (sides NULL: the thread's throughout). */
int fsutil_copy_tree_as(const char *src, const char *dst, const char *const *skip, size_t nskip,
			const struct fsutil_sides *sides);

/* True when a and b name the same existing file (whatever symlinks or trailing slashes). */
bool fsutil_same_file(const char *a, const char *b);

/* Writes all len bytes to fd (a file, pipe or socket), again after EINTR and short writes.
 * Returns 0 or -errno (a closed peer is -EPIPE for a caller that ignores SIGPIPE). */
int fsutil_write_all(int fd, const void *data, size_t len);

/*
 * Reads the regular file path whole into *text (NUL-terminated; *len bytes, len may be NULL; the
 * caller frees), never following a symlink at its last component. A file over max bytes is -EFBIG
 * and anything but a regular file -EINVAL, so a hostile or runaway file costs a stat, not memory.
 * Returns 0 or -errno (-ENOENT when it does not exist); *text is NULL on failure.
 */
int fsutil_read_file(const char *path, size_t max, char **text, size_t *len);

/*
 * Replaces path with text atomically: written to "<path>.tmp" (created with mode), fsync'ed when
 * sync, then renamed over path, so a reader sees the old file or the new one, never a part.
 * Writers of one path must not overlap (the caller holds a lock). Returns 0 or -errno (the
 * temporary file is removed on failure).
 */
int fsutil_write_atomic(const char *path, const char *text, mode_t mode, bool sync);

/* Writes text to path, a new file (mode, less the umask; an existing path is -EEXIST, a symlink
 * is not followed). Returns 0 or -errno. */
int fsutil_write_new(const char *path, const char *text, mode_t mode);

/*
 * Moves the regular file from to the path to, which must not exist (an existing to is -EEXIST,
 * and from stays). On one filesystem a link and an unlink; across filesystems (/run is a tmpfs) a
 * copy to "<to>.tmp" with from's mode, fsync'ed, renamed to to, then from is removed, so to is
 * whole or absent whenever the move stops, and from is removed only once to is on disk. Returns 0
 * or -errno.
 */
int fsutil_move(const char *from, const char *to);

/* flock(fd, op), again after EINTR. Returns 0 or -errno (-EWOULDBLOCK for a LOCK_NB that
 * another holder refuses). */
int fsutil_flock(int fd, int op);

/*
 * Opens the lock file path (created with mode if missing; a symlink is not followed) and takes
 * flock(op) on it: LOCK_EX waits for the holder, LOCK_EX | LOCK_NB does not. Returns the
 * descriptor, whose close releases the lock, or -errno.
 */
int fsutil_lock(const char *path, int op, mode_t mode);

#endif
