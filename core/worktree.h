/*
 * The worktrees of sessions, with libgit2: worktrees <base>/<name>-issue-<N> on branch
 * feat/issue-<N> of the bare clone (gitrepo.h) of their repository; dirty checks; removal that
 * loses no commit or change; deletion of branches whose commits origin has. Callers serialise work
 * on one repository (worktree_lock). The inventory of worktrees and branches is inventory.h.
 */
#ifndef AGENTD_WORKTREE_H
#define AGENTD_WORKTREE_H

#include "cause.h"

#include <stdbool.h>
#include <stddef.h>

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
 * the branch, whatever it holds. Returns 0, -ENOENT if there is no such worktree, or -errno with
 * cause. worktree_delete is the removal that loses nothing. */
int worktree_remove(const char *path, struct cause *cause);

#define WORKTREE_REF_MAX 256

/* What worktree_delete did with the directory at the worktree path. */
enum worktree_fate {
	WORKTREE_REMOVED, /* the directory and its metadata are gone */
	WORKTREE_KEPT,    /* the directory stayed; reason says why */
	WORKTREE_ABSENT,  /* there was nothing at the path */
};

struct worktree_removal {
	enum worktree_fate fate;
	size_t ignored_removed;          /* ignored files (build outputs) that went with it */
	size_t kept_commits;             /* commits of HEAD that only kept_ref reaches now */
	char kept_ref[WORKTREE_REF_MAX]; /* "" or the ref made to keep them (force only) */
	char reason[CAUSE_MAX];          /* why it was kept */
	bool force_removes; /* kept for a reason force overrides (never: not a worktree) */
};

/*
 * Removes the worktree at path of owner/name's bare clone, on branch (e.g. "feat/issue-7"),
 * only when nothing would be lost that git itself keeps. It is kept (out->fate WORKTREE_KEPT,
 * out->reason) when path is not a directory registered as a worktree of that clone (whatever
 * force says: an ordinary directory is never removed), or, without force, when it is locked,
 * its HEAD is detached or on another branch, HEAD has commits no ref reaches, a submodule is
 * modified or has commits its remote does not have, or it has uncommitted changes or untracked
 * files (`git worktree remove` semantics). Ignored files go with it (out->ignored_removed counts
 * them). With force, commits of HEAD that no ref reaches are first kept under
 * refs/agentd/kept/<id>-<unix time> (out->kept_ref; refs/agentd/kept/issue-<N>-<time> when id
 * cannot be part of a ref name), so even a forced removal loses no commit of the worktree.
 * The caller holds worktree_lock. Returns 0 (out says what happened), or -errno with cause when
 * the worktree could not be examined or removed (out->fate is then WORKTREE_KEPT, reason = cause).
 */
int worktree_delete(const char *base, const char *owner, const char *name, const char *path,
		    const char *branch, const char *id, bool force, struct worktree_removal *out,
		    struct cause *cause);

/*
 * Deletes the local branch (which must be "feat/issue-<N>") of owner/name's bare clone when no
 * commit would be lost: every commit of it is on origin's branch of that name or on origin's
 * default branch (merged), as last fetched. The caller holds worktree_lock. Returns 0, -EINVAL
 * (malformed owner, name or branch), -ENOENT (no such clone or branch), -EBUSY (checked out in a
 * worktree), -ENOTEMPTY (it has commits origin does not), or -errno; cause says why.
 */
int worktree_branch_delete(const char *base, const char *owner, const char *name,
			   const char *branch, struct cause *cause);

struct gitrepo;

/* As worktree_branch_delete, in the bare repository r names (r->bare and r->label set, r->git
 * NULL, and NULL again on return): the worktree layout's clone or the store layout's store. */
int worktree_branch_delete_in(struct gitrepo *r, const char *branch, struct cause *cause);

/* True when branch is "feat/issue-<N>", the only branches agentd deletes. */
bool worktree_branch_name_valid(const char *branch);

#endif
