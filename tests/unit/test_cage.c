/*
 * The cage's testable parts: agentd-cage's command line (ids never root, absolute paths, a
 * command), the secrets directory (names, trimming, hidden and non-regular entries, limits) and
 * bwrap's argv (namespaces, no --new-session, the order hide-then-bind, the agent's words last).
 */
#include "cage.h"

#include "testdir.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define T_WORDS 512

static char tmp[64];

static void setup(void)
{
	testdir_make(tmp, sizeof(tmp), "/tmp/agentd-cage-XXXXXX");
}

static void teardown(void)
{
	testdir_remove(tmp);
}

TestSuite(cage, .init = setup, .fini = teardown);

static int parse(struct cage_opts *o, struct cause *c, char **argv)
{
	int argc = 0;

	while (argv[argc] != NULL)
		argc++;
	return cage_parse(argc, argv, o, c);
}

Test(cage, parse_full)
{
	char *argv[] = {"agentd-cage", "--uid",        "61184",      "--gid",     "61185",
			"--user",      "agentd-61184", "--home",     "/h/a",      "--chdir",
			"/w/a",        "--cgroup",     "agentd/r-1", "--secrets", "/etc/s",
			"--hide",      "/code",        "--bind",     "/code/r/a", "--ro",
			"/run/x.sock", "--",           "claude",     "--resume",  NULL};
	struct cause c = {{0}};
	struct cage_opts o;

	cr_assert_eq(parse(&o, &c, argv), 0, "%s", c.msg);
	cr_assert_eq(o.uid, 61184u);
	cr_assert_eq(o.gid, 61185u);
	cr_assert_str_eq(o.user, "agentd-61184");
	cr_assert_str_eq(o.home, "/h/a");
	cr_assert_str_eq(o.chdir, "/w/a");
	cr_assert_str_eq(o.cgroup, "agentd/r-1");
	cr_assert_str_eq(o.secrets, "/etc/s");
	cr_assert_eq(o.nhide, 1);
	cr_assert_eq(o.nbind, 1);
	cr_assert_eq(o.nro, 1);
	cr_assert_str_eq(o.argv[0], "claude");
	cr_assert_str_eq(o.argv[1], "--resume");
	cr_assert_null(o.argv[2]);
}

Test(cage, parse_refuses)
{
	char *root[] = {"c", "--uid",  "0",  "--gid", "5", "--user",
			"u", "--home", "/h", "--",    "x", NULL};
	char *rootg[] = {"c", "--uid",  "5",  "--gid", "0", "--user",
			 "u", "--home", "/h", "--",    "x", NULL};
	char *nobody[] = {"c", "--uid",  "65534", "--gid", "5", "--user",
			  "u", "--home", "/h",    "--",    "x", NULL};
	char *nocmd[] = {"c", "--uid",  "5",  "--gid", "5", "--user",
			 "u", "--home", "/h", "--",    NULL};
	char *relhome[] = {"c", "--uid",  "5", "--gid", "5", "--user",
			   "u", "--home", "h", "--",    "x", NULL};
	char *relhide[] = {"c",      "--uid", "5",      "--gid", "5",  "--user", "u",
			   "--home", "/h",    "--hide", "code",  "--", "x",      NULL};
	char *unknown[] = {"c",  "--uid",         "5", "--gid", "5", "--user", "u", "--home",
			   "/h", "--new-session", "1", "--",    "x", NULL};
	char *nouid[] = {"c", "--gid", "5", "--user", "u", "--home", "/h", "--", "x", NULL};
	char *dangling[] = {"c", "--uid", NULL};
	struct cause c = {{0}};
	struct cage_opts o;

	cr_assert_eq(parse(&o, &c, root), -EINVAL);
	cr_assert_eq(parse(&o, &c, rootg), -EINVAL);
	cr_assert_eq(parse(&o, &c, nobody), -EINVAL);
	cr_assert_eq(parse(&o, &c, nocmd), -EINVAL);
	cr_assert_eq(parse(&o, &c, relhome), -EINVAL);
	cr_assert_eq(parse(&o, &c, relhide), -EINVAL);
	cr_assert_eq(parse(&o, &c, unknown), -EINVAL);
	cr_assert_eq(parse(&o, &c, nouid), -EINVAL);
	cr_assert_eq(parse(&o, &c, dangling), -EINVAL);
}

static void put(const char *leaf, const char *text)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", tmp, leaf);
	testdir_write(path, text);
}

static const char *find(const struct cage_secrets *s, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < s->n; i++)
		if (strncmp(s->words[i], name, n) == 0 && s->words[i][n] == '=')
			return s->words[i] + n + 1;
	return NULL;
}

Test(cage, secrets_trimmed_hidden_skipped)
{
	struct cage_secrets s = {{0}, 0};
	struct cause c = {{0}};
	char path[256], target[256];

	put("ANTHROPIC_API_KEY", "sk-1\n");
	put("GH_TOKEN", "gh-2\r\n");
	put("TWO_LINES", "a\nb\n\n");
	put("EMPTY", "");
	put(".hidden", "no");
	snprintf(path, sizeof(path), "%s/.git", tmp);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/SUBDIR", tmp);
	cr_assert_eq(mkdir(path, 0700), 0);
	/* A symlink is not followed: the directory's files only. */
	snprintf(target, sizeof(target), "%s/.hidden", tmp);
	snprintf(path, sizeof(path), "%s/LINKED", tmp);
	cr_assert_eq(symlink(target, path), 0);
	cr_assert_eq(cage_secrets_read(tmp, &s, &c), 0, "%s", c.msg);
	cr_assert_eq(s.n, 4);
	cr_assert_str_eq(find(&s, "ANTHROPIC_API_KEY"), "sk-1");
	cr_assert_str_eq(find(&s, "GH_TOKEN"), "gh-2");
	cr_assert_str_eq(find(&s, "TWO_LINES"), "a\nb\n", "one trailing newline only is trimmed");
	cr_assert_str_eq(find(&s, "EMPTY"), "");
	cr_assert_null(find(&s, "LINKED"));
	cage_secrets_free(&s);
	cr_assert_eq(s.n, 0);
}

Test(cage, secrets_missing_dir_is_none)
{
	struct cage_secrets s = {{0}, 0};
	struct cause c = {{0}};
	char path[256];

	snprintf(path, sizeof(path), "%s/none", tmp);
	cr_assert_eq(cage_secrets_read(path, &s, &c), 0);
	cr_assert_eq(s.n, 0);
	cr_assert_eq(cage_secrets_read(NULL, &s, &c), 0);
}

Test(cage, secrets_refused_never_say_the_value)
{
	struct cage_secrets s = {{0}, 0};
	struct cause c = {{0}};
	char *big = malloc(CAGE_SECRET_MAX + 2);

	put("BAD-NAME", "v");
	cr_assert_eq(cage_secrets_read(tmp, &s, &c), -EINVAL);
	cr_assert(strstr(c.msg, "BAD-NAME") != NULL, "%s", c.msg);
	testdir_remove(tmp);
	cr_assert_eq(mkdir(tmp, 0700), 0);
	memset(big, 'x', CAGE_SECRET_MAX + 1);
	big[CAGE_SECRET_MAX + 1] = '\0';
	put("BIG", big);
	free(big);
	cr_assert_eq(cage_secrets_read(tmp, &s, &c), -E2BIG);
	cr_assert(strstr(c.msg, "xxxx") == NULL, "%s", c.msg);
	cr_assert_eq(s.n, 0);
}

static int index_of(char **w, const char *word, int from)
{
	for (int i = from; w[i] != NULL; i++)
		if (strcmp(w[i], word) == 0)
			return i;
	return -1;
}

Test(cage, bwrap_argv)
{
	char *agent[] = {"claude", "--", "x", NULL};
	struct cage_opts o = {.uid = 61184,
			      .gid = 61184,
			      .user = "u",
			      .home = "/h/a",
			      .chdir = "/code/r/a",
			      .argv = agent};
	char *w[T_WORDS];
	int i, hide, bind, dash;

	o.hide[o.nhide++] = "/code";
	o.hide[o.nhide++] = "/run/agentd";
	o.bind[o.nbind++] = "/code/r/a";
	o.ro[o.nro++] = "/run/agentd/hooks.sock";
	cr_assert_eq(cage_bwrap_argv(&o, "/usr/bin/bwrap", w, T_WORDS - 1), 0);
	cr_assert_str_eq(w[0], "/usr/bin/bwrap");
	cr_assert_geq(index_of(w, "--die-with-parent", 0), 0);
	cr_assert_geq(index_of(w, "--unshare-pid", 0), 0);
	i = index_of(w, "--proc", 0);
	cr_assert(i > 0 && strcmp(w[i + 1], "/proc") == 0);
	cr_assert_lt(index_of(w, "--new-session", 0), 0, "--new-session breaks TUIs");
	cr_assert_lt(index_of(w, "--unshare-net", 0), 0, "the agent keeps the network");
	cr_assert_lt(index_of(w, "--disable-userns", 0), 0, "claude's own sandbox nests bwrap");
	i = index_of(w, "/tmp", 0);
	cr_assert(i > 0 && strcmp(w[i - 1], "--tmpfs") == 0, "no /tmp of its own");
	hide = index_of(w, "/code", 0);
	cr_assert(hide > 0 && strcmp(w[hide - 1], "--tmpfs") == 0);
	bind = index_of(w, "/code/r/a", 0);
	cr_assert(bind > hide && strcmp(w[bind - 1], "--bind") == 0 &&
		      strcmp(w[bind + 1], "/code/r/a") == 0,
		  "the worktree is not bound back after /code is hidden");
	i = index_of(w, "/run/agentd/hooks.sock", 0);
	cr_assert(i > index_of(w, "/run/agentd", 0) && strcmp(w[i - 1], "--ro-bind") == 0);
	i = index_of(w, "/h/a", 0);
	cr_assert(i > 0 && strcmp(w[i - 1], "--bind") == 0);
	i = index_of(w, "--chdir", 0);
	cr_assert(i > 0 && strcmp(w[i + 1], "/code/r/a") == 0);
	dash = index_of(w, "--", 0);
	cr_assert_str_eq(w[dash + 1], "claude");
	cr_assert_str_eq(w[dash + 2], "--");
	cr_assert_str_eq(w[dash + 3], "x");
	cr_assert_null(w[dash + 4]);
	cr_assert_eq(cage_bwrap_argv(&o, "/usr/bin/bwrap", w, 10), -E2BIG);
}
