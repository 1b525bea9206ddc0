/*
 * cgroup: a session's cgroups made, joined, read, killed and removed through the cgroup
 * filesystem, v1 (with or without the unified tree beside it) or v2. See cgroup.h.
 */
#include "cgroup.h"
#include "cgroup_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* cgroup.procs of a session read at once when killing without cgroup.kill: a fork bomb held at
 * its task limit has at most tasks_max members; more are read in further rounds. */
#define CGROUP_PROCS_MAX 65536
#define CGROUP_KILL_ROUNDS                                                                         \
	16                /* v1 without a freezer: rounds of SIGKILL against forks in flight       \
			   */
#define CGROUP_POLL_MS 10 /* v1 has no "emptied" notice to wait on: the re-check interval */

/* Writes text as `echo -n text > path` would: cgroupfs takes one write per value. O_CREAT only
 * matters to the unit tests' fake tree of plain files: in cgroupfs the files exist, and a missing
 * one fails either way. */
static int cgroup_write(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	size_t len = strlen(text);
	ssize_t n;
	int err = 0;

	if (fd < 0)
		return -errno;
	do
		n = write(fd, text, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		err = -errno;
	else if ((size_t)n != len)
		err = -EIO;
	if (close(fd) < 0 && err == 0)
		err = -errno;
	return err;
}

/* As cgroup_write, for a file the kernel may not have (swap accounting off): absent is fine. */
static int cgroup_write_optional(const char *path, const char *text)
{
	if (access(path, F_OK) < 0)
		return 0;
	return cgroup_write(path, text);
}

/* The directories of one session, one per hierarchy; n = 0 when the host has no cgroups. */
struct cgroup_dirs {
	size_t n;
	char dir[CGROUP_V1_MAX + 1][CGROUP_FULL_MAX];
	unsigned controllers[CGROUP_V1_MAX + 1];
	int unified; /* the index of the unified tree's directory, or -1 */
};

static int cgroup_dirs_of(const struct cgroup_tree *t, const char *parent, const char *session,
			  struct cgroup_dirs *d)
{
	d->n = 0;
	d->unified = -1;
	if (!cgroup_name_valid(parent, true) ||
	    (session != NULL && !cgroup_name_valid(session, false)))
		return -EINVAL;
	if (t->mode == CGROUP_NONE)
		return 0;
	for (size_t i = 0; t->mode == CGROUP_V1 && i < t->n_v1; i++) {
		snprintf(d->dir[d->n], sizeof(d->dir[0]), "%s/%s%s%s", t->v1[i].dir, parent,
			 session != NULL ? "/" : "", session != NULL ? session : "");
		d->controllers[d->n++] = t->v1[i].controllers;
	}
	if (t->unified[0] != '\0') {
		snprintf(d->dir[d->n], sizeof(d->dir[0]), "%s/%s%s%s", t->unified, parent,
			 session != NULL ? "/" : "", session != NULL ? session : "");
		d->controllers[d->n] = t->mode == CGROUP_V2 ? t->v2_controllers : 0;
		d->unified = (int)d->n++;
	}
	return 0;
}

/* The union of the controllers the session's directories have. */
static unsigned cgroup_dirs_controllers(const struct cgroup_dirs *d)
{
	unsigned all = 0;

	for (size_t i = 0; i < d->n; i++)
		all |= d->controllers[i];
	return all;
}

/* v2 hands a controller to children only through each ancestor's cgroup.subtree_control: from
 * the base down to PARENT. A parent with processes of its own cannot (EBUSY: "no internal
 * processes"), which is why sessions live one level below PARENT, never in it. */
static int cgroup_v2_enable(const struct cgroup_tree *t, const char *parent, unsigned want,
			    struct cause *c)
{
	static const struct {
		unsigned bit;
		const char *text;
	} on[] = {{CGROUP_C_MEMORY, "+memory"}, {CGROUP_C_PIDS, "+pids"}, {CGROUP_C_CPU, "+cpu"}};
	char level[CGROUP_FULL_MAX], p[CGROUP_FULL_MAX + 32];
	const char *s = parent;
	int err;

	/* base, then base/a, base/a/b for parent "a/b": each hands the controllers one level down.
	 */
	snprintf(level, sizeof(level), "%s", t->unified);
	for (;;) {
		size_t n = strcspn(s, "/"), ll = strlen(level);

		snprintf(p, sizeof(p), "%s/cgroup.subtree_control", level);
		for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++) {
			if ((want & on[i].bit) == 0)
				continue;
			err = cgroup_write(p, on[i].text);
			if (err < 0)
				return cause_fail(c, err, "cannot enable %s in %s: %s",
						  on[i].text + 1, level, strerror(-err));
		}
		if (*s == '\0')
			return 0;
		if (ll + 1 + n >= sizeof(level))
			return cause_fail(c, ENAMETOOLONG, "cgroup path too long");
		snprintf(level + ll, sizeof(level) - ll, "/%.*s", (int)n, s);
		s += n;
		if (*s == '/')
			s++;
	}
}

static int cgroup_set_limits(const struct cgroup_dirs *d, enum cgroup_mode mode,
			     const struct cgroup_limits *l, struct cause *c)
{
	char p[CGROUP_FULL_MAX + 64], v[64];
	int err;

	for (size_t i = 0; i < d->n; i++) {
		unsigned ctl = d->controllers[i];
		const char *dir = d->dir[i];

		if (mode == CGROUP_V2 && (int)i != d->unified)
			continue;
		if ((ctl & CGROUP_C_MEMORY) && mode == CGROUP_V2) {
			if (l->memory_max > 0)
				snprintf(v, sizeof(v), "%" PRIu64, l->memory_max);
			else
				snprintf(v, sizeof(v), "max");
			snprintf(p, sizeof(p), "%s/memory.max", dir);
			if ((err = cgroup_write(p, v)) < 0)
				goto fail_write;
			/* Swap would let a hog outlive its limit at the disk's pace. */
			snprintf(p, sizeof(p), "%s/memory.swap.max", dir);
			if ((err = cgroup_write_optional(p, l->memory_max > 0 ? "0" : "max")) < 0)
				goto fail_write;
		} else if ((ctl & CGROUP_C_MEMORY) && l->memory_max > 0) {
			snprintf(v, sizeof(v), "%" PRIu64, l->memory_max);
			snprintf(p, sizeof(p), "%s/memory.limit_in_bytes", dir);
			if ((err = cgroup_write(p, v)) < 0)
				goto fail_write;
			/* memory+swap: the same bound, so that swap is no way around it. */
			snprintf(p, sizeof(p), "%s/memory.memsw.limit_in_bytes", dir);
			if ((err = cgroup_write_optional(p, v)) < 0)
				goto fail_write;
		}
		if (ctl & CGROUP_C_PIDS) {
			if (l->tasks_max > 0)
				snprintf(v, sizeof(v), "%" PRIu32, l->tasks_max);
			else
				snprintf(v, sizeof(v), "max");
			snprintf(p, sizeof(p), "%s/pids.max", dir);
			if ((err = cgroup_write(p, v)) < 0)
				goto fail_write;
		}
		if ((ctl & CGROUP_C_CPU) && mode == CGROUP_V2) {
			if (l->cpu_milli > 0)
				snprintf(v, sizeof(v), "%" PRIu64 " %d",
					 (uint64_t)l->cpu_milli * CGROUP_CPU_PERIOD_US / 1000,
					 CGROUP_CPU_PERIOD_US);
			else
				snprintf(v, sizeof(v), "max %d", CGROUP_CPU_PERIOD_US);
			snprintf(p, sizeof(p), "%s/cpu.max", dir);
			if ((err = cgroup_write(p, v)) < 0)
				goto fail_write;
		} else if (ctl & CGROUP_C_CPU) {
			snprintf(p, sizeof(p), "%s/cpu.cfs_period_us", dir);
			snprintf(v, sizeof(v), "%d", CGROUP_CPU_PERIOD_US);
			if ((err = cgroup_write(p, v)) < 0)
				goto fail_write;
			if (l->cpu_milli > 0)
				snprintf(v, sizeof(v), "%" PRIu64,
					 (uint64_t)l->cpu_milli * CGROUP_CPU_PERIOD_US / 1000);
			else
				snprintf(v, sizeof(v), "-1");
			snprintf(p, sizeof(p), "%s/cpu.cfs_quota_us", dir);
			if ((err = cgroup_write(p, v)) < 0)
				goto fail_write;
		}
	}
	return 0;
fail_write:
	return cause_fail(c, err, "cannot write %s to %s: %s", v, p, strerror(-err));
}

/* mkdir base/rel for each level of rel (base exists: a mounted hierarchy). */
static int cgroup_mkdir_under(const char *base, const char *rel)
{
	char p[CGROUP_FULL_MAX];
	size_t bl = strlen(base);

	if (snprintf(p, sizeof(p), "%s/%s", base, rel) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	for (char *s = p + bl + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char was = *s;

		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -errno;
		if (was == '\0')
			return 0;
		*s = was;
	}
}

int cgroup_create(const struct cgroup_tree *t, const char *parent, const char *session_id,
		  const struct cgroup_limits *l, struct cause *c)
{
	struct cgroup_dirs d, pd;
	bool made[CGROUP_V1_MAX + 1] = {false};
	unsigned need = 0, have;
	int err;

	if (cgroup_dirs_of(t, parent, session_id, &d) < 0 ||
	    cgroup_dirs_of(t, parent, NULL, &pd) < 0)
		return cause_fail(c, EINVAL, "bad cgroup name %s/%s", parent, session_id);
	if (d.n == 0)
		return 0;
	if (l->memory_max > 0)
		need |= CGROUP_C_MEMORY;
	if (l->tasks_max > 0)
		need |= CGROUP_C_PIDS;
	if (l->cpu_milli > 0)
		need |= CGROUP_C_CPU;
	have = cgroup_dirs_controllers(&d);
	if ((need & ~have) != 0)
		return cause_fail(c, EOPNOTSUPP,
				  "this host's cgroups lack a controller the limits need (%s%s%s)",
				  (need & ~have & CGROUP_C_MEMORY) ? " memory" : "",
				  (need & ~have & CGROUP_C_PIDS) ? " pids" : "",
				  (need & ~have & CGROUP_C_CPU) ? " cpu" : "");
	for (size_t i = 0; i < d.n; i++) {
		err =
		    cgroup_mkdir_under(i == (size_t)d.unified ? t->unified : t->v1[i].dir, parent);
		if (err < 0) {
			cause_fail(c, err, "cannot make cgroup %s: %s", pd.dir[i], strerror(-err));
			goto fail;
		}
		if (t->mode == CGROUP_V2 && (int)i == d.unified) {
			err = cgroup_v2_enable(t, parent, need | (have & CGROUP_C_MEMORY), c);
			if (err < 0)
				goto fail;
		}
		if (mkdir(d.dir[i], 0755) == 0)
			made[i] = true;
		else if (errno != EEXIST) {
			err = cause_fail(c, errno, "cannot make cgroup %s: %s", d.dir[i],
					 strerror(errno));
			goto fail;
		}
	}
	err = cgroup_set_limits(&d, t->mode, l, c);
	if (err < 0)
		goto fail;
	return 0;
fail:
	for (size_t i = 0; i < d.n; i++)
		if (made[i])
			rmdir(d.dir[i]);
	return err;
}

int cgroup_join(const struct cgroup_tree *t, const char *parent, const char *session_id)
{
	struct cgroup_dirs d;
	char p[CGROUP_FULL_MAX + 16];
	int err = cgroup_dirs_of(t, parent, session_id, &d);

	if (err < 0)
		return err;
	for (size_t i = 0; i < d.n; i++) {
		snprintf(p, sizeof(p), "%s/cgroup.procs", d.dir[i]);
		/* Not O_CREAT: a missing cgroup must fail the join, never make a plain file. */
		int fd = open(p, O_WRONLY | O_CLOEXEC);

		if (fd < 0)
			return -errno;
		if (write(fd, "0", 1) != 1) {
			err = -errno;
			close(fd);
			return err;
		}
		close(fd);
	}
	return 0;
}

/* The number after key (a word at a line's start: "oom_kill 3", "usage_usec 12") in text, or 0. */
static uint64_t cgroup_key(const char *text, const char *key)
{
	size_t kl = strlen(key);

	for (const char *l = text; l != NULL && *l != '\0'; l = strchr(l, '\n'), l = l ? l + 1 : l)
		if (strncmp(l, key, kl) == 0 && l[kl] == ' ')
			return strtoull(l + kl + 1, NULL, 10);
	return 0;
}

/* The number in dir/name, or 0 when the file is absent or says "max". */
static uint64_t cgroup_number(const char *dir, const char *name)
{
	char p[CGROUP_FULL_MAX + 64], buf[64];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (cgroup_read_all(p, buf, sizeof(buf)) < 0)
		return 0;
	return strtoull(buf, NULL, 10);
}

/* The whole of dir/name into buf, "" when it cannot be read. */
static void cgroup_text(const char *dir, const char *name, char *buf, size_t len)
{
	char p[CGROUP_FULL_MAX + 64];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (cgroup_read_all(p, buf, len) < 0)
		buf[0] = '\0';
}

int cgroup_usage(const struct cgroup_tree *t, const char *parent, const char *session_id,
		 struct cgroup_usage *u)
{
	struct cgroup_dirs d;
	char buf[CGROUP_FILE_MAX];
	bool cpu_done = false;
	int err = cgroup_dirs_of(t, parent, session_id, &d);

	memset(u, 0, sizeof(*u));
	if (err < 0)
		return err;
	if (d.n == 0)
		return 0;
	/* systemd makes a unit's directory only in the hierarchies its settings need: one that
	 * has none here is skipped, as long as another has. */
	for (size_t i = 0;; i++) {
		if (i == d.n)
			return -ENOENT;
		if (access(d.dir[i], F_OK) == 0)
			break;
	}
	if (d.unified >= 0) {
		/* The unified tree counts CPU time without the cpu controller (cgroup core). */
		cgroup_text(d.dir[d.unified], "cpu.stat", buf, sizeof(buf));
		if (strstr(buf, "usage_usec ") != NULL) {
			u->cpu_usec = cgroup_key(buf, "usage_usec");
			cpu_done = true;
		}
	}
	for (size_t i = 0; i < d.n; i++) {
		unsigned ctl = d.controllers[i];
		const char *dir = d.dir[i];

		if (t->mode == CGROUP_V2 && (int)i == d.unified) {
			u->memory_bytes = cgroup_number(dir, "memory.current");
			u->memory_peak_bytes = cgroup_number(dir, "memory.peak");
			cgroup_text(dir, "memory.events", buf, sizeof(buf));
			u->oom_kills = cgroup_key(buf, "oom_kill");
			u->tasks = (uint32_t)cgroup_number(dir, "pids.current");
			continue;
		}
		if (ctl & CGROUP_C_MEMORY) {
			u->memory_bytes = cgroup_number(dir, "memory.usage_in_bytes");
			u->memory_peak_bytes = cgroup_number(dir, "memory.max_usage_in_bytes");
			cgroup_text(dir, "memory.oom_control", buf, sizeof(buf));
			u->oom_kills = cgroup_key(buf, "oom_kill");
		}
		if (ctl & CGROUP_C_PIDS)
			u->tasks = (uint32_t)cgroup_number(dir, "pids.current");
		if ((ctl & CGROUP_C_CPUACCT) && !cpu_done)
			u->cpu_usec = cgroup_number(dir, "cpuacct.usage") / 1000;
	}
	return 0;
}

/* Reads dir's cgroup.procs and SIGKILLs each. Returns how many it signalled, or -errno. */
static int cgroup_kill_members(const char *dir)
{
	char p[CGROUP_FULL_MAX + 16];
	char *buf = malloc(CGROUP_PROCS_MAX);
	int n = 0, err;

	if (buf == NULL)
		return -ENOMEM;
	snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
	err = cgroup_read_all(p, buf, CGROUP_PROCS_MAX);
	if (err < 0) {
		free(buf);
		return err;
	}
	for (char *s = buf; *s != '\0';) {
		char *end;
		long pid = strtol(s, &end, 10);

		if (end == s)
			break;
		if (pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
			n++;
		s = end;
		while (*s == '\n')
			s++;
	}
	free(buf);
	return n;
}

/* Sleeps ms milliseconds (v1's re-check interval). */
static void cgroup_sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int cgroup_kill(const struct cgroup_tree *t, const char *parent, const char *session_id)
{
	struct cgroup_dirs d;
	char p[CGROUP_FULL_MAX + 32];
	int err = cgroup_dirs_of(t, parent, session_id, &d);
	int freezer = -1;

	if (err < 0)
		return err;
	if (d.n == 0)
		return 0;
	if (d.unified >= 0) {
		snprintf(p, sizeof(p), "%s/cgroup.kill", d.dir[d.unified]);
		if (access(p, F_OK) == 0) {
			/* The kernel kills every member at once, a fork in flight included. */
			int fd = open(p, O_WRONLY | O_CLOEXEC);

			if (fd < 0)
				return -errno;
			err = write(fd, "1", 1) == 1 ? 0 : -errno;
			close(fd);
			return err;
		}
		if (access(d.dir[d.unified], F_OK) < 0)
			return -errno;
	}
	for (size_t i = 0; i < d.n; i++)
		if (d.controllers[i] & CGROUP_C_FREEZER)
			freezer = (int)i;
	if (freezer >= 0) {
		/* Frozen, nothing forks between reading the members and killing them. */
		snprintf(p, sizeof(p), "%s/freezer.state", d.dir[freezer]);
		if ((err = cgroup_write(p, "FROZEN")) < 0)
			return err;
		err = cgroup_kill_members(d.dir[freezer]);
		cgroup_write(p, "THAWED");
		return err < 0 ? err : 0;
	}
	for (int round = 0; round < CGROUP_KILL_ROUNDS; round++) {
		err = cgroup_kill_members(d.dir[0]);
		if (err <= 0)
			return err;
		cgroup_sleep_ms(CGROUP_POLL_MS);
	}
	return 0;
}

/* True when the session's cgroup has no process left (or is gone). */
static bool cgroup_empty(const struct cgroup_dirs *d)
{
	char p[CGROUP_FULL_MAX + 32], buf[64];

	for (size_t i = 0; i < d->n; i++) {
		snprintf(p, sizeof(p), "%s/cgroup.procs", d->dir[i]);
		if (cgroup_read_all(p, buf, sizeof(buf)) == 0 && buf[0] != '\0')
			return false;
	}
	return true;
}

int cgroup_populated(const struct cgroup_tree *t, const char *parent, const char *session_id)
{
	struct cgroup_dirs d;
	int err = cgroup_dirs_of(t, parent, session_id, &d);

	if (err < 0)
		return err;
	if (d.n == 0 || access(d.dir[0], F_OK) < 0)
		return -ENOENT;
	return cgroup_empty(&d) ? 0 : 1;
}

static long cgroup_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cgroup_remove(const struct cgroup_tree *t, const char *parent, const char *session_id)
{
	struct cgroup_dirs d;
	char p[CGROUP_FULL_MAX + 32];
	long deadline = cgroup_now_ms() + CGROUP_DRAIN_MS;
	int events = -1, err = cgroup_dirs_of(t, parent, session_id, &d);

	if (err < 0)
		return err;
	err = cgroup_kill(t, parent, session_id);
	if (err < 0 && err != -ENOENT)
		return err;
	if (d.unified >= 0) {
		/* cgroup.events says "populated 0" and wakes a poll() when the last one leaves. */
		snprintf(p, sizeof(p), "%s/cgroup.events", d.dir[d.unified]);
		events = open(p, O_RDONLY | O_CLOEXEC);
	}
	while (!cgroup_empty(&d)) {
		long left = deadline - cgroup_now_ms();

		if (left <= 0)
			break;
		if (events >= 0) {
			struct pollfd pfd = {.fd = events, .events = POLLPRI};

			char buf[64];

			poll(&pfd, 1,
			     (int)(left < CGROUP_POLL_MS * 10 ? left : CGROUP_POLL_MS * 10));
			/* Reading re-arms the notice; unread, poll() would return at once again. */
			(void)!pread(events, buf, sizeof(buf), 0);
		} else {
			cgroup_sleep_ms(CGROUP_POLL_MS);
		}
	}
	if (events >= 0)
		close(events);
	err = 0;
	for (size_t i = 0; i < d.n; i++)
		if (rmdir(d.dir[i]) < 0 && errno != ENOENT && err == 0)
			err = errno == EBUSY ? -EBUSY : -errno;
	return err;
}

int cgroup_remove_parent(const struct cgroup_tree *t, const char *parent)
{
	struct cgroup_dirs d;
	int err = cgroup_dirs_of(t, parent, NULL, &d);

	if (err < 0)
		return err;
	for (size_t i = 0; i < d.n; i++) {
		/* "a/b": b, then a, as far as each is empty. */
		char p[CGROUP_FULL_MAX];
		size_t base = strlen(d.dir[i]) - strlen(parent);

		snprintf(p, sizeof(p), "%s", d.dir[i]);
		for (;;) {
			char *slash;

			if (rmdir(p) < 0 && errno != ENOENT && err == 0)
				err = -errno;
			slash = strrchr(p, '/');
			if (slash == NULL || (size_t)(slash - p) < base)
				break;
			*slash = '\0';
		}
	}
	return err;
}

int cgroup_parse_memory(const char *text, uint64_t *out)
{
	static const char units[] = "KMGT";
	uint64_t v = 0;
	const char *p = text;
	const char *u;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_C(1) << 63) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (*p != '\0') {
		char up = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);

		u = up != '\0' ? strchr(units, up) : NULL;
		if (u == NULL || p[1] != '\0')
			return -EINVAL;
		for (const char *k = units; k <= u; k++) {
			if (v > (UINT64_C(1) << 53))
				return -EINVAL;
			v *= 1024;
		}
	}
	if (v < CGROUP_MEMORY_MIN || v > (UINT64_C(1) << 63))
		return -EINVAL;
	*out = v;
	return 0;
}

int cgroup_parse_cpus(const char *text, uint32_t *milli)
{
	uint64_t whole = 0, frac = 0;
	const char *p = text;
	int decimals = 0;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		whole = whole * 10 + (uint64_t)(*p - '0');
		if (whole > CGROUP_CPUS_MAX)
			return -EINVAL;
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++) {
			if (++decimals > 3)
				return -EINVAL;
			frac = frac * 10 + (uint64_t)(*p - '0');
		}
		if (decimals == 0)
			return -EINVAL;
	}
	if (*p != '\0')
		return -EINVAL;
	for (; decimals < 3; decimals++)
		frac *= 10;
	whole = whole * 1000 + frac;
	if (whole == 0 || whole > (uint64_t)CGROUP_CPUS_MAX * 1000)
		return -EINVAL;
	*milli = (uint32_t)whole;
	return 0;
}
