#include "gitcheckout.h"

#include "gitrepo.h"

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A checkout of at least GITCO_SPLIT_MIN files is split (1,000 files on this machine's disk: 32 ms
 * in one thread, 19-24 ms in two). */
#define GITCO_SPLIT_MIN   256
#define GITCO_THREADS     2
#define GITCO_SPLIT_FILES 1000000 /* a tree with more is checked out in one thread */
#define GITCO_MSG_MAX     512
#define GITCO_PATH_MAX    (PATH_MAX + 64)

static int gitco_find_gitattributes(const char *root, const git_tree_entry *e, void *payload)
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
static bool gitco_filters_possible(git_repository *repo, git_reference *br)
{
	char path[GITCO_PATH_MAX];
	git_config *cfg = NULL;
	git_object *tree = NULL;
	git_buf buf = GIT_BUF_INIT, xdg = GIT_BUF_INIT;
	bool found = false;
	int autocrlf = 0, rc;

	/* The common dir (a worktree's bare clone, or <path>/.git/) ends with '/'. */
	if (snprintf(path, sizeof(path), "%sinfo/attributes", git_repository_commondir(repo)) >=
		(int)sizeof(path) ||
	    access(path, F_OK) == 0)
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
	if (git_repository_config_snapshot(&cfg, repo) < 0)
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
	if (git_tree_walk((git_tree *)tree, GIT_TREEWALK_PRE, gitco_find_gitattributes, &found) <
		0 &&
	    !found)
		found = true;
	git_object_free(tree);
	return found;
}

/* The files of a tree, as paths from its root (blobs and submodule commits). */
struct gitco_files {
	char **paths;
	size_t n, cap;
};

static int gitco_collect(const char *root, const git_tree_entry *e, void *payload)
{
	struct gitco_files *f = payload;
	git_object_t type = git_tree_entry_type(e);
	size_t len;

	if (type != GIT_OBJECT_BLOB && type != GIT_OBJECT_COMMIT)
		return 0;
	if (f->n == GITCO_SPLIT_FILES)
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

static void gitco_files_free(struct gitco_files *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->paths[i]);
	free(f->paths);
}

/* One thread's share of a split checkout: its own repository object (libgit2's are not
 * thread-safe), its paths, and the index entries its checkout made. */
struct gitco_part {
	const char *path;
	const git_oid *tree;
	git_strarray paths;
	git_index *index;
	int rc;
	char msg[GITCO_MSG_MAX]; /* libgit2 keeps its last error per thread */
};

static void *gitco_part(void *arg)
{
	struct gitco_part *p = arg;
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
 * Checks br out in the new working directory of wt at path in GITCO_THREADS threads, each on its
 * share of the files, then writes the index once from their entries (stat data included, as a
 * checkout writes it). Only without filters (a plain copy of each blob). Returns 0, 1 when the tree
 * is small (nothing done: the caller checks out in one go), or a libgit2 error.
 */
static int gitco_split(git_repository *wt, const char *path, git_reference *br)
{
	struct gitco_part parts[GITCO_THREADS] = {{0}};
	pthread_t threads[GITCO_THREADS];
	bool threaded[GITCO_THREADS] = {false};
	struct gitco_files files = {0};
	git_object *tree = NULL;
	git_index *index = NULL;
	size_t from = 0;
	int rc;

	if ((rc = git_reference_peel(&tree, br, GIT_OBJECT_TREE)) < 0)
		return rc;
	if (git_tree_walk((git_tree *)tree, GIT_TREEWALK_PRE, gitco_collect, &files) < 0 ||
	    files.n < GITCO_SPLIT_MIN) {
		rc = 1;
		goto out;
	}
	for (size_t i = 0; i < GITCO_THREADS; i++) {
		struct gitco_part *p = &parts[i];
		size_t to = files.n * (i + 1) / GITCO_THREADS;

		p->path = path;
		p->tree = git_object_id(tree);
		p->paths.strings = files.paths + from;
		p->paths.count = to - from;
		from = to;
		/* A thread that cannot start: its share is done here, after the others. */
		threaded[i] = pthread_create(&threads[i], NULL, gitco_part, p) == 0;
	}
	for (size_t i = 0; i < GITCO_THREADS; i++) {
		if (threaded[i])
			pthread_join(threads[i], NULL);
		else
			gitco_part(&parts[i]);
	}
	for (size_t i = 0; i < GITCO_THREADS && rc == 0; i++) {
		/* The first failure, told in this thread, where the caller reads it. */
		if ((rc = parts[i].rc) < 0)
			git_error_set_str(GIT_ERROR_CHECKOUT, parts[i].msg);
	}
	if (rc == 0)
		rc = git_repository_index(&index, wt);
	if (rc == 0)
		rc = git_index_clear(index);
	for (size_t i = 0; i < GITCO_THREADS && rc == 0; i++)
		for (size_t k = 0; k < git_index_entrycount(parts[i].index) && rc == 0; k++)
			rc = git_index_add(index, git_index_get_byindex(parts[i].index, k));
	if (rc == 0)
		rc = git_index_write(index);
	git_index_free(index);
	for (size_t i = 0; i < GITCO_THREADS; i++)
		git_index_free(parts[i].index);
out:
	gitco_files_free(&files);
	git_object_free(tree);
	return rc;
}

int gitcheckout_fresh(git_repository *repo, const char *path, git_reference *br)
{
	git_checkout_options co;
	int rc;

	git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
	co.disable_filters = !gitco_filters_possible(repo, br);
	rc = co.disable_filters ? gitco_split(repo, path, br) : 1;
	return rc == 1 ? git_checkout_head(repo, &co) : rc;
}
