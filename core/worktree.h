/*
 * Git work for sessions, with libgit2: the bare clone of each repository under
 * <base>/.repos/<owner>/<name>.git, fetched with prune; worktrees <base>/<name>-issue-<N> on
 * branch feat/issue-<N>; dirty checks; removal that never deletes a branch; branch comparison
 * with origin without network access. Callers serialise work on one repository (worktree_lock).
 * worktree_global_init must run once per process before any other call.
 */
#ifndef AGENTD_WORKTREE_H
#define AGENTD_WORKTREE_H

#include "cause.h"

#include <stdbool.h>
#include <stddef.h>

#define WORKTREE_PATH_MAX 1200
#define WORKTREE_URL_MAX  4096
#define WORKTREE_LIST_MAX 4096

/* Initialises libgit2 (and turns off its owner validation: agentd owns its repositories). */
int worktree_global_init(void);

/* Writes <base>/.repos/<owner>/<name>.git into out. Returns 0 or -ENAMETOOLONG. */
int worktree_bare_path(const char *base, const char *owner, const char *name, char *out,
		       size_t outlen);

/* Takes an exclusive flock on <bare path>.lock (creating parent dirs). Returns the fd or -errno. */
int worktree_lock(const char *base, const char *owner, const char *name);

/*
 * Makes sure the bare clone exists and is fresh: clones url if missing, otherwise fetches origin
 * with prune and points refs/remotes/origin/HEAD at the remote's default branch. A failed fetch of
 * an existing clone is not fatal (returns 1, cause says why) so work continues offline.
 * Returns 0, 1, or -errno with cause (e.g. "clone of URL failed: ...").
 */
int worktree_ensure_repo(const char *base, const char *owner, const char *name, const char *url,
			 struct cause *cause);

/*
 * Creates worktree path on branch (e.g. "feat/issue-7") in the bare repository: a new branch from
 * origin's default branch, or the existing branch with its commits. An existing worktree of the
 * same repository at path on that branch is reused. Debris of an earlier failed add is cleaned
 * first; on failure nothing is left behind (but an existing branch is never deleted).
 * Returns 0 or -errno with cause.
 */
int worktree_add(const char *base, const char *owner, const char *name, const char *path,
		 const char *branch, struct cause *cause);

/* Returns 1 if path has uncommitted changes (index, workdir or untracked), 0 if clean, -ENOENT
 * if it is not a repository, or -errno with cause. */
int worktree_is_dirty(const char *path, struct cause *cause);

/* Removes the worktree at path (its directory and its metadata in the bare repository), keeping
 * the branch. Returns 0, -ENOENT if there is no such worktree, or -errno with cause. */
int worktree_remove(const char *path, struct cause *cause);

/* Reads the URL of remote "origin" of the repository containing path. Returns 0 or -errno. */
int worktree_remote_url(const char *path, char *out, size_t outlen, struct cause *cause);

/* Parses owner and name from a GitHub-style URL (https://host/owner/name(.git),
 * git@host:owner/name, file:///x/owner/name.git). Returns 0 or -EINVAL. */
int worktree_parse_url(const char *url, char *owner, size_t owner_len, char *name, size_t name_len);

enum worktree_sync {
	WORKTREE_SYNCED,
	WORKTREE_LOCAL_ONLY,
	WORKTREE_AHEAD,
	WORKTREE_BEHIND,
	WORKTREE_DIVERGED,
};

struct worktree_branch {
	char owner[40];
	char name[101];
	long issue;
	char branch[32];
	enum worktree_sync sync;
	size_t ahead, behind;
};

struct worktree_entry {
	char owner[40];
	char name[101];
	long issue;
	char path[WORKTREE_PATH_MAX];
};

const char *worktree_sync_name(enum worktree_sync s);

/* Lists the feat/issue-<N> branches of every managed repository under base, compared with
 * origin/feat/issue-<N>. *out allocated (caller frees). Returns 0 or -errno. */
int worktree_list_branches(const char *base, struct worktree_branch **out, size_t *n);

/* Lists every <name>-issue-<N> worktree of every managed repository under base. *out allocated
 * (caller frees). Returns 0 or -errno. */
int worktree_list(const char *base, struct worktree_entry **out, size_t *n);

#endif
