/*
 * gitdiff.c against real repositories (git_fixture.h): the worktree of a session against the merge
 * base with the default branch (committed, uncommitted, untracked, ignored), against HEAD, binary
 * and too large files, the cap of the text, the default branch without origin/HEAD, the commits.
 */
#include "git_fixture.h"

#include "gitdiff.h"

TestSuite(gitdiff, .init = setup, .fini = teardown);

/* The entry of files whose path is path, or NULL. */
static json_object *file_of(json_object *o, const char *path)
{
	json_object *files = json_object_object_get(o, "files");

	for (size_t i = 0; i < json_object_array_length(files); i++) {
		json_object *f = json_object_array_get_idx(files, i);

		if (strcmp(json_object_get_string(json_object_object_get(f, "path")), path) == 0)
			return f;
	}
	return NULL;
}

static int64_t num(json_object *o, const char *k)
{
	return json_object_get_int64(json_object_object_get(o, k));
}

static bool flag(json_object *o, const char *k)
{
	return json_object_get_boolean(json_object_object_get(o, k));
}

static const char *str(json_object *o, const char *k)
{
	return json_object_get_string(json_object_object_get(o, k));
}

static json_object *diff_of(const char *path, enum gitdiff_base base, char **text)
{
	struct cause c = {{0}};
	json_object *o;
	size_t len;
	int r = gitdiff_diff(path, base, GITDIFF_TEXT_MAX, true, &o, text, &len, &c);

	cr_assert_eq(r, 0, "gitdiff_diff: %d %s", r, c.msg);
	if (text != NULL)
		cr_assert_eq(strlen(*text), len);
	return o;
}

/* A worktree of issue 7 with: a commit (added.txt), README changed and not committed, an
 * untracked new.txt, an ignored x.log. */
static void dirty_worktree(char *path)
{
	char p[P_MAX * 2];

	ensure();
	add(7, path);
	commit_file(path, "added.txt", "one\ntwo\n");
	FMT(p, "%s/README", path);
	write_file(p, "hello\nworld\n");
	FMT(p, "%s/new.txt", path);
	write_file(p, "fresh\n");
	FMT(p, "%s/x.log", path);
	write_file(p, "ignored\n");
}

Test(gitdiff, parse_base)
{
	enum gitdiff_base b = GITDIFF_BASE_HEAD;

	cr_assert_eq(gitdiff_parse_base(NULL, &b), 0);
	cr_assert_eq(b, GITDIFF_BASE_DEFAULT);
	cr_assert_eq(gitdiff_parse_base("HEAD", &b), 0);
	cr_assert_eq(b, GITDIFF_BASE_HEAD);
	cr_assert_eq(gitdiff_parse_base("default", &b), 0);
	cr_assert_eq(b, GITDIFF_BASE_DEFAULT);
	cr_assert_eq(gitdiff_parse_base("head", &b), -EINVAL);
	cr_assert_eq(gitdiff_parse_base("", &b), -EINVAL);
	cr_assert_eq(gitdiff_parse_base("main", &b), -EINVAL);
	cr_assert_eq(gitdiff_parse_base("HEAD~1", &b), -EINVAL);
}

Test(gitdiff, committed_uncommitted_and_untracked_against_the_merge_base)
{
	char path[P_MAX], *text = NULL;
	json_object *o, *f, *totals;

	dirty_worktree(path);
	o = diff_of(path, GITDIFF_BASE_DEFAULT, &text);
	cr_assert_str_eq(str(json_object_object_get(o, "base"), "ref"), "origin/main");
	f = file_of(o, "added.txt");
	cr_assert_not_null(f, "committed file missing: %s", json_object_to_json_string(o));
	cr_assert_str_eq(str(f, "status"), "added");
	cr_assert_eq(num(f, "additions"), 2);
	cr_assert_eq(num(f, "deletions"), 0);
	cr_assert_not(flag(f, "binary"));
	f = file_of(o, "README");
	cr_assert_not_null(f);
	cr_assert_str_eq(str(f, "status"), "modified");
	cr_assert_eq(num(f, "additions"), 1);
	f = file_of(o, "new.txt");
	cr_assert_not_null(f, "untracked file missing");
	cr_assert_str_eq(str(f, "status"), "added");
	cr_assert_eq(num(f, "additions"), 1);
	cr_assert_null(file_of(o, "x.log"), "an ignored file is listed");
	totals = json_object_object_get(o, "totals");
	cr_assert_eq(num(totals, "files"), 3);
	cr_assert_eq(num(totals, "additions"), 4);
	cr_assert_eq(num(json_object_object_get(o, "truncated"), "files"), 0);
	cr_assert_not(flag(json_object_object_get(o, "truncated"), "diff"));
	cr_assert_not_null(strstr(text, "diff --git a/added.txt b/added.txt"));
	cr_assert_not_null(strstr(text, "+world\n"));
	cr_assert_not_null(strstr(text, "+fresh\n"));
	cr_assert_null(strstr(text, "x.log"));
	cr_assert_str_eq(str(o, "diff"), text);
	free(text);
	json_object_put(o);
}

Test(gitdiff, base_head_is_the_uncommitted_work_only)
{
	char path[P_MAX];
	json_object *o;

	dirty_worktree(path);
	o = diff_of(path, GITDIFF_BASE_HEAD, NULL);
	cr_assert_str_eq(str(json_object_object_get(o, "base"), "ref"), "HEAD");
	cr_assert_null(file_of(o, "added.txt"), "a committed file in ?base=HEAD");
	cr_assert_not_null(file_of(o, "README"));
	cr_assert_not_null(file_of(o, "new.txt"));
	cr_assert_eq(num(json_object_object_get(o, "totals"), "files"), 2);
	json_object_put(o);
}

Test(gitdiff, binary_and_too_large_files_are_not_diffed)
{
	char path[P_MAX], p[P_MAX * 2], *text = NULL;
	json_object *o, *f;
	FILE *out;

	ensure();
	add(7, path);
	FMT(p, "%s/blob.bin", path);
	out = fopen(p, "w");
	cr_assert_not_null(out);
	fwrite("\0\1\2\3binary\0", 1, 11, out);
	fclose(out);
	/* Text, but over the limit: must not be read, let alone diffed line by line. */
	FMT(p, "%s/huge.txt", path);
	out = fopen(p, "w");
	cr_assert_not_null(out);
	for (size_t i = 0; i < GITDIFF_FILE_BYTES_MAX / 8 + 10; i++)
		fputs("0123456\n", out);
	fclose(out);
	o = diff_of(path, GITDIFF_BASE_DEFAULT, &text);
	f = file_of(o, "blob.bin");
	cr_assert_not_null(f);
	cr_assert(flag(f, "binary"));
	cr_assert_not(flag(f, "tooLarge"));
	f = file_of(o, "huge.txt");
	cr_assert_not_null(f);
	cr_assert(flag(f, "binary"), "%s", json_object_to_json_string(f));
	cr_assert(flag(f, "tooLarge"));
	cr_assert_eq(num(f, "additions"), 0);
	cr_assert_lt(strlen(text), 4096, "a too large file's content is in the text");
	free(text);
	json_object_put(o);
}

Test(gitdiff, the_text_is_capped_and_says_what_was_left_out)
{
	char path[P_MAX], p[P_MAX * 2], *text = NULL;
	size_t per_file = GITDIFF_FILE_BYTES_MAX - 4096, nfiles = GITDIFF_TEXT_MAX / per_file + 1;
	size_t out_of_text = 0;
	json_object *o, *files;

	ensure();
	add(7, path);
	for (size_t i = 0; i < nfiles; i++) {
		FILE *out;

		FMT(p, "%s/f%zu.txt", path, i);
		out = fopen(p, "w");
		cr_assert_not_null(out);
		for (size_t j = 0; j < per_file / 8; j++)
			fputs("abcdefg\n", out);
		fclose(out);
	}
	o = diff_of(path, GITDIFF_BASE_DEFAULT, &text);
	cr_assert_leq(strlen(text), GITDIFF_TEXT_MAX);
	cr_assert(flag(json_object_object_get(o, "truncated"), "diff"));
	files = json_object_object_get(o, "files");
	cr_assert_eq(json_object_array_length(files), nfiles);
	for (size_t i = 0; i < nfiles; i++)
		if (!flag(json_object_array_get_idx(files, i), "inDiff"))
			out_of_text++;
	cr_assert_geq(out_of_text, 1);
	/* Every file still counts its lines: the summary is whole, only the text is cut. */
	cr_assert_eq(num(json_object_object_get(o, "totals"), "additions"),
		     (int64_t)(nfiles * (per_file / 8)));
	free(text);
	json_object_put(o);
}

Test(gitdiff, default_branch_without_origin_head)
{
	char p[P_MAX * 2];
	json_object *o;

	/* The upstream work repository: no refs/remotes at all, its main is the default. */
	GIT(fx.up, "checkout", "-q", "-b", "feat/issue-3");
	commit_file(fx.up, "work.c", "int x;\n");
	FMT(p, "%s/README", fx.up);
	write_file(p, "changed\n");
	o = diff_of(fx.up, GITDIFF_BASE_DEFAULT, NULL);
	cr_assert_str_eq(str(json_object_object_get(o, "base"), "ref"), "main");
	cr_assert_not_null(file_of(o, "work.c"));
	cr_assert_not_null(file_of(o, "README"));
	json_object_put(o);
}

Test(gitdiff, no_repository_and_no_default_branch)
{
	struct cause c = {{0}};
	json_object *o;
	char dir[P_MAX];

	cr_assert_eq(
	    gitdiff_diff(fx.tmp, GITDIFF_BASE_DEFAULT, GITDIFF_TEXT_MAX, true, &o, NULL, NULL, &c),
	    -ENOENT);
	cr_assert_null(o);
	FMT(dir, "%s/lonely", fx.tmp);
	GIT(NULL, "init", "-q", "-b", "trunk", dir);
	commit_file(dir, "a", "a\n");
	cr_assert_eq(
	    gitdiff_diff(dir, GITDIFF_BASE_DEFAULT, GITDIFF_TEXT_MAX, true, &o, NULL, NULL, &c),
	    -ENODATA);
	cr_assert_not_null(strstr(c.msg, "default branch"), "%s", c.msg);
	/* HEAD needs no default branch. */
	cr_assert_eq(
	    gitdiff_diff(dir, GITDIFF_BASE_HEAD, GITDIFF_TEXT_MAX, true, &o, NULL, NULL, &c), 0);
	json_object_put(o);
	cr_assert_eq(gitdiff_commits(dir, &o, &c), -ENODATA);
}

Test(gitdiff, commits_since_the_merge_base)
{
	char path[P_MAX];
	struct cause c = {{0}};
	json_object *o, *arr, *first;

	ensure();
	add(7, path);
	commit_file(path, "one.txt", "1\n");
	commit_file(path, "two.txt", "2\n");
	cr_assert_eq(gitdiff_commits(path, &o, &c), 0, "%s", c.msg);
	arr = json_object_object_get(o, "commits");
	cr_assert_eq(json_object_array_length(arr), 2, "%s", json_object_to_json_string(o));
	first = json_object_array_get_idx(arr, 0);
	cr_assert_str_eq(str(first, "subject"), "two.txt");
	cr_assert_eq(strlen(str(first, "id")), 40);
	cr_assert_str_eq(str(json_object_object_get(first, "author"), "name"), "Test");
	cr_assert_not_null(strchr(str(first, "time"), 'T'));
	cr_assert_str_eq(str(json_object_array_get_idx(arr, 1), "subject"), "one.txt");
	cr_assert_not(flag(o, "truncated"));
	json_object_put(o);
}

Test(gitdiff, a_smaller_text_cap_is_kept_and_said)
{
	char path[P_MAX], *text = NULL;
	struct cause c = {{0}};
	json_object *o;
	size_t len;

	dirty_worktree(path);
	cr_assert_eq(gitdiff_diff(path, GITDIFF_BASE_DEFAULT, 10, true, &o, &text, &len, &c), 0);
	cr_assert_eq(len, 0, "a patch longer than the cap went in: %s", text);
	cr_assert(flag(json_object_object_get(o, "truncated"), "diff"));
	cr_assert_eq(num(json_object_object_get(o, "limits"), "diffBytes"), 10);
	cr_assert_eq(num(json_object_object_get(o, "totals"), "files"), 3);
	free(text);
	json_object_put(o);
	/* More than the module's own cap is its cap. */
	cr_assert_eq(gitdiff_diff(path, GITDIFF_BASE_DEFAULT, SIZE_MAX, true, &o, NULL, NULL, &c),
		     0);
	cr_assert_eq(num(json_object_object_get(o, "limits"), "diffBytes"), GITDIFF_TEXT_MAX);
	json_object_put(o);
}

Test(gitdiff, content_read_is_capped_and_the_rest_listed_uncounted)
{
	char path[P_MAX], p[P_MAX * 2];
	size_t per_file = GITDIFF_FILE_BYTES_MAX - 4096, nfiles = GITDIFF_READ_MAX / per_file + 3;
	size_t uncounted = 0;
	json_object *o, *files;

	ensure();
	add(7, path);
	for (size_t i = 0; i < nfiles; i++) {
		FILE *out;

		FMT(p, "%s/g%03zu.txt", path, i);
		out = fopen(p, "w");
		cr_assert_not_null(out);
		for (size_t j = 0; j < per_file / 8; j++)
			fputs("abcdefg\n", out);
		fclose(out);
	}
	o = diff_of(path, GITDIFF_BASE_DEFAULT, NULL);
	files = json_object_object_get(o, "files");
	cr_assert_eq(json_object_array_length(files), nfiles, "every file is listed");
	for (size_t i = 0; i < nfiles; i++) {
		json_object *f = json_object_array_get_idx(files, i);

		if (!flag(f, "counted")) {
			uncounted++;
			cr_assert_eq(num(f, "additions"), 0);
			cr_assert_not(flag(f, "inDiff"));
		}
	}
	cr_assert_geq(uncounted, 2, "read past GITDIFF_READ_MAX");
	cr_assert_eq(num(json_object_object_get(o, "truncated"), "uncounted"), (int64_t)uncounted);
	cr_assert(flag(json_object_object_get(o, "truncated"), "diff"));
	json_object_put(o);
}
