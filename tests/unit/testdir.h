/*
 * The temporary directory of a unit test, shared by every suite that needs one: made with mkdtemp,
 * removed as `rm -r` would (never following a symlink), and, where a suite asks, removed also when
 * the test process ends however it ends (Criterion skips .fini when a test crashes). Linked into
 * every unit test binary (tests/meson.build: unit_helpers). Failures are Criterion assertions.
 */
#ifndef AGENTD_TESTDIR_H
#define AGENTD_TESTDIR_H

#include <stddef.h>

/* Copies template ("/tmp/<name>-XXXXXX", shorter than len) into dir and makes the directory. */
void testdir_make(char *dir, size_t len, const char *template);

/*
 * Removes dir once this test process ends, however it ends. A grandchild (so that it is nobody's
 * child to wait for) holds the read end of a pipe whose write end only this process has, and
 * cleans up at EOF: first before(arg) when before is not NULL (test_tmux stops its tmux server
 * there), then the tree. dir and what arg points to are read in the grandchild's copy of memory,
 * as they are when this is called.
 */
void testdir_janitor(const char *dir, void (*before)(void *arg), void *arg);

/* rm -r dir now, without following symlinks; a missing dir is fine (a suite's .fini). */
void testdir_remove(const char *dir);

/* Writes text to path (created mode 0666 & ~umask, or truncated). */
void testdir_write(const char *path, const char *text);

#endif
