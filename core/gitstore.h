/*
 * The store layout of sessions' git work (AGENTD_GIT_STORE_DIR set): one bare store per
 * repository, <store dir>/<owner>/<name>.git, cloned and fetched by agentd-api as itself and only
 * readable by the agents; per session a repository of its own at the worktree path (its .git and
 * its files, on feat/issue-<N>, the agent's), whose objects/info/alternates borrows the store's
 * objects and whose origin is the real remote. An agent can then change its own repository
 * only: no ref, object, config or hook of the store or of another session is within its reach.
 * Deleting the session first copies its commits into the store (gitstore_keep_*), so none is lost.
 */
#ifndef AGENTD_GITSTORE_H
#define AGENTD_GITSTORE_H

#include "cause.h"
#include "worktree.h"

#include <stdbool.h>
#include <stddef.h>

/* Writes <dir>/<owner>/<name>.git into out. Returns 0, -EINVAL or -ENAMETOOLONG. */
int gitstore_path(const char *dir, const char *owner, const char *name, char *out, size_t outlen);

/* Takes an exclusive flock on <store>.lock (creating the directories, 0755). Returns the fd or
 * -errno. Taken as the daemon: the agents cannot open it. */
int gitstore_lock(const char *dir, const char *owner, const char *name);

/*
 * As worktree_ensure_repo, for the store of owner/name under dir, as the daemon: clones url if
 * missing, else fetches origin with prune. The store is made readable by everyone and never
 * pruned of objects (gc.pruneExpire=never): sessions' repositories borrow them.
 * Returns 0, 1 (fetch failed, last state kept) or -errno with cause.
 */
int gitstore_ensure(const char *dir, const char *owner, const char *name, const char *url,
		    struct cause *cause);

/*
 * Makes the session repository at path (as the agent: its files) on branch: objects borrowed from
 * the store, origin = url, the store's refs/remotes/origin/ copied, and branch started from the
 * store's branch of that name (commits of an earlier session of the issue), else origin's branch
 * of that name, else origin's default branch; then checked out. An existing session repository of
 * this store at path on branch is reused; anything else there is EEXIST. On failure nothing is
 * left at path. Returns 0 or -errno with cause.
 */
int gitstore_session_add(const char *dir, const char *owner, const char *name, const char *path,
			 const char *branch, const char *url, struct cause *cause);

/* True when path holds a session repository whose alternates name the store of owner/name. */
bool gitstore_is_session(const char *dir, const char *owner, const char *name, const char *path);

/* What a session repository holds that must reach the store: a pack and the refs it backs. */
struct gitstore_keep;

/*
 * First step of a delete, as the agent: decides whether the session repository at path may go
 * (without force: not with uncommitted changes or untracked files; out says why it stays) and
 * collects into *keep a pack of the commits of its local branches and HEAD the store lacks.
 * Returns 1 when it may go (*keep set, freed with gitstore_keep_free), 0 when kept (out), or
 * -errno with cause.
 */
int gitstore_keep_collect(const char *dir, const char *owner, const char *name, const char *path,
			  bool force, struct worktree_removal *out, struct gitstore_keep **keep,
			  struct cause *cause);

/*
 * Second step, as the daemon: indexes the pack into the store and writes refs there: the
 * session's branch as refs/heads/<branch> (an old tip it does not contain is kept under
 * refs/agentd/kept/<id>-<time>-replaced/<branch>), its other branches under
 * refs/agentd/kept/<id>-<time>-branches/<branch>, a detached HEAD as refs/agentd/kept/<id>-<time>
 * (out->kept_ref). Returns 0 or -errno with cause.
 */
int gitstore_keep_store(const char *dir, const char *owner, const char *name, const char *branch,
			const char *id, const struct gitstore_keep *keep,
			struct worktree_removal *out, struct cause *cause);

/* Last step, as the agent: removes the directory (out->fate WORKTREE_REMOVED). Returns 0 or
 * -errno with cause (then out->fate is WORKTREE_KEPT). */
int gitstore_session_remove(const char *path, struct worktree_removal *out, struct cause *cause);

void gitstore_keep_free(struct gitstore_keep *keep);

struct worktree_entry;

/* Lists the session repositories <base>/<name>-issue-<N> that borrow a store under dir (the
 * worktrees of the store layout), in no particular order. *out allocated (caller frees).
 * Returns 0 or -errno. */
int gitstore_list(const char *base, const char *dir, struct worktree_entry **out, size_t *n);

/* Finds the session repository <base>/<name> among those gitstore_list lists. Returns 0 with
 * *out filled, -ENOENT, or -errno. */
int gitstore_find(const char *base, const char *dir, const char *name, struct worktree_entry *out);

struct worktree_branch;

/*
 * The branches of the store layout under dir, for GET /branches: every store's feat/issue-<N>,
 * and each session repository's own feat/issue-<N> (compared with that repository's origin refs,
 * which its pushes update) in place of the store's branch of the same issue: the session's is
 * the live one. Sorted by owner, name and issue. Reads the agents' repositories: called as the
 * agent. *out allocated (caller frees). Returns 0 or -errno.
 */
int gitstore_list_branches(const char *base, const char *dir, struct worktree_branch **out,
			   size_t *n);

/* Reads the text of a HEAD file: 0 with the branch of "ref: refs/heads/<branch>\n" in out, or
 * -EINVAL (a detached HEAD, anything else, or a branch longer than outlen). */
int gitstore_parse_head(const char *text, char *out, size_t outlen);

/*
 * Tells whether a session repository has the store's branch ("feat/issue-<N>") checked out: the
 * repository <base>/<name>-issue-<N> borrows the store of owner/name and its HEAD is on branch.
 * Reads the agent's files: called as the agent. Returns 1 (where = the repository's path), 0, or
 * -errno (-EINVAL for a branch that is not feat/issue-<N>).
 */
int gitstore_checked_out(const char *base, const char *dir, const char *owner, const char *name,
			 const char *branch, char *where, size_t wherelen);

/* worktree_branch_delete for the store of owner/name under dir, as the daemon, under
 * gitstore_lock, once gitstore_checked_out said no session has branch. Same returns. */
int gitstore_branch_delete(const char *dir, const char *owner, const char *name, const char *branch,
			   struct cause *cause);

#endif
