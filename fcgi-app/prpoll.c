#include "prpoll.h"

#include "github.h"
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PRPOLL_PATH_MAX 512
#define PRPOLL_SHA_LEN  40

/* What the poller remembers of one pull request between polls. */
struct prpoll_entry {
	char id[SESSION_ID_MAX + 1];
	uint64_t number;
	char pull_etag[GITHUB_ETAG_MAX + 1];
	char checks_etag[GITHUB_ETAG_MAX + 1];
	char sha[PRPOLL_SHA_LEN + 1]; /* the head commit the checks are of */
	time_t next_at;
	bool seen; /* listed in this round: entries not listed any more are dropped */
};

struct prpoll {
	const struct app *app;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
	time_t blocked_until; /* GitHub asked us to wait (403, 429) */
	size_t n;
	struct prpoll_entry entries[PRPOLL_MAX];
};

static struct prpoll_entry *prpoll_entry(struct prpoll *p, const struct session *s)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->entries[i].id, s->id) == 0) {
			if (p->entries[i].number != s->pr.number) /* a new pull request */
				memset(&p->entries[i], 0, sizeof(p->entries[i]));
			snprintf(p->entries[i].id, sizeof(p->entries[i].id), "%s", s->id);
			p->entries[i].number = s->pr.number;
			return &p->entries[i];
		}
	if (p->n >= PRPOLL_MAX)
		return NULL;
	memset(&p->entries[p->n], 0, sizeof(p->entries[p->n]));
	snprintf(p->entries[p->n].id, sizeof(p->entries[p->n].id), "%s", s->id);
	p->entries[p->n].number = s->pr.number;
	return &p->entries[p->n++];
}

/* Records GitHub's wish to wait after reply g; true when it asked. */
static bool prpoll_backoff(struct prpoll *p, const struct github_reply *g, time_t now)
{
	long wait = github_backoff(g, now, p->app->cfg->pr_poll_seconds);

	if (wait <= 0 && g->status != 403 && g->status != 429)
		return false;
	if (wait <= 0)
		wait = p->app->cfg->pr_poll_seconds;
	/* From the answer's time, not the round's, and one more: time() counts whole seconds, so
	 * "now + wait" could come up to a second early. */
	p->blocked_until = time(NULL) + wait + 1;
	log_warn("GitHub answered %ld (%s): no pull request is polled for %ld s", g->status,
		 g->message, wait);
	return true;
}

/* A check run's conclusion that means the pull request's checks failed. */
static bool prpoll_failed(const char *conclusion)
{
	static const char *const failed[] = {"failure", "timed_out", "cancelled", "action_required",
					     "startup_failure"};

	for (size_t i = 0; conclusion != NULL && i < sizeof(failed) / sizeof(failed[0]); i++)
		if (strcmp(conclusion, failed[i]) == 0)
			return true;
	return false;
}

/* The checks of a check-runs answer into pr: failure over pending over success. */
static void prpoll_checks(json_object *body, struct session_pr *pr)
{
	json_object *runs = NULL;
	bool pending = false;
	size_t n;

	pr->checks = SESSION_CHECKS_NONE;
	pr->n_failing = 0;
	if (!json_object_object_get_ex(body, "check_runs", &runs) ||
	    !json_object_is_type(runs, json_type_array))
		return;
	n = json_object_array_length(runs);
	for (size_t i = 0; i < n; i++) {
		json_object *run = json_object_array_get_idx(runs, i), *v;
		const char *status = "", *conclusion = NULL, *name = "?";

		if (json_object_object_get_ex(run, "status", &v) &&
		    json_object_is_type(v, json_type_string))
			status = json_object_get_string(v);
		if (json_object_object_get_ex(run, "conclusion", &v) &&
		    json_object_is_type(v, json_type_string))
			conclusion = json_object_get_string(v);
		if (json_object_object_get_ex(run, "name", &v) &&
		    json_object_is_type(v, json_type_string))
			name = json_object_get_string(v);
		if (strcmp(status, "completed") != 0) {
			pending = true;
		} else if (prpoll_failed(conclusion)) {
			pr->checks = SESSION_CHECKS_FAILURE;
			if (pr->n_failing < SESSION_PR_FAILING_MAX)
				session_copy_cut(pr->failing[pr->n_failing++],
						 sizeof(pr->failing[0]), name);
		}
	}
	if (pr->checks != SESSION_CHECKS_FAILURE)
		pr->checks = pending ? SESSION_CHECKS_PENDING
				     : (n > 0 ? SESSION_CHECKS_SUCCESS : SESSION_CHECKS_NONE);
}

static bool prpoll_same(const struct session_pr *a, const struct session_pr *b)
{
	if (a->state != b->state || a->checks != b->checks || a->n_failing != b->n_failing)
		return false;
	for (unsigned i = 0; i < a->n_failing; i++)
		if (strcmp(a->failing[i], b->failing[i]) != 0)
			return false;
	return true;
}

/* Writes pr into the record of id, under its lock, if it still has that pull request. Returns 0
 * when the record says what pr says (or no longer has that pull request), else -errno. */
static int prpoll_record(struct prpoll *p, const char *id, const struct session_pr *pr)
{
	struct cause cause = {{0}};
	struct session *s = malloc(sizeof(*s));
	int fd = s != NULL ? store_lock(&p->app->store, id) : -ENOMEM, r = 0;

	if (fd >= 0 && (r = store_read(&p->app->store, id, s, &cause)) == 0 &&
	    s->pr.number == pr->number && !prpoll_same(&s->pr, pr)) {
		s->pr.state = pr->state;
		s->pr.checks = pr->checks;
		s->pr.n_failing = pr->n_failing;
		memcpy(s->pr.failing, pr->failing, sizeof(s->pr.failing));
		if ((r = store_write(&p->app->store, s, &cause)) == 0)
			log_info("session %s: pull request #%" PRIu64 " %s, checks %s", id,
				 pr->number, session_pr_state_name(pr->state),
				 session_pr_checks_name(pr->checks));
	}
	if (r == -ENOENT)
		r = 0; /* deleted meanwhile: nothing to keep current */
	if (fd < 0 || r < 0)
		log_warn("session %s: pull request not recorded: %s", id,
			 fd < 0 ? strerror(-fd) : cause.msg);
	store_unlock(fd);
	free(s);
	return fd < 0 ? fd : r;
}

/*
 * One poll of the pull request of s: its state, then its head commit's checks. An ETag is kept
 * only once what its answer said is in the record: a later 304 means "as recorded", so an answer
 * not recorded (the checks' poll limited or failed after the pull request's, a record that could
 * not be written) must come again in full, or a merge seen then would never be recorded.
 */
static void prpoll_one(struct prpoll *p, struct prpoll_entry *e, const struct session *s,
		       const char *token, time_t now)
{
	const char *api = p->app->cfg->github_api;
	char path[PRPOLL_PATH_MAX], pull_etag[GITHUB_ETAG_MAX + 1];
	char checks_etag[GITHUB_ETAG_MAX + 1], sha[PRPOLL_SHA_LEN + 1];
	struct github_reply g;
	struct cause cause = {{0}};
	struct session_pr pr = s->pr;
	bool checks_known = false;
	json_object *v, *head;

	snprintf(pull_etag, sizeof(pull_etag), "%s", e->pull_etag);
	snprintf(checks_etag, sizeof(checks_etag), "%s", e->checks_etag);
	snprintf(sha, sizeof(sha), "%s", e->sha);
	snprintf(path, sizeof(path), "/repos/%s/%s/pulls/%" PRIu64, s->owner, s->name, e->number);
	if (github_call(api, token, "GET", path, NULL, e->pull_etag, &g, &cause) < 0) {
		log_warn("session %s: %s", s->id, cause.msg);
		return;
	}
	if (prpoll_backoff(p, &g, now))
		goto out;
	if (g.status == 200) {
		pr.state = SESSION_PR_OPEN;
		if (json_object_object_get_ex(g.body, "merged", &v) && json_object_get_boolean(v))
			pr.state = SESSION_PR_MERGED;
		else if (json_object_object_get_ex(g.body, "state", &v) &&
			 strcmp(json_object_get_string(v), "closed") == 0)
			pr.state = SESSION_PR_CLOSED;
		if (json_object_object_get_ex(g.body, "head", &head) &&
		    json_object_object_get_ex(head, "sha", &v) &&
		    json_object_get_string_len(v) == PRPOLL_SHA_LEN &&
		    strcmp(json_object_get_string(v), sha) != 0) {
			snprintf(sha, sizeof(sha), "%s", json_object_get_string(v));
			checks_etag[0] = '\0'; /* another commit: its checks are news */
		}
		snprintf(pull_etag, sizeof(pull_etag), "%s", g.etag);
	} else if (g.status != 304) {
		log_warn("session %s: GitHub answered %ld for pull request #%" PRIu64 ": %s", s->id,
			 g.status, e->number, g.message);
		goto out;
	}
	github_reply_free(&g);
	/* The checks' poll may fail or be limited: what the pull request's answer said is recorded
	 * all the same (below), with the checks as they were. */
	if (sha[0] != '\0') {
		snprintf(path, sizeof(path), "/repos/%s/%s/commits/%s/check-runs?per_page=100",
			 s->owner, s->name, sha);
		if (github_call(api, token, "GET", path, NULL, checks_etag, &g, &cause) < 0)
			log_warn("session %s: %s", s->id, cause.msg);
		else if (!prpoll_backoff(p, &g, now) && g.status == 200) {
			prpoll_checks(g.body, &pr);
			snprintf(checks_etag, sizeof(checks_etag), "%s", g.etag);
			checks_known = true;
		} else
			checks_known = g.status == 304;
	}
	if (!prpoll_same(&pr, &s->pr) && prpoll_record(p, s->id, &pr) < 0)
		goto out;
	snprintf(e->pull_etag, sizeof(e->pull_etag), "%s", pull_etag);
	snprintf(e->sha, sizeof(e->sha), "%s", sha);
	/* Checks not answered are asked again in full next time when the head moved (their ETag
	 * was cleared), else their last known ETag stays right for the checks recorded. */
	if (checks_known || checks_etag[0] == '\0')
		snprintf(e->checks_etag, sizeof(e->checks_etag), "%s", checks_etag);
out:
	github_reply_free(&g);
}

/* One round: every open pull request whose time has come is polled. */
static void prpoll_round(struct prpoll *p, char *token)
{
	struct session *all = NULL;
	struct cause cause = {{0}};
	bool have_token = false;
	size_t n = 0, kept = 0;
	time_t now = time(NULL);

	if (now < p->blocked_until || store_list(&p->app->store, &all, &n) < 0)
		return;
	for (size_t i = 0; i < p->n; i++)
		p->entries[i].seen = false;
	for (size_t i = 0; i < n; i++) {
		struct prpoll_entry *e;

		if (all[i].pr.number == 0 || all[i].pr.state != SESSION_PR_OPEN)
			continue;
		if ((e = prpoll_entry(p, &all[i])) == NULL)
			break;
		e->seen = true;
		if (now < e->next_at || now < p->blocked_until)
			continue;
		if (!have_token && github_token(p->app->cfg, token, &cause) < 0) {
			log_warn("pull requests are not polled: %s", cause.msg);
			break;
		}
		have_token = true;
		e->next_at = now + p->app->cfg->pr_poll_seconds;
		prpoll_one(p, e, &all[i], token, now);
		now = time(NULL);
	}
	/* Merged, closed, deleted: no more polls, and their entries go. */
	for (size_t i = 0; i < p->n; i++)
		if (p->entries[i].seen)
			p->entries[kept++] = p->entries[i];
	p->n = kept;
	free(all);
}

static void *prpoll_main(void *arg)
{
	struct prpoll *p = arg;
	char *token = malloc(GITHUB_TOKEN_MAX + 1);
	int tick = p->app->cfg->pr_poll_seconds < PRPOLL_TICK_MAX_S ? p->app->cfg->pr_poll_seconds
								    : PRPOLL_TICK_MAX_S;

	if (token == NULL)
		return NULL;
	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		struct timespec until;

		pthread_mutex_unlock(&p->lock);
		prpoll_round(p, token);
		explicit_bzero(token, GITHUB_TOKEN_MAX + 1);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += tick;
		pthread_mutex_lock(&p->lock);
		while (!p->stop && pthread_cond_timedwait(&p->wake, &p->lock, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&p->lock);
	free(token);
	return NULL;
}

struct prpoll *prpoll_start(const struct app *app)
{
	struct prpoll *p = calloc(1, sizeof(*p));
	int r;

	if (p == NULL)
		return NULL;
	p->app = app;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	if ((r = pthread_create(&p->thread, NULL, prpoll_main, p)) != 0) {
		pthread_cond_destroy(&p->wake);
		pthread_mutex_destroy(&p->lock);
		free(p);
		errno = r;
		return NULL;
	}
	return p;
}

void prpoll_stop(struct prpoll *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
