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
#include "gitrepo.h"
#include "session.h"

#include <errno.h>
#include <git2.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WT_NAME_MAX 64
/* A checkout of at least WT_SPLIT_MIN files is split between WT_SPLIT_THREADS threads: writing
 * files is most of it, four fifths of that in the kernel (ext4 making inodes), which runs on both
 * cores (1,000 files on this machine's disk: 32 ms in one thread, 19-24 ms in two). */
#define WT_SPLIT_MIN     256
#define WT_SPLIT_THREADS 2
#define WT_SPLIT_FILES   1000000 /* a tree with more is checked out in one thread */
#define WT_PART_MSG_MAX  512

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

static int wt_find_gitattributes(const char *root, const git_tree_entry *e, void *payload)
{
	if (strcmp(git_tree_entry_name(e), ".gitattributes") == 0) {
		*(bool *)payload = true;
		return -1; /* stops the walk */
	}
	return 0;
}

/* True when some attribute or setting could make checkout convert a file (line endings, filter
 * drivers, ident): .gitattributes in the tree, the repository's info/attributes, a global
 * attributes file, core.autocrlf. Without any, checkout can skip the per-file attribute lookups,
 * which cost libgit2 a dozen system calls per file. Errors answer true (the safe side). */
static bool wt_filters_possible(const struct gitrepo *r, git_reference *br)
{
	char path[WORKTREE_PATH_MAX + 64];
	git_config *cfg = NULL;
	git_object *tree = NULL;
	git_buf buf = GIT_BUF_INIT, xdg = GIT_BUF_INIT;
	bool found = false;
	int autocrlf = 0, rc;

	snprintf(path, sizeof(path), "%s/info/attributes", r->bare);
	if (access(path, F_OK) == 0)
		return true;
	/* The global attributes file where libgit2 looks for it (worktree_global_init: the agent's
	 * HOME, not the daemon's environment); a list of directories is not worth parsing here. */
	if (git_libgit2_opts(GIT_OPT_GET_SEARCH_PATH, GIT_CONFIG_LEVEL_XDG, &xdg) < 0)
		found = true;
	else if (xdg.ptr != NULL && xdg.ptr[0] != '\0')
		found =
		    strchr(xdg.ptr, ':') != NULL ||
		    snprintf(path, sizeof(path), "%s/attributes", xdg.ptr) >= (int)sizeof(path) ||
		    access(path, F_OK) == 0;
	git_buf_dispose(&xdg);
	if (found)
		return true;
	if (git_repository_config_snapshot(&cfg, r->git) < 0)
		return true;
	if (git_config_get_string_buf(&buf, cfg, "core.attributesFile") != GIT_ENOTFOUND)
		found = true;
	else if ((rc = git_config_get_bool(&autocrlf, cfg, "core.autocrlf")) != GIT_ENOTFOUND &&
		 (rc < 0 || autocrlf))
		found = true; /* true, or "input" (not a boolean: an error) */
	git_buf_dispose(&buf);
	git_config_free(cfg);
	if (found)
		return true;
	if (git_reference_peel(&tree, br, GIT_OBJECT_TREE) < 0)
		return true;
	if (git_tree_walk((git_tree *)tree, GIT_TREEWALK_PRE, wt_find_gitattributes, &found) < 0 &&
	    !found)
		found = true;
	git_object_free(tree);
	return found;
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

/* The files of a tree, as paths from its root (blobs and submodule commits). */
struct wt_files {
	char **paths;
	size_t n, cap;
};

static int wt_collect(const char *root, const git_tree_entry *e, void *payload)
{
	struct wt_files *f = payload;
	git_object_t type = git_tree_entry_type(e);
	size_t len;

	if (type != GIT_OBJECT_BLOB && type != GIT_OBJECT_COMMIT)
		return 0;
	if (f->n == WT_SPLIT_FILES)
		return -1;
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 1024;
		char **p = realloc(f->paths, cap * sizeof(*p));

		if (p == NULL)
			return -1;
		f->paths = p;
		f->cap = cap;
	}
	len = strlen(root) + strlen(git_tree_entry_name(e)) + 1;
	if ((f->paths[f->n] = malloc(len)) == NULL)
		return -1;
	snprintf(f->paths[f->n++], len, "%s%s", root, git_tree_entry_name(e));
	return 0;
}

static void wt_files_free(struct wt_files *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->paths[i]);
	free(f->paths);
}

/* One thread's share of a split checkout: its own repository object (libgit2's are not
 * thread-safe), its paths, and the index entries its checkout made. */
struct wt_part {
	const char *path;
	const git_oid *tree;
	git_strarray paths;
	git_index *index;
	int rc;
	char msg[WT_PART_MSG_MAX]; /* libgit2 keeps its last error per thread */
};

static void *wt_checkout_part(void *arg)
{
	struct wt_part *p = arg;
	git_checkout_options co;
	git_repository *repo = NULL;
	git_tree *tree = NULL;

	git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
	/* The directory is new and empty: nothing in it to keep. The index is written once, from
	 * every part's entries. */
	co.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_DONT_WRITE_INDEX |
			       GIT_CHECKOUT_DISABLE_PATHSPEC_MATCH;
	co.disable_filters = 1;
	co.paths = p->paths;
	p->rc = git_repository_open(&repo, p->path);
	if (p->rc == 0)
		p->rc = git_tree_lookup(&tree, repo, p->tree);
	if (p->rc == 0)
		p->rc = git_checkout_tree(repo, (git_object *)tree, &co);
	if (p->rc == 0)
		p->rc = git_repository_index(&p->index, repo);
	if (p->rc < 0)
		snprintf(p->msg, sizeof(p->msg), "%s", gitrepo_msg());
	git_tree_free(tree);
	git_repository_free(repo);
	return NULL;
}

/*
 * Checks br out in the new worktree wt at path in WT_SPLIT_THREADS threads, each on its share of
 * the files, then writes the index once from their entries (stat data included, as a checkout
 * writes it). Only without filters (a plain copy of each blob). Returns 0, 1 when the tree is
 * small (nothing done: the caller checks out in one go), or a libgit2 error.
 */
static int wt_checkout_split(git_repository *wt, const char *path, git_reference *br)
{
	struct wt_part parts[WT_SPLIT_THREADS] = {{0}};
	pthread_t threads[WT_SPLIT_THREADS];
	bool threaded[WT_SPLIT_THREADS] = {false};
	struct wt_files files = {0};
	git_object *tree = NULL;
	git_index *index = NULL;
	size_t from = 0;
	int rc;

	if ((rc = git_reference_peel(&tree, br, GIT_OBJECT_TREE)) < 0)
		return rc;
	if (git_tree_walk((git_tree *)tree, GIT_TREEWALK_PRE, wt_collect, &files) < 0 ||
	    files.n < WT_SPLIT_MIN) {
		rc = 1;
		goto out;
	}
	for (size_t i = 0; i < WT_SPLIT_THREADS; i++) {
		struct wt_part *p = &parts[i];
		size_t to = files.n * (i + 1) / WT_SPLIT_THREADS;

		p->path = path;
		p->tree = git_object_id(tree);
		p->paths.strings = files.paths + from;
		p->paths.count = to - from;
		from = to;
		/* A thread that cannot start: its share is done here, after the others. */
		threaded[i] = pthread_create(&threads[i], NULL, wt_checkout_part, p) == 0;
	}
	for (size_t i = 0; i < WT_SPLIT_THREADS; i++) {
		if (threaded[i])
			pthread_join(threads[i], NULL);
		else
			wt_checkout_part(&parts[i]);
	}
	for (size_t i = 0; i < WT_SPLIT_THREADS && rc == 0; i++) {
		/* The first failure, told in this thread, where the caller reads it. */
		if ((rc = parts[i].rc) < 0)
			git_error_set_str(GIT_ERROR_CHECKOUT, parts[i].msg);
	}
	if (rc == 0)
		rc = git_repository_index(&index, wt);
	if (rc == 0)
		rc = git_index_clear(index);
	for (size_t i = 0; i < WT_SPLIT_THREADS && rc == 0; i++)
		for (size_t k = 0; k < git_index_entrycount(parts[i].index) && rc == 0; k++)
			rc = git_index_add(index, git_index_get_byindex(parts[i].index, k));
	if (rc == 0)
		rc = git_index_write(index);
	git_index_free(index);
	for (size_t i = 0; i < WT_SPLIT_THREADS; i++)
		git_index_free(parts[i].index);
out:
	wt_files_free(&files);
	git_object_free(tree);
	return rc;
}

/*
 * Makes the worktree name of r at path on branch br, as git_worktree_add does (the files of
 * gitrepository-layout(5): <common>/worktrees/<name>/{gitdir,commondir,HEAD} and <path>/.git),
 * then checks br out with co. Not git_worktree_add itself: libgit2 1.5 first asks whether the
 * branch is checked out anywhere by opening every worktree of the clone as a repository, about a
 * hundred system calls each on every creation, and wt_branch_free has answered that already.
 * Returns 0 or -errno with cause (what it made is wt_undo_add's to remove).
 */
static int wt_add(const struct gitrepo *r, const char *name, const char *path, git_reference *br,
		  const git_checkout_options *co, struct cause *cause)
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
		rc = co->disable_filters ? wt_checkout_split(wt, path, br) : 1;
	if (rc == 1)
		rc = git_checkout_head(wt, co);
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
	git_checkout_options co;
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
	/* As git_worktree_add's default: a safe checkout of the new worktree's HEAD. */
	git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
	co.disable_filters = !wt_filters_possible(r, br);
	if ((rc = wt_add(r, name, path, br, &co, cause)) < 0)
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
