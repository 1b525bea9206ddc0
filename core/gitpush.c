/*
 * git push of one branch with libgit2 (gitpush.h). What the remote answers about each ref comes
 * back through push_update_reference; a rejection (a protected branch, a non-fast-forward) is
 * reported there and not as a failed git_remote_push, so both are looked at.
 */
#include "gitpush.h"

#include "gitrepo.h"

#include <errno.h>
#include <git2.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* What of the remote's side-band text is kept: its last line, a hook's refusal ("GH006: ..."). */
#define GITPUSH_SAID_MAX 512
/* A ref name: refs/heads/feat/issue-<10 digits> with room. */
#define GITPUSH_REFSPEC_MAX 256

struct gitpush_ctx {
	const char *token;
	int auth_tries;
	bool auth_failed;
	time_t deadline;
	char rejected[CAUSE_MAX];
	char said[GITPUSH_SAID_MAX]; /* the remote's last words on the side band (its hooks') */
};

static int gitpush_credentials(git_credential **out, const char *url, const char *user,
			       unsigned int allowed, void *payload)
{
	struct gitpush_ctx *c = payload;

	if (c->token == NULL || c->token[0] == '\0' || c->auth_tries >= GITPUSH_AUTH_TRIES ||
	    !(allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT)) {
		c->auth_failed = true;
		return GIT_EAUTH;
	}
	c->auth_tries++;
	/* GitHub takes any user name with a token as the password; this one documents itself. */
	return git_credential_userpass_plaintext_new(out, "x-access-token", c->token);
}

static int gitpush_update_reference(const char *refname, const char *status, void *payload)
{
	struct gitpush_ctx *c = payload;

	if (status != NULL && c->rejected[0] == '\0')
		snprintf(c->rejected, sizeof(c->rejected), "%s: %s", refname, status);
	return 0;
}

/* The remote's side-band text (what its hooks print): its last non-blank line is kept, without
 * control characters, to say with a rejection. */
static int gitpush_sideband(const char *str, int len, void *payload)
{
	struct gitpush_ctx *c = payload;
	size_t n = 0;
	int start = len;

	while (start > 0 && (str[start - 1] == '\n' || str[start - 1] == '\r'))
		start--;
	len = start;
	while (start > 0 && str[start - 1] != '\n' && str[start - 1] != '\r')
		start--;
	if (len - start <= 0)
		return 0;
	for (int i = start; i < len && n + 1 < sizeof(c->said); i++)
		c->said[n++] = (unsigned char)str[i] < 0x20 ? ' ' : str[i];
	c->said[n] = '\0';
	return 0;
}

static int gitpush_in_time(const struct gitpush_ctx *c)
{
	return time(NULL) > c->deadline ? GIT_EUSER : 0;
}

static int gitpush_transfer(unsigned int current, unsigned int total, size_t bytes, void *payload)
{
	return gitpush_in_time(payload);
}

static int gitpush_pack(int stage, uint32_t current, uint32_t total, void *payload)
{
	return gitpush_in_time(payload);
}

int gitpush_branch(const char *path, const char *branch, const char *token, char head[41],
		   struct cause *cause)
{
	char ref[GITPUSH_REFSPEC_MAX], spec[2 * GITPUSH_REFSPEC_MAX + 2];
	struct gitpush_ctx ctx = {.token = token, .deadline = time(NULL) + GITPUSH_SECONDS_MAX};
	git_push_options opts;
	git_strarray specs = {.count = 1};
	char *specp = spec;
	git_repository *repo = NULL;
	git_remote *remote = NULL;
	git_oid oid;
	int rc, r = 0;

	head[0] = '\0';
	git_push_options_init(&opts, GIT_PUSH_OPTIONS_VERSION);
	if ((size_t)snprintf(ref, sizeof(ref), "refs/heads/%s", branch) >= sizeof(ref))
		return cause_fail(cause, ENAMETOOLONG, "branch name too long");
	snprintf(spec, sizeof(spec), "%s:%s", ref, ref);
	specs.strings = &specp;
	/* NO_SEARCH: the worktree itself, never a repository above it (the base dir). */
	rc = git_repository_open_ext(&repo, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
	if (rc == GIT_ENOTFOUND)
		return cause_fail(cause, ENOENT, "no git repository at %s", path);
	if (rc < 0)
		return cause_fail(cause, EIO, "cannot open %s: %s", path, gitrepo_msg());
	if (git_reference_name_to_id(&oid, repo, ref) < 0) {
		r = cause_fail(cause, ENODATA, "the branch %s has no commit yet", branch);
		goto out;
	}
	git_oid_tostr(head, 41, &oid);
	if (git_remote_lookup(&remote, repo, "origin") < 0) {
		r = cause_fail(cause, ENODATA, "the repository has no remote origin");
		goto out;
	}
	opts.callbacks.credentials = gitpush_credentials;
	opts.callbacks.push_update_reference = gitpush_update_reference;
	opts.callbacks.sideband_progress = gitpush_sideband;
	opts.callbacks.push_transfer_progress = gitpush_transfer;
	opts.callbacks.pack_progress = gitpush_pack;
	opts.callbacks.payload = &ctx;
	rc = git_remote_push(remote, &specs, &opts);
	if (rc < 0 && ctx.auth_failed)
		r = cause_fail(cause, EACCES, "the remote refused the credentials%s: %s",
			       token == NULL || token[0] == '\0' ? " (no GH_TOKEN)" : "",
			       gitrepo_msg());
	else if (rc == GIT_ENONFASTFORWARD)
		/* libgit2 refuses before the remote is asked: origin's branch has commits this one
		 * lacks, a rejection as the remote's own would be. */
		r = cause_fail(cause, EPERM,
			       "origin's %s has commits this branch lacks (not a "
			       "fast-forward): %s",
			       branch, gitrepo_msg());
	else if (rc == GIT_EUSER)
		r = cause_fail(cause, ETIMEDOUT, "the push took longer than %d s",
			       GITPUSH_SECONDS_MAX);
	else if (rc < 0 && strstr(gitrepo_msg(), "403") != NULL)
		/* A 403 of an HTTPS remote: the token has no push rights to it. */
		r = cause_fail(cause, EACCES,
			       "origin refused the push (%s): the token has no right to push there",
			       gitrepo_msg());
	else if (rc < 0)
		r = cause_fail(cause, EIO, "push to origin failed: %s", gitrepo_msg());
	else if (ctx.rejected[0] != '\0')
		r = cause_fail(cause, EPERM, "origin rejected %s%s%s%s", ctx.rejected,
			       ctx.said[0] ? " (origin said: " : "", ctx.said,
			       ctx.said[0] ? ")" : "");
out:
	git_remote_free(remote);
	git_repository_free(repo);
	return r;
}
