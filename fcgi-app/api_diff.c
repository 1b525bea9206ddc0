/*
 * What a session changed: GET /sessions/<id>/diff and GET /sessions/<id>/commits (gitdiff.h).
 * Reads only, so read-only identities may ask. The worktree is the agent's: libgit2 reads it with
 * the agent's filesystem identity (agentuser_fs_enter), the session record is read with ours.
 */
#include "router.h"

#include "cagecmd.h"
#include "gitdiff.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of a ?base= value: the longest accepted is "default". */
#define API_DIFF_BASE_MAX 16
/* Digits of a ?maxBytes= value: GITDIFF_TEXT_MAX has 7. */
#define API_DIFF_MAX_BYTES_DIGITS 8

/* True when the query names key at all (with or without a value), whatever its length. */
static bool api_query_has(const char *query, const char *key)
{
	size_t klen = strlen(key);

	for (const char *p = query; *p != '\0';) {
		size_t len = strcspn(p, "&");

		if (len >= klen && strncmp(p, key, klen) == 0 && (len == klen || p[klen] == '='))
			return true;
		p += len;
		if (*p == '&')
			p++;
	}
	return false;
}

/* Reads ?maxBytes= (1..GITDIFF_TEXT_MAX, plain digits) into out, GITDIFF_TEXT_MAX when absent.
 * Returns 0 or -EINVAL. */
static int api_diff_text_max(const struct request *req, size_t *out)
{
	char v[API_DIFF_MAX_BYTES_DIGITS + 1];
	const char *s = request_query(req, "maxBytes", v, sizeof(v));
	unsigned long n;

	*out = GITDIFF_TEXT_MAX;
	if (s == NULL)
		return api_query_has(req->query, "maxBytes") ? -EINVAL : 0;
	if (s[0] < '1' || s[0] > '9' || strspn(s, "0123456789") != strlen(s))
		return -EINVAL;
	n = strtoul(s, NULL, 10);
	if (n > GITDIFF_TEXT_MAX)
		return -EINVAL;
	*out = n;
	return 0;
}

/* Reads the session of args[0] into s, answering 400/404/500 itself. Returns true to go on. */
static bool api_diff_session(const struct app *app, struct request *req, const char *id,
			     struct session *s)
{
	struct cause cause = {{0}};
	int r;

	if (!session_id_valid(id)) {
		request_error(req, 400, "invalid_id",
			      "'%.120s' is not a session id (<name>-<issue>)", id);
		return false;
	}
	r = store_read(&app->store, id, s, &cause);
	if (r == -ENOENT)
		request_error(req, 404, "not_found", "no session %s", id);
	else if (r < 0)
		request_error(req, 500, "store_error", "%s", cause.msg);
	return r == 0;
}

/* Answers a failure of gitdiff_diff or gitdiff_commits. */
static void api_diff_fail(struct request *req, const struct session *s, int r,
			  const struct cause *cause)
{
	if (r == -ENOENT)
		request_error(req, 409, "no_worktree", "session %s has no worktree: %s", s->id,
			      cause->msg);
	else if (r == -ENODATA)
		request_error(req, 409, "no_base", "%s", cause->msg);
	else
		request_error(req, 500, "git_error", "%s", cause->msg);
}

/* True when the client asks for the unified text itself (Accept: text/x-diff). */
static bool api_diff_wants_text(const struct request *req)
{
	const char *accept = request_param_value(req, "HTTP_ACCEPT");

	return accept != NULL && strstr(accept, "text/x-diff") != NULL;
}

static void api_sessions_diff(const struct app *app, struct request *req,
			      const char *const args[ROUTER_MAX_ARGS])
{
	char value[API_DIFF_BASE_MAX], headers[256];
	const char *base_s = request_query(req, "base", value, sizeof(value));
	struct session *s = malloc(sizeof(*s));
	bool as_text = api_diff_wants_text(req);
	struct cause cause = {{0}};
	enum gitdiff_base base;
	struct agent_user au;
	struct agentuser_fs fs;
	json_object *o = NULL, *trunc;
	char *text = NULL;
	size_t len = 0, text_max;
	int r;

	if (s == NULL) {
		request_error(req, 500, "out_of_memory", "out of memory");
		return;
	}
	if (!api_diff_session(app, req, args[0], s))
		goto out;
	/* A value too long for the buffer reads as absent: it must not become the default. */
	if ((base_s == NULL && api_query_has(req->query, "base")) ||
	    gitdiff_parse_base(base_s, &base) < 0) {
		request_error(req, 400, "invalid_base",
			      "base must be \"default\" (the merge base with the default branch) "
			      "or \"HEAD\" (uncommitted work only)");
		goto out;
	}
	if (api_diff_text_max(req, &text_max) < 0) {
		request_error(req, 400, "invalid_max_bytes",
			      "maxBytes must be a number of bytes from 1 to %d", GITDIFF_TEXT_MAX);
		goto out;
	}
	cagecmd_user(app, s->uid, &au); /* the session's files: its own uid's when caged */
	if ((r = agentuser_fs_enter(&au, &fs)) < 0) {
		request_error(req, 500, "git_error", "cannot take the agent user's identity: %s",
			      strerror(-r));
		goto out;
	}
	r = gitdiff_diff(s->worktree, base, text_max, !as_text, &o, as_text ? &text : NULL, &len,
			 &cause);
	agentuser_fs_leave(&fs);
	if (r < 0) {
		api_diff_fail(req, s, r, &cause);
		goto out;
	}
	if (!as_text) {
		request_reply(req, 200, o, NULL);
		o = NULL;
		goto out;
	}
	/* The summary's word on what was cut travels in headers: the body is a plain diff. */
	trunc = json_object_object_get(o, "truncated");
	snprintf(headers, sizeof(headers),
		 "X-Agentd-Diff-Files: %" PRId64 "\r\nX-Agentd-Diff-Truncated: files=%" PRId64
		 "; diff=%s\r\n",
		 json_object_get_int64(
		     json_object_object_get(json_object_object_get(o, "totals"), "files")),
		 json_object_get_int64(json_object_object_get(trunc, "files")),
		 json_object_get_boolean(json_object_object_get(trunc, "diff")) ? "true" : "false");
	request_reply_bytes(req, 200, "text/x-diff; charset=utf-8", text, len, headers);
out:
	json_object_put(o);
	free(text);
	free(s);
}

static void api_sessions_commits(const struct app *app, struct request *req,
				 const char *const args[ROUTER_MAX_ARGS])
{
	struct session *s = malloc(sizeof(*s));
	struct cause cause = {{0}};
	struct agent_user au;
	struct agentuser_fs fs;
	json_object *o;
	int r;

	if (s == NULL) {
		request_error(req, 500, "out_of_memory", "out of memory");
		return;
	}
	if (!api_diff_session(app, req, args[0], s))
		goto out;
	cagecmd_user(app, s->uid, &au); /* the session's files: its own uid's when caged */
	if ((r = agentuser_fs_enter(&au, &fs)) < 0) {
		request_error(req, 500, "git_error", "cannot take the agent user's identity: %s",
			      strerror(-r));
		goto out;
	}
	r = gitdiff_commits(s->worktree, &o, &cause);
	agentuser_fs_leave(&fs);
	if (r < 0)
		api_diff_fail(req, s, r, &cause);
	else
		request_reply(req, 200, o, NULL);
out:
	free(s);
}

const struct route api_diff_routes[] = {
    {"GET", "/sessions/*/diff", api_sessions_diff, false},
    {"GET", "/sessions/*/commits", api_sessions_commits, false},
    {NULL, NULL, NULL, false},
};
