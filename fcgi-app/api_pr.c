/*
 * POST /sessions/<id>/pr: ships a session's work. Its branch is pushed to origin with libgit2 as
 * the agent (gitpush.h) with the session's own GitHub token, then the pull request is opened
 * through GitHub's REST API (github.h) and recorded in the session (`pr`). Idempotent: a session
 * that has a pull request gets it back (its branch pushed again, so new commits reach it), and a
 * 422 "already exists" of GitHub is answered with the one that exists. No lock is held while the
 * network is asked: the record is written under the lock at the end, from a fresh read.
 */
#include "api_pr.h"
#include "router.h"

#include "gitdiff.h"
#include "github.h"
#include "gitpush.h"
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API_PR_TITLE_MAX  256         /* GitHub shows about 70; 256 leaves room for any language */
#define API_PR_BODY_MAX   (64 * 1024) /* the request itself is at most APP_BODY_MAX */
#define API_PR_JSON_DEPTH 4
/* Commits listed in a default body: a reviewer reads a few; the PR's own tab lists them all. */
#define API_PR_BODY_COMMITS 20
#define API_PR_PATH_MAX     512

struct api_pr_input {
	const char *title, *body; /* NULL: the default */
	bool draft;
};

/* A string of the body without a hidden NUL, or NULL. */
static const char *api_pr_str(json_object *v)
{
	const char *s = json_object_get_string(v);

	return strlen(s) == (size_t)json_object_get_string_len(v) ? s : NULL;
}

/* Checks {"title"?, "body"?, "draft"?}. Returns true, or false after answering 400. */
static bool api_pr_parse(struct request *req, json_object *root, struct api_pr_input *in)
{
	memset(in, 0, sizeof(*in));
	if (root == NULL)
		return true;
	if (!json_object_is_type(root, json_type_object)) {
		request_error(req, 400, "invalid_request",
			      "the body must be an object {\"title\"?, \"body\"?, \"draft\"?}");
		return false;
	}
	json_object_object_foreach(root, key, v)
	{
		if (strcmp(key, "title") == 0) {
			if (!json_object_is_type(v, json_type_string) ||
			    (in->title = api_pr_str(v)) == NULL || in->title[0] == '\0' ||
			    strlen(in->title) > API_PR_TITLE_MAX) {
				request_error(req, 400, "invalid_title",
					      "title must be a string of 1 to %d bytes",
					      API_PR_TITLE_MAX);
				return false;
			}
		} else if (strcmp(key, "body") == 0) {
			if (!json_object_is_type(v, json_type_string) ||
			    (in->body = api_pr_str(v)) == NULL ||
			    strlen(in->body) > API_PR_BODY_MAX) {
				request_error(req, 400, "invalid_body",
					      "body must be a string of at most %d bytes",
					      API_PR_BODY_MAX);
				return false;
			}
		} else if (strcmp(key, "draft") == 0) {
			if (!json_object_is_type(v, json_type_boolean)) {
				request_error(req, 400, "invalid_draft",
					      "draft must be true or false");
				return false;
			}
			in->draft = json_object_get_boolean(v);
		} else {
			request_error(req, 400, "invalid_request",
				      "unknown field %.64s (title, body, draft)", key);
			return false;
		}
	}
	return true;
}

/* The base branch (origin/main -> main) of a gitdiff_commits answer. */
static void api_pr_base(json_object *commits, char *out, size_t outlen)
{
	json_object *base, *ref;
	const char *r = "main";

	if (json_object_object_get_ex(commits, "base", &base) &&
	    json_object_object_get_ex(base, "ref", &ref))
		r = json_object_get_string(ref);
	if (strncmp(r, "origin/", 7) == 0)
		r += 7;
	snprintf(out, outlen, "%s", r);
}

/*
 * The title and body GitHub gets: the client's, or made from the commits since the merge base
 * (newest first in commits): the oldest commit's subject, and "Closes #N" with the list.
 */
static json_object *api_pr_request(const struct session *s, const struct api_pr_input *in,
				   json_object *commits, const char *base)
{
	json_object *o = json_object_new_object(), *list = NULL, *c;
	char title[API_PR_TITLE_MAX + 1], *body = NULL;
	size_t n = 0, len = 0, cap = 0;

	json_object_object_get_ex(commits, "commits", &list);
	n = list != NULL ? json_object_array_length(list) : 0;
	if (in->title != NULL) {
		snprintf(title, sizeof(title), "%s", in->title);
	} else if (n > 0) {
		c = json_object_array_get_idx(list, n - 1);
		session_copy_cut(title, sizeof(title),
				 json_object_get_string(json_object_object_get(c, "subject")));
	} else {
		snprintf(title, sizeof(title), "Issue #%ld", s->issue);
	}
	json_object_object_add(o, "title", json_object_new_string(title));
	json_object_object_add(o, "head", json_object_new_string(s->branch));
	json_object_object_add(o, "base", json_object_new_string(base));
	json_object_object_add(o, "draft", json_object_new_boolean(in->draft));
	if (in->body != NULL) {
		json_object_object_add(o, "body", json_object_new_string(in->body));
		return o;
	}
	cap = 64 + (size_t)API_PR_BODY_COMMITS * (GITDIFF_SUBJECT_MAX + 16);
	if ((body = malloc(cap)) == NULL) {
		json_object_put(o);
		return NULL;
	}
	len = (size_t)snprintf(body, cap, "Closes #%ld\n", s->issue);
	if (n > 0)
		len += (size_t)snprintf(body + len, cap - len, "\nCommits:\n");
	for (size_t i = n; i > 0 && n - i < API_PR_BODY_COMMITS; i--) {
		c = json_object_array_get_idx(list, i - 1);
		len +=
		    (size_t)snprintf(body + len, cap - len, "- %.7s %s\n",
				     json_object_get_string(json_object_object_get(c, "id")),
				     json_object_get_string(json_object_object_get(c, "subject")));
		if (len >= cap)
			break;
	}
	if (n > API_PR_BODY_COMMITS && len < cap)
		snprintf(body + len, cap - len, "- … and %zu more\n", n - API_PR_BODY_COMMITS);
	json_object_object_add(o, "body", json_object_new_string(body));
	free(body);
	return o;
}

/* The number, html_url and state of a pull request object of GitHub into pr. Returns 0/-EINVAL. */
static int api_pr_from_github(json_object *p, struct session_pr *pr)
{
	json_object *num, *url, *state, *merged;

	if (p == NULL || !json_object_is_type(p, json_type_object) ||
	    !json_object_object_get_ex(p, "number", &num) ||
	    !json_object_is_type(num, json_type_int) || json_object_get_int64(num) <= 0 ||
	    json_object_get_int64(num) > INT32_MAX ||
	    !json_object_object_get_ex(p, "html_url", &url) ||
	    !json_object_is_type(url, json_type_string) ||
	    json_object_get_string_len(url) > SESSION_PR_URL_MAX)
		return -EINVAL;
	memset(pr, 0, sizeof(*pr));
	pr->number = (uint64_t)json_object_get_int64(num);
	snprintf(pr->url, sizeof(pr->url), "%s", json_object_get_string(url));
	pr->state = SESSION_PR_OPEN;
	if (json_object_object_get_ex(p, "merged", &merged) && json_object_get_boolean(merged))
		pr->state = SESSION_PR_MERGED;
	else if (json_object_object_get_ex(p, "state", &state) &&
		 strcmp(json_object_get_string(state), "closed") == 0)
		pr->state = SESSION_PR_CLOSED;
	return 0;
}

int api_pr_refresh(const struct app *app, struct session *s)
{
	char *token = NULL, path[API_PR_PATH_MAX];
	struct github_reply g = {0};
	struct cause cause = {{0}};
	struct session_pr now;
	int r = 0;

	if (s->pr.number == 0 || s->pr.state != SESSION_PR_OPEN)
		return 0;
	if ((token = malloc(GITHUB_TOKEN_MAX + 1)) == NULL)
		return -ENOMEM;
	if ((r = github_token(app->cfg, token, &cause)) < 0 || token[0] == '\0') {
		if (r < 0)
			log_warn("session %s: pull request not looked at: %s", s->id, cause.msg);
		r = 0;
		goto out;
	}
	snprintf(path, sizeof(path), "/repos/%s/%s/pulls/%" PRIu64, s->owner, s->name,
		 s->pr.number);
	if (github_call(app->cfg->github_api, token, "GET", path, NULL, NULL, &g, &cause) < 0)
		log_warn("session %s: pull request not looked at: %s", s->id, cause.msg);
	else if (g.status != 200 || api_pr_from_github(g.body, &now) < 0 ||
		 now.number != s->pr.number)
		log_warn("session %s: GitHub answered %ld for pull request #%" PRIu64 ": %s", s->id,
			 g.status, s->pr.number, g.message);
	else if (now.state != s->pr.state) {
		log_info("session %s: pull request #%" PRIu64 " %s", s->id, s->pr.number,
			 session_pr_state_name(now.state));
		s->pr.state = now.state;
		r = 1;
	}
out:
	github_reply_free(&g);
	if (token != NULL)
		explicit_bzero(token, GITHUB_TOKEN_MAX + 1);
	free(token);
	return r;
}

/* Answers 502 with what GitHub said (its status and message). */
static void api_pr_github_error(struct request *req, const char *what, const struct github_reply *g)
{
	request_error(req, 502, "github_error", "GitHub refused to %s: %ld %s", what, g->status,
		      g->message[0] != '\0' ? g->message : "(no message)");
}

/* The open pull request whose head is the session's branch, after a 422 "already exists". */
static int api_pr_lookup(const struct app *app, const struct session *s, const char *token,
			 struct session_pr *pr, struct github_reply *g, struct cause *cause)
{
	char path[API_PR_PATH_MAX];
	int r;

	snprintf(path, sizeof(path), "/repos/%s/%s/pulls?head=%s:%s&state=all", s->owner, s->name,
		 s->owner, s->branch);
	if ((r = github_call(app->cfg->github_api, token, "GET", path, NULL, NULL, g, cause)) < 0)
		return r;
	if (g->status != 200 || !json_object_is_type(g->body, json_type_array) ||
	    json_object_array_length(g->body) == 0)
		return cause_fail(cause, ENOENT,
				  "GitHub says a pull request exists but lists none");
	return api_pr_from_github(json_object_array_get_idx(g->body, 0), pr) < 0
		   ? cause_fail(cause, EINVAL, "GitHub's pull request is not readable")
		   : 0;
}

/* Answers a failed push: what git or the remote said, with a status that fits. */
static void api_pr_push_fail(struct request *req, const struct session *s, int r,
			     const struct cause *cause)
{
	if (r == -ENOENT)
		request_error(req, 409, "no_worktree", "session %s has no worktree: %s", s->id,
			      cause->msg);
	else if (r == -ENODATA)
		request_error(req, 409, "nothing_to_push", "%s", cause->msg);
	else if (r == -EACCES)
		request_error(req, 403, "push_denied", "cannot push %s: %s", s->branch, cause->msg);
	else if (r == -EPERM)
		request_error(req, 409, "push_rejected", "cannot push %s: %s", s->branch,
			      cause->msg);
	else
		request_error(req, 502, "push_failed", "cannot push %s: %s", s->branch, cause->msg);
}

/* Records pr in the session under its lock, from a fresh read. Returns 0 or -errno. */
static int api_pr_record(const struct app *app, const char *id, const struct session_pr *pr,
			 struct session *s, struct cause *cause)
{
	int fd = store_lock(&app->store, id), r;

	if (fd < 0)
		return cause_fail(cause, -fd, "cannot lock session %s", id);
	if ((r = store_read(&app->store, id, s, cause)) == 0 && s->pr.number != pr->number) {
		s->pr = *pr;
		r = store_write(&app->store, s, cause);
	}
	store_unlock(fd);
	return r;
}

static void api_pr_post(const struct app *app, struct request *req,
			const char *const args[ROUTER_MAX_ARGS])
{
	char *token = malloc(GITHUB_TOKEN_MAX + 1), head[41], base[128], path[API_PR_PATH_MAX];
	const char *cl = request_param_value(req, "CONTENT_LENGTH");
	struct session *s = malloc(sizeof(*s));
	struct github_reply g = {0};
	struct cause cause = {{0}};
	struct api_pr_input in;
	struct agentuser_fs fs;
	json_object *root = NULL, *commits = NULL, *ask = NULL;
	struct session_pr pr;
	bool created = false;
	int r;

	if (s == NULL || token == NULL) {
		request_error(req, 500, "out_of_memory", "out of memory");
		goto out;
	}
	token[0] = '\0';
	if (!session_id_valid(args[0])) {
		request_error(req, 400, "invalid_id",
			      "'%.120s' is not a session id (<name>-<issue>)", args[0]);
		goto out;
	}
	/* No body is the same as {}: every field has its default. */
	if (cl != NULL && strcmp(cl, "0") != 0 && cl[0] != '\0' &&
	    (root = request_json_body(req, APP_BODY_MAX, API_PR_JSON_DEPTH)) == NULL)
		goto out;
	if (!api_pr_parse(req, root, &in))
		goto out;
	if ((r = store_read(&app->store, args[0], s, &cause)) < 0) {
		if (r == -ENOENT)
			request_error(req, 404, "not_found", "no session %s", args[0]);
		else
			request_error(req, 500, "store_error", "%s", cause.msg);
		goto out;
	}
	if ((r = github_token(app->cfg, token, &cause)) < 0) {
		request_error(req, 500, "secrets_error", "%s", cause.msg);
		goto out;
	}
	if (token[0] == '\0') {
		request_error(req, 409, "no_token",
			      "no GitHub token for session %s: put GH_TOKEN in AGENTD_SECRETS_DIR "
			      "(%s) or in the daemons' environment (AGENTD_AGENT_ENV)",
			      s->id, app->cfg->secrets_dir);
		goto out;
	}
	if ((r = agentuser_fs_enter(&app->agent, &fs)) < 0) {
		request_error(req, 500, "git_error", "cannot take the agent user's identity: %s",
			      strerror(-r));
		goto out;
	}
	r = gitdiff_commits(s->worktree, &commits, &cause);
	if (r < 0) {
		agentuser_fs_leave(&fs);
		request_error(req, 409, r == -ENOENT ? "no_worktree" : "no_base", "%s", cause.msg);
		goto out;
	}
	r = gitpush_branch(s->worktree, s->branch, token, head, &cause);
	agentuser_fs_leave(&fs);
	if (r < 0) {
		api_pr_push_fail(req, s, r, &cause);
		goto out;
	}
	log_info("session %s: pushed %s at %.12s to origin", s->id, s->branch, head);
	if (s->pr.number != 0) {
		pr = s->pr;
		goto answer;
	}
	if (json_object_array_length(json_object_object_get(commits, "commits")) == 0) {
		request_error(req, 409, "no_commits",
			      "%s has no commit the default branch lacks: nothing to review",
			      s->branch);
		goto out;
	}
	api_pr_base(commits, base, sizeof(base));
	if ((ask = api_pr_request(s, &in, commits, base)) == NULL) {
		request_error(req, 500, "out_of_memory", "out of memory");
		goto out;
	}
	snprintf(path, sizeof(path), "/repos/%s/%s/pulls", s->owner, s->name);
	if ((r = github_call(app->cfg->github_api, token, "POST", path,
			     json_object_to_json_string_ext(ask, JSON_C_TO_STRING_PLAIN), NULL, &g,
			     &cause)) < 0) {
		request_error(req, 502, "github_unreachable", "%s", cause.msg);
		goto out;
	}
	if (g.status == 201 && api_pr_from_github(g.body, &pr) == 0) {
		created = true;
	} else if (g.status == 422 && strstr(g.message, "already exists") != NULL) {
		github_reply_free(&g);
		if ((r = api_pr_lookup(app, s, token, &pr, &g, &cause)) < 0) {
			if (g.status != 0 && g.status != 200)
				api_pr_github_error(req, "list the pull requests", &g);
			else
				request_error(req, 502, "github_error", "%s", cause.msg);
			goto out;
		}
	} else {
		api_pr_github_error(req, "open the pull request", &g);
		goto out;
	}
	if ((r = api_pr_record(app, s->id, &pr, s, &cause)) < 0) {
		request_error(
		    req, r == -ENOENT ? 404 : 500, r == -ENOENT ? "not_found" : "store_error",
		    "pull request #%" PRIu64 " opened, but not recorded: %s", pr.number, cause.msg);
		goto out;
	}
	pr = s->pr;
	log_info("session %s: pull request #%" PRIu64 " %s", s->id, pr.number, pr.url);
answer:
	request_reply(req, created ? 201 : 200, session_to_json(s, false), NULL);
out:
	github_reply_free(&g);
	json_object_put(ask);
	json_object_put(commits);
	json_object_put(root);
	if (token != NULL)
		explicit_bzero(token, GITHUB_TOKEN_MAX + 1);
	free(token);
	free(s);
}

const struct route api_pr_routes[] = {
    {"POST", "/sessions/*/pr", api_pr_post, true},
    {NULL, NULL, NULL, false},
};
