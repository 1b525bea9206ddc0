/*
 * GET /repos: the repositories this server already has, so a client can offer them when a task
 * starts (the web UI's create form, Telegram's /new). A repository is a bare clone
 * <base>/.repos/<owner>/<name>.git, a store <git store dir>/<owner>/<name>.git, or the repository
 * of a session record whose clone is not made yet; each comes with its default branch and last
 * fetch when its clone tells, and the sessions whose records exist. The clones are the agent
 * user's files (read with its filesystem identity), the records are read with ours.
 */
#include "router.h"

#include "agentuser.h"
#include "gitrepo.h"
#include "isotime.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A server has a few dozen repositories; the cap keeps one answer bounded whatever is on disk. */
#define API_REPOS_MAX 1024

struct api_repo {
	char owner[SESSION_OWNER_MAX + 1];
	char name[SESSION_NAME_MAX + 1];
	char default_branch[GITREPO_REF_MAX];
	int64_t fetched_at; /* unix seconds, 0: unknown */
	int64_t recent_ms;  /* the latest of the fetch and its sessions' activity, for the order */
};

struct api_repos {
	struct api_repo *list;
	size_t n;
};

/* The entry of owner/name, added when missing. NULL when the cap is reached or memory is out. */
static struct api_repo *api_repos_get(struct api_repos *rs, const char *owner, const char *name)
{
	struct api_repo *more;

	for (size_t i = 0; i < rs->n; i++)
		if (strcmp(rs->list[i].owner, owner) == 0 && strcmp(rs->list[i].name, name) == 0)
			return &rs->list[i];
	if (rs->n >= API_REPOS_MAX ||
	    (more = realloc(rs->list, (rs->n + 1) * sizeof(*more))) == NULL)
		return NULL;
	rs->list = more;
	memset(&more[rs->n], 0, sizeof(more[rs->n]));
	snprintf(more[rs->n].owner, sizeof(more[rs->n].owner), "%s", owner);
	snprintf(more[rs->n].name, sizeof(more[rs->n].name), "%s", name);
	return &more[rs->n++];
}

/* The branch origin's HEAD names (what the last fetch saw as the remote's default), else the
 * clone's own HEAD (a clone's HEAD is the remote's default branch). "" when neither tells. */
static void api_repo_default_branch(const char *bare, char *out, size_t outlen)
{
	static const char *const refs[] = {"refs/remotes/origin/HEAD", "HEAD"};
	static const char *const prefixes[] = {"refs/remotes/origin/", "refs/heads/"};
	git_repository *git = NULL;

	out[0] = '\0';
	if (git_repository_open_bare(&git, bare) < 0)
		return;
	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]) && out[0] == '\0'; i++) {
		git_reference *ref = NULL;
		const char *target;
		size_t plen = strlen(prefixes[i]);

		if (git_reference_lookup(&ref, git, refs[i]) == 0 &&
		    git_reference_type(ref) == GIT_REFERENCE_SYMBOLIC &&
		    (target = git_reference_symbolic_target(ref)) != NULL &&
		    strncmp(target, prefixes[i], plen) == 0)
			snprintf(out, outlen, "%s", target + plen);
		git_reference_free(ref);
	}
	git_repository_free(git);
}

/* Adds the clones <dir>/<owner>/<name>.git. A directory that is missing or unreadable adds
 * nothing: the list is what can be seen. */
static void api_repos_scan(struct api_repos *rs, const char *dir)
{
	DIR *owners;
	struct dirent *o;

	if (dir[0] == '\0' || (owners = opendir(dir)) == NULL)
		return;
	while ((o = readdir(owners)) != NULL) {
		char sub[WORKTREE_PATH_MAX];
		struct dirent *e;
		DIR *names;

		if (!session_owner_valid(o->d_name) ||
		    snprintf(sub, sizeof(sub), "%s/%s", dir, o->d_name) >= (int)sizeof(sub) ||
		    (names = opendir(sub)) == NULL)
			continue;
		while ((e = readdir(names)) != NULL) {
			char name[SESSION_NAME_MAX + 1], bare[WORKTREE_PATH_MAX];
			char mark[WORKTREE_PATH_MAX + sizeof(GITREPO_FETCHED_FILE) + 1];
			size_t len = strlen(e->d_name);
			struct api_repo *r;
			struct stat st;

			if (len <= 4 || strcmp(e->d_name + len - 4, ".git") != 0 ||
			    len - 4 >= sizeof(name))
				continue;
			memcpy(name, e->d_name, len - 4);
			name[len - 4] = '\0';
			if (!session_name_valid(name) ||
			    snprintf(bare, sizeof(bare), "%s/%s", sub, e->d_name) >=
				(int)sizeof(bare) ||
			    stat(bare, &st) < 0 || !S_ISDIR(st.st_mode) ||
			    (r = api_repos_get(rs, o->d_name, name)) == NULL)
				continue;
			if (r->default_branch[0] == '\0')
				api_repo_default_branch(bare, r->default_branch,
							sizeof(r->default_branch));
			if (snprintf(mark, sizeof(mark), "%s/%s", bare, GITREPO_FETCHED_FILE) <
				(int)sizeof(mark) &&
			    stat(mark, &st) == 0 && (int64_t)st.st_mtime > r->fetched_at)
				r->fetched_at = (int64_t)st.st_mtime;
		}
		closedir(names);
	}
	closedir(owners);
}

static int64_t api_session_recent_ms(const struct session *s)
{
	int64_t last = s->last_activity * 1000;

	return s->activity_at > last ? s->activity_at : last;
}

static int api_repos_cmp(const void *a, const void *b)
{
	const struct api_repo *x = a, *y = b;
	int c;

	if (x->recent_ms != y->recent_ms)
		return x->recent_ms < y->recent_ms ? 1 : -1;
	c = strcmp(x->owner, y->owner);
	return c != 0 ? c : strcmp(x->name, y->name);
}

static int api_sessions_recent_cmp(const void *a, const void *b)
{
	int64_t x = api_session_recent_ms(a), y = api_session_recent_ms(b);

	return (x < y) - (x > y);
}

static json_object *api_repo_session_json(const struct session *s)
{
	json_object *o = json_object_new_object();
	char at[ISOTIME_MS_LEN + 1];

	json_object_object_add(o, "id", json_object_new_string(s->id));
	json_object_object_add(o, "issue", json_object_new_int64(s->issue));
	json_object_object_add(o, "state", json_object_new_string(session_state_name(s->state)));
	json_object_object_add(o, "activity", json_object_new_string(session_activity_name(s)));
	isotime_format_ms(api_session_recent_ms(s), at, sizeof(at));
	json_object_object_add(o, "lastActivity", json_object_new_string(at));
	return o;
}

static json_object *api_repo_json(const struct api_repo *r, const struct session *list, size_t n)
{
	json_object *o = json_object_new_object(), *repo = json_object_new_object();
	json_object *sessions = json_object_new_array();
	char at[ISOTIME_LEN + 1];

	json_object_object_add(repo, "owner", json_object_new_string(r->owner));
	json_object_object_add(repo, "name", json_object_new_string(r->name));
	json_object_object_add(o, "repo", repo);
	json_object_object_add(
	    o, "defaultBranch",
	    r->default_branch[0] != '\0' ? json_object_new_string(r->default_branch) : NULL);
	isotime_format(r->fetched_at, at, sizeof(at));
	json_object_object_add(o, "lastFetched",
			       r->fetched_at > 0 ? json_object_new_string(at) : NULL);
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i].owner, r->owner) == 0 && strcmp(list[i].name, r->name) == 0)
			json_object_array_add(sessions, api_repo_session_json(&list[i]));
	json_object_object_add(o, "sessions", sessions);
	return o;
}

static void api_repos_list(const struct app *app, struct request *req,
			   const char *const args[ROUTER_MAX_ARGS])
{
	struct api_repos rs = {NULL, 0};
	struct session *list = NULL;
	struct agentuser_fs fs;
	char clones[WORKTREE_PATH_MAX];
	json_object *arr;
	size_t n = 0;
	int r;

	(void)args;
	if ((r = store_list(&app->store, &list, &n)) < 0) {
		request_error(req, 500, "store_error", "cannot read the session records: %s",
			      strerror(-r));
		return;
	}
	if ((r = agentuser_fs_enter(&app->agent, &fs)) < 0) {
		free(list);
		request_error(req, 500, "agent_user", "cannot take the agent user's identity: %s",
			      strerror(-r));
		return;
	}
	if (snprintf(clones, sizeof(clones), "%s/.repos", app->cfg->base_dir) < (int)sizeof(clones))
		api_repos_scan(&rs, clones);
	api_repos_scan(&rs, app->cfg->git_store_dir);
	agentuser_fs_leave(&fs);
	if (n > 0)
		qsort(list, n, sizeof(*list), api_sessions_recent_cmp);
	for (size_t i = 0; i < n; i++) {
		struct api_repo *repo = api_repos_get(&rs, list[i].owner, list[i].name);
		int64_t ms = api_session_recent_ms(&list[i]);

		if (repo != NULL && ms > repo->recent_ms)
			repo->recent_ms = ms;
	}
	for (size_t i = 0; i < rs.n; i++)
		if (rs.list[i].fetched_at * 1000 > rs.list[i].recent_ms)
			rs.list[i].recent_ms = rs.list[i].fetched_at * 1000;
	if (rs.n > 0)
		qsort(rs.list, rs.n, sizeof(*rs.list), api_repos_cmp);
	arr = json_object_new_array_ext((int)rs.n);
	for (size_t i = 0; i < rs.n; i++)
		json_object_array_add(arr, api_repo_json(&rs.list[i], list, n));
	free(rs.list);
	free(list);
	request_reply(req, 200, arr, NULL);
}

const struct route api_repos_routes[] = {
    {"GET", "/repos", api_repos_list, false},
    {NULL, NULL, NULL, false},
};
