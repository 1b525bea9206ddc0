/* What worktree.c and wtremove.c share beyond worktree.h (not a contract for anyone else). */
#ifndef AGENTD_WORKTREE_INT_H
#define AGENTD_WORKTREE_INT_H

#include <git2.h>
#include <stddef.h>

/*
 * One pass over repo's worktrees: drops the metadata of those whose directory is gone (as `git
 * worktree prune` does; locked ones are kept), and finds the one that has refname checked out,
 * writing its path to out. Returns 1, or 0 when none.
 */
int wt_prune_and_find(git_repository *repo, const char *refname, char *out, size_t outlen);

#endif
