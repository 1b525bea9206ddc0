/*
 * The git resources, /worktrees and /branches (list and delete), and the JSON that tells what a
 * worktree removal did, which DELETE /sessions/<id> answers too.
 */
#ifndef AGENTD_API_WORKTREES_H
#define AGENTD_API_WORKTREES_H

#include "worktree.h"

#include <json-c/json.h>
#include <stdbool.h>

/* Adds to o what rm says (docs/API.md): "worktree" ("removed", "kept" or "absent"), and
 * "reason" when kept, "ignoredRemoved" when removed, "keptRef" and "keptCommits" when a ref now
 * keeps commits no branch had. */
void api_worktree_removal_json(json_object *o, const struct worktree_removal *rm);

struct app;

/* DELETE's removal of a session repository of the store layout (AGENTD_GIT_STORE_DIR, gitstore.h)
 * at path: its commits copied into the store, then its directory removed unless it must stay
 * (force rules as DELETE's). Fills rm. Returns 0, or 1 when path is no repository of a store (a
 * worktree of the worktree layout: the caller's worktree_delete). */
int api_remove_session_repo(const struct app *app, const char *owner, const char *name,
			    const char *path, const char *branch, const char *id, bool force,
			    struct worktree_removal *rm);

/* Deletes the store's branch of owner/name (the store layout) under the rule of DELETE /branches,
 * as the daemon under the store's lock: 0, or -EBUSY (a session repository has it checked out),
 * -ENOTEMPTY (origin lacks a commit of it, even after one fetch of the store), -ENOENT, -EINVAL,
 * -errno, with cause. */
int api_branches_delete_stored(const struct app *app, const char *owner, const char *name,
			       const char *branch, struct cause *cause);

#endif
