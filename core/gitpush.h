/*
 * Pushing a session's branch to its origin with libgit2 (never a shell git): the repository at the
 * session's worktree, its remote "origin" as the agent configured it, the branch pushed to the
 * same name without force, and the session's own GitHub token as the HTTPS password when the remote
 * asks for credentials. The caller holds the agent's file identity (the repository is the agent's).
 */
#ifndef AGENTD_GITPUSH_H
#define AGENTD_GITPUSH_H

#include "cause.h"

#include <stddef.h>

/* A push that takes longer than this is given up at its next progress report: libgit2 1.5 has no
 * network timeout of its own, and a request thread must come back. */
#define GITPUSH_SECONDS_MAX 60
/* Credential prompts answered per push: a refused token is not offered again and again. */
#define GITPUSH_AUTH_TRIES 1

/*
 * Pushes refs/heads/<branch> of the repository at path to origin's refs/heads/<branch> (no force),
 * with token (may be NULL or "") as the password of user "x-access-token". Writes the pushed
 * commit's id (40 hex digits) into head. Returns 0, or with cause saying what git or the remote
 * said: -ENOENT (no repository at path), -ENODATA (no such branch, or no remote origin), -EACCES
 * (the remote refused the credentials or there were none), -EPERM (the remote rejected the update:
 * branch protection, not a fast-forward; cause holds its message), -ETIMEDOUT, -EIO.
 */
int gitpush_branch(const char *path, const char *branch, const char *token, char head[41],
		   struct cause *cause);

#endif
