/*
 * The git resources, /worktrees and /branches (list and delete), and the JSON that tells what a
 * worktree removal did, which DELETE /sessions/<id> answers too.
 */
#ifndef AGENTD_API_WORKTREES_H
#define AGENTD_API_WORKTREES_H

#include "worktree.h"

#include <json-c/json.h>

/* Adds to o what rm says (docs/API.md): "worktree" ("removed", "kept" or "absent"), and
 * "reason" when kept, "ignoredRemoved" when removed, "keptRef" and "keptCommits" when a ref now
 * keeps commits no branch had. */
void api_worktree_removal_json(json_object *o, const struct worktree_removal *rm);

#endif
