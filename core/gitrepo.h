/*
 * The bare clones of managed repositories, with libgit2: <base>/.repos/<owner>/<name>.git,
 * cloned once and fetched with prune, serialised per repository by worktree_lock; the URL of
 * origin and the owner/name in a URL. worktree_global_init must run once per process before any
 * other call of the git modules (gitrepo, worktree, inventory).
 *
 * Below the public calls: what the git modules of core/ share (struct gitrepo, the errno of a
 * libgit2 failure, the issue number of a branch name). Nothing outside core/ uses those.
 */
#ifndef AGENTD_GITREPO_H
#define AGENTD_GITREPO_H

#include "cause.h"
#include "fsutil.h"
#include "session.h"

#include <git2.h>
#include <stdbool.h>
#include <stddef.h>

#define WORKTREE_PATH_MAX FSUTIL_PATH_MAX
#define WORKTREE_URL_MAX  4096

/*
 * Initialises libgit2, turns off its owner validation (agentd owns its repositories) and makes it
 * read the agent's git configuration, not the daemon's: the global and XDG files (.gitconfig,
 * .config/git/config, attributes, ignore) of agent_home (the agent user's HOME), whatever HOME
 * and XDG_CONFIG_HOME the process has. The daemons run as root, whose home is 0700: libgit2,
 * working with the agent's file identity, failed to stat root's .gitconfig, and where it could
 * read it, root's settings would apply to the agent's repositories. The system file (/etc) stays:
 * everyone may read it, and the agent's own git reads it too. An agent_home that is NULL, not
 * absolute, or that libgit2 would read as a list (':') or expand ("$PATH") gives no global or XDG
 * configuration at all. Returns 0, or -EIO when libgit2 refuses.
 */
int worktree_global_init(const char *agent_home);

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

/* Reads the URL of remote "origin" of the repository containing path. Returns 0 or -errno. */
int worktree_remote_url(const char *path, char *out, size_t outlen, struct cause *cause);

/* Parses owner and name from a GitHub-style URL (https://host/owner/name(.git),
 * git@host:owner/name, file:///x/owner/name.git). Returns 0 or -EINVAL. */
int worktree_parse_url(const char *url, char *owner, size_t owner_len, char *name, size_t name_len);

/* --- shared by the git modules of core/ ------------------------------------------------------ */

#define GITREPO_REF_MAX       256
#define GITREPO_LABEL_MAX     (SESSION_OWNER_MAX + 1 + SESSION_NAME_MAX + 1)
#define GITREPO_BRANCH_PREFIX "feat/issue-"
/* A file in a clone whose mtime is its last good clone or fetch (GET /repos' lastFetched): the
 * fetch writes no FETCH_HEAD, and a fetch that brings nothing changes no ref file. */
#define GITREPO_FETCHED_FILE "agentd-fetched"

/* One managed bare repository, opened for the length of one call. */
struct gitrepo {
	git_repository *git;
	char bare[WORKTREE_PATH_MAX];
	char label[GITREPO_LABEL_MAX]; /* "owner/name", for causes */
};

/* Maps a libgit2 return code to a negative errno. */
int gitrepo_errno(int rc);

/* libgit2's message for the last failure of this thread (never NULL). */
const char *gitrepo_msg(void);

/*
 * Whether the repository w (at path, a "worktree" or "repository" of r: what) has HEAD on
 * refs/heads/<branch>. 0 when it has; -EEXIST with cause naming the branch (or "a detached
 * HEAD") it is on instead.
 */
int gitrepo_head_on(const struct gitrepo *r, git_repository *w, const char *path, const char *what,
		    const char *branch, struct cause *cause);

/* Parses a canonical issue number (digits, no leading zero) in 1..SESSION_ISSUE_MAX. */
bool gitrepo_parse_issue(const char *s, long *out);

/* Validates owner/name (they become path components) and fills r's paths; opens nothing (r->git
 * NULL). Returns 0 or -errno with cause. */
int gitrepo_init(struct gitrepo *r, const char *base, const char *owner, const char *name,
		 struct cause *cause);

/* worktree_ensure_repo for the repository r names (filled by gitrepo_init or by the store's
 * own path, gitstore.h); r->git is NULL again on return. */
int gitrepo_ensure(struct gitrepo *r, const char *url, struct cause *cause);
/* As gitrepo_init, and opens the bare clone into r->git (the caller frees it). */
int gitrepo_open(struct gitrepo *r, const char *base, const char *owner, const char *name,
		 struct cause *cause);

#endif
