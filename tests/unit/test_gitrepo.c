/*
 * gitrepo.c against real repositories (git_fixture.h): the lock, clone and fetch with prune,
 * origin's default branch, a failed fetch, the URL of origin, URL parsing, whose git
 * configuration libgit2 reads.
 */
#include "git_fixture.h"

TestSuite(gitrepo, .init = setup, .fini = teardown);

/* Makes <fx.tmp>/<leaf> a HOME whose global and XDG git configuration say agentdtest.who = who;
 * a broken one also sends every file:// URL to a path that does not exist. Writes its path. */
static void make_home(const char *leaf, const char *who, bool broken, char *home)
{
	char dir[P_MAX * 2], text[256];

	cr_assert_lt(snprintf(home, P_MAX, "%s/%s", fx.tmp, leaf), P_MAX);
	FMT(dir, "%s/.config/git", home);
	cr_assert_eq(fsutil_mkdir_parent(dir), 0);
	cr_assert_eq(mkdir(dir, 0700), 0);
	FMT(text, "[agentdtest]\n\twho = %s\n%s", who,
	    broken ? "[url \"file:///nonexistent-daemon-config/\"]\n\tinsteadOf = file://\n" : "");
	FMT(dir, "%s/.gitconfig", home);
	write_file(dir, text);
	FMT(dir, "%s/.config/git/config", home);
	write_file(dir, text);
}

/* agentdtest.who from the global, XDG and system files, or "" when none has it. */
static void config_who(char *out, size_t outlen)
{
	git_config *cfg = NULL;
	git_buf buf = GIT_BUF_INIT;

	cr_assert_eq(git_config_open_default(&cfg), 0, "%s", gitrepo_msg());
	out[0] = '\0';
	if (git_config_get_string_buf(&buf, cfg, "agentdtest.who") == 0)
		snprintf(out, outlen, "%s", buf.ptr);
	git_buf_dispose(&buf);
	git_config_free(cfg);
}

static void assert_search_path(int level, const char *want)
{
	git_buf buf = GIT_BUF_INIT;

	cr_assert_eq(git_libgit2_opts(GIT_OPT_GET_SEARCH_PATH, level, &buf), 0);
	cr_assert_str_eq(buf.ptr != NULL ? buf.ptr : "", want, "level %d", level);
	git_buf_dispose(&buf);
}

Test(gitrepo, global_init_reads_the_agents_config_not_the_daemons)
{
	char daemon[P_MAX], agent[P_MAX], xdg[P_MAX * 2], who[64];
	struct cause c = {{0}};

	make_home("roothome", "daemon", true, daemon);
	make_home("agenthome", "agent", false, agent);
	FMT(xdg, "%s/.config", daemon);
	cr_assert_eq(setenv("HOME", daemon, 1), 0);
	cr_assert_eq(setenv("XDG_CONFIG_HOME", xdg, 1), 0);
	/* libgit2's own guess, from the environment: what the daemon's git work read. */
	cr_assert_eq(git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, GIT_CONFIG_LEVEL_GLOBAL, NULL), 0);
	cr_assert_eq(git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, GIT_CONFIG_LEVEL_XDG, NULL), 0);
	config_who(who, sizeof(who));
	cr_assert_str_eq(who, "daemon");
	cr_assert_lt(worktree_ensure_repo(fx.base, "acme", "widgets", fx.url, &c), 0,
		     "the daemon's url.insteadOf did not apply: the test proves nothing");
	cr_assert(strstr(c.msg, "clone of ") != NULL, "%s", c.msg);

	cr_assert_eq(worktree_global_init(agent), 0);
	assert_search_path(GIT_CONFIG_LEVEL_GLOBAL, agent);
	FMT(xdg, "%s/.config/git", agent);
	assert_search_path(GIT_CONFIG_LEVEL_XDG, xdg);
	config_who(who, sizeof(who));
	cr_assert_str_eq(who, "agent");
	ensure();
	cr_assert(has_ref(fx.bare, "refs/remotes/origin/main"));
}

Test(gitrepo, global_init_without_a_usable_home_reads_no_user_config)
{
	const char *homes[] = {NULL, "", "relative/home", "/a:/b", "/x/$PATH"};
	char daemon[P_MAX], who[64];
	size_t i;

	make_home("roothome", "daemon", true, daemon);
	cr_assert_eq(setenv("HOME", daemon, 1), 0);
	cr_assert_eq(unsetenv("XDG_CONFIG_HOME"), 0);
	for (i = 0; i < sizeof(homes) / sizeof(homes[0]); i++) {
		cr_assert_eq(
		    git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, GIT_CONFIG_LEVEL_GLOBAL, NULL), 0);
		cr_assert_eq(worktree_global_init(homes[i]), 0, "home %zu", i);
		assert_search_path(GIT_CONFIG_LEVEL_GLOBAL, "");
		assert_search_path(GIT_CONFIG_LEVEL_XDG, "");
		config_who(who, sizeof(who));
		cr_assert_str_eq(who, "", "home %zu read %s", i, who);
	}
	ensure();
}

Test(gitrepo, lock_is_exclusive)
{
	char lockpath[P_MAX + 8];
	int fd, fd2;

	fd = worktree_lock(fx.base, "acme", "widgets");
	cr_assert_geq(fd, 0, "lock: %d", fd);
	FMT(lockpath, "%s.lock", fx.bare);
	cr_assert(exists(lockpath));
	fd2 = open(lockpath, O_RDWR | O_CLOEXEC);
	cr_assert_geq(fd2, 0);
	cr_assert_eq(flock(fd2, LOCK_EX | LOCK_NB), -1);
	cr_assert_eq(errno, EWOULDBLOCK);
	close(fd);
	cr_assert_eq(flock(fd2, LOCK_EX | LOCK_NB), 0);
	close(fd2);
	cr_assert_eq(worktree_lock(fx.base, "..", "widgets"), -EINVAL);
	cr_assert_eq(worktree_lock(fx.base, "acme", "../x"), -EINVAL);
}

Test(gitrepo, second_ensure_fetches_and_prunes)
{
	char path[P_MAX];
	git_oid a, b;

	ensure();
	cr_assert(has_ref(fx.bare, "refs/remotes/origin/dev"));
	commit_file(fx.up, "NEW", "new\n");
	GIT(fx.up, "push", "-q", "origin", "main");
	GIT(fx.up, "push", "-q", "origin", "--delete", "dev");
	ensure();
	cr_assert_not(has_ref(fx.bare, "refs/remotes/origin/dev"), "deleted branch not pruned");
	a = ref_oid(fx.remote, "refs/heads/main");
	b = ref_oid(fx.bare, "refs/remotes/origin/main");
	cr_assert(git_oid_equal(&a, &b));
	add(2, path);
	cr_assert(in_file(path, "NEW"), "new upstream commit missing from a new worktree");
}

Test(gitrepo, default_branch_change_repoints_origin_head)
{
	char path[P_MAX];
	git_repository *repo;
	git_reference *head;

	ensure();
	GIT(fx.up, "checkout", "-q", "-b", "trunk");
	commit_file(fx.up, "TRUNK", "t\n");
	GIT(fx.up, "push", "-q", "origin", "trunk");
	GIT(fx.remote, "symbolic-ref", "HEAD", "refs/heads/trunk");
	ensure();
	cr_assert_eq(git_repository_open(&repo, fx.bare), 0);
	cr_assert_eq(git_reference_lookup(&head, repo, "refs/remotes/origin/HEAD"), 0);
	cr_assert_eq(git_reference_type(head), GIT_REFERENCE_SYMBOLIC);
	cr_assert_str_eq(git_reference_symbolic_target(head), "refs/remotes/origin/trunk");
	git_reference_free(head);
	git_repository_free(repo);
	add(3, path);
	cr_assert(in_file(path, "TRUNK"));
}

Test(gitrepo, failed_fetch_of_existing_clone_is_not_fatal)
{
	char moved[P_MAX + 8], url[P_MAX + 16], got[WORKTREE_URL_MAX], path[P_MAX];
	struct cause c = {{0}};

	ensure();
	FMT(moved, "%s.gone", fx.remote);
	cr_assert_eq(rename(fx.remote, moved), 0);
	cr_assert_eq(worktree_ensure_repo(fx.base, "acme", "widgets", fx.url, &c), 1);
	cr_assert(strstr(c.msg, "fetch of ") != NULL && strstr(c.msg, fx.url) != NULL, "%s", c.msg);
	add(1, path);
	/* A changed URL (AGENTD_REPO_URL) replaces origin's URL and is fetched from. */
	commit_file(fx.up, "MOVED", "m\n");
	GIT(fx.up, "push", "-q", moved, "main");
	FMT(url, "file://%s", moved);
	cr_assert_eq(worktree_ensure_repo(fx.base, "acme", "widgets", url, &c), 0, "%s", c.msg);
	cr_assert_eq(worktree_remote_url(path, got, sizeof(got), &c), 0, "%s", c.msg);
	cr_assert_str_eq(got, url);
	add(2, path);
	cr_assert(in_file(path, "MOVED"));
}

Test(gitrepo, clone_of_missing_url_fails_with_cause)
{
	char url[P_MAX + 32], tmp[P_MAX + 8];
	struct cause c = {{0}};
	int r;

	FMT(url, "file://%s/nowhere/acme/widgets.git", fx.tmp);
	r = worktree_ensure_repo(fx.base, "acme", "widgets", url, &c);
	cr_assert_lt(r, 0);
	cr_assert(strstr(c.msg, "clone of ") != NULL && strstr(c.msg, url) != NULL, "%s", c.msg);
	cr_assert(strstr(c.msg, "failed: ") != NULL, "%s", c.msg);
	FMT(tmp, "%s.clone", fx.bare);
	cr_assert_not(exists(fx.bare));
	cr_assert_not(exists(tmp));
}

Test(gitrepo, remote_url_from_a_subdirectory)
{
	char path[P_MAX], sub[P_MAX + 16], url[WORKTREE_URL_MAX], small[8], plain[P_MAX];
	struct cause c = {{0}};

	ensure();
	add(15, path);
	FMT(sub, "%s/sub", path);
	cr_assert_eq(mkdir(sub, 0755), 0);
	FMT(sub, "%s/sub/dir", path);
	cr_assert_eq(mkdir(sub, 0755), 0);
	cr_assert_eq(worktree_remote_url(sub, url, sizeof(url), &c), 0, "%s", c.msg);
	cr_assert_str_eq(url, fx.url);
	cr_assert_eq(worktree_remote_url(path, url, sizeof(url), &c), 0, "%s", c.msg);
	cr_assert_str_eq(url, fx.url);
	cr_assert_eq(worktree_remote_url(path, small, sizeof(small), &c), -ENAMETOOLONG);
	FMT(plain, "%s/plain", fx.tmp);
	cr_assert_eq(mkdir(plain, 0755), 0);
	cr_assert_eq(worktree_remote_url(plain, url, sizeof(url), NULL), -ENOENT);
}

struct url_case {
	const char *url;
	const char *owner, *name; /* NULL: -EINVAL expected */
};

Test(gitrepo, parse_url_table)
{
	static const struct url_case cases[] = {
	    {"https://github.com/o/n.git", "o", "n"},
	    {"https://github.com/o/n", "o", "n"},
	    {"https://github.com/o/n/", "o", "n"},
	    {"http://ghe.example.com/acme-co/widgets.git", "acme-co", "widgets"},
	    {"https://user:token@github.com/o/n.git", "o", "n"},
	    {"git@github.com:o/n.git", "o", "n"},
	    {"git@github.com:o/n", "o", "n"},
	    {"github.com:o/n.git", "o", "n"},
	    {"ssh://git@host/o/n.git", "o", "n"},
	    {"ssh://git@host:2222/o/n.git", "o", "n"},
	    {"git://host/o/n.git", "o", "n"},
	    {"file:///any/path/o/n.git", "o", "n"},
	    {"file:///o/n.git", "o", "n"},
	    {"/srv/git/o/n.git", "o", "n"},
	    {"https://github.com/socketio/socket.io.git", "socketio", "socket.io"},
	    {"https://github.com/socketio/socket.io", "socketio", "socket.io"},
	    {"git@github.com:vercel/next.js.git", "vercel", "next.js"},
	    {"https://github.com/o/.github.git", "o", ".github"},
	    {"", NULL, NULL},
	    {"https://x/", NULL, NULL},
	    {"https://x", NULL, NULL},
	    {"https://", NULL, NULL},
	    {"https:///o/n", NULL, NULL},
	    {"../", NULL, NULL},
	    {"..", NULL, NULL},
	    {"o/n", NULL, NULL},
	    {"https://github.com/o", NULL, NULL},
	    {"https://github.com/o/n/tree/main", NULL, NULL},
	    {"https://github.com/../n.git", NULL, NULL},
	    {"https://github.com/o/..", NULL, NULL},
	    {"https://github.com/o/.git", NULL, NULL},
	    {"https://github.com/o/n.git.git", NULL, NULL},
	    {"https://github.com/o/n?x=1", NULL, NULL},
	    {"https://github.com/o%2f/n", NULL, NULL},
	    {"https://github.com/-o/n", NULL, NULL},
	    {"file:///x/../n.git", NULL, NULL},
	    {"git@github.com:", NULL, NULL},
	    {":o/n", NULL, NULL},
	    {"HTTPS://github.com/o/n", NULL, NULL},
	    {"\x01\x02\xff\xfe://junk/\x80/\x81", NULL, NULL},
	    {"https://github.com/o/n\r\n", NULL, NULL},
	    {"https://github.com/o/a name", NULL, NULL},
	};
	char owner[40], name[101];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = worktree_parse_url(cases[i].url, owner, sizeof(owner), name, sizeof(name));

		if (cases[i].owner == NULL) {
			cr_expect_eq(r, -EINVAL, "accepted %s", cases[i].url);
			continue;
		}
		cr_expect_eq(r, 0, "rejected %s", cases[i].url);
		if (r == 0) {
			cr_expect_str_eq(owner, cases[i].owner, "%s", cases[i].url);
			cr_expect_str_eq(name, cases[i].name, "%s", cases[i].url);
		}
	}
	cr_assert_eq(worktree_parse_url(NULL, owner, sizeof(owner), name, sizeof(name)), -EINVAL);
	/* Too small output buffers. */
	cr_assert_eq(worktree_parse_url("https://github.com/owner/n", owner, 5, name, sizeof(name)),
		     -EINVAL);
	cr_assert_eq(worktree_parse_url("https://github.com/o/name", owner, sizeof(owner), name, 4),
		     -EINVAL);
}

Test(gitrepo, parse_url_hostile_sizes)
{
	const size_t big = 10u * 1024 * 1024;
	char owner[40], name[101];
	char *s = malloc(big + 1);
	const char *prefixes[] = {"", "https://github.com/", "git@h:", "file:///"};

	cr_assert_not_null(s);
	for (size_t p = 0; p < sizeof(prefixes) / sizeof(prefixes[0]); p++) {
		size_t n = strlen(prefixes[p]);

		memcpy(s, prefixes[p], n);
		for (size_t i = n; i < big; i++)
			s[i] = (i % 7 == 0) ? '/' : (char)('a' + i % 26);
		s[big] = '\0';
		cr_assert_eq(worktree_parse_url(s, owner, sizeof(owner), name, sizeof(name)),
			     -EINVAL);
	}
	/* A well-formed local URL of WORKTREE_URL_MAX - 1 characters fits; one more does not. */
	for (size_t len = WORKTREE_URL_MAX - 1; len <= WORKTREE_URL_MAX; len++) {
		memset(s, 'a', len);
		memcpy(s, "file:///", 8);
		memcpy(s + len - 7, "/o/repo", 7);
		s[len] = '\0';
		cr_assert_eq(worktree_parse_url(s, owner, sizeof(owner), name, sizeof(name)),
			     len < WORKTREE_URL_MAX ? 0 : -EINVAL, "length %zu", len);
	}
	cr_assert_str_eq(owner, "o");
	cr_assert_str_eq(name, "repo");
	free(s);
}
