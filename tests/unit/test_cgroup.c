/*
 * cgroup: the probe of v1, hybrid and v2 layouts from a fake mountinfo and a fake list of the
 * process's cgroups; create, join and usage against a fake v2 tree (plain directories and files in
 * a temporary directory, which is what the module writes and reads); and, as root on a host with
 * cgroups, the real thing: limits written, a forked child that joins and allocates past its
 * memory limit is SIGKILLed and counted, kill and remove leave nothing behind.
 */
#include "cgroup.h"
#include "testdir.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256];

static void setup(void)
{
	testdir_make(dir, sizeof(dir), "/tmp/test-cgroup-XXXXXX");
	testdir_janitor(dir, NULL, NULL);
}

static void teardown(void)
{
	testdir_remove(dir);
}

TestSuite(cgroup, .init = setup, .fini = teardown);

static void path_of(char *out, size_t len, const char *rel)
{
	snprintf(out, len, "%s/%s", dir, rel);
}

static void slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	cr_assert_not_null(f, "cannot read %s", path);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* This host's layout (hybrid: v1 controllers, cgroup2 without them), as mountinfo shows it. */
static const char hybrid_mountinfo[] =
    "24 1 0:22 / /proc rw,nosuid - proc proc rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

static const char hybrid_self[] = "9:name=systemd:/\n8:pids:/\n6:freezer:/\n"
				  "4:memory:/box/one\n2:cpuacct:/\n1:cpu:/\n0::/\n";

static const struct cgroup_hier *hier_with(const struct cgroup_tree *t, unsigned bit)
{
	for (size_t i = 0; i < t->n_v1; i++)
		if (t->v1[i].controllers & bit)
			return &t->v1[i];
	return NULL;
}

Test(cgroup, probe_reads_a_hybrid_host)
{
	char mi[300], self[300];
	struct cgroup_tree t;
	struct cause c = {{0}};

	path_of(mi, sizeof(mi), "mountinfo");
	path_of(self, sizeof(self), "self");
	testdir_write(mi, hybrid_mountinfo);
	testdir_write(self, hybrid_self);
	cr_assert_eq(cgroup_probe_files(mi, self, &t, &c), 0, "%s", c.msg);
	cr_assert_eq(t.mode, CGROUP_V1);
	cr_assert_str_eq(t.unified, "/sys/fs/cgroup/unified");
	cr_assert_eq(t.n_v1, 5, "memory, pids, cpu, cpuacct, freezer; not cpuset nor name=systemd");
	cr_assert_str_eq(hier_with(&t, CGROUP_C_MEMORY)->dir, "/sys/fs/cgroup/memory/box/one",
			 "under the process's own memory cgroup");
	cr_assert_str_eq(hier_with(&t, CGROUP_C_PIDS)->dir, "/sys/fs/cgroup/pids");
	cr_assert_str_eq(hier_with(&t, CGROUP_C_CPU)->dir, "/sys/fs/cgroup/cpu");
	cr_assert_eq(hier_with(&t, CGROUP_C_CPU)->controllers, CGROUP_C_CPU);
	cr_assert_str_eq(hier_with(&t, CGROUP_C_FREEZER)->dir, "/sys/fs/cgroup/freezer");
}

Test(cgroup, probe_reads_comounted_v1_and_escaped_paths)
{
	char mi[300], self[300];
	struct cgroup_tree t;

	path_of(mi, sizeof(mi), "mountinfo");
	path_of(self, sizeof(self), "self");
	testdir_write(mi, "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw shared:9 - cgroup cgroup "
			  "rw,cpu,cpuacct\n"
			  "35 31 0:32 / /c\\040g/memory rw - cgroup cgroup rw,memory\n");
	testdir_write(self, "3:cpu,cpuacct:/a\n4:memory:/\n");
	cr_assert_eq(cgroup_probe_files(mi, self, &t, NULL), 0);
	cr_assert_eq(t.mode, CGROUP_V1);
	cr_assert_eq(t.n_v1, 2);
	cr_assert_str_eq(t.unified, "");
	cr_assert_str_eq(hier_with(&t, CGROUP_C_CPUACCT)->dir, "/sys/fs/cgroup/cpu,cpuacct/a");
	cr_assert_eq(hier_with(&t, CGROUP_C_CPU)->controllers, CGROUP_C_CPU | CGROUP_C_CPUACCT);
	cr_assert_str_eq(hier_with(&t, CGROUP_C_MEMORY)->dir, "/c g/memory");
}

Test(cgroup, probe_without_cgroups_is_none)
{
	char mi[300], self[300];
	struct cgroup_tree t;

	path_of(mi, sizeof(mi), "mountinfo");
	path_of(self, sizeof(self), "self");
	testdir_write(mi, "24 1 0:22 / /proc rw,nosuid - proc proc rw\n");
	testdir_write(self, "");
	cr_assert_eq(cgroup_probe_files(mi, self, &t, NULL), 0);
	cr_assert_eq(t.mode, CGROUP_NONE);
	cr_assert_eq(cgroup_join(&t, "agentd", "s1"), 0, "nothing to join: not an error");
}

/* A v2 host faked in the test's directory: cgroup2 mounted at DIR/cg, the process in /svc. */
static void fake_v2(struct cgroup_tree *t)
{
	char mi[300], self[300], cg[300], line[700];
	struct cause c = {{0}};

	path_of(mi, sizeof(mi), "mountinfo");
	path_of(self, sizeof(self), "self");
	path_of(cg, sizeof(cg), "cg");
	cr_assert_eq(mkdir(cg, 0755), 0);
	path_of(cg, sizeof(cg), "cg/svc");
	cr_assert_eq(mkdir(cg, 0755), 0);
	path_of(cg, sizeof(cg), "cg/svc/cgroup.controllers");
	testdir_write(cg, "cpuset cpu io memory hugetlb pids rdma misc\n");
	path_of(cg, sizeof(cg), "cg");
	snprintf(line, sizeof(line), "41 31 0:38 / %s rw,nosuid shared:8 - cgroup2 cgroup2 rw\n",
		 cg);
	testdir_write(mi, line);
	testdir_write(self, "0::/svc\n");
	cr_assert_eq(cgroup_probe_files(mi, self, t, &c), 0, "%s", c.msg);
}

Test(cgroup, probe_reads_v2)
{
	struct cgroup_tree t;
	char want[300];

	fake_v2(&t);
	path_of(want, sizeof(want), "cg/svc");
	cr_assert_eq(t.mode, CGROUP_V2);
	cr_assert_eq(t.n_v1, 0);
	cr_assert_str_eq(t.unified, want);
	cr_assert_eq(t.v2_controllers, CGROUP_C_MEMORY | CGROUP_C_PIDS | CGROUP_C_CPU);
}

static void expect_file(const char *rel, const char *text)
{
	char p[400], buf[256];

	path_of(p, sizeof(p), rel);
	slurp(p, buf, sizeof(buf));
	cr_assert_str_eq(buf, text, "%s", rel);
}

Test(cgroup, create_v2_enables_controllers_and_writes_limits)
{
	struct cgroup_tree t;
	struct cgroup_limits l = {.memory_max = 256u << 20, .cpu_milli = 1500, .tasks_max = 256};
	struct cause c = {{0}};
	struct stat st;
	char p[400];

	fake_v2(&t);
	cr_assert_eq(cgroup_create(&t, "agentd/t1", "s1", &l, &c), 0, "%s", c.msg);
	path_of(p, sizeof(p), "cg/svc/agentd/t1/s1");
	cr_assert_eq(stat(p, &st), 0);
	cr_assert(S_ISDIR(st.st_mode));
	cr_assert_eq(st.st_mode & 07777, 0755, "root's, never handed to the agent");
	expect_file("cg/svc/agentd/t1/s1/memory.max", "268435456");
	expect_file("cg/svc/agentd/t1/s1/cpu.max", "150000 100000");
	expect_file("cg/svc/agentd/t1/s1/pids.max", "256");
	/* Every level above the session hands the controllers down (the last write shows). */
	expect_file("cg/svc/cgroup.subtree_control", "+cpu");
	expect_file("cg/svc/agentd/cgroup.subtree_control", "+cpu");
	expect_file("cg/svc/agentd/t1/cgroup.subtree_control", "+cpu");
	path_of(p, sizeof(p), "cg/svc/agentd/t1/s1/cgroup.subtree_control");
	cr_assert_eq(stat(p, &st), -1, "the session itself hands nothing down");
}

Test(cgroup, create_v2_without_limits_writes_max)
{
	struct cgroup_tree t;
	struct cgroup_limits l = {0};
	struct cause c = {{0}};

	fake_v2(&t);
	cr_assert_eq(cgroup_create(&t, "agentd", "s2", &l, &c), 0, "%s", c.msg);
	expect_file("cg/svc/agentd/s2/memory.max", "max");
	expect_file("cg/svc/agentd/s2/cpu.max", "max 100000");
	expect_file("cg/svc/agentd/s2/pids.max", "max");
}

Test(cgroup, create_refuses_a_missing_controller)
{
	struct cgroup_tree t;
	struct cgroup_limits l = {.tasks_max = 10};
	struct cause c = {{0}};
	char p[400];

	fake_v2(&t);
	t.v2_controllers = CGROUP_C_MEMORY | CGROUP_C_CPU;
	cr_assert_eq(cgroup_create(&t, "agentd", "s3", &l, &c), -EOPNOTSUPP);
	cr_assert(strstr(c.msg, "pids") != NULL, "%s", c.msg);
	path_of(p, sizeof(p), "cg/svc/agentd/s3");
	cr_assert_eq(access(p, F_OK), -1, "nothing made");
}

Test(cgroup, names_are_checked)
{
	struct cgroup_tree t;
	struct cgroup_limits l = {0};

	fake_v2(&t);
	cr_assert_eq(cgroup_create(&t, "agentd", "../escape", &l, NULL), -EINVAL);
	cr_assert_eq(cgroup_create(&t, "../agentd", "s", &l, NULL), -EINVAL);
	cr_assert_eq(cgroup_create(&t, "agentd", "a/b", &l, NULL), -EINVAL);
	cr_assert_eq(cgroup_create(&t, "", "s", &l, NULL), -EINVAL);
	cr_assert_eq(cgroup_join(&t, "agentd", ".."), -EINVAL);
	cr_assert(cgroup_name_valid("agentd-test.12_3/x", true));
	cr_assert(!cgroup_name_valid("agentd/", true));
	cr_assert(!cgroup_name_valid("agentd//x", true));
	cr_assert(!cgroup_name_valid("a b", true));
}

Test(cgroup, join_writes_zero_and_never_makes_a_missing_cgroup)
{
	struct cgroup_tree t;
	struct cgroup_limits l = {0};
	char p[400];

	fake_v2(&t);
	cr_assert_eq(cgroup_join(&t, "agentd", "nosuch"), -ENOENT);
	path_of(p, sizeof(p), "cg/svc/agentd/nosuch");
	cr_assert_eq(access(p, F_OK), -1);
	cr_assert_eq(cgroup_create(&t, "agentd", "s4", &l, NULL), 0);
	path_of(p, sizeof(p), "cg/svc/agentd/s4/cgroup.procs");
	testdir_write(p, ""); /* the kernel's file, faked */
	cr_assert_eq(cgroup_join(&t, "agentd", "s4"), 0);
	expect_file("cg/svc/agentd/s4/cgroup.procs", "0");
}

Test(cgroup, usage_reads_v2_counters)
{
	struct cgroup_tree t;
	struct cgroup_limits l = {0};
	struct cgroup_usage u;
	char p[400];

	fake_v2(&t);
	cr_assert_eq(cgroup_usage(&t, "agentd", "s5", &u), -ENOENT);
	cr_assert_eq(cgroup_create(&t, "agentd", "s5", &l, NULL), 0);
	path_of(p, sizeof(p), "cg/svc/agentd/s5/memory.current");
	testdir_write(p, "1048576\n");
	path_of(p, sizeof(p), "cg/svc/agentd/s5/memory.peak");
	testdir_write(p, "4194304\n");
	path_of(p, sizeof(p), "cg/svc/agentd/s5/memory.events");
	testdir_write(p, "low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n");
	path_of(p, sizeof(p), "cg/svc/agentd/s5/cpu.stat");
	testdir_write(p, "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n");
	path_of(p, sizeof(p), "cg/svc/agentd/s5/pids.current");
	testdir_write(p, "7\n");
	cr_assert_eq(cgroup_usage(&t, "agentd", "s5", &u), 0);
	cr_assert_eq(u.memory_bytes, 1048576);
	cr_assert_eq(u.memory_peak_bytes, 4194304);
	cr_assert_eq(u.oom_kills, 2, "oom_kill, not oom_group_kill nor oom");
	cr_assert_eq(u.cpu_usec, 2500000);
	cr_assert_eq(u.tasks, 7);
}

/* The real host's cgroups, as root: skipped elsewhere. */
static void need_real(struct cgroup_tree *t)
{
	struct cause c = {{0}};

	if (geteuid() != 0)
		cr_skip_test("needs root");
	cr_assert_eq(cgroup_probe(NULL, t, &c), 0, "%s", c.msg);
	if (t->mode == CGROUP_NONE)
		cr_skip_test("no cgroups on this host");
}

static void real_parent(char *out, size_t len)
{
	snprintf(out, len, "agentd-unit-%ld", (long)getpid());
}

static void real_done(const struct cgroup_tree *t, const char *parent)
{
	cr_assert_eq(cgroup_remove_parent(t, parent), 0);
}

/* A child that joins the session and then runs what(). Returns its pid. */
static pid_t child_in(const struct cgroup_tree *t, const char *parent, const char *id,
		      void (*what)(void))
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (cgroup_join(t, parent, id) < 0)
			_exit(3);
		what();
		_exit(0);
	}
	return pid;
}

static void hog_memory(void)
{
	/* 96 MB touched page by page, against a 32 MB limit. */
	size_t len = 96u << 20;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		_exit(4);
	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
	_exit(5);
}

static void sleep_long(void)
{
	sleep(60);
	_exit(6);
}

Test(cgroup, real_memory_hog_is_killed_inside_its_limit, .timeout = 30)
{
	struct cgroup_tree t;
	struct cgroup_limits l = {.memory_max = 32u << 20, .cpu_milli = 500, .tasks_max = 64};
	struct cgroup_usage u;
	struct cause c = {{0}};
	char parent[64];
	int status;
	pid_t pid;

	need_real(&t);
	real_parent(parent, sizeof(parent));
	cr_assert_eq(cgroup_create(&t, parent, "hog", &l, &c), 0, "%s", c.msg);
	pid = child_in(&t, parent, "hog", hog_memory);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %#x", status);
	cr_assert_eq(cgroup_usage(&t, parent, "hog", &u), 0);
	cr_assert_geq(u.oom_kills, 1);
	cr_assert_geq(u.memory_peak_bytes, 16u << 20, "it got near its limit first");
	cr_assert_leq(u.memory_peak_bytes, 33u << 20, "and never past it");
	cr_assert_eq(cgroup_remove(&t, parent, "hog"), 0);
	cr_assert_eq(cgroup_remove(&t, parent, "hog"), 0, "a missing cgroup is fine");
	cr_assert_eq(cgroup_usage(&t, parent, "hog", &u), -ENOENT);
	real_done(&t, parent);
}

Test(cgroup, real_limits_are_written, .timeout = 30)
{
	struct cgroup_tree t;
	struct cgroup_limits l = {.memory_max = 256u << 20, .cpu_milli = 1500, .tasks_max = 256};
	struct cause c = {{0}};
	char parent[64], p[1200], buf[64];

	need_real(&t);
	real_parent(parent, sizeof(parent));
	cr_assert_eq(cgroup_create(&t, parent, "lim", &l, &c), 0, "%s", c.msg);
	if (t.mode == CGROUP_V1) {
		snprintf(p, sizeof(p), "%s/%s/lim/memory.limit_in_bytes",
			 hier_with(&t, CGROUP_C_MEMORY)->dir, parent);
		slurp(p, buf, sizeof(buf));
		cr_assert_str_eq(buf, "268435456\n");
		snprintf(p, sizeof(p), "%s/%s/lim/cpu.cfs_quota_us",
			 hier_with(&t, CGROUP_C_CPU)->dir, parent);
		slurp(p, buf, sizeof(buf));
		cr_assert_str_eq(buf, "150000\n");
		snprintf(p, sizeof(p), "%s/%s/lim/pids.max", hier_with(&t, CGROUP_C_PIDS)->dir,
			 parent);
	} else {
		snprintf(p, sizeof(p), "%s/%s/lim/pids.max", t.unified, parent);
	}
	slurp(p, buf, sizeof(buf));
	cr_assert_str_eq(buf, "256\n");
	cr_assert_eq(cgroup_populated(&t, parent, "lim"), 0, "made, nothing in it yet");
	cr_assert_eq(cgroup_remove(&t, parent, "lim"), 0);
	cr_assert_eq(access(p, F_OK), -1);
	real_done(&t, parent);
}

Test(cgroup, real_kill_and_remove_end_every_member, .timeout = 30)
{
	struct cgroup_tree t;
	struct cgroup_limits l = {0};
	struct cgroup_usage u;
	struct cause c = {{0}};
	char parent[64];
	int status;
	pid_t a, b;

	need_real(&t);
	real_parent(parent, sizeof(parent));
	cr_assert_eq(cgroup_create(&t, parent, "k", &l, &c), 0, "%s", c.msg);
	a = child_in(&t, parent, "k", sleep_long);
	b = child_in(&t, parent, "k", sleep_long);
	/* Both in: tasks counts them once they have joined. */
	for (int i = 0; i < 200; i++) {
		cr_assert_eq(cgroup_usage(&t, parent, "k", &u), 0);
		if (u.tasks == 2)
			break;
		usleep(10000);
	}
	cr_assert_eq(u.tasks, 2);
	cr_assert_eq(cgroup_populated(&t, parent, "k"), 1);
	cr_assert_eq(cgroup_remove(&t, parent, "k"), 0);
	cr_assert_eq(cgroup_populated(&t, parent, "k"), -ENOENT);
	cr_assert_eq(waitpid(a, &status, 0), a);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	cr_assert_eq(waitpid(b, &status, 0), b);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	real_done(&t, parent);
}

Test(cgroup, memory_sizes_parse)
{
	uint64_t v = 0;

	cr_assert_eq(cgroup_parse_memory("4G", &v), 0);
	cr_assert_eq(v, 4ULL << 30);
	cr_assert_eq(cgroup_parse_memory("256m", &v), 0);
	cr_assert_eq(v, 256ULL << 20);
	cr_assert_eq(cgroup_parse_memory("1T", &v), 0);
	cr_assert_eq(v, 1ULL << 40);
	cr_assert_eq(cgroup_parse_memory("1073741824", &v), 0);
	cr_assert_eq(v, 1ULL << 30);
	cr_assert_eq(cgroup_parse_memory("4096", &v), -EINVAL, "4 KiB: below the minimum");
	cr_assert_eq(cgroup_parse_memory("", &v), -EINVAL);
	cr_assert_eq(cgroup_parse_memory("-1G", &v), -EINVAL);
	cr_assert_eq(cgroup_parse_memory("1.5G", &v), -EINVAL);
	cr_assert_eq(cgroup_parse_memory("2GB", &v), -EINVAL);
	cr_assert_eq(cgroup_parse_memory("9999999999999T", &v), -EINVAL);
	cr_assert_eq(cgroup_parse_memory("99999999999999999999999", &v), -EINVAL);
}

Test(cgroup, cpu_quotas_parse)
{
	uint32_t m = 0;

	cr_assert_eq(cgroup_parse_cpus("2", &m), 0);
	cr_assert_eq(m, 2000);
	cr_assert_eq(cgroup_parse_cpus("1.5", &m), 0);
	cr_assert_eq(m, 1500);
	cr_assert_eq(cgroup_parse_cpus("0.25", &m), 0);
	cr_assert_eq(m, 250);
	cr_assert_eq(cgroup_parse_cpus("1024", &m), 0);
	cr_assert_eq(cgroup_parse_cpus("1025", &m), -EINVAL);
	cr_assert_eq(cgroup_parse_cpus("0", &m), -EINVAL);
	cr_assert_eq(cgroup_parse_cpus("0.0001", &m), -EINVAL);
	cr_assert_eq(cgroup_parse_cpus("1.", &m), -EINVAL);
	cr_assert_eq(cgroup_parse_cpus(".5", &m), -EINVAL);
	cr_assert_eq(cgroup_parse_cpus("2x", &m), -EINVAL);
}

/*
 * Where systemd is PID 1 the units' cgroups are read from each hierarchy's root, and systemd
 * makes a unit's directory only in the hierarchies its settings need: the freezer, mounted
 * before memory in that container, has none. The usage is still read from the others.
 */
static void mkdirs(const char *path)
{
	char p[400];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + strlen(dir) + 1; *s != '\0'; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		cr_assert(mkdir(p, 0755) == 0 || errno == EEXIST, "mkdir %s", p);
		*s = '/';
	}
	cr_assert(mkdir(p, 0755) == 0 || errno == EEXIST, "mkdir %s", p);
}

Test(cgroup, usage_reads_a_systemd_slice_missing_from_the_first_hierarchy)
{
	static const char *made[] = {"memory/agentd.slice/s.slice", "pids/agentd.slice/s.slice"};
	char mi[300], p[400], line[1200];
	struct cgroup_tree t;
	struct cgroup_usage u;
	struct cause c = {{0}};

	path_of(mi, sizeof(mi), "mountinfo");
	snprintf(line, sizeof(line),
		 "46 70 0:34 / %s/freezer rw - cgroup cgroup rw,freezer\n"
		 "49 70 0:32 / %s/memory rw - cgroup cgroup rw,memory\n"
		 "50 70 0:36 / %s/pids rw - cgroup cgroup rw,pids\n",
		 dir, dir, dir);
	testdir_write(mi, line);
	cr_assert_eq(cgroup_probe_root(mi, &t, &c), 0, "%s", c.msg);
	cr_assert_eq(t.mode, CGROUP_V1);
	path_of(p, sizeof(p), "freezer");
	cr_assert_str_eq(t.v1[0].dir, p, "the base is the mount, not the caller's cgroup");
	for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		path_of(p, sizeof(p), made[i]);
		mkdirs(p);
	}
	path_of(p, sizeof(p), "memory/agentd.slice/s.slice/memory.usage_in_bytes");
	testdir_write(p, "1048576\n");
	path_of(p, sizeof(p), "memory/agentd.slice/s.slice/memory.oom_control");
	testdir_write(p, "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
	path_of(p, sizeof(p), "pids/agentd.slice/s.slice/pids.current");
	testdir_write(p, "3\n");
	cr_assert_eq(cgroup_usage(&t, "agentd.slice", "s.slice", &u), 0);
	cr_assert_eq(u.memory_bytes, 1048576);
	cr_assert_eq(u.oom_kills, 1);
	cr_assert_eq(u.tasks, 3);
	cr_assert_eq(cgroup_usage(&t, "agentd.slice", "other.slice", &u), -ENOENT);
}

Test(cgroup, names_take_systemd_escapes)
{
	cr_assert(cgroup_name_valid("agentd-sessions-widgets\\x2d1.slice", false));
	cr_assert_not(cgroup_name_valid("a/b", false));
	cr_assert_not(cgroup_name_valid("..", false));
}
