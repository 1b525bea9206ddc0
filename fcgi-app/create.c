#include "create.h"

#include "cagecmd.h"
#include "gitrepo.h"
#include "gitstore.h"
#include "log.h"
#include "proc.h"
#include "recovery.h"
#include "sessioncg.h"
#include "standby.h"
#include "worktree.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CREATE_POLL_MS      50
#define CREATE_REAP_POLL_MS 20
#define CREATE_LOCK_FD      3         /* where the worker finds its lock (proc_opts.keep_fd) */
#define CREATE_WORKERS_DIR  "workers" /* in the runtime dir: the worker locks */
/* A setup command (copying .env, installing dependencies) that runs an hour is stuck. */
#define CREATE_SETUP_WAIT_MS (60 * 60 * 1000)
/* After its process ended: how long tmux may take to reap it and tell its status. */
#define CREATE_SETUP_STATUS_MS 2000
/* The setup's pane text read for its last lines: its screen and this much history above it
 * (capture-pane -S -N), which bounds what is read whatever it printed. */
#define CREATE_SETUP_HISTORY     40
#define CREATE_SETUP_CAPTURE_MAX (64 * 1024)

/*
 * The worker lock file <runtime_dir>/workers/<id>.worker exists while a worker may run:
 * create_start makes it, and the worker removes it as it ends, so asking about an id creates no
 * file. In the runtime dir: a worker is a process, gone with a reboot, and the tmpfs makes the file
 * at no cost on the way of a creation (the state dir is a disk, where a file created after an
 * fsync can wait for the journal).
 */
static int create_lock_path(const struct app *app, const char *id, char *path, size_t len)
{
	char leaf[sizeof(CREATE_WORKERS_DIR) + SESSION_ID_MAX + sizeof(".worker")];

	if (!session_id_valid(id))
		return -EINVAL;
	snprintf(leaf, sizeof(leaf), CREATE_WORKERS_DIR "/%s.worker", id);
	return config_runtime_path(app->cfg, leaf, path, len);
}

static int create_lock_open(const struct app *app, const char *id, bool create)
{
	char path[CONFIG_PATH_MAX], dir[CONFIG_PATH_MAX];
	int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), fd, r;

	if ((r = create_lock_path(app, id, path, sizeof(path))) < 0)
		return r;
	fd = open(path, flags, 0600);
	if (fd < 0 && errno == ENOENT && create) {
		/* The first creation since the runtime dir was made: its directory first. */
		if ((r = config_runtime_path(app->cfg, CREATE_WORKERS_DIR, dir, sizeof(dir))) < 0)
			return r;
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return -errno;
		fd = open(path, flags, 0600);
	}
	return fd < 0 ? -errno : fd;
}

static void create_lock_remove(const struct app *app, const char *id)
{
	char path[CONFIG_PATH_MAX];

	if (create_lock_path(app, id, path, sizeof(path)) == 0)
		unlink(path);
}

int create_worker_alive(const struct app *app, const char *id)
{
	int fd = create_lock_open(app, id, false), alive;

	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	alive = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return alive;
}

int create_worker_wait(const struct app *app, const char *id, int timeout_ms)
{
	struct timespec pause = {0, CREATE_POLL_MS * 1000000L};

	for (int waited = 0; waited <= timeout_ms; waited += CREATE_POLL_MS) {
		int r = create_worker_alive(app, id);

		if (r <= 0)
			return 0;
		nanosleep(&pause, NULL);
	}
	return -ETIMEDOUT;
}

/* Opens and locks the worker lock of id for a worker to be (the caller's until handed over). */
static int create_lock_take(const struct app *app, const char *id, struct cause *cause)
{
	int fd = create_lock_open(app, id, true);

	if (fd < 0)
		return cause_fail(cause, fd, "cannot open the worker lock: %s", strerror(-fd));
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return cause_fail(cause, EBUSY, "a creation worker for %s is still running", id);
	}
	return fd;
}

int create_handoff(const struct app *app, const struct session *s, struct cause *cause)
{
	char *record;
	int fd, r;

	if (app->standby == NULL)
		return 0;
	if ((fd = create_lock_take(app, s->id, cause)) < 0)
		return fd;
	record = store_encode(s);
	r = record == NULL ? -ENOMEM : standby_handoff(app->standby, record, strlen(record), fd);
	free(record);
	if (r < 0) /* none waits: create_start makes the lock again */
		create_lock_remove(app, s->id);
	close(fd);
	return r == 0 ? 1 : 0;
}

int create_start(const struct app *app, const struct session *s, struct cause *cause)
{
	char *argv[] = {(char *)app->self_exe, "--create", (char *)s->id,
			app->tmux.no_start ? APP_NO_TMUX_START : NULL, NULL};
	struct proc_opts opts = {
	    .envp = NULL, .cwd = "/", .keep_fd = -1, .new_session = true, .keep_output = true};
	int fd, r, st = 0;

	/* Taken here and handed over, so the worker is "alive" from the first instant. */
	if ((fd = create_lock_take(app, s->id, cause)) < 0)
		return fd;
	opts.keep_fd = fd;
	r = proc_run(argv, &opts, NULL, 0, &st);
	if (r < 0)
		cause_set(cause, "cannot run %s: %s", app->self_exe, strerror(-r));
	else if (st != 0)
		r = cause_fail(cause, ECHILD, "the creation worker exited with status %d", st);
	if (r < 0) /* no worker holds it: we still do */
		create_lock_remove(app, s->id);
	close(fd);
	return r;
}

/* Sets the fields of the worker's outcome in rec: running, or failed with why. */
static void create_outcome(struct session *rec, int result, const char *why)
{
	if (result == 0) {
		rec->state = SESSION_RUNNING;
		session_launch(rec);
		rec->error[0] = '\0';
	} else {
		rec->state = SESSION_FAILED;
		snprintf(rec->error, sizeof(rec->error), "%s", why);
	}
	rec->last_activity = (int64_t)time(NULL);
}

static void create_log_outcome(const char *id, int result, const char *why)
{
	if (result == 0)
		log_info("session %s is running", id);
	else
		log_error("session %s failed: %s", id, why);
}

/* Records a failure under the record's lock, unless it was deleted meanwhile. */
static void create_fail(const struct app *app, const char *id, int result, const char *why)
{
	struct session *rec = malloc(sizeof(*rec));
	int fd = store_lock(&app->store, id);

	if (rec == NULL || fd < 0 || store_read(&app->store, id, rec, NULL) < 0)
		goto out;
	create_outcome(rec, result, why);
	create_log_outcome(id, result, why);
	store_write(&app->store, rec, NULL);
out:
	store_unlock(fd);
	free(rec);
}

/*
 * Starts claude in s's tmux session and records the outcome (running, or failed with the reason)
 * under the record's lock. Returns 0 or -errno with cause.
 */
static int create_launch(const struct app *app, const struct session *s, bool after_setup,
			 struct cause *cause)
{
	struct session *rec = malloc(sizeof(*rec));
	int fd = store_lock(&app->store, s->id), r;

	if (rec == NULL || fd < 0 || store_read(&app->store, s->id, rec, NULL) < 0) {
		/* The POST that handed s over could not write its record: nothing to run. */
		r = cause_fail(cause, ENOENT, "the record of %s is missing; claude not started",
			       s->id);
		log_error("%s", cause->msg);
		goto out;
	}
	r = create_pane_start(app, s, NULL, after_setup, cause);
	if (after_setup)
		rec->policy.setup_done = true;
	create_outcome(rec, r, cause->msg);
	create_log_outcome(s->id, r, cause->msg);
	store_write(&app->store, rec, NULL);
out:
	store_unlock(fd);
	free(rec);
	return r;
}

/* The store layout: the store fetched as the daemon (its files, which the agents only read),
 * then the session's repository made as the agent (its files). */
static int create_git_store(const struct app *app, const struct session *s, const char *url,
			    struct cause *cause)
{
	const struct config *cfg = app->cfg;
	struct cause fetch = {{0}};
	struct agent_user au;
	struct agentuser_fs fs;
	int lock, r;

	lock = gitstore_lock(cfg->git_store_dir, s->owner, s->name);
	if (lock < 0)
		return cause_fail(cause, -lock, "cannot lock the store of %s/%s under %s: %s",
				  s->owner, s->name, cfg->git_store_dir, strerror(-lock));
	r = gitstore_ensure(cfg->git_store_dir, s->owner, s->name, url, &fetch);
	store_unlock(lock);
	if (r == 1)
		log_warn("%s: continuing with the last fetched state: %s", s->id, fetch.msg);
	if (r < 0) {
		*cause = fetch;
		return r;
	}
	/* A caged session's repository is its own uid's: made in the base dir every session uid
	 * writes (no other's entry can be touched there), and only by it. */
	cagecmd_user(app, s->uid, &au);
	if (s->uid != 0 && ((r = cagecmd_shared_dir(app, cfg->base_dir, cause)) < 0 ||
			    (r = cagecmd_repo_check(app, s, cause)) < 0))
		return r;
	if ((r = agentuser_fs_enter(&au, &fs)) < 0)
		return cause_fail(cause, -r, "cannot take the session's file identity: %s",
				  strerror(-r));
	r = gitstore_session_add(cfg->git_store_dir, s->owner, s->name, s->worktree, s->branch, url,
				 cause);
	if (r == 0 && (r = cagecmd_repo_mode(app, s)) < 0)
		cause_set(cause, "cannot chmod %s: %s", s->worktree, strerror(-r));
	agentuser_fs_leave(&fs);
	return r;
}

/* The bare clone, its fetch and the worktree, as the agent user: they are its files. */
static int create_git(const struct app *app, const struct session *s, const char *url,
		      struct cause *cause)
{
	const struct config *cfg = app->cfg;
	struct cause fetch = {{0}};
	struct agentuser_fs fs;
	int lock, r;

	if (cfg->git_store_dir[0] != '\0')
		return create_git_store(app, s, url, cause);
	if ((r = agentuser_fs_enter(&app->agent, &fs)) < 0)
		return cause_fail(cause, -r, "cannot take the agent user's identity: %s",
				  strerror(-r));
	lock = worktree_lock(cfg->base_dir, s->owner, s->name);
	if (lock < 0) {
		r = cause_fail(cause, lock, "cannot lock the repository %s/%s under %s: %s",
			       s->owner, s->name, cfg->base_dir, strerror(-lock));
		goto out;
	}
	r = worktree_ensure_repo(cfg->base_dir, s->owner, s->name, url, &fetch);
	if (r == 1)
		log_warn("%s: continuing with the last fetched state: %s", s->id, fetch.msg);
	if (r < 0)
		*cause = fetch;
	else
		r = worktree_add(cfg->base_dir, s->owner, s->name, s->worktree, s->branch, cause);
	store_unlock(lock);
out:
	agentuser_fs_leave(&fs);
	return r;
}

/* Writes the setup command's progress into the record of id (under its lock, briefly: the
 * command itself runs without it). */
static void create_setup_record(const struct app *app, const char *id, enum policy_setup st,
				int code, const char *output)
{
	struct session *rec = malloc(sizeof(*rec));
	int fd = store_lock(&app->store, id);

	if (rec == NULL || fd < 0 || store_read(&app->store, id, rec, NULL) < 0)
		goto out;
	rec->policy.setup = st;
	rec->policy.setup_exit = code;
	snprintf(rec->policy.setup_output, sizeof(rec->policy.setup_output), "%s", output);
	store_write(&app->store, rec, NULL);
out:
	store_unlock(fd);
	free(rec);
}

/*
 * The setup command of s: <AGENTD_SETUP_DIR>/<owner>/<name> when that is an executable file,
 * else AGENTD_SETUP_COMMAND's words (json holds them; the caller puts it). Returns the number of
 * words in argv (NULL-ended), 0 when there is none.
 */
static size_t create_setup_argv(const struct app *app, const struct session *s, char *path,
				size_t pathlen, json_object **json, char **argv)
{
	const struct config *cfg = app->cfg;
	struct stat st;
	size_t n = 0;

	*json = NULL;
	if (cfg->setup_dir[0] != '\0' &&
	    snprintf(path, pathlen, "%s/%s/%s", cfg->setup_dir, s->owner, s->name) < (int)pathlen &&
	    stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0) {
		argv[0] = path;
		argv[1] = NULL;
		return 1;
	}
	if (cfg->setup_command[0] == '\0' ||
	    (*json = json_tokener_parse(cfg->setup_command)) == NULL)
		return 0;
	/* config_set checked it: an array of 1 to POLICY_SETUP_ARGV_MAX strings. */
	for (; n < json_object_array_length(*json) && n < POLICY_SETUP_ARGV_MAX; n++)
		argv[n] = (char *)json_object_get_string(json_object_array_get_idx(*json, n));
	argv[n] = NULL;
	return n;
}

/* The exit status (0..255, 128 + N for signal N) of the pane process pid once it ended: from
 * tmux, or from /proc while tmux has not reaped it. -1 when neither can tell. */
static int create_setup_status(const struct app *app, const struct session *s, pid_t pid)
{
	struct timespec pause = {0, CREATE_REAP_POLL_MS * 1000000L};
	struct tmux_info *ti = malloc(sizeof(*ti));
	int code = -1, ws, r;

	for (int waited = 0; ti != NULL && waited < CREATE_SETUP_STATUS_MS;
	     waited += CREATE_REAP_POLL_MS) {
		if (tmux_pane_state(&app->tmux, s->tmux_name, ti) == 1 && ti->pane_dead &&
		    (ti->dead_status >= 0 || ti->dead_signal > 0)) {
			code = ti->dead_signal > 0 ? 128 + ti->dead_signal : ti->dead_status;
			break;
		}
		r = ti->server_pid > 0 ? proc_zombie_status(pid, ti->server_pid, &ws) : -ESRCH;
		if (r == 0) {
			code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
			break;
		}
		/* A caged pane's status the kernel keeps from us: tmux reaps it now, and tells. */
		if (r == -EACCES)
			kill((pid_t)ti->server_pid, SIGCHLD);
		nanosleep(&pause, NULL);
	}
	free(ti);
	return code > 255 ? 255 : code;
}

/* The last POLICY_SETUP_LINES lines of the pane's text (without tmux's "Pane is dead" line and
 * blank lines at the end), at most outlen - 1 bytes of their end. */
static void create_setup_tail(const struct app *app, const struct session *s, char *out,
			      size_t outlen)
{
	char *text = malloc(CREATE_SETUP_CAPTURE_MAX), *start;
	struct cause cause = {{0}};
	size_t n;
	int lines = 0;

	out[0] = '\0';
	if (text == NULL || tmux_capture(&app->tmux, s->tmux_name, s->id, CREATE_SETUP_HISTORY,
					 text, CREATE_SETUP_CAPTURE_MAX, &cause) != 0)
		goto out;
	n = strlen(text);
	for (;;) {
		while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' '))
			text[--n] = '\0';
		start = memrchr(text, '\n', n);
		start = start != NULL ? start + 1 : text;
		if (strncmp(start, "Pane is dead", 12) != 0 || start == text)
			break;
		n = (size_t)(start - text);
		text[n] = '\0';
	}
	for (start = text + n; start > text; start--)
		if (start[-1] == '\n' && ++lines == POLICY_SETUP_LINES)
			break;
	if (strlen(start) >= outlen)
		start += strlen(start) - (outlen - 1);
	snprintf(out, outlen, "%s", start);
out:
	free(text);
}

/*
 * Runs the setup command of s's new worktree (create_setup_argv) once, before claude: in a new
 * tmux session for s, as the agent and in its cage like claude, so its output shows in the pane
 * (tmux attach), and waits for it. Its progress and last lines go into the record ("setup",
 * published on /events). Returns 1 when it succeeded (claude starts in that tmux session), 0
 * when there is none or it ran before, -EIO when it failed (cause: its status and last lines;
 * its tmux session is gone), or -errno with cause.
 */
static int create_setup(const struct app *app, const struct session *s, struct cause *cause)
{
	char path[CONFIG_PATH_MAX], *argv[POLICY_SETUP_ARGV_MAX + 1];
	char output[POLICY_SETUP_OUTPUT];
	json_object *json = NULL;
	int r, fd = -1, code;
	struct pollfd p;
	pid_t pid;

	if (s->policy.setup_done ||
	    create_setup_argv(app, s, path, sizeof(path), &json, argv) == 0) {
		json_object_put(json);
		return 0;
	}
	log_info("session %s: running its setup command %s", s->id, argv[0]);
	create_setup_record(app, s->id, POLICY_SETUP_RUNNING, 0, "");
	r = create_pane_start(app, s, argv, false, cause);
	json_object_put(json);
	if (r < 0)
		goto fail;
	if ((r = tmux_pane_pid(&app->tmux, s->tmux_name, s->id, cause)) < 0)
		goto fail;
	pid = (pid_t)r;
	if ((fd = pidfd_open(pid, 0)) >= 0) {
		p = (struct pollfd){.fd = fd, .events = POLLIN};
		while ((r = poll(&p, 1, CREATE_SETUP_WAIT_MS)) < 0 && errno == EINTR)
			;
		if (r == 0) {
			log_warn("session %s: its setup command ran past %d s; killing it", s->id,
				 CREATE_SETUP_WAIT_MS / 1000);
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			poll(&p, 1, CREATE_SETUP_STATUS_MS);
		}
		close(fd);
	}
	code = create_setup_status(app, s, pid);
	create_setup_tail(app, s, output, sizeof(output));
	if (code == 0) {
		create_setup_record(app, s->id, POLICY_SETUP_OK, 0, output);
		log_info("session %s: its setup command succeeded", s->id);
		return 1;
	}
	create_setup_record(app, s->id, POLICY_SETUP_FAILED, code < 0 ? 255 : code, output);
	tmux_kill_session(&app->tmux, s->tmux_name, s->id, NULL);
	return cause_fail(cause, EIO, "the setup command failed (exit status %d): %s",
			  code < 0 ? 255 : code, output);
fail:
	create_setup_record(app, s->id, POLICY_SETUP_FAILED, 255, cause->msg);
	tmux_kill_session(&app->tmux, s->tmux_name, s->id, NULL);
	return r;
}

/* The worker's steps for s: git, then tmux and the record (create_launch), or the failure.
 * git_ready is worktree_global_init's result: without it libgit2 would read the daemon's git
 * configuration, not the agent's. */
static int create_run(const struct app *app, const struct session *s, int git_ready,
		      struct cause *cause)
{
	char url[WORKTREE_URL_MAX];
	int r;

	if (git_ready < 0)
		r = cause_fail(cause, -git_ready,
			       "libgit2 cannot be set up to read the agent's git configuration: %s",
			       strerror(-git_ready));
	else if (session_render_prompt(app->cfg->repo_url, s->owner, s->name, s->issue, url,
				       sizeof(url)) < 0)
		r = cause_fail(cause, ENAMETOOLONG, "AGENTD_REPO_URL renders too long a URL");
	else
		r = create_git(app, s, url, cause);
	/* The setup command of a new worktree, before claude: 1 when it ran (in the tmux session
	 * claude then starts in), 0 when there is none or it ran before. */
	if (r == 0)
		r = create_setup(app, s, cause);
	if (r < 0) {
		create_fail(app, s->id, r, cause->msg);
		return r;
	}
	return create_launch(app, s, r == 1, cause);
}

/* Detaches the worker: the process that started it waits only for this first one. Fork is
 * safe here: this process was just exec'd and has one thread. Returns 0 in the worker, -errno. */
static int create_detach(void)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid > 0)
		_exit(0);
	return 0;
}

/* The worker's work for s, its lock held as CREATE_LOCK_FD. Returns the exit code. */
static int create_work(const struct app *app, const struct session *s, int git_ready)
{
	struct cause cause = {{0}};
	int r = create_run(app, s, git_ready, &cause);

	/* An agent that died while the record still said creating was left alone by the liveness
	 * watcher: it looks again now that the record says running. */
	if (r == 0)
		tmux_signal(&app->tmux);
	/* Removed while held, so that a waiter that opened it sees the worker end, then no file. */
	create_lock_remove(app, s->id);
	close(CREATE_LOCK_FD); /* releases the worker lock */
	return r < 0 ? 1 : 0;
}

int create_worker_main(const struct app *app, const char *id)
{
	struct cause cause = {{0}};
	struct session *s;
	int r;

	if (create_detach() < 0)
		return 1;
	if (!session_id_valid(id))
		return 2;
	s = malloc(sizeof(*s));
	if (s == NULL || store_read(&app->store, id, s, &cause) < 0) {
		log_error("worker for %s: cannot read the record: %s", id, cause.msg);
		free(s);
		create_lock_remove(app, id);
		return 1;
	}
	r = create_work(app, s, worktree_global_init(cagecmd_git_home(app)));
	free(s);
	return r;
}

int create_standby_main(const struct app *app, char **argv)
{
	struct cause cause = {{0}};
	struct session *s = NULL;
	char *record = NULL;
	int lock_fd = -1, r = 1, git_ready;
	size_t len = 0;

	if (create_detach() < 0)
		return 1;
	/* The costly part of a worker's start, done before any session needs it. */
	git_ready = worktree_global_init(cagecmd_git_home(app));
	s = malloc(sizeof(*s));
	record = malloc(STANDBY_PAYLOAD_MAX + 1);
	if (s == NULL || record == NULL)
		goto out;
	r = standby_receive(STANDBY_SOCKFD, record, STANDBY_PAYLOAD_MAX + 1, &len, &lock_fd);
	if (r <= 0) {
		if (r < 0)
			log_error("waiting creation worker: %s", strerror(-r));
		r = r < 0 ? 1 : 0; /* 0: agentd-api stopped */
		goto out;
	}
	close(STANDBY_SOCKFD);
	/* The lock first: whatever happens next, it is where a worker's lock is, and released. */
	if (lock_fd != CREATE_LOCK_FD && dup2(lock_fd, CREATE_LOCK_FD) < 0) {
		log_error("waiting creation worker: cannot keep its lock: %s", strerror(errno));
		r = 1;
		goto out;
	}
	if (lock_fd != CREATE_LOCK_FD)
		close(lock_fd);
	lock_fd = -1;
	if (store_decode(record, len, s, &cause) < 0) {
		log_error("waiting creation worker: the session it was given: %s", cause.msg);
		r = 1; /* its lock file stays: the id is not known to be valid */
		goto out;
	}
	if (standby_retitle(argv, s->id) < 0)
		log_warn("worker for %s: its command line still says " STANDBY_ARG, s->id);
	r = create_work(app, s, git_ready);
out:
	if (lock_fd >= 0)
		close(lock_fd);
	free(record);
	free(s);
	return r;
}
