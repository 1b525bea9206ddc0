/*
 * tmux: tmux_escape_word as a table, then everything else against a real tmux server on a
 * private socket in a temporary runtime dir (killed and removed at the end of each test). Pane
 * commands write what they received into files, which the tests poll.
 */
#include "tmux.h"

#include "proc.h"
#include "testdir.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The fixture: one runtime dir, one tmux server. Tests in this file share nothing else. */
static char rundir[64];
static struct config cfg;
static struct tmux tm;

/* Runs in the janitor (testdir_janitor), which reads tm as it was when setup called it. */
static void kill_server(void *arg)
{
	struct tmux *t = arg;
	char *const argv[] = {t->bin, "-S", t->socket, "kill-server", NULL};
	struct proc_opts opts = {.keep_fd = -1};

	proc_run(argv, &opts, NULL, 0, NULL);
}

static void setup(void)
{
	const char *bin = getenv("AGENTD_TMUX");

	unsetenv("TMUX"); /* the runner may itself be inside tmux */
	testdir_make(rundir, sizeof(rundir), "/tmp/agentd-tmux-XXXXXX");
	config_defaults(&cfg);
	snprintf(cfg.runtime_dir, sizeof(cfg.runtime_dir), "%s", rundir);
	if (bin != NULL && bin[0] != '\0')
		snprintf(cfg.tmux, sizeof(cfg.tmux), "%s", bin);
	cr_assert_eq(tmux_init(&tm, &cfg), 0);
	/* Stops the server and removes rundir however the test process ends (Criterion skips .fini
	 * when a test crashes). */
	testdir_janitor(rundir, kill_server, &tm);
}

static void teardown(void)
{
	kill_server(&tm);
	testdir_remove(rundir);
}

TestSuite(tmux, .init = setup, .fini = teardown, .timeout = 60);

/* Writes the config and starts the server. */
static void start(void)
{
	struct cause c = {{0}};

	cr_assert_eq(tmux_write_conf(&tm, &c), 0, "write_conf: %s", c.msg);
	cr_assert_eq(tmux_start_server(&tm, &c), 0, "start_server: %s", c.msg);
}

/* Runs our tmux with the given words (NULL-terminated) and returns its trimmed output;
 * asserts exit status 0. */
static void tmux_cmd(char *out, size_t outlen, ...)
{
	char *argv[16] = {tm.bin, "-S", tm.socket};
	struct proc_opts opts = {.keep_fd = -1};
	size_t argc = 3, n;
	int status = -1;
	va_list ap;

	va_start(ap, outlen);
	while (argc < 15 && (argv[argc] = va_arg(ap, char *)) != NULL)
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	cr_assert_eq(proc_run(argv, &opts, out, outlen, &status), 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "tmux %s failed: %s", argv[3],
		  out);
	n = strlen(out);
	while (n > 0 && out[n - 1] == '\n')
		out[--n] = '\0';
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Waits (up to 10 s) for path to exist with content; returns its content (malloc'd). */
static char *wait_file(const char *path)
{
	for (int i = 0; i < 1000; i++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		if (fd >= 0) {
			char *buf = malloc(1 << 20);
			ssize_t n;

			cr_assert_not_null(buf);
			n = read(fd, buf, (1 << 20) - 1);
			close(fd);
			if (n > 0) {
				buf[n] = '\0';
				return buf;
			}
			free(buf);
		}
		sleep_ms(10);
	}
	cr_assert_fail("%s never appeared", path);
	return NULL;
}

/*
 * A pane command that writes its cwd, then each argument on its own line, into <rundir>/<leaf>
 * (atomically, via a temp name), then sleeps so the session stays alive.
 */
static void recorder_argv(char **argv, size_t max, const char *leaf, const char *const *words,
			  size_t nwords, char *script, size_t slen)
{
	size_t i = 0;

	snprintf(script, slen,
		 "{ pwd; printf '%%s\\n' \"$@\"; } > '%s/%s.tmp' && mv '%s/%s.tmp' '%s/%s'; "
		 "exec sleep 1000",
		 rundir, leaf, rundir, leaf, rundir, leaf);
	argv[i++] = "/bin/sh";
	argv[i++] = "-c";
	argv[i++] = script;
	argv[i++] = "sh";
	for (size_t j = 0; j < nwords && i + 1 < max; j++)
		argv[i++] = (char *)words[j];
	argv[i] = NULL;
}

static char *path_in(const char *leaf)
{
	static char path[256];

	snprintf(path, sizeof(path), "%s/%s", rundir, leaf);
	return path;
}

static void new_sleeper(const char *name, const struct tmux_meta *meta)
{
	char *const argv[] = {"sleep", "1000", NULL};
	struct tmux_new req = {.name = name, .cwd = rundir, .argv = argv, .meta = meta};
	struct cause c = {{0}};

	cr_assert_eq(tmux_new_session(&tm, &req, &c), 0, "new_session %s: %s", name, c.msg);
}

/* ---- tmux_escape_word ---- */

Test(tmux, escape_word_table)
{
	static const struct {
		const char *in, *out;
	} table[] = {
	    {"", ""},
	    {"a", "a"},
	    {"a;", "a\\;"},
	    {";", "\\;"},
	    {"a;b", "a;b"},
	    {";a", ";a"},
	    {";;", ";\\;"},
	    {"a\\;", "a\\\\;"},
	    {"\\", "\\"},
	    {"a b ;", "a b \\;"},
	    {"$HOME;", "$HOME\\;"},
	    {"'\";", "'\"\\;"},
	    {"\xff;", "\xff\\;"},
	    {"x\n;", "x\n\\;"},
	};
	char out[64];

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		memset(out, '#', sizeof(out));
		cr_assert_eq(tmux_escape_word(table[i].in, out, sizeof(out)), 0, "'%s'",
			     table[i].in);
		cr_assert_str_eq(out, table[i].out, "escape of '%s'", table[i].in);
	}
}

Test(tmux, escape_word_too_long)
{
	char out[8];
	char *huge;

	/* "a;" needs 4 bytes ("a\;" and the terminator); "ab" needs 3. */
	cr_assert_eq(tmux_escape_word("a;", out, 4), 0);
	cr_assert_str_eq(out, "a\\;");
	cr_assert_eq(tmux_escape_word("a;", out, 3), -ENAMETOOLONG);
	cr_assert_eq(tmux_escape_word("ab", out, 3), 0);
	cr_assert_eq(tmux_escape_word("ab", out, 2), -ENAMETOOLONG);
	cr_assert_eq(tmux_escape_word("", out, 1), 0);
	cr_assert_eq(tmux_escape_word("", out, 0), -ENAMETOOLONG);
	huge = malloc(10 * 1024 * 1024 + 1);
	cr_assert_not_null(huge);
	memset(huge, 'w', 10 * 1024 * 1024);
	huge[10 * 1024 * 1024] = '\0';
	cr_assert_eq(tmux_escape_word(huge, out, sizeof(out)), -ENAMETOOLONG);
	free(huge);
}

/* ---- init, config, server ---- */

Test(tmux, init_paths)
{
	struct tmux t;
	char want[128];

	snprintf(want, sizeof(want), "%s/tmux.sock", rundir);
	cr_assert_str_eq(tm.socket, want);
	snprintf(want, sizeof(want), "%s/tmux.conf", rundir);
	cr_assert_str_eq(tm.conf, want);
	memset(cfg.runtime_dir, 'r', sizeof(cfg.runtime_dir) - 1);
	cfg.runtime_dir[sizeof(cfg.runtime_dir) - 1] = '\0';
	cr_assert_eq(tmux_init(&t, &cfg), -ENAMETOOLONG);
}

Test(tmux, no_server)
{
	struct tmux_info *list = (struct tmux_info *)1;
	struct cause c = {{0}};
	size_t n = 9;

	cr_assert_eq(tmux_server_running(&tm), 0);
	cr_assert_eq(tmux_has_session(&tm, "x-1"), 0);
	cr_assert_eq(tmux_kill_session(&tm, "x-1", "x-1", &c), -ENOENT);
	cr_assert_eq(tmux_list(&tm, &list, &n, &c), 0, "no server is an empty list: %s", c.msg);
	cr_assert_eq(n, 0);
	free(list);
}

Test(tmux, write_conf_and_start_server)
{
	struct cause c = {{0}};
	struct stat sb;
	char out[256];
	char *text;

	cr_assert_eq(tmux_write_conf(&tm, &c), 0, "%s", c.msg);
	text = wait_file(tm.conf);
	cr_assert_not_null(strstr(text, "set -g remain-on-exit on\n"));
	cr_assert_not_null(strstr(text, "set -g exit-empty off\n"));
	cr_assert_not_null(strstr(text, "set -g status off\n"));
	cr_assert_not_null(strstr(text, "set -g history-limit 50000\n"));
	free(text);
	cr_assert_neq(stat(path_in("tmux.conf.tmp"), &sb), 0, "the temp file stayed");
	/* Writing again replaces it in place. */
	cr_assert_eq(tmux_write_conf(&tm, &c), 0, "%s", c.msg);

	cr_assert_eq(tmux_start_server(&tm, &c), 0, "%s", c.msg);
	cr_assert_eq(stat(tm.socket, &sb), 0);
	cr_assert(S_ISSOCK(sb.st_mode));
	cr_assert_eq(sb.st_mode & 077, 0, "the socket is private");
	/* exit-empty off: the server stays up with no session at all. */
	cr_assert_eq(tmux_server_running(&tm), 1);
	tmux_cmd(out, sizeof(out), "show-options", "-gv", "remain-on-exit", NULL);
	cr_assert_str_eq(out, "on");
	tmux_cmd(out, sizeof(out), "show-options", "-gv", "exit-empty", NULL);
	cr_assert_str_eq(out, "off");
	/* No prefix key and no binding: a terminal client cannot open a (root) shell with C-b c. */
	tmux_cmd(out, sizeof(out), "show-options", "-gv", "prefix", NULL);
	cr_assert_str_eq(out, "None");
	{
		static char keys[64 * 1024];

		tmux_cmd(keys, sizeof(keys), "list-keys", NULL);
		cr_assert_null(strstr(keys, "-T prefix "), "prefix bindings left");
		cr_assert_null(strstr(keys, "-T root "), "root bindings left");
		cr_assert_not_null(strstr(keys, "-T copy-mode "), "list-keys lists the tables");
	}
	/* Starting again is harmless. */
	cr_assert_eq(tmux_start_server(&tm, &c), 0, "%s", c.msg);
}

Test(tmux, write_conf_error_has_cause)
{
	struct tmux t = tm;
	struct cause c = {{0}};

	snprintf(t.conf, sizeof(t.conf), "%s/no/such/dir/tmux.conf", rundir);
	cr_assert_eq(tmux_write_conf(&t, &c), -ENOENT);
	cr_assert_neq(c.msg[0], '\0');
}

Test(tmux, missing_tmux_binary)
{
	struct tmux t = tm;
	struct cause c = {{0}};
	struct tmux_info *list = NULL;
	size_t n = 0;

	snprintf(t.bin, sizeof(t.bin), "/nonexistent/tmux");
	cr_assert_eq(tmux_start_server(&t, &c), -ENOENT);
	cr_assert_neq(c.msg[0], '\0');
	cr_assert_eq(tmux_server_running(&t), -ENOENT);
	cr_assert_lt(tmux_has_session(&t, "x-1"), 0);
	cr_assert_lt(tmux_list(&t, &list, &n, &c), 0);
	cr_assert_lt(tmux_kill_session(&t, "x-1", "x-1", &c), 0);
}

/* ---- new_session ---- */

Test(tmux, new_session_argv_verbatim)
{
	const char *words[] = {"a b", "x;",      ";",         "$HOME",       "\"dq\"", "'sq'",
			       "a;b", "back\\;", "tab\there", "`id`",        "*",      "-t",
			       "--",  "\\",      "\xff\xfe",  "caf\xc3\xa9", "end;"};
	char script[1024], want[1024], cwd[256];
	char *argv[64];
	struct tmux_new req = {0};
	struct cause c = {{0}};
	char *got;
	size_t o;

	start();
	/* The start directory has a blank and ends with ';' too. */
	snprintf(cwd, sizeof(cwd), "%s/wt dir;", rundir);
	cr_assert_eq(mkdir(cwd, 0700), 0);
	recorder_argv(argv, 64, "args", words, sizeof(words) / sizeof(words[0]), script,
		      sizeof(script));
	req.name = "verbatim-1";
	req.cwd = cwd;
	req.argv = argv;
	cr_assert_eq(tmux_new_session(&tm, &req, &c), 0, "%s", c.msg);
	got = wait_file(path_in("args"));
	o = (size_t)snprintf(want, sizeof(want), "%s\n", cwd);
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		o += (size_t)snprintf(want + o, sizeof(want) - o, "%s\n", words[i]);
	cr_assert_str_eq(got, want);
	free(got);
}

Test(tmux, new_session_env)
{
	char *const env[] = {"AGENTD_T1=va;ue;", "AGENTD_T2=$HOME 'q'", "AGENTD_T3=", NULL};
	char script[512];
	char *const argv[] = {"/bin/sh", "-c", script, NULL};
	struct tmux_new req = {.name = "env-1", .cwd = rundir, .env = env, .argv = argv};
	struct cause c = {{0}};
	char *got;

	start();
	snprintf(script, sizeof(script),
		 "printf '%%s|%%s|%%s|%%s\\n' \"$AGENTD_T1\" \"$AGENTD_T2\" \"${AGENTD_T3-unset}\" "
		 "\"$TERM\" > '%s/env.tmp' && mv '%s/env.tmp' '%s/env'; exec sleep 1000",
		 rundir, rundir, rundir);
	cr_assert_eq(tmux_new_session(&tm, &req, &c), 0, "%s", c.msg);
	got = wait_file(path_in("env"));
	cr_assert_str_eq(got, "va;ue;|$HOME 'q'||tmux-256color\n");
	free(got);
}

Test(tmux, duplicate_name_is_eexist)
{
	char *const argv[] = {"sleep", "1000", NULL};
	struct tmux_new req = {.name = "dup-1", .cwd = rundir, .argv = argv};
	struct cause c = {{0}};

	start();
	cr_assert_eq(tmux_new_session(&tm, &req, &c), 0, "%s", c.msg);
	c.msg[0] = '\0';
	cr_assert_eq(tmux_new_session(&tm, &req, &c), -EEXIST);
	cr_assert_not_null(strstr(c.msg, "duplicate"), "cause: %s", c.msg);
	cr_assert_eq(tmux_has_session(&tm, "dup-1"), 1, "the first session is untouched");
}

Test(tmux, new_session_starts_server)
{
	/* With only the config written, the first new-session starts the server with it. */
	struct cause c = {{0}};
	char out[64];

	cr_assert_eq(tmux_write_conf(&tm, &c), 0, "%s", c.msg);
	new_sleeper("first-1", NULL);
	tmux_cmd(out, sizeof(out), "show-options", "-gv", "remain-on-exit", NULL);
	cr_assert_str_eq(out, "on");
}

Test(tmux, no_start_never_starts_a_server)
{
	/* agentd-api --no-tmux-start: neither new-session nor start-server may start one (tmux -N),
	 * but with a server running everything works as before. */
	char *const argv[] = {"sleep", "1000", NULL};
	struct tmux_new req = {.name = "nostart-1", .cwd = rundir, .argv = argv};
	struct cause c = {{0}};
	struct stat sb;

	cr_assert_eq(tmux_write_conf(&tm, &c), 0, "%s", c.msg);
	tm.no_start = true;
	cr_assert_lt(tmux_new_session(&tm, &req, &c), 0, "new-session without a server fails");
	cr_assert_lt(tmux_start_server(&tm, &c), 0, "start-server without a server fails");
	cr_assert_eq(tmux_server_running(&tm), 0);
	cr_assert_eq(stat(tm.socket, &sb), -1, "no server socket appeared");
	tm.no_start = false;
	new_sleeper("first-1", NULL);
	tm.no_start = true;
	cr_assert_eq(tmux_new_session(&tm, &req, &c), 0, "%s", c.msg);
	cr_assert_eq(tmux_has_session(&tm, "nostart-1"), 1);
	cr_assert_eq(tmux_server_running(&tm), 1);
}

Test(tmux, new_session_missing_cwd_fails)
{
	char *const argv[] = {"sleep", "1000", NULL};
	char cwd[128], file[128];
	struct tmux_new req = {.name = "nocwd-1", .cwd = cwd, .argv = argv};
	struct cause c = {{0}};
	int fd;

	/* tmux 3.3a silently starts the pane in its client's directory when -c does not exist:
	 * the agent would then work outside its worktree. That must be an error instead. */
	start();
	snprintf(cwd, sizeof(cwd), "%s/absent", rundir);
	cr_assert_eq(tmux_new_session(&tm, &req, &c), -ENOENT, "a missing start directory");
	cr_assert_neq(c.msg[0], '\0');
	cr_assert_eq(tmux_has_session(&tm, "nocwd-1"), 0);
	/* A file is not a directory either. */
	snprintf(file, sizeof(file), "%s/file", rundir);
	fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	req.cwd = file;
	cr_assert_eq(tmux_new_session(&tm, &req, &c), -ENOTDIR, "a start directory that is a file");
	cr_assert_eq(tmux_has_session(&tm, "nocwd-1"), 0);
}

Test(tmux, new_session_word_too_long)
{
	char *word = malloc(TMUX_WORD_MAX + 1);
	char *const argv[] = {"echo", word, NULL};
	struct tmux_new req = {.name = "long-1", .cwd = rundir, .argv = argv};
	struct cause c = {{0}};

	cr_assert_not_null(word);
	memset(word, 'w', TMUX_WORD_MAX);
	word[TMUX_WORD_MAX] = '\0';
	start();
	cr_assert_eq(tmux_new_session(&tm, &req, &c), -ENAMETOOLONG);
	cr_assert_neq(c.msg[0], '\0');
	cr_assert_eq(tmux_has_session(&tm, "long-1"), 0);
	free(word);
}

Test(tmux, new_session_too_many_words)
{
	char *argv[TMUX_ARGV_MAX + 2];
	struct tmux_new req = {.name = "many-1", .cwd = rundir, .argv = argv};
	struct cause c = {{0}};

	for (size_t i = 0; i < TMUX_ARGV_MAX + 1; i++)
		argv[i] = "w";
	argv[TMUX_ARGV_MAX + 1] = NULL;
	start();
	cr_assert_eq(tmux_new_session(&tm, &req, &c), -E2BIG);
	cr_assert_eq(tmux_has_session(&tm, "many-1"), 0);
}

/* ---- has_session, kill_session ---- */

Test(tmux, has_session_is_exact)
{
	struct cause c = {{0}};

	start();
	new_sleeper("abcdef", NULL);
	cr_assert_eq(tmux_has_session(&tm, "abcdef"), 1);
	cr_assert_eq(tmux_has_session(&tm, "abc"), 0, "a prefix must not match");
	cr_assert_eq(tmux_has_session(&tm, "abcdefg"), 0);
	cr_assert_eq(tmux_has_session(&tm, "bcdef"), 0);
	cr_assert_eq(tmux_has_session(&tm, "abc*"), 0, "no patterns");
	cr_assert_eq(tmux_has_session(&tm, "abcdef;"), 0);
	cr_assert_eq(tmux_has_session(&tm, ""), 0);
	/* kill with a prefix must not kill the longer name either. */
	cr_assert_eq(tmux_kill_session(&tm, "abc", "", &c), -ENOENT);
	cr_assert_eq(tmux_has_session(&tm, "abcdef"), 1);
	/* set-option on a prefix must not land on the longer name. */
	cr_assert_lt(tmux_set_option(&tm, "abc", "", "@agentd_mode", "x", &c), 0);
}

Test(tmux, has_session_hostile_names)
{
	const char *names[] = {";",  "a;", "\\;", "$HOME", "'",   "\"",  "=",
			       "x:", "x.", "-t",  "\xff",  "a b", "a\nb"};
	char *huge = malloc(10 * 1024 * 1024 + 1);

	cr_assert_not_null(huge);
	memset(huge, 'n', 10 * 1024 * 1024);
	huge[10 * 1024 * 1024] = '\0';
	start();
	new_sleeper("victim-1", NULL);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		cr_assert_eq(tmux_has_session(&tm, names[i]), 0, "'%s'", names[i]);
	cr_assert_lt(tmux_has_session(&tm, huge), 0, "a 10 MB name is refused, not run");
	cr_assert_eq(tmux_has_session(&tm, "victim-1"), 1, "nothing else happened");
	free(huge);
}

Test(tmux, kill_session_then_enoent)
{
	struct cause c = {{0}};
	struct tmux_info *list = NULL;
	size_t n = 0;

	start();
	new_sleeper("k-1", NULL);
	new_sleeper("k-2", NULL);
	cr_assert_eq(tmux_kill_session(&tm, "k-1", "", &c), 0, "%s", c.msg);
	cr_assert_eq(tmux_has_session(&tm, "k-1"), 0);
	cr_assert_eq(tmux_kill_session(&tm, "k-1", "", &c), -ENOENT);
	cr_assert_eq(tmux_has_session(&tm, "k-2"), 1, "the other session survives");
	cr_assert_eq(tmux_list(&tm, &list, &n, &c), 0, "%s", c.msg);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(list[0].name, "k-2");
	free(list);
	/* The last session gone, the server stays (exit-empty off). */
	cr_assert_eq(tmux_kill_session(&tm, "k-2", "", &c), 0, "%s", c.msg);
	cr_assert_eq(tmux_server_running(&tm), 1);
}

/* ---- options and list ---- */

static void fill_meta(struct tmux_meta *m, const char *id, const char *prompt)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->id, sizeof(m->id), "%s", id);
	snprintf(m->owner, sizeof(m->owner), "cardano-foundation");
	snprintf(m->repo, sizeof(m->repo), "socket.io");
	snprintf(m->issue, sizeof(m->issue), "42");
	snprintf(m->mode, sizeof(m->mode), "terminal");
	snprintf(m->agent_session, sizeof(m->agent_session),
		 "0b7c2f4e-8a55-4a43-9a6b-2d0f4f0d9c12");
	snprintf(m->created, sizeof(m->created), "2026-03-13T10:30:00Z");
	snprintf(m->prompt, sizeof(m->prompt), "%s", prompt);
}

static const struct tmux_info *find_info(const struct tmux_info *list, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i].name, name) == 0)
			return &list[i];
	cr_assert_fail("session %s not listed", name);
	return NULL;
}

static void assert_meta_eq(const struct tmux_meta *a, const struct tmux_meta *b)
{
	cr_assert_str_eq(a->id, b->id);
	cr_assert_str_eq(a->owner, b->owner);
	cr_assert_str_eq(a->repo, b->repo);
	cr_assert_str_eq(a->issue, b->issue);
	cr_assert_str_eq(a->mode, b->mode);
	cr_assert_str_eq(a->agent_session, b->agent_session);
	cr_assert_str_eq(a->created, b->created);
	cr_assert_str_eq(a->prompt, b->prompt);
}

Test(tmux, list_returns_meta)
{
	const char *prompt = "Work on it.\nSecond line\x1f after the unit separator\ttab "
			     "\"quoted\" 'single' \\ back ; end; $HOME caf\xc3\xa9 #{session_name}";
	struct tmux_meta m1, m2;
	struct tmux_info *list = NULL;
	const struct tmux_info *ti;
	struct cause c = {{0}};
	size_t n = 0;
	time_t before = time(NULL);

	start();
	fill_meta(&m1, "socket.io-42", prompt);
	fill_meta(&m2, "other-7", "");
	snprintf(m2.mode, sizeof(m2.mode), "structured");
	new_sleeper("socket_io-42", &m1);
	new_sleeper("other-7", &m2);
	new_sleeper("foreign-1", NULL); /* made by another tool: no metadata */
	cr_assert_eq(tmux_list(&tm, &list, &n, &c), 0, "%s", c.msg);
	cr_assert_eq(n, 3);
	ti = find_info(list, n, "socket_io-42");
	assert_meta_eq(&ti->meta, &m1);
	cr_assert_str_eq(ti->path, rundir);
	cr_assert_not(ti->pane_dead);
	cr_assert_geq(ti->activity, before - 5);
	cr_assert_leq(ti->activity, time(NULL) + 5);
	ti = find_info(list, n, "other-7");
	assert_meta_eq(&ti->meta, &m2);
	ti = find_info(list, n, "foreign-1");
	cr_assert_str_eq(ti->meta.id, "");
	cr_assert_str_eq(ti->meta.prompt, "");
	free(list);
}

Test(tmux, list_largest_prompt_with_same_prompt_in_argv)
{
	/* Real creation passes the prompt twice: as claude's last argv word and as metadata. At
	 * SESSION_PROMPT_MAX that must still fit tmux's single command message. */
	char *prompt = malloc(SESSION_PROMPT_MAX + 1);
	char *const argv[] = {"/bin/sh", "-c", "exec sleep 1000", "sh", prompt, NULL};
	struct tmux_meta *m = malloc(sizeof(*m));
	struct tmux_new req = {.name = "big-1", .cwd = rundir, .argv = argv, .meta = m};
	struct tmux_info *list = NULL;
	struct cause c = {{0}};
	size_t n = 0;

	cr_assert(prompt != NULL && m != NULL);
	for (size_t i = 0; i < SESSION_PROMPT_MAX; i++)
		prompt[i] = (char)('a' + i % 26);
	prompt[SESSION_PROMPT_MAX] = '\0';
	fill_meta(m, "big-1", prompt);
	start();
	cr_assert_eq(tmux_new_session(&tm, &req, &c), 0, "a maximal prompt failed: %s", c.msg);
	cr_assert_eq(tmux_list(&tm, &list, &n, &c), 0, "%s", c.msg);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(list[0].meta.prompt, prompt);
	free(list);
	free(prompt);
	free(m);
}

Test(tmux, list_unstorable_prompt_is_empty)
{
	/* Control characters JSON-encode to six bytes each: too long to store, so it is left out
	 * (documented), and the session is still created with the rest of its metadata. */
	struct tmux_meta *m = malloc(sizeof(*m));
	struct tmux_info *list = NULL;
	struct cause c = {{0}};
	size_t n = 0;

	cr_assert_not_null(m);
	fill_meta(m, "ctl-1", "");
	memset(m->prompt, '\x01', 4000);
	m->prompt[4000] = '\0';
	start();
	new_sleeper("ctl-1", m);
	cr_assert_eq(tmux_list(&tm, &list, &n, &c), 0, "%s", c.msg);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(list[0].meta.prompt, "");
	cr_assert_str_eq(list[0].meta.id, "ctl-1");
	free(list);
	free(m);
}

Test(tmux, set_option)
{
	struct tmux_meta m;
	struct tmux_info *list = NULL;
	struct cause c = {{0}};
	char out[256];
	size_t n = 0;

	start();
	fill_meta(&m, "opt-1", "p");
	new_sleeper("opt-1", &m);
	new_sleeper("opt-2", &m);
	cr_assert_eq(tmux_set_option(&tm, "opt-1", "opt-1", "@agentd_mode", "structured", &c), 0,
		     "%s", c.msg);
	/* Values that end in ';' or carry blanks and quotes arrive verbatim. */
	cr_assert_eq(
	    tmux_set_option(&tm, "opt-1", "opt-1", "@agentd_owner", "x; 'y' \"z\" end;", &c), 0,
	    "%s", c.msg);
	cr_assert_eq(tmux_list(&tm, &list, &n, &c), 0, "%s", c.msg);
	cr_assert_str_eq(find_info(list, n, "opt-1")->meta.mode, "structured");
	cr_assert_str_eq(find_info(list, n, "opt-1")->meta.owner, "x; 'y' \"z\" end;");
	cr_assert_str_eq(find_info(list, n, "opt-2")->meta.mode, "terminal",
			 "options are per session");
	free(list);
	tmux_cmd(out, sizeof(out), "show-options", "-t", "=opt-1:", "-qv", "@agentd_mode", NULL);
	cr_assert_str_eq(out, "structured");
	/* A session that does not exist. */
	c.msg[0] = '\0';
	cr_assert_lt(tmux_set_option(&tm, "absent-1", "absent-1", "@agentd_mode", "x", &c), 0);
	cr_assert_neq(c.msg[0], '\0');
}

/* ---- respawn ---- */

static long pane_pid_of(const char *name)
{
	char target[64], out[64];
	char *argv[] = {tm.bin, "-S",          tm.socket, "display-message", "-p", "-t",
			target, "#{pane_pid}", NULL};
	struct proc_opts opts = {.keep_fd = -1};
	int status;

	snprintf(target, sizeof(target), "=%s:", name);
	cr_assert_eq(proc_run(argv, &opts, out, sizeof(out), &status), 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "display: %s", out);
	return strtol(out, NULL, 10);
}

Test(tmux, respawn_replaces_process)
{
	const char *w1[] = {"first"}, *w2[] = {"second;", "x y"};
	char s1[1024], s2[1024], *a1[16], *a2[16];
	struct tmux_meta m;
	struct tmux_new req = {.name = "re-1", .cwd = rundir, .argv = a1, .meta = &m};
	struct tmux_info *list = NULL;
	struct cause c = {{0}};
	char want[512];
	char *got;
	long pid1, pid2;
	size_t n = 0;

	start();
	fill_meta(&m, "re-1", "prompt");
	recorder_argv(a1, 16, "one", w1, 1, s1, sizeof(s1));
	recorder_argv(a2, 16, "two", w2, 2, s2, sizeof(s2));
	cr_assert_eq(tmux_new_session(&tm, &req, &c), 0, "%s", c.msg);
	got = wait_file(path_in("one"));
	free(got);
	pid1 = pane_pid_of("re-1");
	cr_assert_gt(pid1, 0);
	cr_assert_eq(kill((pid_t)pid1, 0), 0);

	cr_assert_eq(tmux_respawn(&tm, "re-1", "re-1", NULL, a2, &c), 0, "%s", c.msg);
	got = wait_file(path_in("two"));
	snprintf(want, sizeof(want), "%s\nsecond;\nx y\n", rundir);
	cr_assert_str_eq(got, want, "respawned argv verbatim, same start directory");
	free(got);
	pid2 = pane_pid_of("re-1");
	cr_assert_neq(pid2, pid1);
	/* The old process is gone (tmux reaps it). */
	for (int i = 0; i < 500 && kill((pid_t)pid1, 0) == 0; i++)
		sleep_ms(10);
	cr_assert_neq(kill((pid_t)pid1, 0), 0, "the old pane process %ld still runs", pid1);
	/* Metadata survives a respawn. */
	cr_assert_eq(tmux_list(&tm, &list, &n, &c), 0, "%s", c.msg);
	cr_assert_eq(n, 1);
	assert_meta_eq(&list[0].meta, &m);
	free(list);
}

Test(tmux, respawn_missing_session_fails)
{
	char *const argv[] = {"sleep", "1000", NULL};
	struct cause c = {{0}};

	start();
	new_sleeper("present-1", NULL);
	cr_assert_lt(tmux_respawn(&tm, "absent-1", "", NULL, argv, &c), 0);
	cr_assert_neq(c.msg[0], '\0');
	cr_assert_lt(tmux_respawn(&tm, "present", "", NULL, argv, &c), 0, "no prefix match");
}

Test(tmux, dead_pane_reported)
{
	char *const argv[] = {"/bin/sh", "-c", "exit 3", NULL};
	struct tmux_new req = {.name = "dead-1", .cwd = rundir, .argv = argv};
	struct tmux_info *list = NULL;
	struct cause c = {{0}};
	size_t n = 0;
	bool dead = false;

	start();
	cr_assert_eq(tmux_new_session(&tm, &req, &c), 0, "%s", c.msg);
	for (int i = 0; i < 500 && !dead; i++) {
		cr_assert_eq(tmux_list(&tm, &list, &n, &c), 0, "%s", c.msg);
		cr_assert_eq(n, 1, "remain-on-exit keeps the session");
		dead = list[0].pane_dead;
		free(list);
		list = NULL;
		if (!dead)
			sleep_ms(20);
	}
	cr_assert(dead, "pane_dead never reported");
	cr_assert_eq(tmux_has_session(&tm, "dead-1"), 1);
}

/* ---- liveness: hooks, wait-for, dead panes ---- */

/* Starts a session whose pane runs sh -c script (no meta). */
static void new_shell(const char *name, const char *script)
{
	char *const argv[] = {"/bin/sh", "-c", (char *)script, NULL};
	struct tmux_new req = {.name = name, .cwd = rundir, .argv = argv};
	struct cause c = {{0}};

	cr_assert_eq(tmux_new_session(&tm, &req, &c), 0, "%s", c.msg);
}

/*
 * Polls tmux_pane_state until name's pane is dead with a status or a signal. tmux 3.3a sometimes
 * reaps a pane's process only when the next child exits (watch.h): a short-lived session nudges
 * it.
 */
static void wait_dead(const char *name, struct tmux_info *st)
{
	for (int i = 0; i < 500; i++) {
		cr_assert_eq(tmux_pane_state(&tm, name, st), 1);
		if (st->pane_dead && (st->dead_status >= 0 || st->dead_signal > 0))
			return;
		if (i == 50)
			new_shell("nudge-1", "exit 0");
		sleep_ms(20);
	}
	cr_assert_fail("pane %s never dead with a status", name);
}

Test(tmux, conf_installs_the_hooks)
{
	const char *hooks[] = {"pane-died", "session-closed"};
	struct cause c = {{0}};
	char out[512];

	start();
	for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++) {
		tmux_cmd(out, sizeof(out), "show-hooks", "-g", hooks[i], NULL);
		cr_assert_not_null(strstr(out, "wait-for -S " TMUX_CHANNEL), "%s: %s", hooks[i],
				   out);
	}
	/* A new session wakes nobody (its maker signals once its record says running)... */
	tmux_cmd(out, sizeof(out), "show-hooks", "-g", "session-created", NULL);
	cr_assert_null(strstr(out, TMUX_CHANNEL), "session-created: %s", out);
	/* ...its end does: the channel works end to end. */
	new_sleeper("hooked-1", NULL);
	tmux_cmd(out, sizeof(out), "kill-session", "-t", "=hooked-1", NULL);
	cr_assert_eq(tmux_wait(&tm, &c), 0, "%s", c.msg);
}

Test(tmux, pane_state_of_an_exited_pane)
{
	struct tmux_info st;

	start();
	new_shell("die-1", "sleep 0.2; exit 3");
	wait_dead("die-1", &st);
	cr_assert_eq(st.dead_status, 3);
	cr_assert_eq(st.dead_signal, 0);
	cr_assert_gt(st.dead_time, 0);
	cr_assert_gt(st.pane_pid, 0);
	cr_assert_gt(st.server_pid, 0);
}

Test(tmux, pane_state_of_a_signalled_pane)
{
	struct tmux_info st, *list = NULL;
	struct cause c = {{0}};
	size_t n = 0;
	long pid;

	start();
	new_sleeper("sig-1", NULL);
	cr_assert_eq(tmux_pane_state(&tm, "sig-1", &st), 1);
	cr_assert_not(st.pane_dead);
	cr_assert_eq(st.dead_signal, 0);
	pid = pane_pid_of("sig-1");
	cr_assert_gt(pid, 0);
	cr_assert_eq(st.pane_pid, pid);
	cr_assert_eq(kill((pid_t)pid, SIGKILL), 0);
	wait_dead("sig-1", &st);
	cr_assert_eq(st.dead_signal, SIGKILL);
	cr_assert_eq(st.dead_status, -1, "no exit code when a signal ended it");
	cr_assert_eq(tmux_list(&tm, &list, &n, &c), 0, "%s", c.msg);
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i].name, "sig-1") == 0) {
			cr_assert(list[i].pane_dead);
			cr_assert_eq(list[i].dead_signal, SIGKILL);
			cr_assert_eq(list[i].dead_status, -1);
			cr_assert_gt(list[i].dead_time, 0);
			cr_assert_eq(list[i].pane_pid, pid);
		}
	free(list);
}

Test(tmux, pane_state_of_a_missing_session)
{
	struct tmux_info st;

	cr_assert_eq(tmux_pane_state(&tm, "none-1", &st), 0, "no server: not there");
	start();
	new_sleeper("here-1", NULL);
	cr_assert_eq(tmux_pane_state(&tm, "none-1", &st), 0);
	cr_assert_eq(tmux_pane_state(&tm, "here", &st), 0, "no prefix match");
	cr_assert_eq(tmux_pane_state(&tm, "here-1", &st), 1);
}

Test(tmux, session_closed_signals)
{
	struct cause c = {{0}};
	struct tmux_meta m;

	start();
	fill_meta(&m, "gone-1", "");
	new_sleeper("gone-1", &m);
	cr_assert_eq(tmux_kill_session(&tm, "gone-1", "gone-1", &c), 0, "%s", c.msg);
	cr_assert_eq(tmux_wait(&tm, &c), 0, "session-closed signalled: %s", c.msg);
}

Test(tmux, signal_is_remembered_until_the_next_wait)
{
	struct cause c = {{0}};

	start();
	cr_assert_eq(tmux_signal(&tm), 0);
	cr_assert_eq(tmux_wait(&tm, &c), 0, "a signal sent while nobody waited: %s", c.msg);
}

Test(tmux, install_hooks_on_a_server_without_them)
{
	char out[256];
	struct cause c = {{0}};
	char *argv[] = {
	    tm.bin,       "-S",  tm.socket, "-f",  "/dev/null", "start-server",   ";",  "set", "-g",
	    "exit-empty", "off", ";",       "set", "-g",        "remain-on-exit", "on", NULL};
	struct proc_opts opts = {.keep_fd = -1};
	int status = -1;

	cr_assert_eq(tmux_install_hooks(&tm, &c), -ENOENT, "no server");
	/* A server started without our config file, as by an older agentd. */
	cr_assert_eq(proc_run(argv, &opts, out, sizeof(out), &status), 0);
	cr_assert_eq(status, 0, "%s", out);
	/* An older agentd's hook on session-created is taken away. */
	tmux_cmd(out, sizeof(out), "set-hook", "-g", "session-created", "wait-for -S " TMUX_CHANNEL,
		 NULL);
	cr_assert_eq(tmux_install_hooks(&tm, &c), 0, "%s", c.msg);
	tmux_cmd(out, sizeof(out), "show-hooks", "-g", "pane-died", NULL);
	cr_assert_not_null(strstr(out, "wait-for -S " TMUX_CHANNEL), "%s", out);
	tmux_cmd(out, sizeof(out), "show-hooks", "-g", "session-created", NULL);
	cr_assert_null(strstr(out, TMUX_CHANNEL), "session-created: %s", out);
	new_sleeper("late-1", NULL);
	tmux_cmd(out, sizeof(out), "kill-session", "-t", "=late-1", NULL);
	cr_assert_eq(tmux_wait(&tm, &c), 0, "session-closed: %s", c.msg);
}

Test(tmux, wait_without_server_or_when_it_dies)
{
	struct cause c = {{0}};
	char out[64];
	long server;
	pid_t child;
	int status;

	cr_assert_eq(tmux_wait(&tm, &c), -ENOENT, "no server: %s", c.msg);
	cr_assert_eq(tmux_signal(&tm), -ENOENT);
	start();
	tmux_cmd(out, sizeof(out), "display-message", "-p", "#{pid}", NULL);
	server = strtol(out, NULL, 10);
	cr_assert_gt(server, 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		sleep_ms(300);
		kill((pid_t)server, SIGKILL);
		_exit(0);
	}
	cr_assert_eq(tmux_wait(&tm, &c), -ENOENT, "the server died under the waiter: %s", c.msg);
	cr_assert_eq(waitpid(child, &status, 0), child);
}

/* ---- what the server and panes inherit ---- */

static unsigned long long status_mask(const char *text, const char *field)
{
	char key[32];
	const char *p;

	snprintf(key, sizeof(key), "\n%s:", field);
	p = strstr(text, key);
	cr_assert_not_null(p, "no %s in %s", field, text);
	return strtoull(p + strlen(key), NULL, 16);
}

/* glibc 2.36's posix_spawn leaves its internal signals 32 and 33 ignored in every child. */
#define GLIBC_INTERNAL_SIGNALS ((1ULL << (32 - 1)) | (1ULL << (33 - 1)))
#define TMUX_PANE_IGNORED      ((1ULL << (SIGTTIN - 1)) | (1ULL << (SIGTTOU - 1)))

Test(tmux, server_and_panes_inherit_nothing)
{
	char script[512], fdpath[128], link[256], mine[256];
	char *const argv[] = {"/bin/sh", "-c", script, NULL};
	struct tmux_new req = {.name = "clean-1", .cwd = rundir, .argv = argv};
	struct cause c = {{0}};
	sigset_t block;
	char *got;
	int p[2];
	long server;
	ssize_t n;
	char out[64];

	/* The state a careless caller (a FastCGI process) is in: blocked and ignored signals and
	 * a descriptor without O_CLOEXEC. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGCHLD);
	cr_assert_eq(sigprocmask(SIG_BLOCK, &block, NULL), 0);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(dup2(p[1], 77), 77);

	start();
	snprintf(script, sizeof(script),
		 "cat /proc/self/status > '%s/st.tmp' && mv '%s/st.tmp' '%s/st'; exec sleep 1000",
		 rundir, rundir, rundir);
	cr_assert_eq(tmux_new_session(&tm, &req, &c), 0, "%s", c.msg);
	got = wait_file(path_in("st"));
	cr_assert_eq(status_mask(got, "SigBlk"), 0, "the pane blocks %llx",
		     status_mask(got, "SigBlk"));
	/* tmux itself leaves SIGTTIN and SIGTTOU ignored in every pane (checked with a plain tmux
	 * started from a clean shell); anything else ignored would have come from us. */
	cr_assert_eq(status_mask(got, "SigIgn") & ~(GLIBC_INTERNAL_SIGNALS | TMUX_PANE_IGNORED), 0,
		     "the pane ignores %llx", status_mask(got, "SigIgn"));
	free(got);

	/* The server holds no copy of our pipe (it would keep it open forever). */
	tmux_cmd(out, sizeof(out), "display-message", "-p", "#{pid}", NULL);
	server = strtol(out, NULL, 10);
	cr_assert_gt(server, 0);
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", p[1]);
	n = readlink(fdpath, mine, sizeof(mine) - 1);
	cr_assert_gt(n, 0);
	mine[n] = '\0';
	for (int fd = 0; fd < 1024; fd++) {
		snprintf(fdpath, sizeof(fdpath), "/proc/%ld/fd/%d", server, fd);
		n = readlink(fdpath, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		cr_assert_str_neq(link, mine, "the tmux server inherited our pipe as fd %d", fd);
	}
	close(p[0]);
	close(p[1]);
	close(77);
}

/* ---- every operation checks @agentd_id ---- */

/* Two sessions that both had the name "a_b-1" before the '+' separator: "a.b-1" owns the tmux
 * session "a_b-1"; "a_b-1" acting through that name must touch nothing of it. */
Test(tmux, operations_refuse_another_ids_session)
{
	char *const argv[] = {"sleep", "999", NULL};
	struct tmux_meta m;
	struct cause c = {{0}};
	char out[256];
	long pid;

	start();
	fill_meta(&m, "a.b-1", "");
	new_sleeper("a_b-1", &m);
	pid = pane_pid_of("a_b-1");
	cr_assert_gt(pid, 0);

	cr_assert_eq(tmux_kill_session(&tm, "a_b-1", "a_b-1", &c), -EPERM, "%s", c.msg);
	cr_assert_not_null(strstr(c.msg, TMUX_GUARD_FAIL), "cause: %s", c.msg);
	cr_assert_eq(tmux_has_session(&tm, "a_b-1"), 1, "kill-session did not run");
	cr_assert_eq(tmux_pane_pid(&tm, "a_b-1", "a_b-1", &c), -EPERM);
	cr_assert_eq(tmux_respawn(&tm, "a_b-1", "a_b-1", NULL, argv, &c), -EPERM);
	cr_assert_eq(tmux_set_option(&tm, "a_b-1", "a_b-1", "@agentd_mode", "structured", &c),
		     -EPERM);
	/* An id of "" claims only a session without @agentd_id. */
	cr_assert_eq(tmux_set_option(&tm, "a_b-1", "", "@agentd_id", "a_b-1", &c), -EPERM);
	cr_assert_eq(kill((pid_t)pid, 0), 0, "the owner's pane process still runs");
	cr_assert_eq(pane_pid_of("a_b-1"), pid, "not respawned");
	tmux_cmd(out, sizeof(out), "show-options", "-t", "=a_b-1:", "-qv", "@agentd_mode", NULL);
	cr_assert_str_eq(out, "terminal");
	tmux_cmd(out, sizeof(out), "show-options", "-t", "=a_b-1:", "-qv", "@agentd_id", NULL);
	cr_assert_str_eq(out, "a.b-1");

	/* The owner itself acts. */
	cr_assert_eq(tmux_pane_pid(&tm, "a_b-1", "a.b-1", &c), (int)pid, "%s", c.msg);
	cr_assert_eq(tmux_set_option(&tm, "a_b-1", "a.b-1", "@agentd_mode", "structured", &c), 0,
		     "%s", c.msg);
	cr_assert_eq(tmux_kill_session(&tm, "a_b-1", "a.b-1", &c), 0, "%s", c.msg);
	cr_assert_eq(tmux_has_session(&tm, "a_b-1"), 0);
	cr_assert_eq(tmux_kill_session(&tm, "a_b-1", "a.b-1", &c), -ENOENT);
	cr_assert_eq(tmux_pane_pid(&tm, "a_b-1", "a.b-1", &c), -ENOENT);
}

Test(tmux, claim_session_without_id)
{
	struct cause c = {{0}};
	char out[256];

	start();
	new_sleeper("old-1", NULL);
	cr_assert_eq(tmux_kill_session(&tm, "old-1", "old-1", &c), -EPERM, "not claimed yet");
	cr_assert_eq(tmux_set_option(&tm, "old-1", "", "@agentd_id", "old-1", &c), 0, "%s", c.msg);
	tmux_cmd(out, sizeof(out), "show-options", "-t", "=old-1:", "-qv", "@agentd_id", NULL);
	cr_assert_str_eq(out, "old-1");
	cr_assert_eq(tmux_set_option(&tm, "old-1", "", "@agentd_id", "x-1", &c), -EPERM,
		     "claimed once");
	cr_assert_eq(tmux_kill_session(&tm, "old-1", "old-1", &c), 0, "%s", c.msg);
}

Test(tmux, guard_format_refuses_format_characters)
{
	const char *bad[] = {"a,b", "a}", "#{x}", "a b", "a;b", "a:b", "\xff"};
	char out[TMUX_GUARD_MAX];

	cr_assert_eq(tmux_guard_format("a+b-1", "a_b-1", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "#{&&:#{==:#{session_name},a+b-1},#{==:#{@agentd_id},a_b-1}}");
	cr_assert_eq(tmux_guard_format("a-1", "", out, sizeof(out)), 0, "the claim form");
	cr_assert_eq(tmux_guard_format("", "a-1", out, sizeof(out)), -EINVAL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(tmux_guard_format(bad[i], "a-1", out, sizeof(out)), -EINVAL, "%s",
			     bad[i]);
		cr_assert_eq(tmux_guard_format("a-1", bad[i], out, sizeof(out)), -EINVAL, "%s",
			     bad[i]);
	}
	cr_assert_eq(tmux_guard_format("a-1", "a-1", out, 10), -ENAMETOOLONG);
}

/* ---- the pane's environment ---- */

/* The names in a /proc/<pid>/environ copy (NUL-separated), sorted, joined by ' '. */
static void env_names(const char *env, size_t len, char *out, size_t outlen)
{
	const char *names[128];
	size_t n = 0, o = 0;

	for (size_t i = 0; i < len && n < 128; i += strlen(env + i) + 1)
		names[n++] = env + i;
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			const char *x = names[j];

			names[j] = names[j - 1];
			names[j - 1] = x;
		}
	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(out + o, outlen - o, "%s%.*s", i ? " " : "",
				      (int)strcspn(names[i], "="), names[i]);
}

/* Reads /proc/<pane pid>/environ of session name into names. */
static void pane_env_names(const char *name, char *names, size_t len)
{
	char path[64], *buf = malloc(1 << 16);
	ssize_t n = 0;
	int fd;

	cr_assert_not_null(buf);
	snprintf(path, sizeof(path), "/proc/%ld/environ", pane_pid_of(name));
	for (int i = 0; i < 200 && n <= 0; i++) {
		/* The pane process may still be tmux's child before its exec. */
		sleep_ms(20);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		cr_assert_geq(fd, 0, "%s", path);
		n = read(fd, buf, (1 << 16) - 1);
		close(fd);
		if (n > 0 && memmem(buf, (size_t)n, "TMUX_PANE=", 10) == NULL)
			n = 0;
	}
	cr_assert_gt(n, 0);
	env_names(buf, (size_t)n, names, len);
	free(buf);
}

#define TMUX_OWN_ENV "PWD SHELL TERM TERM_PROGRAM TERM_PROGRAM_VERSION TMUX TMUX_PANE"

Test(tmux, pane_environment_is_exactly_the_e_words)
{
	char *const env[] = {"AGENT_A=1", "PATH=/usr/bin:/bin:/usr/local/bin", NULL};
	char *const env2[] = {"AGENT_B=2", NULL};
	char *const argv[] = {"sleep", "997", NULL};
	struct tmux_new req = {.name = "env-1", .cwd = rundir, .env = env, .argv = argv};
	struct cause c = {{0}};
	char names[4096];

	/* What a daemon's environment holds and the agent must not see. */
	setenv("AGENTD_SECRET_JUNK", "1", 1);
	setenv("FOO_TOKEN", "x", 1);
	start();
	cr_assert_eq(tmux_new_session(&tm, &req, &c), 0, "%s", c.msg);
	pane_env_names("env-1", names, sizeof(names));
	cr_assert_str_eq(names, "AGENT_A PATH " TMUX_OWN_ENV);
	/* A respawn keeps the session's -e words and adds its own. */
	cr_assert_eq(tmux_respawn(&tm, "env-1", "", env2, argv, &c), 0, "%s", c.msg);
	sleep_ms(100);
	pane_env_names("env-1", names, sizeof(names));
	cr_assert_str_eq(names, "AGENT_A AGENT_B PATH " TMUX_OWN_ENV);
}

Test(tmux, start_server_empties_a_global_environment_it_finds)
{
	char *argv[] = {tm.bin, "-S", tm.socket, "-f", tm.conf, "start-server", NULL};
	char *const dirty[] = {"AGENTD_SECRET_JUNK=1", "FOO_TOKEN=x", "PATH=/usr/bin:/bin", NULL};
	char *const sleeper[] = {"sleep", "996", NULL};
	struct proc_opts opts = {.envp = dirty, .keep_fd = -1, .new_session = true};
	struct tmux_new req = {.name = "env-2", .cwd = rundir, .argv = sleeper};
	struct cause c = {{0}};
	char out[1024], names[4096];
	int status;

	/* A server another process started, with its whole environment. */
	cr_assert_eq(tmux_write_conf(&tm, &c), 0, "%s", c.msg);
	cr_assert_eq(proc_run(argv, &opts, out, sizeof(out), &status), 0);
	cr_assert_eq(status, 0, "%s", out);
	tmux_cmd(out, sizeof(out), "show-environment", "-g", "FOO_TOKEN", NULL);
	cr_assert_str_eq(out, "FOO_TOKEN=x");
	cr_assert_eq(tmux_start_server(&tm, &c), 0, "%s", c.msg);
	tmux_cmd(out, sizeof(out), "show-environment", "-g", NULL);
	cr_assert_str_eq(out, "", "the global environment is empty: %s", out);
	cr_assert_eq(tmux_new_session(&tm, &req, &c), 0, "%s", c.msg);
	pane_env_names("env-2", names, sizeof(names));
	cr_assert_str_eq(names, "PATH " TMUX_OWN_ENV, "PATH is tmux's default");
}
