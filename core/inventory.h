/*
 * The inventory of the bare clones under <base>/.repos: every <name>-issue-<N> worktree and every
 * feat/issue-<N> branch, compared with origin's branch of that name without network access (and
 * the branches of the stores <store dir>/<owner>/<name>.git, worktree_list_store_branches).
 * Sorted by owner, name and issue; at most WORKTREE_LIST_MAX items (more is not a real server).
 */
#ifndef AGENTD_INVENTORY_H
#define AGENTD_INVENTORY_H

#include "gitrepo.h"

#include <stddef.h>

#define WORKTREE_LIST_MAX 4096

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

/* As worktree_list_branches, for the stores <dir>/<owner>/<name>.git of the store layout
 * (gitstore.h); none when dir is empty. */
int worktree_list_store_branches(const char *dir, struct worktree_branch **out, size_t *n);

/* Compares the local branch local (named branch) of git with refs/remotes/origin/<branch>, from
 * local refs only: fills b->sync, b->ahead and b->behind. Returns 0 or -EIO. */
int inventory_compare(git_repository *git, git_reference *local, const char *branch,
		      struct worktree_branch *b);

/* Lists every <name>-issue-<N> worktree of every managed repository under base. *out allocated
 * (caller frees). Returns 0 or -errno. */
int worktree_list(const char *base, struct worktree_entry **out, size_t *n);

/* Finds the worktree <base>/<dir> (dir = "<name>-issue-<N>") among those worktree_list lists.
 * Returns 0 with *out filled, -EINVAL when dir is not of that form, -ENOENT when no managed
 * repository has a worktree there, or -errno. */
int worktree_find(const char *base, const char *dir, struct worktree_entry *out);

#endif
