/*
 * cgroup: each session's share of the machine, through the cgroup filesystem.
 *
 * A session's cgroup is PARENT/SESSION (PARENT is AGENTD_CGROUP_PARENT) under the cgroup the
 * probing process sits in, in every hierarchy that matters:
 *   - v2 (one tree): memory.max (+ memory.swap.max 0), cpu.max, pids.max; cgroup.kill to kill.
 *   - v1 (one tree per controller): memory.limit_in_bytes (+ memsw), cpu.cfs_quota_us over
 *     cpu.cfs_period_us, pids.max; plus, when the host also mounts the unified tree (the
 *     "hybrid" layout), a directory there too, only to count CPU time and kill the whole tree with
 *     cgroup.kill, which v1 lacks (without it: freeze, SIGKILL every member, thaw).
 * The directories stay root's: in v1 a process may move what it owns into any cgroup whose
 * cgroup.procs it can write, so a chowned directory would be a way out.
 *
 * Every process that uses a session's cgroup (the daemon that creates it, the pane's wrapper that
 * joins it) must sit in the same cgroups when it probes, so that both find one base directory.
 *
 * Returns are 0 or a negative errno; where a struct cause is taken it says why for a person.
 */
#ifndef AGENTD_CGROUP_H
#define AGENTD_CGROUP_H

#include "cause.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CGROUP_PATH_MAX 512 /* a hierarchy's base directory; mount points are short */
/* memory, pids, cpu, cpuacct, freezer: each in a hierarchy of its own at most */
#define CGROUP_V1_MAX   5
#define CGROUP_NAME_MAX 128 /* PARENT or SESSION: a session id, a configured name */
/* The CFS period the CPU quota is counted over: the kernel's default, short enough that a hog is
 * throttled within a keystroke's echo time of a neighbour. */
#define CGROUP_CPU_PERIOD_US 100000

/* What a session may use; 0 is "no limit". 1000 cpu_milli is one CPU's worth of time. */
struct cgroup_limits {
	uint64_t memory_max;
	uint32_t cpu_milli;
	uint32_t tasks_max;
};

/* What a session uses now (memory_peak_bytes: the most it ever used; oom_kills: processes the
 * kernel killed for the memory limit). A counter the host does not keep reads 0. */
struct cgroup_usage {
	uint64_t memory_bytes;
	uint64_t memory_peak_bytes;
	uint64_t cpu_usec;
	uint64_t oom_kills;
	uint32_t tasks;
};

enum cgroup_mode {
	CGROUP_NONE, /* no usable cgroup filesystem: sessions run without a share of their own */
	CGROUP_V1,   /* one hierarchy per controller, perhaps with the unified tree beside it */
	CGROUP_V2,   /* the unified tree with its controllers */
};

enum {
	CGROUP_C_MEMORY = 1 << 0,
	CGROUP_C_PIDS = 1 << 1,
	CGROUP_C_CPU = 1 << 2,
	CGROUP_C_CPUACCT = 1 << 3,
	CGROUP_C_FREEZER = 1 << 4,
};

/* One v1 hierarchy: the base directory (mount point + the prober's cgroup) and its controllers. */
struct cgroup_hier {
	char dir[CGROUP_PATH_MAX];
	unsigned controllers; /* CGROUP_C_* */
};

/* The probed layout. unified is the v2 base (CGROUP_V2) or the hybrid's unified base, or "". */
struct cgroup_tree {
	enum cgroup_mode mode;
	char unified[CGROUP_PATH_MAX];
	unsigned v2_controllers; /* CGROUP_C_* the v2 base may hand to its children */
	size_t n_v1;
	struct cgroup_hier v1[CGROUP_V1_MAX];
	/* The sessions' cgroups are systemd's units (sdunit.h): made and removed over D-Bus, and
	 * read here from each hierarchy's root (cgroup_probe_root). */
	bool systemd;
};

/*
 * Reads the layout from mountinfo (NULL: /proc/self/mountinfo) and the calling process's cgroups
 * (/proc/self/cgroup). A host without cgroups is mode CGROUP_NONE and returns 0. Returns -errno
 * when a file cannot be read.
 */
int cgroup_probe(const char *mountinfo, struct cgroup_tree *out, struct cause *c);

/* As cgroup_probe, with the process's cgroup list read from self_cgroup (unit tests fake both). */
int cgroup_probe_files(const char *mountinfo, const char *self_cgroup, struct cgroup_tree *out,
		       struct cause *c);

/* As cgroup_probe, with each hierarchy's base at its mount's root (the cgroup namespace's), not
 * at the caller's cgroup: where systemd is PID 1 the units' cgroups are named from there. */
int cgroup_probe_root(const char *mountinfo, struct cgroup_tree *out, struct cause *c);

/* True when name is one cgroup name or a '/'-separated path of them ([A-Za-z0-9._-], and '\\' for
 * systemd's escapes in its units' names; never "." nor ".."), at most CGROUP_NAME_MAX long: what
 * parent and session_id must be. */
bool cgroup_name_valid(const char *name, bool path);

/*
 * Makes PARENT/SESSION in every hierarchy (an existing one is reused, as after a restart) and sets
 * its limits. -EINVAL for a bad name, -EOPNOTSUPP when a limit's controller is missing, -EACCES
 * without root; on failure the session's directories made here are removed. CGROUP_NONE: 0.
 */
int cgroup_create(const struct cgroup_tree *t, const char *parent, const char *session_id,
		  const struct cgroup_limits *l, struct cause *c);

/* Moves the calling process into the session's cgroup in every hierarchy (writes "0" to each
 * cgroup.procs), so that what it forks and execs starts inside. CGROUP_NONE: 0. */
int cgroup_join(const struct cgroup_tree *t, const char *parent, const char *session_id);

/* Reads the session's usage into u (zeroed first). -ENOENT when the session has no cgroup. */
int cgroup_usage(const struct cgroup_tree *t, const char *parent, const char *session_id,
		 struct cgroup_usage *u);

/* 1 when a process is in the session's cgroup, 0 when none is, -ENOENT when it has none. */
int cgroup_populated(const struct cgroup_tree *t, const char *parent, const char *session_id);

/* SIGKILLs every process in the session's cgroup. -ENOENT when there is none. */
int cgroup_kill(const struct cgroup_tree *t, const char *parent, const char *session_id);

/*
 * Kills the session's processes, waits (at most CGROUP_DRAIN_MS) for the cgroup to empty, and
 * removes its directory in every hierarchy. A missing cgroup is 0; -EBUSY when a process would not
 * die in time (the directories that could go are gone).
 */
int cgroup_remove(const struct cgroup_tree *t, const char *parent, const char *session_id);

/* The smallest memory limit taken: below it claude itself does not start, and a bare number
 * meant as megabytes ("4096") is caught instead of caging an agent in 4 KiB. */
#define CGROUP_MEMORY_MIN (16ULL << 20)
/* The most CPUs a quota may name: a quota above the host's CPUs is no limit, and this bound keeps
 * cpu_milli * period within the kernel's quota range. */
#define CGROUP_CPUS_MAX 1024

/*
 * A memory size: digits, then optionally K, M, G or T (powers of 1024, either case), e.g. "4G",
 * "256M", "1073741824". Returns 0 with *out set, -EINVAL for anything else, below
 * CGROUP_MEMORY_MIN, or past 2^63.
 */
int cgroup_parse_memory(const char *text, uint64_t *out);

/* A CPU quota in CPUs: "2", "1.5", "0.25" (at most 3 decimals), above 0 and at most
 * CGROUP_CPUS_MAX. Returns 0 with *milli (thousandths of a CPU), or -EINVAL. */
int cgroup_parse_cpus(const char *text, uint32_t *milli);

/* Removes PARENT itself in every hierarchy (a missing one is fine; -EBUSY while it holds a
 * session). For what made a PARENT of its own: a test stack, a unit test. */
int cgroup_remove_parent(const struct cgroup_tree *t, const char *parent);

/* How long cgroup_remove waits for killed processes to leave: the kernel reaps a SIGKILLed tree in
 * milliseconds; a process stuck in uninterruptible sleep (D state, NFS) is not worth a longer
 * wait on the API's request path. */
#define CGROUP_DRAIN_MS 2000

#endif
