/*
 * The store layout (gitstore.h) with libgit2 1.5. libgit2 cannot clone with --shared, so the
 * session repository is initialised and given its alternates file by hand
 * (gitrepository-layout(5)), as `git clone --shared` would make it. Every call opens and frees its
 * own repository objects.
 */
#include "gitstore.h"
#include "gitstore_int.h"

#include "fsutil.h"
#include "gitcheckout.h"
#include "gitrepo.h"
#include "inventory.h"
#include "session.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <git2.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Directories nftw keeps open while opening up the store: its depth is a few levels. */
#define GITSTORE_NFTW_FDS 16
/* The store's directories: every agent reads the objects it borrows, none writes. */
#define GITSTORE_DIR_MODE 0755

int gitstore_path(const char *dir, const char *owner, const char *name, char *out, size_t outlen)
{
	int n;

	if (dir == NULL || dir[0] != '/' || !session_owner_valid(owner) ||
	    !session_name_valid(name))
		return -EINVAL;
	n = snprintf(out, outlen, "%s/%s/%s.git", dir, owner, name);
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

int gitstore_repo(struct gitrepo *r, const char *dir, const char *owner, const char *name,
		  struct cause *cause)
{
	int rc = gitstore_path(dir, owner, name, r->bare, sizeof(r->bare));

	r->git = NULL;
	if (rc < 0)
		return cause_fail(cause, -rc, "no usable store path for %s/%s under %s",
				  owner ? owner : "", name ? name : "", dir ? dir : "");
	snprintf(r->label, sizeof(r->label), "%s/%s", owner, name);
	return 0;
}

/* Creates the parents of path with GITSTORE_DIR_MODE whatever the umask. */
static int gitstore_mkdirs(const char *path)
{
	char p[WORKTREE_PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, path, len + 1);
	for (char *s = p + 1; *s != '\0'; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, GITSTORE_DIR_MODE) == 0) {
			if (chmod(p, GITSTORE_DIR_MODE) < 0)
				return -errno;
		} else if (errno != EEXIST) {
			return -errno;
		}
		*s = '/';
	}
	return 0;
}

int gitstore_lock(const char *dir, const char *owner, const char *name)
{
	char store[WORKTREE_PATH_MAX], path[WORKTREE_PATH_MAX + sizeof(".lock")];
	int r = gitstore_path(dir, owner, name, store, sizeof(store));

	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "%s.lock", store);
	if ((r = gitstore_mkdirs(path)) < 0)
		return r;
	return fsutil_lock(path, LOCK_EX, 0600);
}

/* Opens one file of the store to everyone for reading (directories for searching too). Only
 * adds bits: nothing the daemon set is taken away. */
static int gitstore_open_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	mode_t want;

	(void)ftw;
	if (type == FTW_D || type == FTW_DP)
		want = st->st_mode | 0555;
	else if (type == FTW_F)
		want = st->st_mode | 0444;
	else
		return 0; /* symlinks and the unreadable are left alone */
	if ((want & 07777) != (st->st_mode & 07777) && chmod(path, want & 07777) < 0)
		return errno; /* stops the walk; nftw returns it */
	return 0;
}

/* Makes the whole store readable by every agent, whatever the daemon's umask (UMask=0027 under
 * systemd made packs 0440, root's group): their git reads the objects through the alternates.
 * The store is mostly packs, so the walk is short. */
int gitstore_open_up(const char *root)
{
	int rc = nftw(root, gitstore_open_one, GITSTORE_NFTW_FDS, FTW_PHYS);

	return rc < 0 ? -errno : -rc;
}

int gitstore_ensure(const char *dir, const char *owner, const char *name, const char *url,
		    struct cause *cause)
{
	struct gitrepo r;
	git_repository *git = NULL;
	git_config *cfg = NULL;
	int rc = gitstore_repo(&r, dir, owner, name, cause), set;

	if (rc < 0)
		return rc;
	if ((rc = gitstore_mkdirs(r.bare)) < 0)
		return cause_fail(cause, -rc, "cannot make the store directory of %s under %s: %s",
				  r.label, dir, strerror(-rc));
	rc = gitrepo_ensure(&r, url, cause);
	if (rc < 0)
		return rc;
	/* Sessions' repositories borrow the store's objects, and a gc that pruned one they use
	 * would corrupt them (git-clone(1), --shared). */
	set = git_repository_open_bare(&git, r.bare);
	if (set == 0)
		set = git_repository_config(&cfg, git);
	if (set == 0)
		set = git_config_set_string(cfg, "gc.pruneExpire", "never");
	if (set == 0)
		set = git_config_set_string(cfg, "gc.reflogExpireUnreachable", "never");
	git_config_free(cfg);
	git_repository_free(git);
	if (set < 0)
		return cause_fail(cause, gitrepo_errno(set), "cannot configure the store of %s: %s",
				  r.label, gitrepo_msg());
	if ((set = gitstore_open_up(r.bare)) < 0)
		return cause_fail(cause, -set, "cannot open the store of %s to the agents: %s",
				  r.label, strerror(-set));
	return rc;
}

/* Reads path's objects/info/alternates and tells whether it names exactly the store's objects. */
bool gitstore_borrows(const char *store, const char *path)
{
	char file[WORKTREE_PATH_MAX + 64], want[WORKTREE_PATH_MAX + 16],
	    text[WORKTREE_PATH_MAX + 16];
	struct stat st;
	ssize_t n;
	int fd;

	/* The repository itself, never what a link the agent put at its path or at .git points at:
	 * a link is no session repository, and is left alone as an ordinary directory is. */
	snprintf(file, sizeof(file), "%s/.git", path);
	if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || lstat(file, &st) < 0 ||
	    !S_ISDIR(st.st_mode))
		return false;
	snprintf(file, sizeof(file), "%s/.git/objects/info/alternates", path);
	snprintf(want, sizeof(want), "%s/objects\n", store);
	fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n < 0)
		return false;
	text[n] = '\0';
	return strcmp(text, want) == 0;
}

bool gitstore_is_session(const char *dir, const char *owner, const char *name, const char *path)
{
	char store[WORKTREE_PATH_MAX];

	return path != NULL && gitstore_path(dir, owner, name, store, sizeof(store)) == 0 &&
	       gitstore_borrows(store, path);
}

/* An existing path is fine only when it is a session repository of this store on branch. */
static int gitstore_reuse(const struct gitrepo *r, const char *path, const char *branch,
			  struct cause *cause)
{
	git_repository *w = NULL;
	int rc;

	if (!gitstore_borrows(r->bare, path) ||
	    git_repository_open_ext(&w, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0) {
		rc = cause_fail(cause, EEXIST,
				"path %s exists and is not a repository of %s; move it away or "
				"remove it",
				path, r->label);
		goto out;
	}
	rc = gitrepo_head_on(r, w, path, "repository", branch, cause);
out:
	git_repository_free(w);
	return rc;
}

/* The start of the session's branch, read in the store: its own branch of that name (commits
 * an earlier session of the issue left there), else origin's, else origin's default branch. */
static int gitstore_start(const struct gitrepo *r, const char *branch, git_oid *oid,
			  bool *from_origin, struct cause *cause)
{
	char ref[GITREPO_REF_MAX];
	int rc;

	*from_origin = false;
	snprintf(ref, sizeof(ref), "refs/heads/%s", branch);
	if (git_reference_name_to_id(oid, r->git, ref) == 0)
		return 0;
	snprintf(ref, sizeof(ref), "refs/remotes/origin/%s", branch);
	if (git_reference_name_to_id(oid, r->git, ref) == 0) {
		*from_origin = true;
		return 0;
	}
	rc = git_reference_name_to_id(oid, r->git, "refs/remotes/origin/HEAD");
	if (rc < 0)
		return cause_fail(cause, gitrepo_errno(rc),
				  "origin's default branch of %s is unknown (%s); fetch it again",
				  r->label, gitrepo_msg());
	return 0;
}

/* Copies the store's refs/remotes/origin/ into w: `git log origin/main` and `git status`'s
 * ahead/behind work at once, and the objects are all borrowed. */
static int gitstore_copy_remote_refs(git_repository *store, git_repository *w)
{
	git_reference_iterator *it = NULL;
	git_reference *ref, *made;
	int rc = git_reference_iterator_glob_new(&it, store, "refs/remotes/origin/*");

	while (rc == 0 && (rc = git_reference_next(&ref, it)) == 0) {
		made = NULL;
		if (git_reference_type(ref) == GIT_REFERENCE_SYMBOLIC)
			rc = git_reference_symbolic_create(&made, w, git_reference_name(ref),
							   git_reference_symbolic_target(ref), 1,
							   "agentd: from the store");
		else
			rc = git_reference_create(&made, w, git_reference_name(ref),
						  git_reference_target(ref), 1,
						  "agentd: from the store");
		git_reference_free(made);
		git_reference_free(ref);
	}
	git_reference_iterator_free(it);
	return rc == GIT_ITEROVER ? 0 : rc;
}

/* Initialises path, writes its alternates, and sets HEAD's branch at start. */
static int gitstore_make(const struct gitrepo *r, const char *path, const char *branch,
			 const char *url, struct cause *cause)
{
	char file[WORKTREE_PATH_MAX + 64], text[WORKTREE_PATH_MAX + 16], upstream[GITREPO_REF_MAX];
	git_repository_init_options io;
	git_repository *w = NULL;
	git_reference *br = NULL;
	git_commit *start = NULL;
	bool from_origin;
	git_oid oid;
	int rc;

	if ((rc = gitstore_start(r, branch, &oid, &from_origin, cause)) < 0)
		return rc;
	git_repository_init_options_init(&io, GIT_REPOSITORY_INIT_OPTIONS_VERSION);
	io.flags = GIT_REPOSITORY_INIT_MKPATH | GIT_REPOSITORY_INIT_NO_REINIT;
	io.initial_head = branch;
	io.origin_url = url;
	if ((rc = git_repository_init_ext(&w, path, &io)) < 0)
		return cause_fail(cause, gitrepo_errno(rc), "cannot make the repository %s: %s",
				  path, gitrepo_msg());
	git_repository_free(w);
	w = NULL;
	snprintf(file, sizeof(file), "%s/.git/objects/info/alternates", path);
	snprintf(text, sizeof(text), "%s/objects\n", r->bare);
	if ((rc = fsutil_write_new(file, text, 0644)) < 0)
		return cause_fail(cause, -rc, "cannot write %s: %s", file, strerror(-rc));
	/* Opened again: the alternates are read when the object database is first used. */
	if ((rc = git_repository_open(&w, path)) < 0 ||
	    (rc = gitstore_copy_remote_refs(r->git, w)) < 0 ||
	    (rc = git_commit_lookup(&start, w, &oid)) < 0 ||
	    (rc = git_branch_create(&br, w, branch, start, 0)) < 0) {
		rc = cause_fail(cause, gitrepo_errno(rc), "cannot set up branch %s in %s: %s",
				branch, path, gitrepo_msg());
		goto out;
	}
	snprintf(upstream, sizeof(upstream), "origin/%s", branch);
	if (from_origin && git_branch_set_upstream(br, upstream) < 0)
		git_error_clear(); /* tracking is a convenience; the branch is right without it */
	if ((rc = gitcheckout_fresh(w, path, br)) < 0)
		rc = cause_fail(cause, gitrepo_errno(rc), "cannot check out %s in %s: %s", branch,
				path, gitrepo_msg());
out:
	git_commit_free(start);
	git_reference_free(br);
	git_repository_free(w);
	return rc;
}

int gitstore_session_add(const char *dir, const char *owner, const char *name, const char *path,
			 const char *branch, const char *url, struct cause *cause)
{
	struct gitrepo r;
	struct stat st;
	int valid = 0, rc;

	if (path == NULL || path[0] != '/' || strlen(path) >= WORKTREE_PATH_MAX - 64)
		return cause_fail(cause, EINVAL,
				  "worktree path must be absolute and shorter than %d",
				  WORKTREE_PATH_MAX - 64);
	if (branch == NULL || git_branch_name_is_valid(&valid, branch) < 0 || !valid ||
	    strlen(branch) >= GITREPO_REF_MAX - sizeof("refs/remotes/origin/"))
		return cause_fail(cause, EINVAL, "invalid branch name %s", branch ? branch : "");
	if ((rc = gitstore_repo(&r, dir, owner, name, cause)) < 0)
		return rc;
	if ((rc = git_repository_open_bare(&r.git, r.bare)) < 0)
		return cause_fail(cause, gitrepo_errno(rc), "cannot open the store of %s at %s: %s",
				  r.label, r.bare, gitrepo_msg());
	if (lstat(path, &st) == 0) {
		rc = gitstore_reuse(&r, path, branch, cause);
	} else if (errno != ENOENT) {
		rc = cause_fail(cause, errno, "cannot use %s: %s", path, strerror(errno));
	} else if ((rc = gitstore_make(&r, path, branch, url, cause)) < 0) {
		fsutil_rm_tree(path);
	}
	git_repository_free(r.git);
	return rc;
}

/* The list being built: at most WORKTREE_LIST_MAX entries, as the inventory. */
struct gitstore_vec {
	struct worktree_entry *items;
	size_t n, cap;
};

/* Adds every <base>/<name>-issue-<N> that borrows store. */
static int gitstore_list_store(const char *base, const char *store, const char *owner,
			       const char *name, struct gitstore_vec *v)
{
	size_t nlen = strlen(name);
	struct dirent *e;
	DIR *d = opendir(base);
	long issue;
	int r = 0;

	if (d == NULL)
		return errno == ENOENT ? 0 : -errno;
	while (r == 0 && (e = readdir(d)) != NULL) {
		struct worktree_entry *w;

		if (strncmp(e->d_name, name, nlen) != 0 ||
		    strncmp(e->d_name + nlen, "-issue-", 7) != 0 ||
		    !gitrepo_parse_issue(e->d_name + nlen + 7, &issue))
			continue;
		if (v->n == v->cap) {
			size_t cap = v->cap ? v->cap * 2 : 16;

			if (cap > WORKTREE_LIST_MAX) {
				r = -E2BIG;
				break;
			}
			if ((w = realloc(v->items, cap * sizeof(*w))) == NULL) {
				r = -ENOMEM;
				break;
			}
			v->items = w;
			v->cap = cap;
		}
		w = &v->items[v->n];
		memset(w, 0, sizeof(*w));
		if (snprintf(w->path, sizeof(w->path), "%s/%s", base, e->d_name) >=
			(int)sizeof(w->path) ||
		    !gitstore_borrows(store, w->path) ||
		    snprintf(w->owner, sizeof(w->owner), "%s", owner) >= (int)sizeof(w->owner) ||
		    snprintf(w->name, sizeof(w->name), "%s", name) >= (int)sizeof(w->name))
			continue;
		w->issue = issue;
		v->n++;
	}
	closedir(d);
	return r;
}

int gitstore_list(const char *base, const char *dir, struct worktree_entry **out, size_t *n)
{
	char owner_dir[WORKTREE_PATH_MAX], store[WORKTREE_PATH_MAX], name[SESSION_NAME_MAX + 1];
	struct gitstore_vec v = {NULL, 0, 0};
	struct dirent *o, *e;
	DIR *od, *d;
	int r = 0;

	*out = NULL;
	*n = 0;
	if (base == NULL || dir == NULL || dir[0] == '\0')
		return 0;
	if ((od = opendir(dir)) == NULL)
		return errno == ENOENT ? 0 : -errno;
	while (r == 0 && (o = readdir(od)) != NULL) {
		if (!session_owner_valid(o->d_name) ||
		    snprintf(owner_dir, sizeof(owner_dir), "%s/%s", dir, o->d_name) >=
			(int)sizeof(owner_dir) ||
		    (d = opendir(owner_dir)) == NULL)
			continue;
		while (r == 0 && (e = readdir(d)) != NULL) {
			size_t len = strlen(e->d_name);

			if (len <= 4 || len - 4 > SESSION_NAME_MAX ||
			    strcmp(e->d_name + len - 4, ".git") != 0)
				continue;
			snprintf(name, sizeof(name), "%.*s", (int)(len - 4), e->d_name);
			if (session_name_valid(name) &&
			    gitstore_path(dir, o->d_name, name, store, sizeof(store)) == 0)
				r = gitstore_list_store(base, store, o->d_name, name, &v);
		}
		closedir(d);
	}
	closedir(od);
	if (r < 0) {
		free(v.items);
		return r;
	}
	*out = v.items;
	*n = v.n;
	return 0;
}

/* The session repository's own branch feat/issue-<N> as b (b->owner, name, issue set by the
 * caller). Returns 1 with b filled, 0 when it has no such branch or cannot be read. */
static int gitstore_session_branch(const char *path, struct worktree_branch *b)
{
	git_repository *git = NULL;
	git_reference *ref = NULL;
	int r = 0;

	if (snprintf(b->branch, sizeof(b->branch), "%s%ld", GITREPO_BRANCH_PREFIX, b->issue) >=
		(int)sizeof(b->branch) ||
	    git_repository_open_ext(&git, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0)
		goto out;
	if (git_branch_lookup(&ref, git, b->branch, GIT_BRANCH_LOCAL) == 0 &&
	    inventory_compare(git, ref, b->branch, b) == 0)
		r = 1;
out:
	git_reference_free(ref);
	git_repository_free(git);
	git_error_clear();
	return r;
}

static int gitstore_cmp_branch(const void *a, const void *b)
{
	const struct worktree_branch *x = a, *y = b;
	int c = strcmp(x->owner, y->owner);

	if (c == 0)
		c = strcmp(x->name, y->name);
	return c != 0 ? c : (x->issue > y->issue) - (x->issue < y->issue);
}

int gitstore_list_branches(const char *base, const char *dir, struct worktree_branch **out,
			   size_t *n)
{
	struct worktree_branch *stores = NULL, *all = NULL;
	struct worktree_entry *repos = NULL;
	size_t ns = 0, nr = 0, k = 0;
	int r;

	*out = NULL;
	*n = 0;
	if ((r = worktree_list_store_branches(dir, &stores, &ns)) < 0 ||
	    (r = gitstore_list(base, dir, &repos, &nr)) < 0)
		goto out;
	if (ns + nr > 0 && (all = calloc(ns + nr, sizeof(*all))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nr; i++) {
		struct worktree_branch *b = &all[k];

		snprintf(b->owner, sizeof(b->owner), "%s", repos[i].owner);
		snprintf(b->name, sizeof(b->name), "%s", repos[i].name);
		b->issue = repos[i].issue;
		k += (size_t)gitstore_session_branch(repos[i].path, b);
	}
	for (size_t i = 0; i < ns; i++) {
		bool live = false;

		for (size_t j = 0; j < k && !live; j++)
			live = gitstore_cmp_branch(&all[j], &stores[i]) == 0;
		if (!live)
			all[k++] = stores[i];
	}
	if (k > 0)
		qsort(all, k, sizeof(*all), gitstore_cmp_branch);
	*out = all;
	*n = k;
	all = NULL;
out:
	free(all);
	free(stores);
	free(repos);
	return r;
}

int gitstore_find(const char *base, const char *dir, const char *name, struct worktree_entry *out)
{
	char want[WORKTREE_PATH_MAX];
	struct worktree_entry *list;
	size_t n;
	int r;

	if (snprintf(want, sizeof(want), "%s/%s", base, name) >= (int)sizeof(want))
		return -ENOENT;
	if ((r = gitstore_list(base, dir, &list, &n)) < 0)
		return r;
	r = -ENOENT;
	for (size_t i = 0; i < n && r < 0; i++) {
		if (strcmp(list[i].path, want) == 0) {
			*out = list[i];
			r = 0;
		}
	}
	free(list);
	return r;
}

int gitstore_parse_head(const char *text, char *out, size_t outlen)
{
	static const char prefix[] = "ref: refs/heads/";
	size_t len;

	if (strncmp(text, prefix, sizeof(prefix) - 1) != 0)
		return -EINVAL; /* detached (an object id) or not a HEAD at all */
	text += sizeof(prefix) - 1;
	len = strcspn(text, "\n");
	/* One line and nothing after it, as git writes it; anything else is not trusted. */
	if (len == 0 || len >= outlen || (text[len] == '\n' && text[len + 1] != '\0'))
		return -EINVAL;
	memcpy(out, text, len);
	out[len] = '\0';
	return 0;
}

int gitstore_checked_out(const char *base, const char *dir, const char *owner, const char *name,
			 const char *branch, char *where, size_t wherelen)
{
	/* "ref: refs/heads/" and a ref name: a longer HEAD is not on any branch agentd names. */
	char store[WORKTREE_PATH_MAX], file[WORKTREE_PATH_MAX + 16], text[GITREPO_REF_MAX + 32],
	    head[GITREPO_REF_MAX];
	long issue;
	ssize_t n;
	int fd, r;

	if (!worktree_branch_name_valid(branch))
		return -EINVAL;
	gitrepo_parse_issue(branch + sizeof(GITREPO_BRANCH_PREFIX) - 1, &issue);
	if ((r = gitstore_path(dir, owner, name, store, sizeof(store))) < 0)
		return r;
	r = snprintf(where, wherelen, "%s/%s-issue-%ld", base, name, issue);
	if (r < 0 || (size_t)r >= wherelen)
		return -ENAMETOOLONG;
	if (!gitstore_borrows(store, where))
		return 0;
	snprintf(file, sizeof(file), "%s/.git/HEAD", where);
	fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	text[n] = '\0';
	return gitstore_parse_head(text, head, sizeof(head)) == 0 && strcmp(head, branch) == 0;
}

int gitstore_branch_delete(const char *dir, const char *owner, const char *name, const char *branch,
			   struct cause *cause)
{
	struct gitrepo r;
	int rc;

	if (!worktree_branch_name_valid(branch))
		return cause_fail(cause, EINVAL, "only feat/issue-<N> branches can be deleted");
	if ((rc = gitstore_repo(&r, dir, owner, name, cause)) < 0)
		return rc;
	return worktree_branch_delete_in(&r, branch, cause);
}
