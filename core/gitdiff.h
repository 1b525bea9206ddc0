/*
 * What a session changed, read with libgit2 from the repository opened at its worktree (never
 * from assumptions about where the clone lives): the diff of the worktree against the merge base
 * with the default branch (committed, staged, unstaged and untracked-not-ignored work together),
 * or against HEAD (uncommitted work only), and the commits since the merge base. Every output is
 * capped by a named limit and says what was cut. The caller holds the agent's file identity.
 */
#ifndef AGENTD_GITDIFF_H
#define AGENTD_GITDIFF_H

#include "cause.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* Files listed in a summary: a generated tree (node_modules not ignored) must not make an answer
 * of megabytes of names; the rest are counted, not listed. */
#define GITDIFF_FILES_MAX 2000
/* A side of a file bigger than this is not read at all (libgit2's max_size): it is shown as
 * binary and tooLarge, so a 50 MB generated file costs a stat, not a read and a diff. */
#define GITDIFF_FILE_BYTES_MAX (1024 * 1024)
/* Bytes of unified diff text in one answer: what a browser or a phone renders and a Telegram
 * document carries (50 MB) with room to spare. A file's patch that does not fit is left out whole.
 */
#define GITDIFF_TEXT_MAX (4 * 1024 * 1024)
/* Bytes of file content read for one answer (both sides of every file diffed): 2000 files of
 * just under GITDIFF_FILE_BYTES_MAX would be 4 GB. Past it, files are listed with their status
 * only (counted: false), the way git diff --stat would still name them. */
#define GITDIFF_READ_MAX (16 * 1024 * 1024)
/* Commits listed since the merge base: a branch longer than this is a rebase gone wrong. */
#define GITDIFF_COMMITS_MAX 500
/* Bytes of a commit's subject (its first paragraph, as git log --oneline shows it). */
#define GITDIFF_SUBJECT_MAX 512

enum gitdiff_base {
	GITDIFF_BASE_DEFAULT, /* the merge base of HEAD and the default branch */
	GITDIFF_BASE_HEAD,    /* HEAD: the uncommitted work only */
};

/* Parses the ?base= value: absent (NULL) or "default" or "HEAD". Returns 0 or -EINVAL. */
int gitdiff_parse_base(const char *s, enum gitdiff_base *out);

/*
 * The diff of the worktree at path against base, as the JSON docs/API.md describes for
 * GET /sessions/<id>/diff (base, head, files, totals, truncated, limits), the text capped at
 * text_max bytes (at most GITDIFF_TEXT_MAX: a client with less room asks less), with the unified
 * text in "diff" when with_text; *text (when not NULL) gets the same text, owned by the caller (NUL
 * terminated, *text_len bytes). Returns 0, -ENOENT (no repository at path), -ENODATA (no default
 * branch, no merge base, or HEAD unborn: cause says which), -ENOMEM or -EIO, with cause.
 */
int gitdiff_diff(const char *path, enum gitdiff_base base, size_t text_max, bool with_text,
		 json_object **out, char **text, size_t *text_len, struct cause *cause);

/*
 * The commits of HEAD not on the default branch, newest first (at most GITDIFF_COMMITS_MAX), as
 * {base, commits: [{id, subject, author: {name, email}, time}], truncated}. Returns as
 * gitdiff_diff.
 */
int gitdiff_commits(const char *path, json_object **out, struct cause *cause);

#endif
