/*
 * GET /metrics (docs/API.md "Metrics"): the Prometheus text format. agentd-api answers it with
 * its own numbers (apimetrics.h), the sessions' facts as their records say them (state,
 * activity, pending requests: the records' writers own them, this only reads), the sessions'
 * processes as their cgroups count them (caged sessions, sessioncg.h) or else as /proc shows
 * them, and agentd-bridge's own families, which it asks the bridge for on its socket
 * (ptybridge/stats.h): each daemon counts what it does, and one scrape sees both.
 */
#include "router.h"

#include "apimetrics.h"
#include "log.h"
#include "metrics.h"
#include "procstat.h"
#include "sessioncg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* The bridge answers from memory on its loop: a second is a hung bridge, not a busy one, and a
 * scrape (Prometheus' default timeout is 10 s) must not wait on it longer. */
#define API_METRICS_BRIDGE_TIMEOUT_MS 1000
/* Its answer: a few hundred lines. More is not the bridge's answer. */
#define API_METRICS_BRIDGE_MAX (256 * 1024)
/* Processes read from /proc for the sessions' trees; a machine with more is not read further
 * (the per-session numbers then cover what was read). */
#define API_METRICS_PROCS_MAX 65536
/* Parent links followed up from a process looking for a pane: deeper trees are not agents'. */
#define API_METRICS_TREE_DEPTH 64

static const enum session_state api_metrics_states[] = {
    SESSION_CREATING, SESSION_RUNNING, SESSION_ATTACHED, SESSION_STOPPING,
    SESSION_FAILED,   SESSION_EXITED,  SESSION_LOST,
};
static const char *const api_metrics_activities[] = {"working", "waiting", "idle", "exited"};
#define API_METRICS_NSTATES     (sizeof(api_metrics_states) / sizeof(api_metrics_states[0]))
#define API_METRICS_NACTIVITIES (sizeof(api_metrics_activities) / sizeof(api_metrics_activities[0]))

/* One process of /proc: its parent, CPU time (its own and its reaped children's, clock ticks)
 * and resident pages. */
struct api_metrics_proc {
	long pid, ppid;
	unsigned long long ticks, rss_pages;
};

/* Reads /proc/<pid>/stat. Returns 0 or -1. */
static int api_metrics_read_stat(long pid, struct api_metrics_proc *p)
{
	struct procstat ps;

	if (procstat_read(pid, &ps) < 0)
		return -1;
	p->pid = pid;
	p->ppid = ps.ppid;
	p->ticks = ps.utime + ps.stime + ps.cutime + ps.cstime;
	p->rss_pages = ps.rss_pages;
	return 0;
}

static int api_metrics_by_pid(const void *a, const void *b)
{
	long x = ((const struct api_metrics_proc *)a)->pid,
	     y = ((const struct api_metrics_proc *)b)->pid;

	return (x > y) - (x < y);
}

/* Every process /proc lists (at most API_METRICS_PROCS_MAX), sorted by pid. *out allocated
 * (caller frees). */
static int api_metrics_scan(struct api_metrics_proc **out, size_t *n)
{
	struct api_metrics_proc *v = NULL, *grown;
	size_t cap = 0;
	struct dirent *de;
	DIR *d;

	*out = NULL;
	*n = 0;
	if ((d = opendir("/proc")) == NULL)
		return -errno;
	while ((de = readdir(d)) != NULL && *n < API_METRICS_PROCS_MAX) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end != '\0' || pid <= 0)
			continue;
		if (*n == cap) {
			cap = cap != 0 ? cap * 2 : 256;
			if ((grown = realloc(v, cap * sizeof(*v))) == NULL)
				break;
			v = grown;
		}
		if (api_metrics_read_stat(pid, &v[*n]) == 0)
			(*n)++;
	}
	closedir(d);
	if (*n > 0)
		qsort(v, *n, sizeof(*v), api_metrics_by_pid);
	*out = v;
	return 0;
}

/* v is sorted by pid (api_metrics_scan). */
static const struct api_metrics_proc *api_metrics_find(const struct api_metrics_proc *v, size_t n,
						       long pid)
{
	struct api_metrics_proc key = {.pid = pid};

	return n > 0 ? bsearch(&key, v, n, sizeof(*v), api_metrics_by_pid) : NULL;
}

/* The pane process's tree: the sum of its processes' CPU seconds and resident bytes. Returns
 * false when the pane's process is not running. */
static bool api_metrics_tree(const struct api_metrics_proc *v, size_t n, long pane, double *cpu,
			     double *rss)
{
	long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	unsigned long long ticks = 0, pages = 0;

	if (pane <= 0 || api_metrics_find(v, n, pane) == NULL)
		return false;
	for (size_t i = 0; i < n; i++) {
		long p = v[i].pid;

		for (int depth = 0; p > 1 && p != pane && depth < API_METRICS_TREE_DEPTH; depth++) {
			const struct api_metrics_proc *up = api_metrics_find(v, n, p);

			p = up != NULL ? up->ppid : 0;
		}
		if (p == pane) {
			ticks += v[i].ticks;
			pages += v[i].rss_pages;
		}
	}
	*cpu = (double)ticks / (double)(tick > 0 ? tick : 100);
	*rss = (double)pages * (double)(page > 0 ? page : 4096);
	return true;
}

/* Where a session's memory and CPU figures come from. */
enum api_metrics_source {
	API_METRICS_NONE,   /* no cgroup and no running pane: no sample */
	API_METRICS_CGROUP, /* its cgroup (sessioncg.h): a caged session */
	API_METRICS_PROC,   /* its pane's process tree in /proc */
};

struct api_metrics_figures {
	enum api_metrics_source source;
	struct cgroup_usage cg; /* API_METRICS_CGROUP */
	double cpu, rss;        /* API_METRICS_PROC: seconds, bytes */
};

static void api_metrics_sessions(const struct app *app, struct metrics_text *t)
{
	struct session *list = NULL;
	struct tmux_info *panes = NULL;
	struct api_metrics_proc *procs = NULL;
	struct api_metrics_figures *figs = NULL;
	size_t n = 0, npanes = 0, nprocs = 0, pending = 0;
	size_t states[API_METRICS_NSTATES] = {0}, activities[API_METRICS_NACTIVITIES] = {0};
	struct cause cause = {{0}};
	char label[METRICS_LABELS_MAX];
	struct timespec now;
	double oldest = 0;

	clock_gettime(CLOCK_REALTIME, &now);
	if (store_list(&app->store, &list, &n) < 0)
		n = 0;
	for (size_t i = 0; i < n; i++) {
		const struct session *s = &list[i];
		const char *activity = session_activity_name(s);

		for (size_t k = 0; k < API_METRICS_NSTATES; k++)
			states[k] += s->state == api_metrics_states[k];
		for (size_t k = 0; k < API_METRICS_NACTIVITIES; k++)
			activities[k] += strcmp(activity, api_metrics_activities[k]) == 0;
		if (strcmp(activity, "waiting") == 0) {
			double age = (double)now.tv_sec + (double)now.tv_nsec / 1e9 -
				     (double)s->activity_at / 1000.0;

			pending += s->n_pending;
			if (age > oldest)
				oldest = age;
		}
	}
	metrics_family(t, "agentd_sessions", "gauge", "Sessions by state (their records).");
	for (size_t k = 0; k < API_METRICS_NSTATES; k++) {
		metrics_label(label, sizeof(label), "state",
			      session_state_name(api_metrics_states[k]));
		metrics_sample_u64(t, "agentd_sessions", label, states[k]);
	}
	metrics_family(t, "agentd_sessions_activity", "gauge",
		       "Sessions by activity: working, waiting (for a person), idle, exited.");
	for (size_t k = 0; k < API_METRICS_NACTIVITIES; k++) {
		metrics_label(label, sizeof(label), "activity", api_metrics_activities[k]);
		metrics_sample_u64(t, "agentd_sessions_activity", label, activities[k]);
	}
	metrics_family(t, "agentd_pending_approvals", "gauge",
		       "Tool-permission requests waiting for an answer (listed in the records).");
	metrics_sample_u64(t, "agentd_pending_approvals", NULL, pending);
	metrics_family(t, "agentd_approval_wait_oldest_seconds", "gauge",
		       "Seconds the session that has waited longest for a person has been waiting "
		       "(activity waiting); 0 when none waits.");
	metrics_sample(t, "agentd_approval_wait_oldest_seconds", NULL, oldest);

	/* Per session, for the sessions that hold a slot (AGENTD_MAX_SESSIONS bounds them). */
	metrics_family(t, "agentd_session_restarts", "gauge",
		       "Times claude was started again in a session (after a restart, a mode "
		       "switch, a reboot): launches after the first.");
	for (size_t i = 0; i < n; i++) {
		if (!session_holds_slot(list[i].state))
			continue;
		metrics_label(label, sizeof(label), "session", list[i].id);
		metrics_sample_u64(t, "agentd_session_restarts", label,
				   list[i].launch > 1 ? list[i].launch - 1 : 0);
	}
	if ((figs = calloc(n > 0 ? n : 1, sizeof(*figs))) == NULL) {
		t->error = -ENOMEM;
		goto out;
	}
	for (size_t i = 0, scanned = 0; i < n; i++) {
		long pane = 0;

		if (!session_holds_slot(list[i].state))
			continue;
		/* A caged session's cgroup holds every process it started, daemonised ones
		 * included, and the kernel's own count of its memory: /proc's tree is the
		 * fallback for the sessions that have none. */
		if (sessioncg_usage(app, list[i].id, &figs[i].cg) == 0) {
			figs[i].source = API_METRICS_CGROUP;
			continue;
		}
		if (!scanned++) {
			if (tmux_list(&app->tmux, &panes, &npanes, &cause) < 0)
				npanes = 0;
			api_metrics_scan(&procs, &nprocs);
		}
		for (size_t p = 0; p < npanes; p++)
			if (strcmp(panes[p].meta.id, list[i].id) == 0 && !panes[p].pane_dead)
				pane = panes[p].pane_pid;
		if (api_metrics_tree(procs, nprocs, pane, &figs[i].cpu, &figs[i].rss))
			figs[i].source = API_METRICS_PROC;
	}
	metrics_family(t, "agentd_session_memory_bytes", "gauge",
		       "Memory of a session's processes: a caged session's cgroup's own count "
		       "(memory.current, v1 memory.usage_in_bytes: page cache included); for a "
		       "session without a cgroup, the resident memory summed over its tmux pane's "
		       "process tree in /proc (shared pages count once per process).");
	for (size_t i = 0; i < n; i++) {
		if (figs[i].source == API_METRICS_NONE)
			continue;
		metrics_label(label, sizeof(label), "session", list[i].id);
		metrics_sample(t, "agentd_session_memory_bytes", label,
			       figs[i].source == API_METRICS_CGROUP
				   ? (double)figs[i].cg.memory_bytes
				   : figs[i].rss);
	}
	metrics_family(t, "agentd_session_memory_peak_bytes", "gauge",
		       "The most memory a caged session's cgroup has used since its agent was "
		       "started (memory.peak, v1 memory.max_usage_in_bytes); no sample for a "
		       "session without a cgroup, nor where the kernel does not keep it.");
	for (size_t i = 0; i < n; i++) {
		if (figs[i].source != API_METRICS_CGROUP || figs[i].cg.memory_peak_bytes == 0)
			continue;
		metrics_label(label, sizeof(label), "session", list[i].id);
		metrics_sample_u64(t, "agentd_session_memory_peak_bytes", label,
				   figs[i].cg.memory_peak_bytes);
	}
	metrics_family(t, "agentd_session_cpu_seconds_total", "counter",
		       "CPU time of a session's processes: a caged session's cgroup's count; for a "
		       "session without a cgroup, its tmux pane's process tree in /proc, with the "
		       "children they reaped.");
	for (size_t i = 0; i < n; i++) {
		if (figs[i].source == API_METRICS_NONE)
			continue;
		metrics_label(label, sizeof(label), "session", list[i].id);
		metrics_sample(t, "agentd_session_cpu_seconds_total", label,
			       figs[i].source == API_METRICS_CGROUP
				   ? (double)figs[i].cg.cpu_usec / 1e6
				   : figs[i].cpu);
	}
	metrics_family(t, "agentd_session_tasks", "gauge",
		       "Tasks (processes and threads) in a caged session's cgroup (pids.current); "
		       "no sample for a session without a cgroup.");
	for (size_t i = 0; i < n; i++) {
		if (figs[i].source != API_METRICS_CGROUP)
			continue;
		metrics_label(label, sizeof(label), "session", list[i].id);
		metrics_sample_u64(t, "agentd_session_tasks", label, figs[i].cg.tasks);
	}
out:
	free(figs);
	free(procs);
	free(panes);
	free(list);
}

/* Asks agentd-bridge for its families (ptybridge/stats.h) and appends them. Returns 0, or -errno
 * when the bridge did not answer in time or not with 200. */
static int api_metrics_bridge(const struct app *app, struct metrics_text *t)
{
	static const char ask[] = "GET /.agentd/metrics HTTP/1.1\r\nHost: agentd-bridge\r\n"
				  "Connection: close\r\n\r\n";
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timespec start, now;
	char *buf = NULL, *body;
	size_t len = 0;
	int fd = -1, r;

	if (config_runtime_path(app->cfg, "bridge.sock", sa.sun_path, sizeof(sa.sun_path)) < 0)
		return -ENAMETOOLONG;
	if ((buf = malloc(API_METRICS_BRIDGE_MAX + 1)) == NULL)
		return -ENOMEM;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    send(fd, ask, sizeof(ask) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(ask) - 1)) {
		r = -errno;
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		long left;
		ssize_t n;

		clock_gettime(CLOCK_MONOTONIC, &now);
		left = API_METRICS_BRIDGE_TIMEOUT_MS - ((now.tv_sec - start.tv_sec) * 1000 +
							(now.tv_nsec - start.tv_nsec) / 1000000);
		if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
			r = -ETIMEDOUT;
			goto out;
		}
		n = recv(fd, buf + len, API_METRICS_BRIDGE_MAX - len, 0);
		if (n == 0)
			break;
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			r = -errno;
			goto out;
		}
		if (n > 0 && (len += (size_t)n) == API_METRICS_BRIDGE_MAX) {
			r = -EFBIG;
			goto out;
		}
	}
	buf[len] = '\0';
	r = -EPROTO;
	if (strncmp(buf, "HTTP/1.1 200 ", 13) != 0 || (body = strstr(buf, "\r\n\r\n")) == NULL)
		goto out;
	body += 4;
	metrics_append(t, body, len - (size_t)(body - buf));
	r = 0;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return r;
}

static void api_metrics(const struct app *app, struct request *req,
			const char *const args[ROUTER_MAX_ARGS])
{
	struct metrics_text t;
	struct timespec now;
	int bridge;

	clock_gettime(CLOCK_MONOTONIC, &now);
	metrics_text_init(&t);
	metrics_family(&t, "agentd_api_build_info", "gauge",
		       "agentd-api's version (the value is always 1).");
	metrics_sample(&t, "agentd_api_build_info", "version=\"" AGENTD_VERSION "\"", 1);
	metrics_family(&t, "agentd_api_start_time_seconds", "gauge",
		       "When agentd-api started, in unix seconds (a restart changes it).");
	metrics_sample(&t, "agentd_api_start_time_seconds", NULL,
		       app->metrics != NULL ? (double)app->metrics->started_wall : 0);
	metrics_family(&t, "agentd_api_uptime_seconds", "gauge",
		       "Seconds since agentd-api started.");
	metrics_sample(&t, "agentd_api_uptime_seconds", NULL,
		       (double)(now.tv_sec - app->started.tv_sec));
	if (app->metrics != NULL)
		apimetrics_write(app->metrics, &t);
	api_metrics_sessions(app, &t);
	bridge = api_metrics_bridge(app, &t);
	if (bridge < 0)
		log_warn("GET /metrics: agentd-bridge's numbers are missing: %s",
			 strerror(-bridge));
	metrics_family(
	    &t, "agentd_up", "gauge",
	    "Whether each daemon answered this scrape (agentd-api: always 1 when this is "
	    "read).");
	metrics_sample(&t, "agentd_up", "daemon=\"api\"", 1);
	metrics_sample(&t, "agentd_up", "daemon=\"bridge\"", bridge == 0 ? 1 : 0);
	if (t.error != 0) {
		metrics_text_free(&t);
		request_error(req, 500, "internal_error", "the numbers do not fit in one scrape");
		return;
	}
	req->status = 200;
	FCGX_FPrintF(req->fcgi->out, "Status: 200 OK\r\n"
				     "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
				     "Cache-Control: no-store\r\n\r\n");
	FCGX_PutStr(t.buf, (int)t.len, req->fcgi->out);
	metrics_text_free(&t);
}

const struct route api_metrics_routes[] = {
    {"GET", "/metrics", api_metrics, false},
    {NULL, NULL, NULL, false},
};
