/*
 * The other half of worktree.h: dirty checks, removal that loses no commit or change, and the
 * deletion of branches whose commits origin has (worktree.c makes worktrees). Same rules: every
 * call opens its own repository objects (libgit2 objects are not thread-safe) and callers
 * serialise work on one repository (worktree_lock).
 */
#include "worktree.h"
#include "worktree_int.h"

#include "fsutil.h"
#include "gitrepo.h"

#include <errno.h>
#include <git2.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define WT_SHORT_SHA  8  /* 7 hex digits, as git abbreviates, and the NUL */
#define WT_KEEP_TRIES 16 /* names tried for a kept ref within one second */
/* A cap on the commits one reachability question walks: the answer only needs "any", and the
 * count in a reason is a courtesy, so a pathological history does not hold the request. */
#define WT_WALK_MAX 100000

static const char WT_KEEP_PREFIX[] = "refs/agentd/kept/";

/* Opens path itself (no upward search: a deleted worktree must not resolve to an enclosing
 * repository). Returns 0 or -ENOENT when path is not a repository. */
static int wt_open_here(const char *path, git_repository **out, struct cause *cause)
{
	int rc;

	if (path == NULL || path[0] == '\0')
		return cause_fail(cause, EINVAL, "no worktree path");
	rc = git_repository_open_ext(out, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
	if (rc < 0)
		return cause_fail(cause, ENOENT, "%s is not a git worktree: %s", path,
				  gitrepo_msg());
	return 0;
}

int worktree_is_dirty(const char *path, struct cause *cause)
{
	git_repository *w = NULL;
	git_status_list *sl = NULL;
	git_status_options so;
	int rc = wt_open_here(path, &w, cause);

	if (rc < 0)
		return rc;
	git_status_options_init(&so, GIT_STATUS_OPTIONS_VERSION);
	so.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	so.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
		   GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
	rc = git_status_list_new(&sl, w, &so);
	if (rc < 0)
		rc = cause_fail(cause, gitrepo_errno(rc), "cannot read the status of %s: %s", path,
				gitrepo_msg());
	else
		rc = git_status_list_entrycount(sl) > 0 ? 1 : 0;
	git_status_list_free(sl);
	git_repository_free(w);
	return rc;
}

/* Removes the worktree wt (at path) with its directory and metadata, even when locked. Returns 0
 * or -errno with cause. */
static int wt_prune(git_worktree *wt, const char *path, struct cause *cause)
{
	git_worktree_prune_options po;
	int rc;

	git_worktree_prune_options_init(&po, GIT_WORKTREE_PRUNE_OPTIONS_VERSION);
	po.flags =
	    GIT_WORKTREE_PRUNE_VALID | GIT_WORKTREE_PRUNE_WORKING_TREE | GIT_WORKTREE_PRUNE_LOCKED;
	rc = git_worktree_prune(wt, &po);
	if (rc < 0)
		return cause_fail(cause, gitrepo_errno(rc), "cannot remove worktree %s: %s", path,
				  gitrepo_msg());
	return 0;
}

int worktree_remove(const char *path, struct cause *cause)
{
	git_repository *w = NULL;
	git_worktree *wt = NULL;
	int rc = wt_open_here(path, &w, cause);

	if (rc < 0)
		return rc;
	if (!git_repository_is_worktree(w) || git_worktree_open_from_repository(&wt, w) < 0) {
		rc = cause_fail(cause, ENOENT, "%s is not a linked worktree", path);
		goto out;
	}
	/* Prune deletes the directory recorded in the metadata: make sure it is this one. */
	if (!fsutil_same_file(git_worktree_path(wt), path)) {
		rc = cause_fail(cause, EINVAL, "worktree %s is registered at %s; not removing",
				path, git_worktree_path(wt));
		goto out;
	}
	rc = wt_prune(wt, path, cause);
out:
	git_worktree_free(wt);
	git_repository_free(w);
	return rc;
}

/* Sets why a worktree stays. */
static void wt_keep(struct worktree_removal *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void wt_keep(struct worktree_removal *out, const char *fmt, ...)
{
	va_list ap;

	out->fate = WORKTREE_KEPT;
	va_start(ap, fmt);
	vsnprintf(out->reason, sizeof(out->reason), fmt, ap);
	va_end(ap);
}

/* Counts what walk yields, up to WT_WALK_MAX. */
static int wt_walk_count(git_revwalk *walk, size_t *count)
{
	git_oid oid;
	int rc;

	*count = 0;
	while (*count < WT_WALK_MAX && (rc = git_revwalk_next(&oid, walk)) == 0)
		(*count)++;
	if (*count == WT_WALK_MAX || rc == GIT_ITEROVER) {
		git_error_clear();
		return 0;
	}
	return rc;
}

/* Hides from walk every commit that a ref of repo whose name starts with prefix reaches. Refs
 * that reach no commit (a dangling symbolic ref, a tag of a tree) are skipped. */
static int wt_hide_refs(git_revwalk *walk, git_repository *repo, const char *prefix)
{
	git_reference_iterator *it = NULL;
	git_reference *ref = NULL;
	int rc = git_reference_iterator_new(&it, repo);

	while (rc == 0 && (rc = git_reference_next(&ref, it)) == 0) {
		git_object *commit = NULL;

		if (strncmp(git_reference_name(ref), prefix, strlen(prefix)) == 0) {
			if (git_reference_peel(&commit, ref, GIT_OBJECT_COMMIT) == 0)
				rc = git_revwalk_hide(walk, git_object_id(commit));
			else
				git_error_clear();
		}
		git_object_free(commit);
		git_reference_free(ref);
		ref = NULL;
	}
	git_reference_iterator_free(it);
	if (rc == GIT_ITEROVER) {
		git_error_clear();
		rc = 0;
	}
	return rc;
}

/* Counts the commits reachable from start that no ref of the bare repository reaches. Refs of
 * one worktree (refs/bisect, refs/worktree) are not seen from the bare repository: they go
 * with their worktree, so they must not count as keeping anything. */
static int wt_count_unreached(git_repository *bare, const git_oid *start, size_t *count,
			      struct cause *cause)
{
	git_revwalk *walk = NULL;
	int rc = git_revwalk_new(&walk, bare);

	*count = 0;
	if (rc == 0)
		rc = git_revwalk_push(walk, start);
	if (rc == 0)
		rc = wt_hide_refs(walk, bare, "refs/");
	if (rc == 0)
		rc = wt_walk_count(walk, count);
	if (rc < 0)
		rc = cause_fail(cause, gitrepo_errno(rc),
				"cannot tell which commits a branch has: %s", gitrepo_msg());
	git_revwalk_free(walk);
	return rc;
}

/* The commit HEAD of w points at. Returns 0, 1 when HEAD is unborn (no commit), or -errno. */
static int wt_head_oid(git_repository *w, git_oid *out, struct cause *cause)
{
	int rc = git_reference_name_to_id(out, w, "HEAD");

	if (rc == GIT_ENOTFOUND || rc == GIT_EUNBORNBRANCH) {
		git_error_clear();
		return 1;
	}
	if (rc < 0)
		return cause_fail(cause, gitrepo_errno(rc), "cannot read HEAD of %s: %s",
				  git_repository_workdir(w), gitrepo_msg());
	return 0;
}

/*
 * Counts the commits of a submodule that its removal would lose: those reachable from its HEAD
 * or local branches (which live in the worktree's metadata and go with it) that none of its
 * remote-tracking refs reach.
 */
static int wt_submodule_local_only(git_submodule *sm, size_t *count, struct cause *cause)
{
	git_repository *sub = NULL;
	git_revwalk *walk = NULL;
	git_oid head;
	int rc = git_submodule_open(&sub, sm);

	*count = 0;
	if (rc < 0)
		return cause_fail(cause, gitrepo_errno(rc), "cannot open submodule %s: %s",
				  git_submodule_path(sm), gitrepo_msg());
	rc = git_revwalk_new(&walk, sub);
	if (rc == 0 && git_reference_name_to_id(&head, sub, "HEAD") == 0)
		rc = git_revwalk_push(walk, &head);
	if (rc == 0)
		rc = git_revwalk_push_glob(walk, "refs/heads");
	if (rc == 0)
		rc = wt_hide_refs(walk, sub, "refs/remotes/");
	if (rc == 0)
		rc = wt_walk_count(walk, count);
	if (rc < 0)
		rc = cause_fail(cause, gitrepo_errno(rc),
				"cannot read the history of submodule %s: %s",
				git_submodule_path(sm), gitrepo_msg());
	git_revwalk_free(walk);
	git_repository_free(sub);
	return rc;
}

struct wt_sub_scan {
	git_repository *w;
	struct worktree_removal *out;
	struct cause *cause;
	int rc; /* 1: must stay (out->reason), <0: error (cause) */
};

static int wt_submodule_cb(git_submodule *sm, const char *name, void *payload)
{
	struct wt_sub_scan *scan = payload;
	unsigned int st = 0;
	size_t n = 0;
	int rc = git_submodule_status(&st, scan->w, name, GIT_SUBMODULE_IGNORE_NONE);

	if (rc < 0) {
		scan->rc =
		    cause_fail(scan->cause, gitrepo_errno(rc), "cannot read submodule %s: %s",
			       git_submodule_path(sm), gitrepo_msg());
		return 1;
	}
	/* Any change, also inside the submodule (whatever its "ignore" setting): as git status
	 * --ignore-submodules=none, which `git worktree remove` asks. */
	if (!GIT_SUBMODULE_STATUS_IS_INDEX_UNMODIFIED(st) ||
	    !GIT_SUBMODULE_STATUS_IS_WD_UNMODIFIED(st)) {
		wt_keep(scan->out, "modified submodule %s", git_submodule_path(sm));
		scan->rc = 1;
		return 1;
	}
	if ((st & GIT_SUBMODULE_STATUS_WD_UNINITIALIZED) || !(st & GIT_SUBMODULE_STATUS_IN_WD))
		return 0; /* not checked out: nothing of it is in the worktree */
	rc = wt_submodule_local_only(sm, &n, scan->cause);
	if (rc < 0 || n > 0) {
		if (rc == 0)
			wt_keep(scan->out, "submodule %s has %zu commit%s its remote does not have",
				git_submodule_path(sm), n, n == 1 ? "" : "s");
		scan->rc = rc < 0 ? rc : 1;
		return 1;
	}
	return 0;
}

/* Counts the ignored files of w, and tells whether anything else is not committed: changes to
 * tracked files (staged or not), untracked files, conflicts. Submodules are looked at apart. */
static int wt_scan_status(git_repository *w, bool *dirty, size_t *ignored, struct cause *cause)
{
	git_status_list *sl = NULL;
	git_status_options so;
	size_t n;
	int rc;

	*dirty = false;
	*ignored = 0;
	git_status_options_init(&so, GIT_STATUS_OPTIONS_VERSION);
	so.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	so.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
		   GIT_STATUS_OPT_INCLUDE_IGNORED | GIT_STATUS_OPT_RECURSE_IGNORED_DIRS |
		   GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
	rc = git_status_list_new(&sl, w, &so);
	if (rc < 0)
		return cause_fail(cause, gitrepo_errno(rc), "cannot read the status of %s: %s",
				  git_repository_workdir(w), gitrepo_msg());
	n = git_status_list_entrycount(sl);
	for (size_t i = 0; i < n; i++) {
		const git_status_entry *e = git_status_byindex(sl, i);

		if (e->status == GIT_STATUS_IGNORED)
			(*ignored)++;
		else if (e->status != GIT_STATUS_CURRENT)
			*dirty = true;
	}
	git_status_list_free(sl);
	return 0;
}

/*
 * Decides whether a worktree must stay when not forced. Returns 1 (out->reason says why), 0 when
 * it may go, or -errno with cause.
 */
static int wt_must_keep(git_repository *bare, git_repository *w, git_worktree *wt,
			const char *branch, struct worktree_removal *out, struct cause *cause)
{
	char ref[GITREPO_REF_MAX], sha[WT_SHORT_SHA];
	struct wt_sub_scan scan = {w, out, cause, 0};
	git_buf why = GIT_BUF_INIT;
	git_reference *head = NULL;
	git_oid oid = {{0}};
	const char *on;
	size_t lost = 0;
	int rc = git_worktree_is_locked(&why, wt);

	if (rc > 0) {
		wt_keep(out, "the worktree is locked%s%s", why.size > 0 ? ": " : "",
			why.size > 0 ? why.ptr : "");
		rc = 1;
		goto out;
	}
	if (rc == 0)
		rc = git_reference_lookup(&head, w, "HEAD");
	if (rc < 0) {
		rc = cause_fail(cause, gitrepo_errno(rc), "cannot read HEAD of %s: %s",
				git_worktree_path(wt), gitrepo_msg());
		goto out;
	}
	rc = wt_head_oid(w, &oid, cause);
	if (rc == 0)
		rc = wt_count_unreached(bare, &oid, &lost, cause);
	if (rc < 0)
		goto out;
	rc = 1;
	snprintf(ref, sizeof(ref), "refs/heads/%s", branch);
	if (git_reference_type(head) != GIT_REFERENCE_SYMBOLIC) {
		git_oid_tostr(sha, sizeof(sha), &oid);
		if (lost > 0)
			wt_keep(out, "HEAD is detached at %s (%zu commit%s on no branch)", sha,
				lost, lost == 1 ? "" : "s");
		else
			wt_keep(out, "HEAD is detached at %s", sha);
		goto out;
	}
	on = git_reference_symbolic_target(head);
	if (strcmp(on, ref) != 0) {
		wt_keep(out, "HEAD is on branch %s, not %s",
			strncmp(on, "refs/heads/", 11) == 0 ? on + 11 : on, branch);
		goto out;
	}
	if (lost > 0) {
		wt_keep(out, "%zu commit%s on no branch", lost, lost == 1 ? "" : "s");
		goto out;
	}
	rc = git_submodule_foreach(w, wt_submodule_cb, &scan);
	if (scan.rc != 0)
		rc = scan.rc;
	else if (rc < 0)
		rc = cause_fail(cause, gitrepo_errno(rc), "cannot list the submodules of %s: %s",
				git_worktree_path(wt), gitrepo_msg());
out:
	git_reference_free(head);
	git_buf_dispose(&why);
	return rc;
}

/* Makes refs/agentd/kept/<id>-<time> point at HEAD of w when HEAD has commits no ref reaches. */
static int wt_keep_head(const struct gitrepo *r, git_repository *w, const char *id,
			struct worktree_removal *out, struct cause *cause)
{
	char ref[WORKTREE_REF_MAX], stem[WORKTREE_REF_MAX];
	git_reference *made = NULL;
	git_oid head;
	int valid = 0, rc = wt_head_oid(w, &head, cause);

	if (rc != 0)
		return rc < 0 ? rc : 0;
	rc = wt_count_unreached(r->git, &head, &out->kept_commits, cause);
	if (rc < 0)
		return rc;
	if (out->kept_commits == 0)
		return 0;
	if (snprintf(stem, sizeof(stem), "%s%s-%lld", WT_KEEP_PREFIX, id, (long long)time(NULL)) >=
	    (int)sizeof(stem))
		return cause_fail(cause, ENAMETOOLONG, "the id %s is too long for a ref", id);
	if (git_reference_name_is_valid(&valid, stem) < 0 || !valid)
		for (char *p = stem + sizeof(WT_KEEP_PREFIX) - 1; *p != '\0'; p++)
			*p = *p == '.' ? '_' : *p; /* "a..b" or ".github": git refuses such names */
	rc = GIT_EEXISTS;
	for (int k = 0; k < WT_KEEP_TRIES && rc == GIT_EEXISTS; k++) {
		if (k == 0)
			snprintf(ref, sizeof(ref), "%s", stem);
		else if (snprintf(ref, sizeof(ref), "%s-%d", stem, k) >= (int)sizeof(ref))
			break;
		rc = git_reference_create(&made, r->git, ref, &head, 0,
					  "agentd: keep the commits of a removed worktree");
	}
	git_reference_free(made);
	if (rc < 0)
		return cause_fail(cause, gitrepo_errno(rc),
				  "cannot keep the commits of %s under %s: %s",
				  git_repository_workdir(w), ref, gitrepo_msg());
	snprintf(out->kept_ref, sizeof(out->kept_ref), "%s", ref);
	return 0;
}

/* Opens path as a worktree registered in r's bare clone at path. False when it is not one. */
static bool wt_open_member(const struct gitrepo *r, const char *path, git_repository **w,
			   git_worktree **wt)
{
	if (git_repository_open_ext(w, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) == 0 &&
	    git_repository_is_worktree(*w) &&
	    fsutil_same_file(git_repository_commondir(*w), r->bare) &&
	    git_worktree_open_from_repository(wt, *w) == 0 &&
	    fsutil_same_file(git_worktree_path(*wt), path))
		return true;
	git_error_clear();
	return false;
}

int worktree_delete(const char *base, const char *owner, const char *name, const char *path,
		    const char *branch, const char *id, bool force, struct worktree_removal *out,
		    struct cause *cause)
{
	git_repository *w = NULL;
	git_worktree *wt = NULL;
	struct gitrepo r = {0};
	struct stat st;
	bool dirty = false;
	int rc;

	memset(out, 0, sizeof(*out));
	out->fate = WORKTREE_KEPT;
	if (path == NULL || path[0] != '/' || branch == NULL || id == NULL) {
		rc = cause_fail(cause, EINVAL, "no worktree path, branch or id");
		goto out;
	}
	rc = gitrepo_init(&r, base, owner, name, cause);
	if (rc < 0)
		goto out;
	if (lstat(path, &st) < 0) {
		rc = errno == ENOENT
			 ? 0
			 : cause_fail(cause, errno, "cannot use %s: %s", path, strerror(errno));
		if (rc == 0)
			out->fate = WORKTREE_ABSENT;
		goto out;
	}
	if (!S_ISDIR(st.st_mode) || !wt_open_member(&r, path, &w, &wt)) {
		wt_keep(out, "%s is not a worktree of %s; it was left alone", path, r.label);
		goto out;
	}
	rc = git_repository_open_bare(&r.git, r.bare);
	if (rc < 0) {
		rc = cause_fail(cause, gitrepo_errno(rc), "cannot open the clone of %s at %s: %s",
				r.label, r.bare, gitrepo_msg());
		goto out;
	}
	rc = force ? wt_keep_head(&r, w, id, out, cause)
		   : wt_must_keep(r.git, w, wt, branch, out, cause);
	if (rc != 0) {
		out->force_removes = !force && rc > 0;
		goto out;
	}
	rc = wt_scan_status(w, &dirty, &out->ignored_removed, cause);
	if (rc < 0)
		goto out;
	if (dirty && !force) {
		wt_keep(out, "uncommitted changes");
		out->force_removes = true;
		goto out;
	}
	rc = wt_prune(wt, path, cause);
	if (rc == 0 && lstat(path, &st) == 0)
		rc = cause_fail(cause, EIO, "%s is still there after its removal", path);
	else if (rc == 0)
		out->fate = WORKTREE_REMOVED;
out:
	if (rc < 0)
		wt_keep(out, "%s", cause != NULL ? cause->msg : strerror(-rc));
	else
		rc = 0;
	git_worktree_free(wt);
	git_repository_free(w);
	git_repository_free(r.git);
	return rc;
}

/* The remote-tracking refs that can hold a branch's commits: origin's branch of that name and
 * origin's default branch. Hides each that exists from walk; names the default in def. */
static int wt_hide_origin(git_repository *git, git_revwalk *walk, const char *branch, char *def,
			  size_t deflen)
{
	char ref[GITREPO_REF_MAX];
	git_reference *head = NULL;
	git_oid oid;
	int rc = 0;

	snprintf(def, deflen, "origin's default branch");
	snprintf(ref, sizeof(ref), "refs/remotes/origin/%s", branch);
	if (git_reference_name_to_id(&oid, git, ref) == 0)
		rc = git_revwalk_hide(walk, &oid);
	if (rc == 0 && git_reference_name_to_id(&oid, git, "refs/remotes/origin/HEAD") == 0) {
		rc = git_revwalk_hide(walk, &oid);
		if (git_reference_lookup(&head, git, "refs/remotes/origin/HEAD") == 0 &&
		    git_reference_type(head) == GIT_REFERENCE_SYMBOLIC &&
		    strncmp(git_reference_symbolic_target(head), "refs/remotes/", 13) == 0)
			snprintf(def, deflen, "%s", git_reference_symbolic_target(head) + 13);
		git_reference_free(head);
	}
	git_error_clear();
	return rc;
}

bool worktree_branch_name_valid(const char *branch)
{
	long issue;

	return branch != NULL &&
	       strncmp(branch, GITREPO_BRANCH_PREFIX, sizeof(GITREPO_BRANCH_PREFIX) - 1) == 0 &&
	       gitrepo_parse_issue(branch + sizeof(GITREPO_BRANCH_PREFIX) - 1, &issue);
}

int worktree_branch_delete(const char *base, const char *owner, const char *name,
			   const char *branch, struct cause *cause)
{
	struct gitrepo r = {0};
	int rc;

	if (!worktree_branch_name_valid(branch))
		return cause_fail(cause, EINVAL, "only feat/issue-<N> branches can be deleted");
	rc = gitrepo_init(&r, base, owner, name, cause);
	if (rc < 0)
		return rc;
	return worktree_branch_delete_in(&r, branch, cause);
}

int worktree_branch_delete_in(struct gitrepo *r, const char *branch, struct cause *cause)
{
	char ref[GITREPO_REF_MAX], where[WORKTREE_PATH_MAX], def[GITREPO_REF_MAX];
	git_reference *br = NULL;
	git_revwalk *walk = NULL;
	size_t n = 0;
	int rc;

	if (!worktree_branch_name_valid(branch))
		return cause_fail(cause, EINVAL, "only feat/issue-<N> branches can be deleted");
	rc = git_repository_open_bare(&r->git, r->bare);
	if (rc < 0) {
		rc = cause_fail(cause, rc == GIT_ENOTFOUND ? ENOENT : gitrepo_errno(rc),
				"no clone of %s: %s", r->label, gitrepo_msg());
		goto out;
	}
	rc = git_branch_lookup(&br, r->git, branch, GIT_BRANCH_LOCAL);
	if (rc < 0) {
		rc = cause_fail(cause, gitrepo_errno(rc), "no branch %s in %s", branch, r->label);
		goto out;
	}
	snprintf(ref, sizeof(ref), "refs/heads/%s", branch);
	if (wt_prune_and_find(r->git, ref, where, sizeof(where))) {
		rc = cause_fail(cause, EBUSY, "branch %s is checked out in the worktree %s", branch,
				where);
		goto out;
	}
	rc = git_revwalk_new(&walk, r->git);
	if (rc == 0 && git_reference_target(br) != NULL)
		rc = git_revwalk_push(walk, git_reference_target(br));
	if (rc == 0)
		rc = wt_hide_origin(r->git, walk, branch, def, sizeof(def));
	if (rc == 0)
		rc = wt_walk_count(walk, &n);
	if (rc < 0) {
		rc = cause_fail(cause, gitrepo_errno(rc), "cannot read the history of %s in %s: %s",
				branch, r->label, gitrepo_msg());
		goto out;
	}
	if (n > 0) {
		rc =
		    cause_fail(cause, ENOTEMPTY,
			       "branch %s has %zu commit%s that neither origin/%s nor %s has (push "
			       "or merge %s first)",
			       branch, n, n == 1 ? "" : "s", branch, def, n == 1 ? "it" : "them");
		goto out;
	}
	rc = git_branch_delete(br);
	if (rc < 0)
		rc = cause_fail(cause, gitrepo_errno(rc), "cannot delete branch %s of %s: %s",
				branch, r->label, gitrepo_msg());
out:
	git_revwalk_free(walk);
	git_reference_free(br);
	git_repository_free(r->git);
	r->git = NULL;
	return rc;
}
