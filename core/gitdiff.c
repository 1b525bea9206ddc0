/*
 * The diff and the commits of a session's worktree (gitdiff.h), with libgit2 only.
 */
#include "gitdiff.h"

#include "gitrepo.h"
#include "isotime.h"

#include <errno.h>
#include <git2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where the default branch is looked for, in order: what origin says its HEAD is, then the
 * usual names on the remote, then the same names locally (a repository with no remote). */
static const char *const gitdiff_default_refs[] = {
    "refs/remotes/origin/HEAD", "refs/remotes/origin/main", "refs/remotes/origin/master",
    "refs/heads/main",          "refs/heads/master",
};
#define GITDIFF_DEFAULT_REFS (sizeof(gitdiff_default_refs) / sizeof(gitdiff_default_refs[0]))

int gitdiff_parse_base(const char *s, enum gitdiff_base *out)
{
	if (s == NULL || strcmp(s, "default") == 0)
		*out = GITDIFF_BASE_DEFAULT;
	else if (strcmp(s, "HEAD") == 0)
		*out = GITDIFF_BASE_HEAD;
	else
		return -EINVAL;
	return 0;
}

static int gitdiff_open(git_repository **repo, const char *path, struct cause *cause)
{
	/* NO_SEARCH: the worktree itself, never a repository above it (the base dir). */
	int rc = git_repository_open_ext(repo, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);

	if (rc == GIT_ENOTFOUND)
		return cause_fail(cause, ENOENT, "no git repository at %s", path);
	if (rc < 0)
		return cause_fail(cause, gitrepo_errno(rc), "cannot open %s: %s", path,
				  gitrepo_msg());
	return 0;
}

/* The default branch's commit into oid and its short name into name. Returns 0 or -ENODATA. */
static int gitdiff_default_branch(git_repository *repo, git_oid *oid, char *name, size_t name_len,
				  struct cause *cause)
{
	for (size_t i = 0; i < GITDIFF_DEFAULT_REFS; i++) {
		git_reference *ref, *resolved;

		if (git_reference_lookup(&ref, repo, gitdiff_default_refs[i]) < 0)
			continue;
		if (git_reference_resolve(&resolved, ref) == 0) {
			snprintf(name, name_len, "%s", git_reference_shorthand(resolved));
			*oid = *git_reference_target(resolved);
			git_reference_free(resolved);
			git_reference_free(ref);
			return 0;
		}
		git_reference_free(ref);
	}
	return cause_fail(cause, ENODATA,
			  "no default branch: neither origin/HEAD nor a main or master branch");
}

static int gitdiff_head(git_repository *repo, git_oid *oid, struct cause *cause)
{
	int rc = git_reference_name_to_id(oid, repo, "HEAD");

	if (rc == GIT_ENOTFOUND || rc == GIT_EUNBORNBRANCH)
		return cause_fail(cause, ENODATA, "HEAD has no commit yet");
	if (rc < 0)
		return cause_fail(cause, gitrepo_errno(rc), "cannot read HEAD: %s", gitrepo_msg());
	return 0;
}

/* Resolves base into its commit and the {ref, commit} object that names it. */
static int gitdiff_resolve_base(git_repository *repo, enum gitdiff_base base, const git_oid *head,
				git_oid *out, json_object **base_json, struct cause *cause)
{
	char name[GITREPO_REF_MAX] = "HEAD", hex[GIT_OID_HEXSZ + 1];
	git_oid def;
	int r, rc;

	if (base == GITDIFF_BASE_HEAD) {
		*out = *head;
	} else {
		if ((r = gitdiff_default_branch(repo, &def, name, sizeof(name), cause)) < 0)
			return r;
		rc = git_merge_base(out, repo, head, &def);
		if (rc == GIT_ENOTFOUND)
			return cause_fail(cause, ENODATA, "HEAD and %s have no common commit",
					  name);
		if (rc < 0)
			return cause_fail(cause, gitrepo_errno(rc),
					  "cannot find the merge base: %s", gitrepo_msg());
	}
	git_oid_tostr(hex, sizeof(hex), out);
	*base_json = json_object_new_object();
	json_object_object_add(*base_json, "ref", json_object_new_string(name));
	json_object_object_add(*base_json, "commit", json_object_new_string(hex));
	return 0;
}

static const char *gitdiff_status(git_delta_t status)
{
	switch (status) {
	case GIT_DELTA_ADDED:
	case GIT_DELTA_UNTRACKED:
		return "added";
	case GIT_DELTA_DELETED:
		return "deleted";
	case GIT_DELTA_RENAMED:
		return "renamed";
	case GIT_DELTA_COPIED:
		return "copied";
	case GIT_DELTA_TYPECHANGE:
		return "typechange";
	default:
		return "modified";
	}
}

/* The growing unified text, capped at max (<= GITDIFF_TEXT_MAX), and the content read so far,
 * capped at GITDIFF_READ_MAX. */
struct gitdiff_text {
	size_t max;
	char *buf;
	size_t len;
	bool cut;
	size_t read;      /* bytes of content loaded */
	size_t uncounted; /* files listed without reading them (past GITDIFF_READ_MAX) */
};

/* What diffing d reads: the sides not over GITDIFF_FILE_BYTES_MAX (those are never read). A
 * side whose size is not known yet counts 0 here and its real size once read. */
static size_t gitdiff_cost(const git_diff_delta *d)
{
	size_t cost = 0;

	if (d->old_file.size <= GITDIFF_FILE_BYTES_MAX)
		cost += (size_t)d->old_file.size;
	if (d->new_file.size <= GITDIFF_FILE_BYTES_MAX)
		cost += (size_t)d->new_file.size;
	return cost;
}

/* The summary entry of d, with its line counts. */
static json_object *gitdiff_entry(const git_diff_delta *d, size_t a, size_t del, bool counted,
				  bool in_text)
{
	json_object *o = json_object_new_object();
	bool too_large =
	    d->old_file.size > GITDIFF_FILE_BYTES_MAX || d->new_file.size > GITDIFF_FILE_BYTES_MAX;

	json_object_object_add(o, "path", json_object_new_string(d->new_file.path));
	if (strcmp(d->old_file.path, d->new_file.path) != 0)
		json_object_object_add(o, "oldPath", json_object_new_string(d->old_file.path));
	json_object_object_add(o, "status", json_object_new_string(gitdiff_status(d->status)));
	json_object_object_add(o, "additions", json_object_new_int64((int64_t)a));
	json_object_object_add(o, "deletions", json_object_new_int64((int64_t)del));
	json_object_object_add(o, "binary",
			       json_object_new_boolean((d->flags & GIT_DIFF_FLAG_BINARY) != 0));
	json_object_object_add(o, "tooLarge", json_object_new_boolean(too_large));
	json_object_object_add(o, "counted", json_object_new_boolean(counted));
	json_object_object_add(o, "inDiff", json_object_new_boolean(in_text));
	return o;
}

/* Appends a whole patch, or nothing when it would pass the cap. Returns 1 added, 0 left out, or
 * -ENOMEM. */
static int gitdiff_text_add(struct gitdiff_text *t, const char *p, size_t n)
{
	if (t->len + n > t->max) {
		t->cut = true;
		return 0;
	}
	if (t->buf == NULL && (t->buf = malloc(t->max + 1)) == NULL)
		return -ENOMEM;
	memcpy(t->buf + t->len, p, n);
	t->len += n;
	t->buf[t->len] = '\0';
	return 1;
}

/* One file of the summary; its patch goes into t when there is room. */
static int gitdiff_file(git_diff *diff, size_t i, struct gitdiff_text *t, json_object *files,
			size_t *adds, size_t *dels)
{
	const git_diff_delta *d = git_diff_get_delta(diff, i);
	git_patch *patch = NULL;
	git_buf buf = {0};
	size_t a = 0, del = 0;
	int in_text = 0, rc, r = 0;

	if (t->read + gitdiff_cost(d) > GITDIFF_READ_MAX) {
		t->uncounted++;
		t->cut = true;
		json_object_array_add(files, gitdiff_entry(d, 0, 0, false, false));
		return 0;
	}
	if ((rc = git_patch_from_diff(&patch, diff, i)) < 0 ||
	    (rc = git_patch_line_stats(NULL, &a, &del, patch)) < 0 ||
	    (rc = git_patch_to_buf(&buf, patch)) < 0) {
		r = rc == GIT_ERROR && git_error_last() != NULL &&
			    git_error_last()->klass == GIT_ERROR_NOMEMORY
			? -ENOMEM
			: -EIO;
		goto out;
	}
	if ((in_text = gitdiff_text_add(t, buf.ptr, buf.size)) < 0) {
		r = in_text;
		goto out;
	}
	/* The flags and sizes are final only once the patch loaded the content (or decided by
	 * size). */
	d = git_patch_get_delta(patch);
	t->read += gitdiff_cost(d);
	json_object_array_add(files, gitdiff_entry(d, a, del, true, in_text == 1));
	*adds += a;
	*dels += del;
out:
	git_buf_dispose(&buf);
	git_patch_free(patch);
	return r;
}

static json_object *gitdiff_limits(size_t text_max)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "files", json_object_new_int64(GITDIFF_FILES_MAX));
	json_object_object_add(o, "fileBytes", json_object_new_int64(GITDIFF_FILE_BYTES_MAX));
	json_object_object_add(o, "diffBytes", json_object_new_int64((int64_t)text_max));
	json_object_object_add(o, "readBytes", json_object_new_int64(GITDIFF_READ_MAX));
	return o;
}

int gitdiff_diff(const char *path, enum gitdiff_base base, size_t text_max, bool with_text,
		 json_object **out, char **text, size_t *text_len, struct cause *cause)
{
	git_diff_options opts;
	struct gitdiff_text t = {.max = text_max < GITDIFF_TEXT_MAX ? text_max : GITDIFF_TEXT_MAX};
	git_repository *repo = NULL;
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	git_diff *diff = NULL;
	json_object *o = NULL, *files, *totals, *trunc, *base_json = NULL;
	git_oid head, base_oid;
	char hex[GIT_OID_HEXSZ + 1];
	size_t n, listed, adds = 0, dels = 0;
	int r, rc;

	*out = NULL;
	git_diff_options_init(&opts, GIT_DIFF_OPTIONS_VERSION);
	if ((r = gitdiff_open(&repo, path, cause)) < 0)
		return r;
	if ((r = gitdiff_head(repo, &head, cause)) < 0 ||
	    (r = gitdiff_resolve_base(repo, base, &head, &base_oid, &base_json, cause)) < 0)
		goto out;
	if ((rc = git_commit_lookup(&commit, repo, &base_oid)) < 0 ||
	    (rc = git_commit_tree(&tree, commit)) < 0) {
		r = cause_fail(cause, gitrepo_errno(rc), "cannot read the base tree: %s",
			       gitrepo_msg());
		goto out;
	}
	/* Committed, staged and unstaged work in one diff; untracked files with their content, as
	 * added, ignored ones not at all. */
	opts.flags = GIT_DIFF_INCLUDE_UNTRACKED | GIT_DIFF_RECURSE_UNTRACKED_DIRS |
		     GIT_DIFF_SHOW_UNTRACKED_CONTENT | GIT_DIFF_INCLUDE_TYPECHANGE;
	opts.max_size = GITDIFF_FILE_BYTES_MAX;
	if ((rc = git_diff_tree_to_workdir_with_index(&diff, repo, tree, &opts)) < 0) {
		r = cause_fail(cause, gitrepo_errno(rc), "cannot diff %s: %s", path, gitrepo_msg());
		goto out;
	}
	n = git_diff_num_deltas(diff);
	listed = n < GITDIFF_FILES_MAX ? n : GITDIFF_FILES_MAX;
	o = json_object_new_object();
	json_object_object_add(o, "base", base_json);
	base_json = NULL;
	git_oid_tostr(hex, sizeof(hex), &head);
	json_object_object_add(o, "head", json_object_new_string(hex));
	files = json_object_new_array_ext((int)listed);
	json_object_object_add(o, "files", files);
	for (size_t i = 0; i < listed; i++)
		if ((r = gitdiff_file(diff, i, &t, files, &adds, &dels)) < 0) {
			cause_set(cause, "cannot diff %s: %s", path,
				  r == -ENOMEM ? "out of memory" : gitrepo_msg());
			goto out;
		}
	totals = json_object_new_object();
	json_object_object_add(totals, "files", json_object_new_int64((int64_t)n));
	json_object_object_add(totals, "additions", json_object_new_int64((int64_t)adds));
	json_object_object_add(totals, "deletions", json_object_new_int64((int64_t)dels));
	json_object_object_add(o, "totals", totals);
	trunc = json_object_new_object();
	json_object_object_add(trunc, "files", json_object_new_int64((int64_t)(n - listed)));
	json_object_object_add(trunc, "diff", json_object_new_boolean(t.cut));
	json_object_object_add(trunc, "uncounted", json_object_new_int64((int64_t)t.uncounted));
	json_object_object_add(o, "truncated", trunc);
	json_object_object_add(o, "limits", gitdiff_limits(t.max));
	if (with_text)
		json_object_object_add(o, "diff",
				       json_object_new_string_len(t.buf ? t.buf : "", (int)t.len));
	if (text != NULL) {
		*text = t.buf != NULL ? t.buf : strdup("");
		*text_len = t.len;
		t.buf = NULL;
		if (*text == NULL) {
			r = cause_fail(cause, ENOMEM, "out of memory");
			goto out;
		}
	}
	*out = o;
	o = NULL;
	r = 0;
out:
	json_object_put(o);
	json_object_put(base_json);
	free(t.buf);
	git_diff_free(diff);
	git_tree_free(tree);
	git_commit_free(commit);
	git_repository_free(repo);
	return r;
}

static json_object *gitdiff_commit_json(const git_commit *c)
{
	const git_signature *a = git_commit_author(c);
	const char *summary = git_commit_summary((git_commit *)c);
	char hex[GIT_OID_HEXSZ + 1], when[32], subject[GITDIFF_SUBJECT_MAX];
	json_object *o = json_object_new_object(), *author = json_object_new_object();

	git_oid_tostr(hex, sizeof(hex), git_commit_id(c));
	snprintf(subject, sizeof(subject), "%s", summary != NULL ? summary : "");
	isotime_format((int64_t)a->when.time, when, sizeof(when));
	json_object_object_add(o, "id", json_object_new_string(hex));
	json_object_object_add(o, "subject", json_object_new_string(subject));
	json_object_object_add(author, "name", json_object_new_string(a->name ? a->name : ""));
	json_object_object_add(author, "email", json_object_new_string(a->email ? a->email : ""));
	json_object_object_add(o, "author", author);
	json_object_object_add(o, "time", json_object_new_string(when));
	return o;
}

int gitdiff_commits(const char *path, json_object **out, struct cause *cause)
{
	git_repository *repo = NULL;
	git_revwalk *walk = NULL;
	json_object *o = NULL, *arr, *base_json = NULL;
	git_oid head, base_oid, oid;
	size_t n = 0;
	bool truncated = false;
	int r, rc;

	*out = NULL;
	if ((r = gitdiff_open(&repo, path, cause)) < 0)
		return r;
	if ((r = gitdiff_head(repo, &head, cause)) < 0 ||
	    (r = gitdiff_resolve_base(repo, GITDIFF_BASE_DEFAULT, &head, &base_oid, &base_json,
				      cause)) < 0)
		goto out;
	if ((rc = git_revwalk_new(&walk, repo)) < 0 ||
	    (rc = git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME)) < 0 ||
	    (rc = git_revwalk_push(walk, &head)) < 0 ||
	    (rc = git_revwalk_hide(walk, &base_oid)) < 0) {
		r = cause_fail(cause, gitrepo_errno(rc), "cannot walk the commits: %s",
			       gitrepo_msg());
		goto out;
	}
	o = json_object_new_object();
	json_object_object_add(o, "base", base_json);
	base_json = NULL;
	arr = json_object_new_array();
	json_object_object_add(o, "commits", arr);
	while ((rc = git_revwalk_next(&oid, walk)) == 0) {
		git_commit *c;

		if (n == GITDIFF_COMMITS_MAX) {
			truncated = true;
			break;
		}
		if ((rc = git_commit_lookup(&c, repo, &oid)) < 0)
			break;
		json_object_array_add(arr, gitdiff_commit_json(c));
		git_commit_free(c);
		n++;
	}
	if (rc < 0 && rc != GIT_ITEROVER) {
		r = cause_fail(cause, gitrepo_errno(rc), "cannot walk the commits: %s",
			       gitrepo_msg());
		goto out;
	}
	json_object_object_add(o, "truncated", json_object_new_boolean(truncated));
	json_object_object_add(o, "limit", json_object_new_int64(GITDIFF_COMMITS_MAX));
	*out = o;
	o = NULL;
	r = 0;
out:
	json_object_put(o);
	json_object_put(base_json);
	git_revwalk_free(walk);
	git_repository_free(repo);
	return r;
}
