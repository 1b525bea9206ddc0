/*
 * Git work for sessions with libgit2 1.5 (see integration notes §4). Every call opens its own
 * repository objects and frees them before returning, because libgit2 objects are not
 * thread-safe and agentd-api calls in here from several threads. Worktrees get the internal
 * name of their branch's last component ("issue-7" for feat/issue-7): libgit2 makes
 * <bare>/worktrees/<name> without validating the name, and the bare repository is per
 * repository, so that name is unique in it.
 */
#include "worktree.h"
#include "worktree_int.h"

#include "fsutil.h"
#include "gitcheckout.h"
#include "gitrepo.h"
#include "session.h"

#include <errno.h>
#include <git2.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WT_NAME_MAX 64

/* Worktree name from the branch's last component, limited to [A-Za-z0-9._-] (libgit2 makes a
 * directory of it), starting with an alphanumeric. */
static int wt_name_for(const char *branch, char *out, size_t outlen)
{
	const char *last = strrchr(branch, '/');
	size_t n;

	last = last != NULL ? last + 1 : branch;
	if (last[0] == '\0' || strlen(last) >= outlen)
		return -EINVAL;
	for (n = 0; last[n] != '\0'; n++) {
		char c = last[n];
		bool alnum =
		    (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');

		out[n] = alnum || (n > 0 && (c == '.' || c == '_' || c == '-')) ? c : '_';
	}
	out[n] = '\0';
	return 0;
}

/* Reads the admin file leaf of worktree name (in repo's common dir) into text, white space at
 * the end cut. Returns its length, or -1. */
static ssize_t wt_admin_read(git_repository *repo, const char *name, const char *leaf, char *text,
			     size_t len)
{
	char path[WORKTREE_PATH_MAX + WT_NAME_MAX + sizeof("/worktrees//gitdir")];
	size_t n;
	FILE *f;

	if (snprintf(path, sizeof(path), "%sworktrees/%s/%s", git_repository_commondir(repo), name,
		     leaf) >= (int)sizeof(path) ||
	    (f = fopen(path, "re")) == NULL)
		return -1;
	n = fread(text, 1, len - 1, f);
	fclose(f);
	text[n] = '\0';
	while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' ' ||
			 text[n - 1] == '\t'))
		text[--n] = '\0';
	return (ssize_t)n;
}

/* Whether the HEAD file of worktree name is the symbolic ref refname: "ref: <refname>". Read as
 * a file: opening the worktree as a repository to ask the same (config files and all) cost a few
 * hundred system calls per worktree on every creation. */
static bool wt_head_is(git_repository *repo, const char *name, const char *refname)
{
	static const char prefix[] = "ref: ";
	char text[GITREPO_REF_MAX + sizeof(prefix) + 2];
	ssize_t n = wt_admin_read(repo, name, "HEAD", text, sizeof(text));

	return n == (ssize_t)(sizeof(prefix) - 1 + strlen(refname)) &&
	       strncmp(text, prefix, sizeof(prefix) - 1) == 0 &&
	       strcmp(text + sizeof(prefix) - 1, refname) == 0;
}

/* Whether worktree name's checkout may be gone: its gitdir file does not name an existing
 * <worktree>/.git (git worktree prune's test; libgit2's validation then decides). */
static bool wt_maybe_stale(git_repository *repo, const char *name)
{
	char text[WORKTREE_PATH_MAX + 8];
	struct stat st;

	return wt_admin_read(repo, name, "gitdir", text, sizeof(text)) <= 0 || stat(text, &st) < 0;
}

/*
 * One pass over repo's worktrees: drops the metadata of those whose directory is gone (as `git
 * worktree prune` does: they would keep their branch "checked out" for ever; locked ones are
 * kept), and finds the one that has refname checked out, writing its path. Returns 1, or 0 when
 * none. It runs on every creation, over every worktree of the clone: one pass, and libgit2's
 * lookup only where the admin files say it is needed.
 */
int wt_prune_and_find(git_repository *repo, const char *refname, char *out, size_t outlen)
{
	git_worktree_prune_options po;
	git_strarray names = {0};
	int found = 0;

	git_worktree_prune_options_init(&po, GIT_WORKTREE_PRUNE_OPTIONS_VERSION);
	if (git_worktree_list(&names, repo) < 0)
		return 0;
	for (size_t i = 0; i < names.count; i++) {
		bool mine = !found && wt_head_is(repo, names.strings[i], refname);
		git_worktree *wt = NULL;

		/* libgit2's lookup (dozens of system calls) only for the one on refname and those
		 * that may be stale: two small file reads tell the rest apart. */
		if ((!mine && !wt_maybe_stale(repo, names.strings[i])) ||
		    git_worktree_lookup(&wt, repo, names.strings[i]) < 0)
			continue;
		/* Without PRUNE_VALID/LOCKED, prune refuses a worktree that still exists. */
		if (git_worktree_validate(wt) != 0) {
			git_worktree_prune(wt, &po);
		} else if (mine) {
			snprintf(out, outlen, "%s", git_worktree_path(wt));
			found = 1;
		}
		git_worktree_free(wt);
	}
	git_strarray_dispose(&names);
	git_error_clear();
	return found;
}

/* An existing path is fine only when it is a worktree of this repository on branch. */
static int wt_reuse(const struct gitrepo *r, const char *path, const char *branch,
		    struct cause *cause)
{
	git_repository *w = NULL;
	int rc;

	if (git_repository_open_ext(&w, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0 ||
	    !git_repository_is_worktree(w) ||
	    !fsutil_same_file(git_repository_commondir(w), r->bare)) {
		rc =
		    cause_fail(cause, EEXIST,
			       "path %s exists and is not a worktree of %s; move it away or remove "
			       "it",
			       path, r->label);
		goto out;
	}
	rc = gitrepo_head_on(r, w, path, "worktree", branch, cause);
out:
	git_repository_free(w);
	return rc;
}

/* Makes <bare>/worktrees/<name> free: debris of a failed add (which git_worktree_list hides)
 * is removed; a live worktree elsewhere under that name is an error. */
static int wt_free_name(const struct gitrepo *r, const char *name, struct cause *cause)
{
	char meta[WORKTREE_PATH_MAX + WT_NAME_MAX + sizeof("/worktrees/")];
	git_worktree *wt = NULL;
	struct stat st;
	int rc;

	snprintf(meta, sizeof(meta), "%s/worktrees/%s", r->bare, name);
	if (lstat(meta, &st) < 0)
		return 0;
	if (git_worktree_lookup(&wt, r->git, name) == 0 && git_worktree_validate(wt) == 0) {
		rc = cause_fail(cause, EEXIST, "worktree name %s of %s is taken by %s", name,
				r->label, git_worktree_path(wt));
		git_worktree_free(wt);
		return rc;
	}
	git_worktree_free(wt);
	rc = fsutil_rm_tree(meta);
	if (rc < 0)
		return cause_fail(cause, rc, "cannot remove the leftover %s: %s", meta,
				  strerror(-rc));
	return 0;
}

/* The start of a new branch: origin's branch of that name if there is one (work pushed from
 * elsewhere continues), else origin's default branch. */
static int wt_start_commit(const struct gitrepo *r, const char *branch, git_commit **out,
			   bool *from_origin, struct cause *cause)
{
	char ref[GITREPO_REF_MAX];
	git_oid oid;
	int rc;

	snprintf(ref, sizeof(ref), "refs/remotes/origin/%s", branch);
	*from_origin = git_reference_name_to_id(&oid, r->git, ref) == 0;
	if (!*from_origin) {
		rc = git_reference_name_to_id(&oid, r->git, "refs/remotes/origin/HEAD");
		if (rc < 0)
			return cause_fail(cause, gitrepo_errno(rc),
					  "origin's default branch of %s is unknown (%s); fetch it "
					  "again",
					  r->label, gitrepo_msg());
	}
	rc = git_commit_lookup(out, r->git, &oid);
	if (rc < 0)
		return cause_fail(cause, gitrepo_errno(rc),
				  "cannot read the start commit of %s in %s: %s", branch, r->label,
				  gitrepo_msg());
	return 0;
}

/* A branch can be checked out in one worktree only (stale worktrees pruned on the way). */
static int wt_branch_free(const struct gitrepo *r, const char *branch, struct cause *cause)
{
	char ref[GITREPO_REF_MAX], where[WORKTREE_PATH_MAX];

	snprintf(ref, sizeof(ref), "refs/heads/%s", branch);
	if (wt_prune_and_find(r->git, ref, where, sizeof(where)))
		return cause_fail(cause, EBUSY, "branch %s is checked out in another worktree: %s",
				  branch, where);
	return 0;
}

/* Looks up branch, or creates it (*created set). An existing branch keeps its commits. */
static int wt_branch(const struct gitrepo *r, const char *branch, git_reference **out,
		     bool *created, struct cause *cause)
{
	char upstream[GITREPO_REF_MAX];
	git_commit *start = NULL;
	bool from_origin;
	int rc = git_branch_lookup(out, r->git, branch, GIT_BRANCH_LOCAL);

	*created = false;
	if (rc == 0)
		return 0;
	if (rc != GIT_ENOTFOUND)
		return cause_fail(cause, gitrepo_errno(rc), "cannot look up branch %s in %s: %s",
				  branch, r->label, gitrepo_msg());
	rc = wt_start_commit(r, branch, &start, &from_origin, cause);
	if (rc < 0)
		return rc;
	rc = git_branch_create(out, r->git, branch, start, 0);
	git_commit_free(start);
	if (rc < 0)
		return cause_fail(cause, gitrepo_errno(rc), "cannot create branch %s in %s: %s",
				  branch, r->label, gitrepo_msg());
	*created = true;
	snprintf(upstream, sizeof(upstream), "origin/%s", branch);
	if (from_origin && git_branch_set_upstream(*out, upstream) < 0)
		git_error_clear(); /* tracking is a convenience; the branch is right without it */
	return 0;
}

/* Undoes a failed add: the metadata and directory it made, and a branch made for it (which
 * has no commits of its own yet). */
static void wt_undo_add(const struct gitrepo *r, const char *name, const char *path,
			git_reference *br, bool created)
{
	char meta[WORKTREE_PATH_MAX + WT_NAME_MAX + sizeof("/worktrees/")];

	snprintf(meta, sizeof(meta), "%s/worktrees/%s", r->bare, name);
	fsutil_rm_tree(meta);
	fsutil_rm_tree(path);
	if (created)
		git_branch_delete(br);
}

/* Writes text to the new file dir/leaf (0644 less the umask), as git writes a worktree's admin
 * files. Returns 0 or -errno. */
static int wt_write_new(const char *dir, const char *leaf, const char *text)
{
	char path[WORKTREE_PATH_MAX + WT_NAME_MAX + 32];

	if (snprintf(path, sizeof(path), "%s/%s", dir, leaf) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	return fsutil_write_new(path, text, 0644);
}

/*
 * Makes the worktree name of r at path on branch br, as git_worktree_add does (the files of
 * gitrepository-layout(5): <common>/worktrees/<name>/{gitdir,commondir,HEAD} and <path>/.git),
 * then checks br out (gitcheckout_fresh). Not git_worktree_add itself: libgit2 1.5 first asks
 * whether the branch is checked out anywhere by opening every worktree of the clone as a
 * repository, about a hundred system calls each on every creation, and wt_branch_free has answered
 * that already. Returns 0 or -errno with cause (what it made is wt_undo_add's to remove).
 */
static int wt_add(const struct gitrepo *r, const char *name, const char *path, git_reference *br,
		  struct cause *cause)
{
	char admin[WORKTREE_PATH_MAX + WT_NAME_MAX + 16], wd[PATH_MAX],
	    text[PATH_MAX + GITREPO_REF_MAX + 16];
	const char *common = git_repository_commondir(r->git); /* absolute, ends with '/' */
	git_repository *wt = NULL;
	int rc = 0;

	if (snprintf(admin, sizeof(admin), "%sworktrees", common) >= (int)sizeof(admin))
		rc = -ENAMETOOLONG;
	else if (mkdir(admin, 0755) < 0 && errno != EEXIST)
		rc = -errno;
	else if (snprintf(admin, sizeof(admin), "%sworktrees/%s", common, name) >=
		 (int)sizeof(admin))
		rc = -ENAMETOOLONG;
	else if (mkdir(admin, 0755) < 0 || mkdir(path, 0755) < 0 || realpath(path, wd) == NULL)
		rc = -errno;
	if (rc == 0) {
		snprintf(text, sizeof(text), "gitdir: %s\n", admin);
		rc = wt_write_new(wd, ".git", text);
	}
	if (rc == 0) {
		snprintf(text, sizeof(text), "%s\n", common);
		rc = wt_write_new(admin, "commondir", text);
	}
	if (rc == 0) {
		snprintf(text, sizeof(text), "%s/.git\n", wd);
		rc = wt_write_new(admin, "gitdir", text);
	}
	if (rc == 0) {
		snprintf(text, sizeof(text), "ref: %s\n", git_reference_name(br));
		rc = wt_write_new(admin, "HEAD", text);
	}
	if (rc < 0)
		return cause_fail(cause, rc, "cannot add worktree %s of %s: %s", path, r->label,
				  strerror(-rc));
	if ((rc = git_repository_open(&wt, path)) == 0)
		rc = gitcheckout_fresh(wt, path, br);
	git_repository_free(wt);
	if (rc < 0)
		return cause_fail(cause, gitrepo_errno(rc), "cannot check out %s in %s: %s",
				  git_reference_name(br), path, gitrepo_msg());
	return 0;
}

static int wt_create(const struct gitrepo *r, const char *path, const char *branch,
		     struct cause *cause)
{
	char name[WT_NAME_MAX];
	git_reference *br = NULL;
	bool created = false;
	int rc;

	if (wt_name_for(branch, name, sizeof(name)) < 0)
		return cause_fail(cause, EINVAL, "branch name %s is not usable for a worktree",
				  branch);
	rc = wt_branch_free(r, branch, cause); /* prunes stale worktrees too */
	if (rc == 0)
		rc = wt_free_name(r, name, cause);
	if (rc < 0)
		return rc;
	rc = wt_branch(r, branch, &br, &created, cause);
	if (rc < 0)
		return rc;
	rc = fsutil_mkdir_parent(path);
	if (rc < 0) {
		rc = cause_fail(cause, rc, "cannot create the parent directory of %s: %s", path,
				strerror(-rc));
		goto fail;
	}
	if ((rc = wt_add(r, name, path, br, cause)) < 0)
		goto fail;
	git_reference_free(br);
	return 0;
fail:
	wt_undo_add(r, name, path, br, created);
	git_reference_free(br);
	return rc;
}

int worktree_add(const char *base, const char *owner, const char *name, const char *path,
		 const char *branch, struct cause *cause)
{
	struct gitrepo r;
	struct stat st;
	int valid = 0, rc;

	if (path == NULL || path[0] != '/' || strlen(path) >= WORKTREE_PATH_MAX)
		return cause_fail(cause, EINVAL,
				  "worktree path must be absolute and shorter than %d",
				  WORKTREE_PATH_MAX);
	if (branch == NULL || git_branch_name_is_valid(&valid, branch) < 0 || !valid ||
	    strlen(branch) >= GITREPO_REF_MAX - sizeof("refs/remotes/origin/"))
		return cause_fail(cause, EINVAL, "invalid branch name %s", branch ? branch : "");
	rc = gitrepo_open(&r, base, owner, name, cause);
	if (rc < 0)
		return rc;
	rc = lstat(path, &st) == 0 ? 0 : -errno;
	if (rc == 0)
		rc = wt_reuse(&r, path, branch, cause);
	else if (rc != -ENOENT)
		rc = cause_fail(cause, rc, "cannot use %s: %s", path, strerror(-rc));
	else
		rc = wt_create(&r, path, branch, cause);
	git_repository_free(r.git);
	return rc;
}
