/*
 * The bare clones (libgit2 1.5, see integration notes §4): their paths and locks, clone and fetch
 * with prune, origin's URL and default branch, URL parsing; and what the git modules share (the
 * errno of a libgit2 failure, opening a clone, the issue number of a branch). Every call opens
 * its own repository objects and frees them before returning, because libgit2 objects are not
 * thread-safe and agentd-api calls in here from several threads.
 */
#include "gitrepo.h"

#include "fsutil.h"
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define GITREPO_ISSUE_DIGITS 10

int gitrepo_head_on(const struct gitrepo *r, git_repository *w, const char *path, const char *what,
		    const char *branch, struct cause *cause)
{
	char ref[GITREPO_REF_MAX];
	git_reference *head = NULL;
	const char *on;
	int rc;

	snprintf(ref, sizeof(ref), "refs/heads/%s", branch);
	rc = git_reference_lookup(&head, w, "HEAD");
	on = rc == 0 && git_reference_type(head) == GIT_REFERENCE_SYMBOLIC
		 ? git_reference_symbolic_target(head)
		 : "a detached HEAD";
	if (strcmp(on, ref) != 0)
		rc = cause_fail(cause, EEXIST, "path %s is a %s of %s on %s, not on %s", path, what,
				r->label, strncmp(on, "refs/heads/", 11) == 0 ? on + 11 : on,
				branch);
	else
		rc = 0;
	git_reference_free(head);
	return rc;
}

/* Maps a libgit2 return code to a negative errno. */
int gitrepo_errno(int rc)
{
	switch (rc) {
	case GIT_ENOTFOUND:
		return -ENOENT;
	case GIT_EEXISTS:
		return -EEXIST;
	case GIT_ELOCKED:
		return -EBUSY;
	case GIT_EAUTH:
	case GIT_ECERTIFICATE:
		return -EACCES;
	case GIT_EINVALIDSPEC:
		return -EINVAL;
	default:
		return -EIO;
	}
}

/* libgit2's message for the last failure of this thread (it can be NULL, e.g. after a failed
 * git_worktree_lookup). */
const char *gitrepo_msg(void)
{
	const git_error *e = git_error_last();

	return e != NULL && e->message != NULL ? e->message : "unknown libgit2 error";
}

/* Parses a canonical issue number (digits, no leading zero) in 1..SESSION_ISSUE_MAX. */
bool gitrepo_parse_issue(const char *s, long *out)
{
	long v = 0;
	size_t n;

	if (s[0] < '1' || s[0] > '9')
		return false;
	for (n = 0; s[n] != '\0'; n++) {
		if (s[n] < '0' || s[n] > '9' || n >= GITREPO_ISSUE_DIGITS)
			return false;
		v = v * 10 + (s[n] - '0');
	}
	if (!session_issue_valid(v))
		return false;
	*out = v;
	return true;
}

/* Whether libgit2 takes home as one directory: a search path is a ':'-separated list in which
 * "$PATH" stands for the previous value. */
static bool gitrepo_home_usable(const char *home)
{
	return home != NULL && home[0] == '/' && strchr(home, ':') == NULL &&
	       strstr(home, "$PATH") == NULL;
}

int worktree_global_init(const char *agent_home)
{
	char xdg[WORKTREE_PATH_MAX];
	const char *global = "";
	int r = git_libgit2_init();

	if (r < 0)
		return -EIO;
	/* agentd owns its repositories; libgit2's check gives misleading errors (notes §4.1). */
	if (git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, 0) < 0)
		return -EIO;
	/* libgit2 guessed both from HOME and XDG_CONFIG_HOME at its first init: the daemon's. An
	 * empty search path is one without any directory, so no file is read at that level. */
	if (gitrepo_home_usable(agent_home) &&
	    snprintf(xdg, sizeof(xdg), "%s/.config/git", agent_home) < (int)sizeof(xdg))
		global = agent_home;
	else
		xdg[0] = '\0';
	if (git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, GIT_CONFIG_LEVEL_GLOBAL, global) < 0 ||
	    git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, GIT_CONFIG_LEVEL_XDG, xdg) < 0)
		return -EIO;
	return 0;
}

int worktree_bare_path(const char *base, const char *owner, const char *name, char *out,
		       size_t outlen)
{
	int n = snprintf(out, outlen, "%s/.repos/%s/%s.git", base, owner, name);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

/* Validates owner/name (they become path components) and fills r's paths; opens nothing. */
int gitrepo_init(struct gitrepo *r, const char *base, const char *owner, const char *name,
		 struct cause *cause)
{
	r->git = NULL;
	if (!session_owner_valid(owner) || !session_name_valid(name))
		return cause_fail(cause, EINVAL, "invalid repository owner or name");
	snprintf(r->label, sizeof(r->label), "%s/%s", owner, name);
	if (worktree_bare_path(base, owner, name, r->bare, sizeof(r->bare)) < 0)
		return cause_fail(cause, ENAMETOOLONG,
				  "the path of the clone of %s under %s is too long", r->label,
				  base);
	return 0;
}

/* The one way to open the bare clone of owner/name. */
int gitrepo_open(struct gitrepo *r, const char *base, const char *owner, const char *name,
		 struct cause *cause)
{
	int rc = gitrepo_init(r, base, owner, name, cause);

	if (rc < 0)
		return rc;
	rc = git_repository_open_bare(&r->git, r->bare);
	if (rc < 0)
		return cause_fail(cause, gitrepo_errno(rc), "cannot open the clone of %s at %s: %s",
				  r->label, r->bare, gitrepo_msg());
	return 0;
}

int worktree_lock(const char *base, const char *owner, const char *name)
{
	struct gitrepo repo;
	char path[WORKTREE_PATH_MAX + sizeof(".lock")];
	int r;

	r = gitrepo_init(&repo, base, owner, name, NULL);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "%s.lock", repo.bare);
	r = fsutil_mkdir_parent(path);
	if (r < 0)
		return r;
	return fsutil_lock(path, LOCK_EX, 0600);
}

/* Clones into "<bare>.clone" and renames it into place, so an interrupted clone never leaves a
 * half-made repository at the bare path. */
static int gitrepo_clone(const struct gitrepo *r, const char *url, struct cause *cause)
{
	char tmp[WORKTREE_PATH_MAX + sizeof(".clone")];
	git_clone_options co;
	git_repository *git = NULL;
	int rc;

	snprintf(tmp, sizeof(tmp), "%s.clone", r->bare);
	rc = fsutil_mkdir_parent(r->bare);
	if (rc == 0)
		rc = fsutil_rm_tree(tmp);
	if (rc < 0)
		return cause_fail(cause, rc, "cannot prepare %s for the clone of %s: %s", tmp, url,
				  strerror(-rc));
	git_clone_options_init(&co, GIT_CLONE_OPTIONS_VERSION);
	co.bare = 1;
	co.fetch_opts.proxy_opts.type = GIT_PROXY_AUTO;
	rc = git_clone(&git, url, tmp, &co);
	if (rc < 0) {
		rc = cause_fail(cause, gitrepo_errno(rc), "clone of %s failed: %s", url,
				gitrepo_msg());
		fsutil_rm_tree(tmp);
		return rc;
	}
	git_repository_free(git);
	if (rename(tmp, r->bare) < 0) {
		rc = -errno;
		cause_set(cause, "cannot move the clone of %s to %s: %s", url, r->bare,
			  strerror(-rc));
		fsutil_rm_tree(tmp);
		return rc;
	}
	return 0;
}

/* Returns origin, creating it or correcting its URL: the configured URL is the source of truth. */
static int gitrepo_origin(const struct gitrepo *r, const char *url, git_remote **out,
			  struct cause *cause)
{
	const char *cur;
	int rc = git_remote_lookup(out, r->git, "origin");

	if (rc == GIT_ENOTFOUND)
		rc = git_remote_create(out, r->git, "origin", url);
	if (rc < 0)
		return cause_fail(cause, gitrepo_errno(rc), "cannot set up remote origin of %s: %s",
				  r->label, gitrepo_msg());
	cur = git_remote_url(*out);
	if (cur != NULL && strcmp(cur, url) == 0)
		return 0;
	git_remote_free(*out);
	*out = NULL;
	rc = git_remote_set_url(r->git, "origin", url);
	if (rc == 0)
		rc = git_remote_lookup(out, r->git, "origin");
	if (rc < 0)
		return cause_fail(cause, gitrepo_errno(rc),
				  "cannot set the URL of origin of %s: %s", r->label,
				  gitrepo_msg());
	return 0;
}

/* Fetch does not move refs/remotes/origin/HEAD: point it at the remote's default branch. */
static int gitrepo_update_origin_head(const struct gitrepo *r, git_remote *origin,
				      struct cause *cause)
{
	static const char heads[] = "refs/heads/";
	char want[GITREPO_REF_MAX];
	git_buf def = {0};
	git_reference *head = NULL, *set = NULL;
	git_oid oid;
	int rc = 0;

	if (git_remote_default_branch(&def, origin) < 0 ||
	    strncmp(def.ptr, heads, sizeof(heads) - 1) != 0)
		goto out; /* an empty remote, or a server that does not say: keep what we have */
	if (snprintf(want, sizeof(want), "refs/remotes/origin/%s", def.ptr + sizeof(heads) - 1) >=
		(int)sizeof(want) ||
	    git_reference_name_to_id(&oid, r->git, want) < 0)
		goto out;
	if (git_reference_lookup(&head, r->git, "refs/remotes/origin/HEAD") == 0 &&
	    git_reference_type(head) == GIT_REFERENCE_SYMBOLIC &&
	    strcmp(git_reference_symbolic_target(head), want) == 0)
		goto out;
	rc = git_reference_symbolic_create(&set, r->git, "refs/remotes/origin/HEAD", want, 1,
					   "agentd: origin default branch");
	if (rc < 0)
		rc =
		    cause_fail(cause, gitrepo_errno(rc), "cannot point origin/HEAD of %s at %s: %s",
			       r->label, want, gitrepo_msg());
out:
	git_reference_free(set);
	git_reference_free(head);
	git_buf_dispose(&def);
	return rc;
}

static int gitrepo_fetch(struct gitrepo *r, const char *url, struct cause *cause)
{
	git_remote *origin = NULL;
	git_fetch_options fo;
	int rc;

	rc = git_repository_open_bare(&r->git, r->bare);
	if (rc < 0)
		return cause_fail(cause, gitrepo_errno(rc),
				  "%s exists but is not a usable clone of %s (%s); move it away to "
				  "clone again",
				  r->bare, r->label, gitrepo_msg());
	rc = gitrepo_origin(r, url, &origin, cause);
	if (rc < 0)
		return rc;
	git_fetch_options_init(&fo, GIT_FETCH_OPTIONS_VERSION);
	fo.prune = GIT_FETCH_PRUNE;
	fo.proxy_opts.type = GIT_PROXY_AUTO;
	/* Nothing reads FETCH_HEAD (the remote-tracking refs are the result), and writing it is a
	 * file created on every creation. */
	fo.update_fetchhead = 0;
	rc = git_remote_fetch(origin, NULL, &fo, NULL);
	if (rc < 0) {
		/* Not fatal: work goes on from the last fetched state. */
		cause_set(cause, "fetch of %s failed: %s", url, gitrepo_msg());
		rc = 1;
	} else if (gitrepo_update_origin_head(r, origin, cause) < 0) {
		rc = 1;
	}
	git_remote_free(origin);
	return rc;
}

/* Notes a good clone or fetch of r (GITREPO_FETCHED_FILE); a failure only loses the note. */
static void gitrepo_mark_fetched(const struct gitrepo *r)
{
	char path[WORKTREE_PATH_MAX];
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", r->bare, GITREPO_FETCHED_FILE) >=
	    (int)sizeof(path))
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return;
	futimens(fd, NULL);
	close(fd);
}

int gitrepo_ensure(struct gitrepo *r, const char *url, struct cause *cause)
{
	struct stat st;
	int rc;

	if (url == NULL || url[0] == '\0')
		return cause_fail(cause, EINVAL, "no URL to clone %s from", r->label);
	if (stat(r->bare, &st) < 0) {
		rc = -errno;
		if (rc != -ENOENT)
			return cause_fail(cause, rc, "cannot use %s: %s", r->bare, strerror(-rc));
		rc = gitrepo_clone(r, url, cause);
	} else {
		rc = gitrepo_fetch(r, url, cause);
		git_repository_free(r->git);
		r->git = NULL;
	}
	if (rc == 0)
		gitrepo_mark_fetched(r);
	return rc;
}

int worktree_ensure_repo(const char *base, const char *owner, const char *name, const char *url,
			 struct cause *cause)
{
	struct gitrepo r;
	int rc = gitrepo_init(&r, base, owner, name, cause);

	return rc < 0 ? rc : gitrepo_ensure(&r, url, cause);
}

int worktree_remote_url(const char *path, char *out, size_t outlen, struct cause *cause)
{
	git_repository *repo = NULL;
	git_config *cfg = NULL;
	const char *url = NULL;
	int rc;

	if (path == NULL || path[0] == '\0')
		return cause_fail(cause, EINVAL, "no path");
	rc = git_repository_open_ext(&repo, path, 0, NULL);
	if (rc < 0)
		return cause_fail(cause, ENOENT, "%s is not inside a git repository: %s", path,
				  gitrepo_msg());
	/* The config key, not git_remote_lookup: libgit2 1.5.1 leaks PCRE2 match data on every
	 * remote lookup (fixed upstream by libgit2 PR #6382), and agentd-api runs for weeks. */
	if (git_repository_config_snapshot(&cfg, repo) < 0 ||
	    git_config_get_string(&url, cfg, "remote.origin.url") < 0)
		rc = cause_fail(cause, ENOENT, "the repository of %s has no remote origin", path);
	else if (strlen(url) >= outlen)
		rc = cause_fail(cause, ENAMETOOLONG, "the URL of origin of %s is too long", path);
	else
		rc = snprintf(out, outlen, "%s", url) < 0 ? -EIO : 0;
	git_config_free(cfg);
	git_repository_free(repo);
	return rc;
}

/* Finds the path part of url: after file:// (*local), after the authority of scheme://, or
 * after the ':' of scp-like user@host:path. NULL when it has none. */
static const char *gitrepo_url_path(const char *url, bool *local)
{
	const char *sep = strstr(url, "://"), *colon, *slash;

	*local = false;
	if (strncmp(url, "file://", 7) == 0 || url[0] == '/') {
		*local = true;
		return url[0] == '/' ? url : url + 7;
	}
	if (sep != NULL) {
		for (const char *p = url; p < sep; p++)
			if (!((*p >= 'a' && *p <= 'z') || *p == '+'))
				return NULL;
		slash = strchr(sep + 3, '/');
		return sep == url || slash == NULL || slash == sep + 3 ? NULL : slash;
	}
	colon = strchr(url, ':');
	slash = strchr(url, '/');
	if (colon == NULL || colon == url || (slash != NULL && slash < colon))
		return NULL;
	return colon + 1;
}

/* Copies [s, e) into out when it fits and ok(out) holds. */
static bool gitrepo_copy_part(const char *s, const char *e, char *out, size_t outlen,
			      bool (*ok)(const char *))
{
	size_t n = (size_t)(e - s);

	if (n + 1 > outlen)
		return false;
	memcpy(out, s, n);
	out[n] = '\0';
	return ok(out);
}

int worktree_parse_url(const char *url, char *owner, size_t owner_len, char *name, size_t name_len)
{
	const char *path, *end, *slash, *start;
	bool local;

	if (url == NULL || strnlen(url, WORKTREE_URL_MAX) >= WORKTREE_URL_MAX)
		return -EINVAL; /* callers keep URLs in char[WORKTREE_URL_MAX] */
	path = gitrepo_url_path(url, &local);
	if (path == NULL)
		return -EINVAL;
	end = path + strlen(path);
	while (end > path && end[-1] == '/')
		end--;
	if (end - path > 4 && memcmp(end - 4, ".git", 4) == 0)
		end -= 4;
	if (!local)
		while (path < end && *path == '/')
			path++; /* "ssh://host/o/n" and "host:/o/n" */
	slash = memrchr(path, '/', (size_t)(end - path));
	if (slash == NULL)
		return -EINVAL;
	start = memrchr(path, '/', (size_t)(slash - path));
	if (start != NULL && !local)
		return -EINVAL; /* a hosted URL carries exactly owner/name */
	start = start != NULL ? start + 1 : path;
	if (!gitrepo_copy_part(start, slash, owner, owner_len, session_owner_valid) ||
	    !gitrepo_copy_part(slash + 1, end, name, name_len, session_name_valid))
		return -EINVAL;
	return 0;
}
