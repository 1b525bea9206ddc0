#include "boot.h"

#include "create.h"
#include "fsutil.h"
#include "log.h"
#include "procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BOOT_ID_PATH    "/proc/sys/kernel/random/boot_id"
#define BOOT_MARKER_MAX (BOOT_ID_MAX + 48)

/* Reads at most one line of path into out (without its newline). Returns 0 or -errno. */
static int boot_read_line(const char *path, char *out, size_t outlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, out, outlen - 1);
	close(fd);
	if (n < 0)
		return -errno;
	out[n] = '\0';
	out[strcspn(out, "\n")] = '\0';
	return 0;
}

/* The start time of pid in clock ticks since boot, or 0. */
static unsigned long long boot_start_ticks(int pid)
{
	struct procstat ps;

	return procstat_read(pid, &ps) == 0 ? ps.start_ticks : 0;
}

/*
 * Writes what the marker holds when the records are reconciled with the server that runs now:
 * "<boot id> <server pid>:<server start time>" (the start time tells a new server that got an old
 * pid). Returns 0, or -ENOENT when no server runs.
 */
static int boot_marker_line(const struct app *app, char *out, size_t outlen)
{
	char now[BOOT_ID_MAX] = "unknown";
	int pid = tmux_server_pid(&app->tmux, NULL);

	if (pid < 0)
		return pid;
	(void)boot_read_line(BOOT_ID_PATH, now, sizeof(now));
	snprintf(out, outlen, "%s %d:%llu", now, pid, boot_start_ticks(pid));
	return 0;
}

int boot_server_changed(const struct app *app)
{
	char marker[CONFIG_PATH_MAX], want[BOOT_MARKER_MAX], was[BOOT_MARKER_MAX];

	if (config_runtime_path(app->cfg, BOOT_MARKER, marker, sizeof(marker)) < 0 ||
	    boot_marker_line(app, want, sizeof(want)) < 0)
		return 1;
	return boot_read_line(marker, was, sizeof(was)) < 0 || strcmp(was, want) != 0;
}

/* Whether the worktree of s is still one (a directory with its .git), read as the agent. */
static bool boot_worktree_there(const struct app *app, const struct session *s)
{
	char git[SESSION_PATH_MAX + 8];
	struct agentuser_fs fs;
	struct stat st;
	bool there;

	if (snprintf(git, sizeof(git), "%s/.git", s->worktree) >= (int)sizeof(git) ||
	    agentuser_fs_enter(&app->agent, &fs) < 0)
		return false;
	there = stat(s->worktree, &st) == 0 && S_ISDIR(st.st_mode) && access(git, F_OK) == 0;
	agentuser_fs_leave(&fs);
	return there;
}

static int64_t boot_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Starts claude again for s (running when its tmux server ended, no tmux session now). */
static void boot_start(const struct app *app, struct session *s)
{
	struct cause cause = {{0}};

	if (!boot_worktree_there(app, s)) {
		s->state = SESSION_FAILED;
		/* The path may be long: the sentence says what matters without it. */
		snprintf(
		    s->error, sizeof(s->error), "%s",
		    "after its tmux server ended (a reboot, a crash): its worktree is gone, so "
		    "the session was not started again (POST /sessions makes it anew)");
		log_warn("session %s: %s (%s)", s->id, s->error, s->worktree);
		return;
	}
	/* No terminal outlived the server, and a claude just resumed waits for a prompt. */
	s->clients = 0;
	s->state = SESSION_RUNNING;
	s->activity = SESSION_IDLE;
	s->activity_at = boot_now_ms();
	if (create_tmux_session(app, s, &cause) < 0) {
		s->state = SESSION_FAILED;
		snprintf(s->error, sizeof(s->error),
			 "after its tmux server ended (a reboot, a crash): claude could not be "
			 "started again: %.400s",
			 cause.msg);
		log_error("session %s: %s", s->id, s->error);
		return;
	}
	session_launch(s);
	s->error[0] = '\0';
	s->last_activity = (int64_t)time(NULL);
	log_info("session %s: started again in a new tmux server (%s mode, worktree %s)", s->id,
		 session_mode_name(s->mode), s->worktree);
}

/* Whether s was running when its tmux server ended: still said to run (nobody saw the end: a
 * reboot), or lost with the server (recovery saw it go). */
static bool boot_was_running(const struct session *s)
{
	return s->state == SESSION_RUNNING || s->state == SESSION_ATTACHED ||
	       (s->state == SESSION_LOST && strcmp(s->error, BOOT_LOST_WITH_SERVER) == 0);
}

/* One record, under its lock: decided again on what the record and tmux say now. */
static void boot_session(const struct app *app, const char *id)
{
	struct session *s = malloc(sizeof(*s));
	struct cause cause = {{0}};
	int fd = s != NULL ? store_lock(&app->store, id) : -ENOMEM;

	if (fd < 0 || store_read(&app->store, id, s, &cause) < 0)
		goto out;
	/* A tmux session of that name is recovery's to judge (nothing was lost with it). */
	if (tmux_has_session(&app->tmux, s->tmux_name) != 0)
		goto out;
	if (s->state == SESSION_STOPPING) {
		/* Its DELETE was under way: it finishes, and the session stays deleted. */
		store_remove(&app->store, id);
		log_info("session %s: deleted (its deletion was interrupted when its tmux server "
			 "ended; the worktree %s stays)",
			 id, s->worktree);
		goto out;
	}
	if (!boot_was_running(s))
		goto out;
	boot_start(app, s);
	if (store_write(&app->store, s, &cause) < 0)
		log_error("session %s: cannot write its record: %s", id, cause.msg);
out:
	store_unlock(fd);
	free(s);
}

int boot_resume(const struct app *app, struct cause *cause)
{
	char marker[CONFIG_PATH_MAX], now[BOOT_MARKER_MAX], was[BOOT_MARKER_MAX] = "";
	char line[BOOT_MARKER_MAX + 1];
	struct session *recs = NULL;
	size_t n = 0, boot_len;
	int r;

	if (config_runtime_path(app->cfg, BOOT_MARKER, marker, sizeof(marker)) < 0)
		return cause_fail(cause, ENAMETOOLONG, "the runtime directory path is too long");
	/* Without a server nothing could start: the pass runs once one does (the liveness
	 * watcher notices it). */
	if (boot_marker_line(app, now, sizeof(now)) < 0)
		return 0;
	(void)boot_read_line(marker, was, sizeof(was));
	if (strcmp(was, now) == 0)
		return 0;
	r = store_list(&app->store, &recs, &n);
	if (r < 0)
		return cause_fail(cause, -r, "cannot list the session records: %s", strerror(-r));
	boot_len = strcspn(now, " ");
	if (strncmp(was, now, boot_len) != 0 || was[boot_len] != ' ')
		log_info(
		    "first start since boot %.*s: bringing back the sessions that were running",
		    (int)boot_len, now);
	else
		log_info("a new tmux server (%s): bringing back the sessions that were running in "
			 "the one before",
			 now + boot_len + 1);
	for (size_t i = 0; i < n; i++)
		boot_session(app, recs[i].id);
	free(recs);
	/* Written last: a pass that stopped half-way runs again (each session is decided anew). */
	snprintf(line, sizeof(line), "%s\n", now);
	r = fsutil_write_atomic(marker, line, 0644, false);
	if (r < 0)
		return cause_fail(cause, -r, "cannot write %s: %s", marker, strerror(-r));
	return 0;
}
