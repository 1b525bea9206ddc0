/*
 * The inventory of what the bare clones hold: every <name>-issue-<N> worktree and every
 * feat/issue-<N> branch (compared with origin's, from local refs only) of every managed
 * repository, and the same branches of the stores of the store layout (gitstore.h), sorted by
 * owner, name and issue. Reads only; each call opens and frees its own
 * repository objects.
 */
#include "inventory.h"

#include "fsutil.h"
#include "gitrepo.h"
#include "session.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *worktree_sync_name(enum worktree_sync s)
{
	switch (s) {
	case WORKTREE_SYNCED:
		return "synced";
	case WORKTREE_LOCAL_ONLY:
		return "local-only";
	case WORKTREE_AHEAD:
		return "ahead";
	case WORKTREE_BEHIND:
		return "behind";
	case WORKTREE_DIVERGED:
		return "diverged";
	}
	return "unknown";
}

/* A growing array of fixed-size items, capped at WORKTREE_LIST_MAX. */
struct inventory_vec {
	void *items;
	size_t n, cap, size;
};

static int inventory_vec_push(struct inventory_vec *v, const void *item)
{
	if (v->n >= WORKTREE_LIST_MAX)
		return 0; /* the cap bounds memory; more than that many is not a real server */
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 16;
		void *p = reallocarray(v->items, cap, v->size);

		if (p == NULL)
			return -ENOMEM;
		v->items = p;
		v->cap = cap;
	}
	memcpy((char *)v->items + v->n * v->size, item, v->size);
	v->n++;
	return 0;
}

typedef int (*inventory_repo_cb)(git_repository *git, const char *owner, const char *name,
				 struct inventory_vec *v);

/* Calls cb for each <owner>/<name>.git under owner_dir that opens as a repository. */
static int inventory_foreach_in_owner(const char *owner_dir, const char *owner,
				      inventory_repo_cb cb, struct inventory_vec *v)
{
	char name[SESSION_NAME_MAX + 1], path[WORKTREE_PATH_MAX];
	DIR *d = opendir(owner_dir);
	struct dirent *e;
	int r = 0;

	if (d == NULL)
		return 0;
	while (r == 0 && (e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		git_repository *git = NULL;

		if (len <= 4 || len - 4 > SESSION_NAME_MAX || strcmp(e->d_name + len - 4, ".git"))
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(len - 4), e->d_name);
		if (!session_name_valid(name) || snprintf(path, sizeof(path), "%s/%s", owner_dir,
							  e->d_name) >= (int)sizeof(path))
			continue;
		if (git_repository_open_bare(&git, path) == 0)
			r = cb(git, owner, name, v);
		git_repository_free(git);
	}
	closedir(d);
	git_error_clear();
	return r;
}

/* Calls cb for every repository <repos>/<owner>/<name>.git: the bare clones under
 * <base>/.repos, or the stores under the store dir. */
static int inventory_foreach_repo(const char *repos, inventory_repo_cb cb, struct inventory_vec *v)
{
	char owner_dir[WORKTREE_PATH_MAX];
	struct dirent *e;
	DIR *d;
	int r = 0;

	d = opendir(repos);
	if (d == NULL)
		return errno == ENOENT ? 0 : -errno;
	while (r == 0 && (e = readdir(d)) != NULL) {
		if (!session_owner_valid(e->d_name) ||
		    snprintf(owner_dir, sizeof(owner_dir), "%s/%s", repos, e->d_name) >=
			(int)sizeof(owner_dir))
			continue;
		r = inventory_foreach_in_owner(owner_dir, e->d_name, cb, v);
	}
	closedir(d);
	return r;
}

/* The issue of a worktree directory named "<name>-issue-<N>", or 0. */
static long inventory_issue_of_path(const char *path, const char *name)
{
	const char *base = strrchr(path, '/');
	size_t nlen = strlen(name);
	long issue;

	base = base != NULL ? base + 1 : path;
	if (strncmp(base, name, nlen) != 0 || strncmp(base + nlen, "-issue-", 7) != 0 ||
	    !gitrepo_parse_issue(base + nlen + 7, &issue))
		return 0;
	return issue;
}

static int inventory_list_cb(git_repository *git, const char *owner, const char *name,
			     struct inventory_vec *v)
{
	git_strarray names = {0};
	int r = 0;

	if (git_worktree_list(&names, git) < 0)
		return 0;
	for (size_t i = 0; i < names.count && r == 0; i++) {
		struct worktree_entry e = {0};
		git_worktree *wt = NULL;

		if (git_worktree_lookup(&wt, git, names.strings[i]) == 0 &&
		    git_worktree_validate(wt) == 0 &&
		    strlen(git_worktree_path(wt)) < sizeof(e.path)) {
			snprintf(e.owner, sizeof(e.owner), "%s", owner);
			snprintf(e.name, sizeof(e.name), "%s", name);
			snprintf(e.path, sizeof(e.path), "%s", git_worktree_path(wt));
			e.issue = inventory_issue_of_path(e.path, name);
			if (e.issue > 0)
				r = inventory_vec_push(v, &e);
		}
		git_worktree_free(wt);
	}
	git_strarray_dispose(&names);
	return r;
}

static int inventory_cmp_key(const char *o1, const char *n1, long i1, const char *o2,
			     const char *n2, long i2)
{
	int c = strcmp(o1, o2);

	if (c == 0)
		c = strcmp(n1, n2);
	if (c == 0)
		c = (i1 > i2) - (i1 < i2);
	return c;
}

static int inventory_cmp_entry(const void *a, const void *b)
{
	const struct worktree_entry *x = a, *y = b;

	return inventory_cmp_key(x->owner, x->name, x->issue, y->owner, y->name, y->issue);
}

static int inventory_cmp_branch(const void *a, const void *b)
{
	const struct worktree_branch *x = a, *y = b;

	return inventory_cmp_key(x->owner, x->name, x->issue, y->owner, y->name, y->issue);
}

/* Runs cb over every repository under repos (NULL: base's .repos) and hands back the sorted
 * items. */
static int inventory_collect(const char *base, const char *repos, inventory_repo_cb cb, size_t size,
			     int (*cmp)(const void *, const void *), void **out, size_t *n)
{
	char clones[WORKTREE_PATH_MAX];
	struct inventory_vec v = {NULL, 0, 0, size};
	int r;

	*out = NULL;
	*n = 0;
	if (repos == NULL) {
		if (base == NULL)
			return -EINVAL;
		if (snprintf(clones, sizeof(clones), "%s/.repos", base) >= (int)sizeof(clones))
			return -ENAMETOOLONG;
		repos = clones;
	}
	r = inventory_foreach_repo(repos, cb, &v);
	if (r < 0) {
		free(v.items);
		return r;
	}
	if (v.n > 0)
		qsort(v.items, v.n, size, cmp);
	*out = v.items;
	*n = v.n;
	return 0;
}

int worktree_list(const char *base, struct worktree_entry **out, size_t *n)
{
	void *items;
	int r = inventory_collect(base, NULL, inventory_list_cb, sizeof(**out), inventory_cmp_entry,
				  &items, n);

	*out = items;
	return r;
}

int worktree_find(const char *base, const char *dir, struct worktree_entry *out)
{
	static const char sep[] = "-issue-";
	char name[SESSION_NAME_MAX + 1], want[WORKTREE_PATH_MAX];
	const char *last = NULL;
	struct worktree_entry *list;
	size_t n;
	long issue;
	int r;

	/* The last "-issue-": a repository may be named "my-issue-tracker". */
	for (const char *p = dir; (p = strstr(p, sep)) != NULL; p++)
		last = p;
	if (last == NULL || last == dir || (size_t)(last - dir) > SESSION_NAME_MAX)
		return -EINVAL;
	snprintf(name, sizeof(name), "%.*s", (int)(last - dir), dir);
	if (!session_name_valid(name) || !gitrepo_parse_issue(last + sizeof(sep) - 1, &issue))
		return -EINVAL;
	if (snprintf(want, sizeof(want), "%s/%s", base, dir) >= (int)sizeof(want))
		return -EINVAL;
	r = worktree_list(base, &list, &n);
	if (r < 0)
		return r;
	r = -ENOENT;
	for (size_t i = 0; i < n && r == -ENOENT; i++) {
		if (strcmp(list[i].name, name) != 0 || list[i].issue != issue ||
		    (strcmp(list[i].path, want) != 0 && !fsutil_same_file(list[i].path, want)))
			continue;
		*out = list[i];
		r = 0;
	}
	free(list);
	return r;
}

/* Compares a local branch with refs/remotes/origin/<same name>, from local refs only. */
int inventory_compare(git_repository *git, git_reference *local, const char *branch,
		      struct worktree_branch *b)
{
	char ref[GITREPO_REF_MAX];
	git_oid theirs;
	const git_oid *ours = git_reference_target(local);

	snprintf(ref, sizeof(ref), "refs/remotes/origin/%s", branch);
	if (ours == NULL || git_reference_name_to_id(&theirs, git, ref) < 0) {
		b->sync = WORKTREE_LOCAL_ONLY;
		return 0;
	}
	if (git_graph_ahead_behind(&b->ahead, &b->behind, git, ours, &theirs) < 0)
		return -EIO;
	if (b->ahead == 0 && b->behind == 0)
		b->sync = WORKTREE_SYNCED;
	else if (b->behind == 0)
		b->sync = WORKTREE_AHEAD;
	else if (b->ahead == 0)
		b->sync = WORKTREE_BEHIND;
	else
		b->sync = WORKTREE_DIVERGED;
	return 0;
}

static int inventory_branches_cb(git_repository *git, const char *owner, const char *name,
				 struct inventory_vec *v)
{
	git_branch_iterator *it = NULL;
	git_reference *ref = NULL;
	git_branch_t type;
	int r = 0;

	if (git_branch_iterator_new(&it, git, GIT_BRANCH_LOCAL) < 0)
		return 0;
	while (r == 0 && git_branch_next(&ref, &type, it) == 0) {
		struct worktree_branch b = {0};
		const char *bn = NULL;

		if (git_branch_name(&bn, ref) == 0 && strlen(bn) < sizeof(b.branch) &&
		    strncmp(bn, GITREPO_BRANCH_PREFIX, sizeof(GITREPO_BRANCH_PREFIX) - 1) == 0 &&
		    gitrepo_parse_issue(bn + sizeof(GITREPO_BRANCH_PREFIX) - 1, &b.issue) &&
		    inventory_compare(git, ref, bn, &b) == 0) {
			snprintf(b.owner, sizeof(b.owner), "%s", owner);
			snprintf(b.name, sizeof(b.name), "%s", name);
			snprintf(b.branch, sizeof(b.branch), "%s", bn);
			r = inventory_vec_push(v, &b);
		}
		git_reference_free(ref);
		ref = NULL;
	}
	git_branch_iterator_free(it);
	git_error_clear();
	return r;
}

int worktree_list_branches(const char *base, struct worktree_branch **out, size_t *n)
{
	void *items;
	int r = inventory_collect(base, NULL, inventory_branches_cb, sizeof(**out),
				  inventory_cmp_branch, &items, n);

	*out = items;
	return r;
}

int worktree_list_store_branches(const char *dir, struct worktree_branch **out, size_t *n)
{
	void *items;
	int r;

	if (dir == NULL || dir[0] == '\0') {
		*out = NULL;
		*n = 0;
		return 0;
	}
	r = inventory_collect(NULL, dir, inventory_branches_cb, sizeof(**out), inventory_cmp_branch,
			      &items, n);
	*out = items;
	return r;
}
