/* agentctl's settings (agentctl/conf.c): environment first, then the file, which must be 0600. */
#include "conf.h"
#include "testdir.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(chmod(path, mode), 0);
}

Test(ctl_conf, path_follows_xdg_then_home)
{
	char p[256];

	ctl_conf_path(p, sizeof(p), "/x/cfg", "/home/a");
	cr_assert_str_eq(p, "/x/cfg/agentd/agentctl.conf");
	ctl_conf_path(p, sizeof(p), "relative", "/home/a");
	cr_assert_str_eq(p, "/home/a/.config/agentd/agentctl.conf");
	ctl_conf_path(p, sizeof(p), NULL, NULL);
	cr_assert_str_eq(p, "");
}

Test(ctl_conf, environment_wins_and_the_default_url_fills_in)
{
	struct ctl_conf c;
	struct cause cause = {{0}};

	cr_assert_eq(ctl_conf_load(&c, NULL, NULL, NULL, &cause), 0, "%s", cause.msg);
	cr_assert_str_eq(c.url, CTL_CONF_URL_DEFAULT);
	cr_assert_str_eq(c.token, "");
	cr_assert_eq(ctl_conf_load(&c, "/nonexistent/agentctl.conf", "https://h.ts.net:8443/",
				   "tok", &cause),
		     0, "%s", cause.msg);
	cr_assert_str_eq(c.url, "https://h.ts.net:8443");
	cr_assert_str_eq(c.token, "tok");
	cr_assert_eq(ctl_conf_load(&c, NULL, "ftp://h", NULL, &cause), -EINVAL);
	cr_assert_eq(ctl_conf_load(&c, NULL, NULL, "a b", &cause), -EINVAL);
}

Test(ctl_conf, file_fills_what_the_environment_leaves)
{
	char dir[64], path[512];
	struct ctl_conf c;
	struct cause cause = {{0}};

	testdir_make(dir, sizeof(dir), "/tmp/test_ctl_conf-XXXXXX");
	snprintf(path, sizeof(path), "%s/agentctl.conf", dir);
	write_file(path, "# mine\n\n  AGENTD_URL = http://box:8080/ \nAGENTD_TOKEN='secret'\n",
		   0600);
	cr_assert_eq(ctl_conf_load(&c, path, NULL, NULL, &cause), 0, "%s", cause.msg);
	cr_assert_str_eq(c.url, "http://box:8080");
	cr_assert_str_eq(c.token, "secret");
	cr_assert_eq(ctl_conf_load(&c, path, NULL, "env", &cause), 0, "%s", cause.msg);
	cr_assert_str_eq(c.token, "env");
	cr_assert_str_eq(c.url, "http://box:8080");
	testdir_remove(dir);
}

Test(ctl_conf, file_others_may_read_is_refused)
{
	char dir[64], path[512];
	struct ctl_conf c;
	struct cause cause = {{0}};

	testdir_make(dir, sizeof(dir), "/tmp/test_ctl_conf-XXXXXX");
	snprintf(path, sizeof(path), "%s/agentctl.conf", dir);
	write_file(path, "AGENTD_TOKEN=secret\n", 0640);
	cr_assert_eq(ctl_conf_load(&c, path, "http://x", "env", &cause), -EACCES);
	cr_assert(strstr(cause.msg, "chmod 600") != NULL, "%s", cause.msg);
	cr_assert_eq(chmod(path, 0604), 0);
	cr_assert_eq(ctl_conf_load(&c, path, NULL, NULL, &cause), -EACCES);
	cr_assert_eq(chmod(path, 0620), 0);
	cr_assert_eq(ctl_conf_load(&c, path, NULL, NULL, &cause), -EACCES);
	cr_assert_eq(chmod(path, 0400), 0);
	cr_assert_eq(ctl_conf_load(&c, path, NULL, NULL, &cause), 0, "%s", cause.msg);
	testdir_remove(dir);
}

Test(ctl_conf, malformed_lines_are_named)
{
	struct ctl_conf c;
	struct cause cause = {{0}};
	char big[CTL_CONF_TOKEN_MAX + 32];

	memset(&c, 0, sizeof(c));
	cr_assert_eq(ctl_conf_parse(&c, "AGENTD_URL=http://a\nnonsense\n", 28, &cause), -EINVAL);
	cr_assert(strstr(cause.msg, "line 2") != NULL, "%s", cause.msg);
	memset(&c, 0, sizeof(c));
	cr_assert_eq(ctl_conf_parse(&c, "AGENTD_TOKN=x\n", 14, &cause), -EINVAL);
	cr_assert(strstr(cause.msg, "unknown key 'AGENTD_TOKN'") != NULL, "%s", cause.msg);
	memset(&c, 0, sizeof(c));
	snprintf(big, sizeof(big), "AGENTD_TOKEN=%0*d", CTL_CONF_TOKEN_MAX + 1, 0);
	cr_assert_eq(ctl_conf_parse(&c, big, strlen(big), &cause), -ENAMETOOLONG);
	cr_assert(strstr(cause.msg, "line 1: AGENTD_TOKEN is longer") != NULL, "%s", cause.msg);
}
