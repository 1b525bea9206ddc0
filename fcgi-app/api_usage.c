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

int usage_refresh(const struct app *app, const char *id)
{
	struct cause cause = {{0}};
	struct session *s = malloc(sizeof(*s));
	struct session_cost before, more;
	bool changed = false;
	int fd = -1, lock, r;

	if (s == NULL)
		return -ENOMEM;
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
		if (strcmp(list[i].agent, "claude") == 0)
			usage_refresh(app, list[i].id);
	free(list);
}
