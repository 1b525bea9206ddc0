/*
 * GET /usage and the reading of claude's transcripts into the sessions' costs (api_usage.h).
 * Reads only (the records it writes are its own bookkeeping), so read-only identities may ask.
 */
#include "api_usage.h"

#include "agentuser.h"
#include "cagecmd.h"
#include "claude.h"
#include "cost.h"
#include "isotime.h"
#include "log.h"
#include "policy.h"
#include "router.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The longest ?since=: an ISO time with milliseconds and an offset is 29 bytes. */
#define USAGE_SINCE_MAX 40
/* Without ?since=: the last week. */
#define USAGE_DEFAULT_SINCE_S (7 * 86400)
/* Repositories in one answer: every session's, at most AGENTD_MAX_SESSIONS (10000). */
#define USAGE_REPOS_MAX 10000

/* The HOME claude of s writes its transcript under: the session's own when caged. */
static void usage_home(const struct app *app, const struct session *s, char *home, size_t len)
{
	char why[8];

	if (!cagecmd_enabled(app, why, sizeof(why)) ||
	    snprintf(home, len, "%s/%s", app->cfg->homes_dir, s->id) >= (int)len)
		snprintf(home, len, "%s", app->agent.home);
}

/* Opens the transcript of s as the agent: the daemon's own rights never reach a file the agent
 * could not read (a link it planted to another session's HOME, say). Returns the fd or -errno. */
static int usage_open(const struct app *app, const struct session *s)
{
	char home[CONFIG_PATH_MAX], path[CONFIG_PATH_MAX * 2];
	struct agentuser_fs fs;
	struct agent_user au;
	int fd, r;

	usage_home(app, s, home, sizeof(home));
	if ((r = claude_transcript_path(s, home, getenv("CLAUDE_CONFIG_DIR"), path, sizeof(path))) <
	    0)
		return r;
	cagecmd_user(app, s->uid, &au);
	if ((r = agentuser_fs_enter(&au, &fs)) < 0)
		return r;
	/* Non-blocking: a FIFO in its place must not hold the request (cost_transcript_read then
	 * refuses what is not a regular file). */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	r = fd < 0 ? -errno : fd;
	agentuser_fs_leave(&fs);
	return r;
}

/* True when the transcript of s holds bytes its record has not taken in: asked without the
 * session's lock, so that a GET of a session whose transcript did not grow takes none. */
static bool usage_grew(const struct app *app, const struct session *s)
{
	struct stat st;
	bool grew;
	int fd;

	if (strcmp(s->agent, "claude") != 0 || (fd = usage_open(app, s)) < 0)
		return false;
	grew = fstat(fd, &st) == 0 && (uint64_t)st.st_size != s->transcript.offset;
	close(fd);
	return grew;
}

int usage_refresh(const struct app *app, const char *id)
{
	struct cause cause = {{0}};
	struct session *s = malloc(sizeof(*s));
	struct session_cost before, more;
	bool changed = false;
	int fd = -1, lock, r;

	if (s == NULL)
		return -ENOMEM;
	if ((r = store_read(&app->store, id, s, &cause)) < 0 || !usage_grew(app, s)) {
		free(s);
		return r;
	}
	lock = store_lock(&app->store, id);
	if (lock < 0) {
		free(s);
		return lock;
	}
	if ((r = store_read(&app->store, id, s, &cause)) < 0 || strcmp(s->agent, "claude") != 0)
		goto out;
	if ((fd = usage_open(app, s)) < 0) {
		r = fd == -ENOENT ? 0 : fd; /* claude has written nothing yet */
		goto out;
	}
	before = s->transcript.cost;
	if ((r = cost_transcript_read(&s->transcript, fd, &changed)) < 0 || !changed)
		goto out;
	cost_delta(&s->transcript.cost, &before, &more);
	cost_days_add(&s->days, (int64_t)time(NULL), &more);
	if ((r = store_write(&app->store, s, &cause)) < 0)
		log_warn("session %s: cannot write what its transcript cost: %s", id, cause.msg);
out:
	if (r < 0 && r != -ENOENT)
		log_warn("session %s: cannot read claude's transcript: %s", id, strerror(-r));
	if (fd >= 0)
		close(fd);
	store_unlock(lock);
	free(s);
	return r;
}

void usage_refresh_all(const struct app *app)
{
	struct session *list;
	size_t n;

	if (store_list(&app->store, &list, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		if (usage_grew(app, &list[i]))
			usage_refresh(app, list[i].id);
	free(list);
}

/* ?since=: "YYYY-MM-DD" (that day, UTC), an ISO time "YYYY-MM-DDTHH:MM:SSZ", or a duration
 * back from now ("7d", "24h"). Returns 0 with *out (unix seconds) or -EINVAL. */
static int usage_parse_since(const char *v, int64_t now, int64_t *out)
{
	char date[ISOTIME_LEN + 1];
	int64_t secs;

	if (strlen(v) == 10) {
		/* A day is its midnight: the ISO time parser reads the rest. */
		snprintf(date, sizeof(date), "%sT00:00:00Z", v);
		return isotime_parse(date, out);
	}
	if (isotime_parse(v, out) == 0)
		return 0;
	if (policy_parse_duration(v, &secs) < 0)
		return -EINVAL;
	*out = now - secs;
	return 0;
}

struct usage_repo {
	const char *owner, *name;
	struct session_cost cost;
	unsigned sessions;
};

static json_object *usage_day_json(int64_t day, const struct session_cost *c)
{
	json_object *o = json_object_new_object();
	char t[ISOTIME_LEN + 1];

	isotime_format(day * 86400, t, sizeof(t));
	t[10] = '\0'; /* the date of it */
	json_object_object_add(o, "day", json_object_new_string(t));
	json_object_object_add(o, "cost", cost_json(c));
	return o;
}

static void api_usage(const struct app *app, struct request *req,
		      const char *const args[ROUTER_MAX_ARGS])
{
	struct session_cost total = {0}, days[COST_DAYS_MAX];
	struct usage_repo *repos = NULL;
	struct session *list = NULL;
	int64_t now = (int64_t)time(NULL), since, first, today = now / 86400;
	char v[USAGE_SINCE_MAX + 1], t[ISOTIME_LEN + 1];
	const char *given = request_query(req, "since", v, sizeof(v));
	json_object *o, *arr;
	size_t n = 0, nrepos = 0;
	unsigned sessions = 0;
	int r;

	if (given == NULL && strstr(req->query, "since=") != NULL) {
		request_error(req, 400, "invalid_since", "since is too long");
		return;
	}
	if (given == NULL)
		since = now - USAGE_DEFAULT_SINCE_S;
	else if (usage_parse_since(given, now, &since) < 0) {
		request_error(
		    req, 400, "invalid_since",
		    "since must be a date (2026-11-01), a UTC time (2026-11-01T08:00:00Z) "
		    "or a duration back from now (7d, 24h)");
		return;
	}
	/* Costs are kept by day: the answer starts at the start of since's day. */
	first = (since >= 0 ? since : 0) / 86400;
	if (since > now || first < today - (COST_DAYS_MAX - 1)) {
		request_error(req, 400, "invalid_since",
			      "since must be in the last %d days (costs are kept by day for that "
			      "long)",
			      COST_DAYS_MAX);
		return;
	}
	usage_refresh_all(app);
	if ((r = store_list(&app->store, &list, &n)) < 0) {
		request_error(req, 500, "store_error", "cannot list sessions: %s", strerror(-r));
		return;
	}
	if (n > USAGE_REPOS_MAX || (n > 0 && (repos = calloc(n, sizeof(*repos))) == NULL)) {
		request_error(req, 500, "out_of_memory", "out of memory");
		goto out;
	}
	memset(days, 0, sizeof(days));
	for (size_t i = 0; i < n; i++) {
		const struct session *s = &list[i];
		struct usage_repo *repo = NULL;
		bool counted = false;

		for (unsigned d = 0; d < s->days.n; d++) {
			const struct cost_day *cd = &s->days.d[d];

			if (cd->day < first || cd->day > today)
				continue;
			if (repo == NULL) {
				for (size_t k = 0; k < nrepos && repo == NULL; k++)
					if (strcmp(repos[k].owner, s->owner) == 0 &&
					    strcmp(repos[k].name, s->name) == 0)
						repo = &repos[k];
				if (repo == NULL) {
					repo = &repos[nrepos++];
					repo->owner = s->owner;
					repo->name = s->name;
				}
			}
			cost_sum(&repo->cost, &cd->cost, &repo->cost);
			cost_sum(&days[cd->day - first], &cd->cost, &days[cd->day - first]);
			cost_sum(&total, &cd->cost, &total);
			counted = true;
		}
		if (counted) {
			repo->sessions++;
			sessions++;
		}
	}
	o = json_object_new_object();
	isotime_format(first * 86400, t, sizeof(t));
	json_object_object_add(o, "since", json_object_new_string(t));
	isotime_format(now, t, sizeof(t));
	json_object_object_add(o, "until", json_object_new_string(t));
	json_object_object_add(o, "sessions", json_object_new_int(sessions));
	json_object_object_add(o, "total", cost_json(&total));
	arr = json_object_new_array();
	for (size_t k = 0; k < nrepos; k++) {
		json_object *e = json_object_new_object(), *repo = json_object_new_object();

		json_object_object_add(repo, "owner", json_object_new_string(repos[k].owner));
		json_object_object_add(repo, "name", json_object_new_string(repos[k].name));
		json_object_object_add(e, "repo", repo);
		json_object_object_add(e, "sessions", json_object_new_int(repos[k].sessions));
		json_object_object_add(e, "cost", cost_json(&repos[k].cost));
		json_object_array_add(arr, e);
	}
	json_object_object_add(o, "repos", arr);
	arr = json_object_new_array();
	for (int64_t d = first; d <= today; d++)
		json_object_array_add(arr, usage_day_json(d, &days[d - first]));
	json_object_object_add(o, "days", arr);
	request_reply(req, 200, o, NULL);
out:
	free(repos);
	free(list);
}

const struct route api_usage_routes[] = {
    {"GET", "/usage", api_usage, false},
    {NULL, NULL, NULL, false},
};
