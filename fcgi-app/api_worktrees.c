/*
 * The git resources: GET and DELETE /worktrees, GET and DELETE /branches. Every change holds the
 * repository's lock (worktree_lock, or the store's gitstore_lock), as the creation worker does.
 * Clones, worktrees and session repositories are the agent user's files: every git call on them
 * runs with its filesystem identity (agentuser_fs_enter); the stores are the daemon's and are
 * written as we are, as are the session records read.
 */
#include "api_worktrees.h"

#include "cagecmd.h"
#include "gitrepo.h"
#include "gitstore.h"
#include "inventory.h"
#include "log.h"
#include "router.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define API_FORCE_MAX 8

static json_object *api_repo_json(const char *owner, const char *name)
{
	json_object *repo = json_object_new_object();

	json_object_object_add(repo, "owner", json_object_new_string(owner));
	json_object_object_add(repo, "name", json_object_new_string(name));
	return repo;
}

/* ?force=true */
static bool api_force(const struct request *req)
{
	char force[API_FORCE_MAX];

	return request_query(req, "force", force, sizeof(force)) != NULL &&
	       strcmp(force, "true") == 0;
}

void api_worktree_removal_json(json_object *o, const struct worktree_removal *rm)
{
	static const char *const fate[] = {
	    [WORKTREE_REMOVED] = "removed",
	    [WORKTREE_KEPT] = "kept",
	    [WORKTREE_ABSENT] = "absent",
	};

	json_object_object_add(o, "worktree", json_object_new_string(fate[rm->fate]));
	if (rm->fate == WORKTREE_KEPT)
		json_object_object_add(o, "reason", json_object_new_string(rm->reason));
	if (rm->fate == WORKTREE_REMOVED)
		json_object_object_add(o, "ignoredRemoved",
				       json_object_new_int64((int64_t)rm->ignored_removed));
	if (rm->kept_ref[0] != '\0') {
		json_object_object_add(o, "keptRef", json_object_new_string(rm->kept_ref));
		json_object_object_add(o, "keptCommits",
				       json_object_new_int64((int64_t)rm->kept_commits));
	}
}

/* The store layout's removal (api_worktrees.h): what may go is decided and packed as the agent
 * (its files), the pack and refs written into the store as the daemon (the agents cannot write
 * there), the directory removed as the agent. */
int api_remove_session_repo(const struct app *app, const char *owner, const char *name,
			    const char *path, const char *branch, const char *id, bool force,
			    struct worktree_removal *rm)
{
	const char *dir = app->cfg->git_store_dir;
	struct gitstore_keep *keep = NULL;
	struct cause cause = {{0}};
	struct agent_user au;
	struct agentuser_fs fs;
	int lock, r;

	memset(rm, 0, sizeof(*rm));
	rm->fate = WORKTREE_KEPT;
	if (dir[0] == '\0')
		return 1;
	/* As whoever owns it: a caged session's uid, else the agent user. */
	cagecmd_user(app, cagecmd_owner_uid(app, path), &au);
	if ((r = agentuser_fs_enter(&au, &fs)) < 0) {
		snprintf(rm->reason, sizeof(rm->reason),
			 "cannot take the agent user's identity: %s", strerror(-r));
		return 0;
	}
	if (!gitstore_is_session(dir, owner, name, path)) {
		agentuser_fs_leave(&fs);
		return 1;
	}
	r = gitstore_keep_collect(dir, owner, name, path, force, rm, &keep, &cause);
	agentuser_fs_leave(&fs);
	if (r <= 0)
		goto out;
	if ((lock = gitstore_lock(dir, owner, name)) < 0) {
		snprintf(rm->reason, sizeof(rm->reason), "cannot lock the store of %s/%s: %s",
			 owner, name, strerror(-lock));
		goto out;
	}
	r = gitstore_keep_store(dir, owner, name, branch, id, keep, rm, &cause);
	store_unlock(lock);
	if (r < 0)
		goto out;
	if ((r = agentuser_fs_enter(&au, &fs)) < 0) {
		rm->fate = WORKTREE_KEPT;
		snprintf(rm->reason, sizeof(rm->reason),
			 "cannot take the agent user's identity: %s", strerror(-r));
		goto out;
	}
	gitstore_session_remove(path, rm, &cause);
	agentuser_fs_leave(&fs);
out:
	if (cause.msg[0] != '\0')
		log_error("cannot remove the repository %s: %s", path, cause.msg);
	gitstore_keep_free(keep);
	return 0;
}

/* Reads the record of the session that owns worktree e, if any, into s. Returns 0 when one
 * exists, -ENOENT when none, or -errno. */
static int api_session_of(const struct app *app, const struct worktree_entry *e, struct session *s)
{
	char id[SESSION_ID_MAX + 1];

	if (snprintf(id, sizeof(id), "%s-%ld", e->name, e->issue) >= (int)sizeof(id))
		return -ENOENT;
	return store_read(&app->store, id, s, NULL);
}

static int api_worktrees_cmp(const void *a, const void *b)
{
	const struct worktree_entry *x = a, *y = b;
	int c = strcmp(x->owner, y->owner);

	if (c == 0)
		c = strcmp(x->name, y->name);
	return c != 0 ? c : (x->issue > y->issue) - (x->issue < y->issue);
}

/* Appends the session repositories of the store layout to the worktrees of the bare clones,
 * sorted together (owner, name, issue). Returns 0 or -errno (*list freed then). */
static int api_worktrees_add_stored(const struct app *app, struct worktree_entry **list, size_t *n)
{
	struct worktree_entry *more, *all;
	size_t m;
	int r = gitstore_list(app->cfg->base_dir, app->cfg->git_store_dir, &more, &m);

	if (r < 0 || m == 0) {
		if (r < 0) {
			free(*list);
			*list = NULL;
		}
		return r;
	}
	if ((all = realloc(*list, (*n + m) * sizeof(*all))) == NULL) {
		free(more);
		free(*list);
		*list = NULL;
		return -ENOMEM;
	}
	memcpy(all + *n, more, m * sizeof(*all));
	free(more);
	*n += m;
	*list = all;
	qsort(all, *n, sizeof(*all), api_worktrees_cmp);
	return 0;
}

static void api_worktrees_list(const struct app *app, struct request *req,
			       const char *const args[ROUTER_MAX_ARGS])
{
	struct worktree_entry *list;
	struct session *s = malloc(sizeof(*s));
	struct agentuser_fs fs;
	json_object *arr;
	size_t n;
	int r = s != NULL ? agentuser_fs_enter(&app->agent, &fs) : -ENOMEM;

	if (r == 0) {
		r = worktree_list(app->cfg->base_dir, &list, &n);
		if (r == 0)
			r = api_worktrees_add_stored(app, &list, &n);
		agentuser_fs_leave(&fs);
	}
	if (r < 0) {
		free(s);
		request_error(req, 500, "git_error", "cannot list worktrees: %s", strerror(-r));
		return;
	}
	arr = json_object_new_array_ext((int)n);
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "repo", api_repo_json(list[i].owner, list[i].name));
		json_object_object_add(o, "issue", json_object_new_int64(list[i].issue));
		json_object_object_add(o, "path", json_object_new_string(list[i].path));
		/* null: no session uses it (kept by a DELETE): DELETE /worktrees/<dir> removes it.
		 */
		json_object_object_add(
		    o, "session",
		    api_session_of(app, &list[i], s) == 0 ? json_object_new_string(s->id) : NULL);
		json_object_array_add(arr, o);
	}
	free(list);
	free(s);
	request_reply(req, 200, arr, NULL);
}

/* Under the repository lock: refuses a worktree a session uses, else removes it per force. */
static void api_worktrees_delete_locked(const struct app *app, struct request *req,
					const struct worktree_entry *e, const char *dir)
{
	char id[SESSION_ID_MAX + 1], branch[32];
	struct worktree_removal rm;
	uint32_t uid;
	struct cause cause = {{0}};
	struct agentuser_fs fs;
	struct session *s = malloc(sizeof(*s));
	json_object *o;
	int r = s != NULL ? api_session_of(app, e, s) : -ENOMEM;

	if (r != -ENOENT) {
		if (r == 0)
			request_error(req, 409, "session_exists",
				      "session %s uses worktree %s; DELETE /sessions/%s instead",
				      s->id, dir, s->id);
		else
			request_error(req, 500, "store_error",
				      "cannot tell whether a session uses %s: %s", dir,
				      strerror(-r));
		free(s);
		return;
	}
	free(s);
	snprintf(id, sizeof(id), "%s-%ld", e->name, e->issue);
	snprintf(branch, sizeof(branch), "feat/issue-%ld", e->issue);
	uid = cagecmd_owner_uid(app, e->path);
	if (api_remove_session_repo(app, e->owner, e->name, e->path, branch, id, api_force(req),
				    &rm) == 0) {
		r = 0;
		/* The last of a deleted session's files gone: its uid is free again. */
		if (rm.fate == WORKTREE_REMOVED)
			cagecmd_uid_release(app, id, uid, NULL);
	} else if ((r = agentuser_fs_enter(&app->agent, &fs)) == 0) {
		r = worktree_delete(app->cfg->base_dir, e->owner, e->name, e->path, branch, id,
				    api_force(req), &rm, &cause);
		agentuser_fs_leave(&fs);
	} else {
		cause_set(&cause, "cannot take the agent user's identity: %s", strerror(-r));
	}
	if (r < 0) {
		log_error("cannot remove worktree %s: %s", e->path, cause.msg);
		request_error(req, 500, "git_error", "%s", cause.msg);
		return;
	}
	if (rm.fate == WORKTREE_ABSENT) {
		request_error(req, 404, "not_found", "no worktree %s", dir);
		return;
	}
	o = json_object_new_object();
	if (rm.fate == WORKTREE_KEPT) {
		char msg[CAUSE_MAX + 128];

		/* Offers force only where force would remove it: never for what is no worktree. */
		snprintf(msg, sizeof(msg), "worktree %s kept: %s%s", dir, rm.reason,
			 rm.force_removes ? " (?force=true removes it)" : "");
		json_object_object_add(o, "error", json_object_new_string(msg));
		json_object_object_add(o, "code", json_object_new_string("worktree_kept"));
	}
	api_worktree_removal_json(o, &rm);
	if (rm.fate == WORKTREE_REMOVED)
		log_info("worktree %s removed", e->path);
	request_reply(req, rm.fate == WORKTREE_KEPT ? 409 : 200, o, NULL);
}

static void api_worktrees_delete(const struct app *app, struct request *req,
				 const char *const args[ROUTER_MAX_ARGS])
{
	struct worktree_entry e;
	struct agentuser_fs fs;
	int lock = -1, r = agentuser_fs_enter(&app->agent, &fs);

	/* The lock file is the agent's, like the clone it guards; the records are read as we are.
	 */
	if (r == 0) {
		r = worktree_find(app->cfg->base_dir, args[0], &e);
		if (r == -ENOENT)
			r = gitstore_find(app->cfg->base_dir, app->cfg->git_store_dir, args[0], &e);
		if (r == 0 && (lock = worktree_lock(app->cfg->base_dir, e.owner, e.name)) < 0)
			r = 1;
		agentuser_fs_leave(&fs);
	}
	if (r == -EINVAL) {
		request_error(req, 400, "invalid_worktree",
			      "'%.120s' is not a worktree name (<name>-issue-<N>)", args[0]);
		return;
	}
	if (r == -ENOENT) {
		request_error(req, 404, "not_found", "no worktree %.120s", args[0]);
		return;
	}
	if (r < 0) {
		request_error(req, 500, "git_error", "cannot list worktrees: %s", strerror(-r));
		return;
	}
	if (lock < 0) {
		request_error(req, 500, "git_error", "cannot lock the repository %s/%s: %s",
			      e.owner, e.name, strerror(-lock));
		return;
	}
	api_worktrees_delete_locked(app, req, &e, args[0]);
	store_unlock(lock);
}

/* Reads the record of the session <name>-<issue>, if any, into s (as api_session_of). */
static int api_session_of_issue(const struct app *app, const char *name, long issue,
				struct session *s)
{
	char id[SESSION_ID_MAX + 1];

	if (snprintf(id, sizeof(id), "%s-%ld", name, issue) >= (int)sizeof(id))
		return -ENOENT;
	return store_read(&app->store, id, s, NULL);
}

static json_object *api_branch_json(const struct worktree_branch *b, const char *layout)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "repo", api_repo_json(b->owner, b->name));
	json_object_object_add(o, "issue", json_object_new_int64(b->issue));
	json_object_object_add(o, "name", json_object_new_string(b->branch));
	json_object_object_add(o, "sync", json_object_new_string(worktree_sync_name(b->sync)));
	json_object_object_add(o, "ahead", json_object_new_int64((int64_t)b->ahead));
	json_object_object_add(o, "behind", json_object_new_int64((int64_t)b->behind));
	json_object_object_add(o, "layout", json_object_new_string(layout));
	return o;
}

/* The branches of the bare clones and of the stores, and for each store branch whether its
 * session repository has it checked out (read as the agent: its files; *checked allocated). */
static int api_branches_collect(const struct app *app, struct worktree_branch **list, size_t *n,
				struct worktree_branch **slist, size_t *sn, bool **checked)
{
	char where[WORKTREE_PATH_MAX];
	struct agentuser_fs fs;
	int r = agentuser_fs_enter(&app->agent, &fs);

	*list = *slist = NULL;
	*checked = NULL;
	*n = *sn = 0;
	if (r < 0)
		return r;
	r = worktree_list_branches(app->cfg->base_dir, list, n);
	if (r == 0)
		r = gitstore_list_branches(app->cfg->base_dir, app->cfg->git_store_dir, slist, sn);
	if (r == 0 && *sn > 0 && (*checked = calloc(*sn, sizeof(**checked))) == NULL)
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < *sn; i++) {
		const struct worktree_branch *b = &(*slist)[i];

		/* A repository that cannot be read is not known to have it: listed as free. */
		(*checked)[i] =
		    gitstore_checked_out(app->cfg->base_dir, app->cfg->git_store_dir, b->owner,
					 b->name, b->branch, where, sizeof(where)) == 1;
	}
	agentuser_fs_leave(&fs);
	return r;
}

static void api_branches_list(const struct app *app, struct request *req,
			      const char *const args[ROUTER_MAX_ARGS])
{
	struct worktree_branch *list = NULL, *slist = NULL;
	struct session *s = malloc(sizeof(*s));
	size_t n, sn;
	bool *checked = NULL;
	json_object *arr;
	int r = s != NULL ? api_branches_collect(app, &list, &n, &slist, &sn, &checked) : -ENOMEM;

	if (r < 0) {
		free(s);
		free(list);
		free(slist);
		free(checked);
		request_error(req, 500, "git_error", "cannot list branches: %s", strerror(-r));
		return;
	}
	arr = json_object_new_array_ext((int)(n + sn));
	for (size_t i = 0; i < n; i++)
		json_object_array_add(arr, api_branch_json(&list[i], "worktree"));
	for (size_t i = 0; i < sn; i++) {
		json_object *o = api_branch_json(&slist[i], "store");
		char where[WORKTREE_PATH_MAX];

		snprintf(where, sizeof(where), "%s/%s-issue-%ld", app->cfg->base_dir, slist[i].name,
			 slist[i].issue);
		/* Which session has the branch checked out in its own repository: null when none
		 * has (a repository kept by a DELETE has no session, and says so in checkedOut). */
		json_object_object_add(o, "checkedOut",
				       checked[i] ? json_object_new_string(where) : NULL);
		json_object_object_add(
		    o, "session",
		    checked[i] && api_session_of_issue(app, slist[i].name, slist[i].issue, s) == 0
			? json_object_new_string(s->id)
			: NULL);
		json_object_array_add(arr, o);
	}
	free(list);
	free(slist);
	free(checked);
	free(s);
	request_reply(req, 200, arr, NULL);
}

/* Fetches the store of owner/name, as the creation worker does (the caller holds its lock). An
 * agent pushes from its own repository, never through the store, so the store's origin refs are
 * as old as its last fetch: a branch pushed since would be refused. Returns 0 when fetched. */
static int api_store_fetch(const struct app *app, const char *owner, const char *name,
			   const char *branch)
{
	char url[WORKTREE_URL_MAX];
	struct cause fetch = {{0}};
	long issue;
	int r;

	if (!gitrepo_parse_issue(branch + sizeof(GITREPO_BRANCH_PREFIX) - 1, &issue) ||
	    session_render_prompt(app->cfg->repo_url, owner, name, issue, url, sizeof(url)) < 0)
		return -EINVAL;
	r = gitstore_ensure(app->cfg->git_store_dir, owner, name, url, &fetch);
	if (r != 0)
		log_warn("cannot fetch the store of %s/%s: %s", owner, name, fetch.msg);
	return r == 0 ? 0 : -EIO;
}

/* The store layout's delete, as the daemon under the store's lock (the store is root's): refused
 * while the session repository of the issue has the branch checked out (read as the agent). */
int api_branches_delete_stored(const struct app *app, const char *owner, const char *name,
			       const char *branch, struct cause *cause)
{
	const char *dir = app->cfg->git_store_dir;
	char where[WORKTREE_PATH_MAX];
	struct agentuser_fs fs;
	int lock, r;

	if (!worktree_branch_name_valid(branch))
		return cause_fail(cause, EINVAL, "only feat/issue-<N> branches can be deleted");
	if ((lock = gitstore_lock(dir, owner, name)) < 0)
		return cause_fail(cause, -lock, "cannot lock the store of %s/%s: %s", owner, name,
				  strerror(-lock));
	if ((r = agentuser_fs_enter(&app->agent, &fs)) == 0) {
		r = gitstore_checked_out(app->cfg->base_dir, dir, owner, name, branch, where,
					 sizeof(where));
		agentuser_fs_leave(&fs);
	}
	if (r == 1)
		r = cause_fail(cause, EBUSY,
			       "branch %s is checked out in the session repository %s", branch,
			       where);
	else if (r < 0)
		r = cause_fail(cause, -r, "cannot tell whether a session has %s checked out: %s",
			       branch, strerror(-r));
	else
		r = gitstore_branch_delete(dir, owner, name, branch, cause);
	if (r == -ENOTEMPTY && api_store_fetch(app, owner, name, branch) == 0) {
		memset(cause, 0, sizeof(*cause));
		r = gitstore_branch_delete(dir, owner, name, branch, cause);
	}
	store_unlock(lock);
	return r;
}

/* Whether owner/name has a store (stat as the daemon: nothing is made for one that has not). */
static bool api_has_store(const struct app *app, const char *owner, const char *name)
{
	char store[WORKTREE_PATH_MAX];
	struct stat st;

	return app->cfg->git_store_dir[0] != '\0' &&
	       gitstore_path(app->cfg->git_store_dir, owner, name, store, sizeof(store)) == 0 &&
	       stat(store, &st) == 0;
}

/* DELETE /branches/<owner>/<name>/<branch>: args[2] is the rest of the path ("feat/issue-7").
 * The worktree layout's clone first; a branch it does not have is looked for in the store. */
static void api_branches_delete(const struct app *app, struct request *req,
				const char *const args[ROUTER_MAX_ARGS])
{
	const char *owner = args[0], *name = args[1], *branch = args[2];
	char bare[WORKTREE_PATH_MAX];
	struct cause cause = {{0}};
	struct agentuser_fs fs;
	json_object *o;
	struct stat st;
	bool has_clone;
	int lock, r;

	if (!session_owner_valid(owner) || !session_name_valid(name)) {
		request_error(req, 400, "invalid_repo", "'%.60s/%.120s' is not a repository name",
			      owner, name);
		return;
	}
	if ((r = agentuser_fs_enter(&app->agent, &fs)) < 0) {
		request_error(req, 500, "git_error", "cannot take the agent user's identity: %s",
			      strerror(-r));
		return;
	}
	/* Nothing is made on disk for a repository that is not managed (worktree_lock would). */
	has_clone = worktree_bare_path(app->cfg->base_dir, owner, name, bare, sizeof(bare)) == 0 &&
		    stat(bare, &st) == 0;
	r = -ENOENT;
	if (has_clone) {
		lock = worktree_lock(app->cfg->base_dir, owner, name);
		if (lock < 0) {
			agentuser_fs_leave(&fs);
			request_error(req, 500, "git_error", "cannot lock the repository %s/%s: %s",
				      owner, name, strerror(-lock));
			return;
		}
		r = worktree_branch_delete(app->cfg->base_dir, owner, name, branch, &cause);
		store_unlock(lock);
	}
	agentuser_fs_leave(&fs);
	if (r == -ENOENT && api_has_store(app, owner, name)) {
		memset(&cause, 0, sizeof(cause));
		r = api_branches_delete_stored(app, owner, name, branch, &cause);
	} else if (!has_clone) {
		request_error(req, 404, "not_found", "no repository %s/%s is managed here", owner,
			      name);
		return;
	}
	switch (r) {
	case 0:
		log_info("branch %s of %s/%s deleted", branch, owner, name);
		o = json_object_new_object();
		json_object_object_add(o, "repo", api_repo_json(owner, name));
		json_object_object_add(o, "name", json_object_new_string(branch));
		json_object_object_add(o, "deleted", json_object_new_boolean(1));
		request_reply(req, 200, o, NULL);
		return;
	case -EINVAL:
		request_error(req, 400, "invalid_branch",
			      "'%.120s' is not a branch agentd deletes (feat/issue-<N>)", branch);
		return;
	case -ENOENT:
		request_error(req, 404, "not_found", "%s", cause.msg);
		return;
	case -EBUSY:
		request_error(req, 409, "branch_checked_out", "%s", cause.msg);
		return;
	case -ENOTEMPTY:
		request_error(req, 409, "branch_not_merged", "%s", cause.msg);
		return;
	default:
		request_error(req, 500, "git_error", "%s", cause.msg);
	}
}

const struct route api_worktrees_routes[] = {
    {"GET", "/worktrees", api_worktrees_list, false},
    {"DELETE", "/worktrees/*", api_worktrees_delete, true},
    {"GET", "/branches", api_branches_list, false},
    {"DELETE", "/branches/*/*/**", api_branches_delete, true},
    {NULL, NULL, NULL, false},
};
