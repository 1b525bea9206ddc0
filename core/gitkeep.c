/*
 * The store layout's keeping of a session's work (gitstore.h: gitstore_keep_collect,
 * gitstore_keep_store, gitstore_session_remove): the pack of every commit the store lacks, built
 * as the agent, indexed into the store and its refs written as the daemon, so that deleting a
 * session's repository never loses a commit. gitstore.c makes and lists the repositories.
 */
#include "gitstore.h"
#include "gitstore_int.h"

#include "fsutil.h"
#include "gitrepo.h"
#include "session.h"

#include <errno.h>
#include <git2.h>
#include <git2/sys/odb_backend.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A session has a handful of branches; one with more keeps its directory (nothing is lost) and
 * the operator looks. */
#define GITSTORE_REFS_MAX 1024
/* A cap on the commits counted for keptCommits, so a pathological history does not hold the
 * request. */
#define GITSTORE_WALK_MAX 100000

struct gitstore_ref {
	char name[GITREPO_REF_MAX]; /* "refs/heads/x", or "HEAD" when detached */
	git_oid oid;
};

struct gitstore_keep {
	git_buf pack; /* empty when the store has every commit already */
	size_t n;
	struct gitstore_ref refs[GITSTORE_REFS_MAX];
};

/* Hides the commits the store has: their history is complete there (fetched, or indexed from a
 * session's pack, which carries everything the store lacked). */
static int gitstore_hide_stored(const git_oid *commit, void *payload)
{
	return git_odb_exists(payload, commit);
}

/* Adds name → oid to keep and pushes oid on walk. */
static int gitstore_keep_ref(struct gitstore_keep *keep, git_revwalk *walk, const char *name,
			     const git_oid *oid)
{
	if (keep->n == GITSTORE_REFS_MAX)
		return -E2BIG;
	snprintf(keep->refs[keep->n].name, sizeof(keep->refs[keep->n].name), "%s", name);
	git_oid_cpy(&keep->refs[keep->n].oid, oid);
	keep->n++;
	return git_revwalk_push(walk, oid) < 0 ? -EIO : 0;
}

/* The local branches and a detached HEAD of w, and the pack of what the store lacks. */
static int gitstore_collect(git_repository *w, git_odb *store, struct gitstore_keep *keep,
			    struct cause *cause)
{
	git_reference_iterator *it = NULL;
	git_packbuilder *pb = NULL;
	git_revwalk *walk = NULL;
	git_reference *ref = NULL;
	git_oid head;
	int rc;

	if ((rc = git_revwalk_new(&walk, w)) < 0 ||
	    (rc = git_revwalk_add_hide_cb(walk, gitstore_hide_stored, store)) < 0 ||
	    (rc = git_reference_iterator_glob_new(&it, w, "refs/heads/*")) < 0)
		goto git_fail;
	while ((rc = git_reference_next(&ref, it)) == 0) {
		if (git_reference_type(ref) == GIT_REFERENCE_DIRECT &&
		    (rc = gitstore_keep_ref(keep, walk, git_reference_name(ref),
					    git_reference_target(ref))) < 0) {
			git_reference_free(ref);
			rc = cause_fail(cause, -rc, "cannot walk the branches of %s",
					git_repository_workdir(w));
			goto out;
		}
		git_reference_free(ref);
	}
	if (rc != GIT_ITEROVER)
		goto git_fail;
	if (git_repository_head_detached(w) == 1 &&
	    git_reference_name_to_id(&head, w, "HEAD") == 0 &&
	    (rc = gitstore_keep_ref(keep, walk, "HEAD", &head)) < 0) {
		rc = cause_fail(cause, -rc, "cannot walk HEAD of %s", git_repository_workdir(w));
		goto out;
	}
	if ((rc = git_packbuilder_new(&pb, w)) < 0 ||
	    (rc = git_packbuilder_insert_walk(pb, walk)) < 0)
		goto git_fail;
	if (git_packbuilder_object_count(pb) > 0 &&
	    (rc = git_packbuilder_write_buf(&keep->pack, pb)) < 0)
		goto git_fail;
	rc = 0;
	goto out;
git_fail:
	rc = cause_fail(cause, gitrepo_errno(rc), "cannot collect the commits of %s: %s",
			git_repository_workdir(w), gitrepo_msg());
out:
	git_packbuilder_free(pb);
	git_reference_iterator_free(it);
	git_revwalk_free(walk);
	return rc;
}

int gitstore_keep_collect(const char *dir, const char *owner, const char *name, const char *path,
			  bool force, struct worktree_removal *out, struct gitstore_keep **keep,
			  struct cause *cause)
{
	git_repository *w = NULL, *store = NULL;
	git_status_list *sl = NULL;
	git_status_options so;
	git_odb *odb = NULL;
	struct gitrepo r;
	bool dirty = false;
	int rc;

	*keep = NULL;
	memset(out, 0, sizeof(*out));
	out->fate = WORKTREE_KEPT;
	if ((rc = gitstore_repo(&r, dir, owner, name, cause)) < 0)
		return rc;
	if (!gitstore_borrows(r.bare, path) ||
	    git_repository_open_ext(&w, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0 ||
	    git_repository_is_worktree(w) || git_repository_is_bare(w)) {
		snprintf(out->reason, sizeof(out->reason), "not a repository of %s", r.label);
		rc = 0;
		goto out;
	}
	git_status_options_init(&so, GIT_STATUS_OPTIONS_VERSION);
	so.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	so.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
		   GIT_STATUS_OPT_INCLUDE_IGNORED | GIT_STATUS_OPT_RECURSE_IGNORED_DIRS;
	if ((rc = git_status_list_new(&sl, w, &so)) < 0) {
		rc = cause_fail(cause, gitrepo_errno(rc), "cannot read the status of %s: %s", path,
				gitrepo_msg());
		goto out;
	}
	for (size_t i = 0; i < git_status_list_entrycount(sl); i++) {
		const git_status_entry *e = git_status_byindex(sl, i);

		if (e->status == GIT_STATUS_IGNORED)
			out->ignored_removed++;
		else if (e->status != GIT_STATUS_CURRENT)
			dirty = true;
	}
	if (dirty && !force) {
		snprintf(out->reason, sizeof(out->reason), "uncommitted changes");
		out->force_removes = true;
		out->ignored_removed = 0;
		rc = 0;
		goto out;
	}
	if ((rc = git_repository_open_bare(&store, r.bare)) < 0 ||
	    (rc = git_repository_odb(&odb, store)) < 0) {
		rc = cause_fail(cause, gitrepo_errno(rc), "cannot open the store of %s: %s",
				r.label, gitrepo_msg());
		goto out;
	}
	if ((*keep = calloc(1, sizeof(**keep))) == NULL) {
		rc = cause_fail(cause, ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = gitstore_collect(w, odb, *keep, cause)) < 0) {
		gitstore_keep_free(*keep);
		*keep = NULL;
		goto out;
	}
	rc = 1;
out:
	if (rc < 0)
		snprintf(out->reason, sizeof(out->reason), "%s", cause->msg);
	git_odb_free(odb);
	git_repository_free(store);
	git_status_list_free(sl);
	git_repository_free(w);
	return rc;
}

/* Indexes the pack into the store's object database. */
static int gitstore_index(git_repository *store, const git_buf *pack)
{
	git_indexer_progress stats = {0};
	git_odb_writepack *wp = NULL;
	git_odb *odb = NULL;
	int rc;

	if (pack->size == 0)
		return 0;
	if ((rc = git_repository_odb(&odb, store)) == 0 &&
	    (rc = git_odb_write_pack(&wp, odb, NULL, NULL)) == 0 &&
	    (rc = wp->append(wp, pack->ptr, pack->size, &stats)) == 0)
		rc = wp->commit(wp, &stats);
	if (wp != NULL)
		wp->free(wp);
	git_odb_free(odb);
	return rc;
}

/* Writes ref name → oid in the store, never over an existing ref. */
static int gitstore_write_ref(git_repository *store, const char *name, const git_oid *oid)
{
	git_reference *made = NULL;
	int rc = git_reference_create(&made, store, name, oid, 0, "agentd: kept from a session");

	git_reference_free(made);
	return rc;
}

/* Counts the commits of head no branch of the store reaches (capped: a courtesy number). */
static size_t gitstore_count_branchless(git_repository *store, const git_oid *head)
{
	git_revwalk *walk = NULL;
	size_t n = 0;
	git_oid oid;

	if (git_revwalk_new(&walk, store) == 0 && git_revwalk_push(walk, head) == 0 &&
	    git_revwalk_hide_glob(walk, "refs/heads/*") == 0)
		while (n < GITSTORE_WALK_MAX && git_revwalk_next(&oid, walk) == 0)
			n++;
	git_error_clear();
	git_revwalk_free(walk);
	return n;
}

int gitstore_keep_store(const char *dir, const char *owner, const char *name, const char *branch,
			const char *id, const struct gitstore_keep *keep,
			struct worktree_removal *out, struct cause *cause)
{
	char own[GITREPO_REF_MAX], ref[GITREPO_REF_MAX * 2], prefix[GITREPO_REF_MAX];
	git_reference *made = NULL;
	git_repository *store = NULL;
	struct gitrepo r;
	git_oid old;
	int valid = 0, rc = gitstore_repo(&r, dir, owner, name, cause);

	if (rc < 0)
		return rc;
	snprintf(own, sizeof(own), "refs/heads/%s", branch);
	snprintf(prefix, sizeof(prefix), "refs/agentd/kept/%s-%lld", id, (long long)time(NULL));
	if (git_reference_name_is_valid(&valid, prefix) < 0 || !valid)
		snprintf(prefix, sizeof(prefix), "refs/agentd/kept/session-%lld",
			 (long long)time(NULL));
	if ((rc = git_repository_open_bare(&store, r.bare)) < 0 ||
	    (rc = gitstore_index(store, &keep->pack)) < 0)
		goto git_fail;
	for (size_t i = 0; i < keep->n; i++) {
		const struct gitstore_ref *k = &keep->refs[i];

		if (strcmp(k->name, "HEAD") == 0) {
			rc = gitstore_write_ref(store, prefix, &k->oid);
			snprintf(out->kept_ref, sizeof(out->kept_ref), "%s", prefix);
		} else if (strcmp(k->name, own) != 0) {
			snprintf(ref, sizeof(ref), "%s-branches/%s", prefix, k->name + 11);
			rc = gitstore_write_ref(store, ref, &k->oid);
		} else {
			/* An old tip the session's branch does not contain (a rebase, a reset)
			 * stays reachable too. */
			if (git_reference_name_to_id(&old, store, own) == 0 &&
			    !git_oid_equal(&old, &k->oid) &&
			    git_graph_descendant_of(store, &k->oid, &old) != 1) {
				snprintf(ref, sizeof(ref), "%s-replaced/%s", prefix, branch);
				if ((rc = gitstore_write_ref(store, ref, &old)) < 0)
					goto git_fail;
			}
			rc = git_reference_create(&made, store, own, &k->oid, 1,
						  "agentd: the session's branch");
			git_reference_free(made);
			made = NULL;
		}
		if (rc < 0)
			goto git_fail;
	}
	for (size_t i = 0; i < keep->n; i++)
		if (strcmp(keep->refs[i].name, "HEAD") == 0)
			out->kept_commits = gitstore_count_branchless(store, &keep->refs[i].oid);
	git_repository_free(store);
	/* The pack and refs are kept already; an agent that cannot read them is the operator's to
	 * fix, and the removal goes on. */
	if ((rc = gitstore_open_up(r.bare)) < 0)
		cause_set(cause, "cannot open the store of %s to the agents: %s", r.label,
			  strerror(-rc));
	return 0;
git_fail:
	rc = cause_fail(cause, gitrepo_errno(rc), "cannot keep the commits of %s in the store: %s",
			id, gitrepo_msg());
	snprintf(out->reason, sizeof(out->reason), "%s", cause->msg);
	out->fate = WORKTREE_KEPT;
	git_repository_free(store);
	return rc;
}

int gitstore_session_remove(const char *path, struct worktree_removal *out, struct cause *cause)
{
	int rc = fsutil_rm_tree(path);

	if (rc < 0) {
		out->fate = WORKTREE_KEPT;
		rc = cause_fail(cause, -rc, "cannot remove %s: %s", path, strerror(-rc));
		snprintf(out->reason, sizeof(out->reason), "%s", cause->msg);
		return rc;
	}
	out->fate = WORKTREE_REMOVED;
	return 0;
}

void gitstore_keep_free(struct gitstore_keep *keep)
{
	if (keep == NULL)
		return;
	git_buf_dispose(&keep->pack);
	free(keep);
}
