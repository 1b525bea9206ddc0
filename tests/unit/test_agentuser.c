/*
 * agentuser: the pane's command (setpriv words only when switching), the user lookup and its
 * refusals (no such user, root, a home that holds the daemons' directories, daemons that are
 * neither root nor the agent user), and the per-thread filesystem identity. The lookups use
 * users every Debian system has (root, daemon, nobody); what needs root is skipped without it.
 * Criterion runs each test in its own process, so a test may drop its own privileges.
 */
#include "agentuser.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct config cfg_for(const char *user)
{
	struct config cfg;

	config_defaults(&cfg);
	snprintf(cfg.agent_user, sizeof(cfg.agent_user), "%s", user);
	return cfg;
}

static void need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root");
}

Test(agentuser, command_unchanged_without_switch)
{
	struct agent_user au = {.switch_user = false};
	char *argv[] = {"claude", "--resume=x", "--", "-p", NULL};
	char *out[8];

	cr_assert_eq(agentuser_command(&au, argv, out, 7), 0);
	for (size_t i = 0; i < 4; i++)
		cr_assert_eq(out[i], argv[i]);
	cr_assert_null(out[4]);
}

Test(agentuser, command_drops_to_the_agent_with_setpriv)
{
	struct agent_user au = {.switch_user = true,
				.setpriv = "/usr/bin/setpriv",
				.reuid = "--reuid=999",
				.regid = "--regid=995"};
	char *argv[] = {"claude", "--", "--reuid=0", NULL};
	static const char *const want[] = {
	    "/usr/bin/setpriv", "--reuid=999", "--regid=995", "--init-groups", "--",
	    "claude",           "--",          "--reuid=0"};
	char *out[9];

	cr_assert_eq(agentuser_command(&au, argv, out, 8), 0);
	for (size_t i = 0; i < 8; i++)
		cr_assert_str_eq(out[i], want[i]);
	cr_assert_null(out[8]);
	/* One word short of room. */
	cr_assert_eq(agentuser_command(&au, argv, out, 7), -E2BIG);
}

Test(agentuser, home_word)
{
	struct agent_user au = {.home = "/home/agentd"};
	char out[32];

	cr_assert_eq(agentuser_home_word(&au, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "HOME=/home/agentd");
	cr_assert_eq(agentuser_home_word(&au, out, 17), -ENAMETOOLONG);
}

Test(agentuser, missing_user_is_enoent)
{
	struct config cfg = cfg_for("agentd-no-such-user");
	struct agent_user au;
	struct cause c = {{0}};

	cr_assert_eq(agentuser_resolve(&cfg, &au, &c), -ENOENT);
	cr_assert_not_null(strstr(c.msg, "agentd-no-such-user"), "%s", c.msg);
	cr_assert_not_null(strstr(c.msg, "does not exist"), "%s", c.msg);
}

Test(agentuser, root_is_refused)
{
	struct config cfg = cfg_for("root");
	struct agent_user au;
	struct cause c = {{0}};

	cr_assert_eq(agentuser_resolve(&cfg, &au, &c), -EPERM);
	cr_assert_not_null(strstr(c.msg, "unprivileged"), "%s", c.msg);
}

Test(agentuser, root_daemons_switch_to_the_agent)
{
	struct config cfg = cfg_for("nobody");
	struct agent_user au;
	struct cause c = {{0}};

	need_root();
	cr_assert_eq(agentuser_resolve(&cfg, &au, &c), 0, "%s", c.msg);
	cr_assert(au.switch_user);
	cr_assert_eq(au.uid, 65534);
	cr_assert_str_eq(au.name, "nobody");
	cr_assert_str_eq(au.home, "/nonexistent");
	cr_assert_str_eq(au.reuid, "--reuid=65534");
	cr_assert(strstr(au.setpriv, "/setpriv") != NULL, "%s", au.setpriv);
	/* AGENTD_AGENT_HOME replaces the passwd entry's. */
	snprintf(cfg.agent_home, sizeof(cfg.agent_home), "/srv/agent-home");
	cr_assert_eq(agentuser_resolve(&cfg, &au, &c), 0, "%s", c.msg);
	cr_assert_str_eq(au.home, "/srv/agent-home");
}

Test(agentuser, home_must_not_hold_the_daemons_dirs)
{
	static const char *const homes[] = {"/var/lib",
					    "/var/lib/agentd",
					    "/var/lib/agentd/",
					    "/var/lib/agentd/home",
					    "/run",
					    "/run/agentd/x",
					    "/"};
	struct config cfg = cfg_for("nobody");
	struct agent_user au;
	struct cause c = {{0}};

	need_root();
	for (size_t i = 0; i < sizeof(homes) / sizeof(homes[0]); i++) {
		snprintf(cfg.agent_home, sizeof(cfg.agent_home), "%s", homes[i]);
		cr_assert_eq(agentuser_resolve(&cfg, &au, &c), -EINVAL, "home %s accepted",
			     homes[i]);
		cr_assert_not_null(strstr(c.msg, "overlap"), "%s", c.msg);
	}
	/* A sibling whose name starts the same is apart. */
	snprintf(cfg.agent_home, sizeof(cfg.agent_home), "/var/lib/agentd-agent");
	cr_assert_eq(agentuser_resolve(&cfg, &au, &c), 0, "%s", c.msg);
}

Test(agentuser, daemons_as_the_agent_user_do_not_switch)
{
	struct config cfg = cfg_for("nobody");
	struct agent_user au;
	struct cause c = {{0}};

	need_root();
	cr_assert_eq(setresgid(65534, 65534, 65534), 0);
	cr_assert_eq(setresuid(65534, 65534, 65534), 0);
	cr_assert_eq(agentuser_resolve(&cfg, &au, &c), 0, "%s", c.msg);
	cr_assert(!au.switch_user);
	/* Neither root nor daemon: cannot start agents as daemon. */
	cfg = cfg_for("daemon");
	cr_assert_eq(agentuser_resolve(&cfg, &au, &c), -EPERM);
	cr_assert_not_null(strstr(c.msg, "cannot start agents as daemon"), "%s", c.msg);
}

struct fs_probe {
	const struct agent_user *au;
	const char *path;
	int r;
};

static void *fs_thread(void *arg)
{
	struct fs_probe *p = arg;
	struct agentuser_fs fs;
	int fd;

	p->r = agentuser_fs_enter(p->au, &fs);
	if (p->r == 0) {
		fd = open(p->path, O_CREAT | O_WRONLY | O_EXCL, 0600);
		p->r = fd < 0 ? -errno : 0;
		if (fd >= 0)
			close(fd);
	}
	agentuser_fs_leave(&fs);
	return NULL;
}

Test(agentuser, fs_identity_is_the_threads_alone)
{
	struct config cfg = cfg_for("nobody");
	struct agent_user au;
	struct cause c = {{0}};
	char dir[] = "/tmp/agentd-agentuser-XXXXXX", a[64], b[64], secret[64];
	struct fs_probe p;
	pthread_t t;
	struct stat st;
	int fd;

	need_root();
	cr_assert_eq(agentuser_resolve(&cfg, &au, &c), 0, "%s", c.msg);
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(chmod(dir, 0777), 0);
	snprintf(a, sizeof(a), "%s/as-agent", dir);
	snprintf(b, sizeof(b), "%s/as-root", dir);
	snprintf(secret, sizeof(secret), "%s/secret", dir);
	p = (struct fs_probe){&au, a, -1};
	cr_assert_eq(pthread_create(&t, NULL, fs_thread, &p), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(p.r, 0);
	cr_assert_eq(stat(a, &st), 0);
	cr_assert_eq(st.st_uid, 65534, "a file made under the agent's identity is the agent's");
	cr_assert_eq(st.st_gid, 65534);
	/* This thread kept root's. */
	fd = open(b, O_CREAT | O_WRONLY | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(stat(b, &st), 0);
	cr_assert_eq(st.st_uid, 0);
	/* Under the agent's identity root's files are out of reach (no capability overrides). */
	fd = open(secret, O_CREAT | O_WRONLY | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	{
		struct agentuser_fs fs;

		cr_assert_eq(agentuser_fs_enter(&au, &fs), 0);
		cr_assert_lt(open(secret, O_RDONLY), 0);
		cr_assert_eq(errno, EACCES);
		agentuser_fs_leave(&fs);
		fd = open(secret, O_RDONLY);
		cr_assert_geq(fd, 0, "the identity came back");
		close(fd);
	}
	unlink(a);
	unlink(b);
	unlink(secret);
	rmdir(dir);
}

Test(agentuser, fs_identity_unchanged_without_switch)
{
	struct agent_user au = {.switch_user = false, .uid = 65534, .gid = 65534};
	struct agentuser_fs fs;

	cr_assert_eq(agentuser_fs_enter(&au, &fs), 0);
	cr_assert(!fs.active);
	agentuser_fs_leave(&fs);
}
