/*
 * config: defaults (DESIGN.md's table), the KEY=value file (comments, quotes, CRLF, errors with
 * line numbers, size limits) and the AGENTD_* environment on top. config_load reads the real
 * process environment; Criterion runs each test in its own process, so setenv stays local.
 */
#include "config.h"

#include "testdir.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static char tmpdir[64];
static char conf_path[128];

static void write_conf(const char *text);

/* Removes every AGENTD_* variable the runner may have exported, so each test starts clean. */
static void clear_agentd_env(void)
{
	for (;;) {
		char name[256];
		char **e;

		for (e = environ; *e != NULL; e++)
			if (strncmp(*e, "AGENTD_", 7) == 0)
				break;
		if (*e == NULL)
			return;
		snprintf(name, sizeof(name), "%.*s", (int)(strchrnul(*e, '=') - *e), *e);
		cr_assert_eq(unsetenv(name), 0);
	}
}

static void setup(void)
{
	clear_agentd_env();
	testdir_make(tmpdir, sizeof(tmpdir), "/tmp/agentd-config-XXXXXX");
	testdir_janitor(tmpdir, NULL, NULL);
	snprintf(conf_path, sizeof(conf_path), "%s/agentd.conf", tmpdir);
	cr_assert_eq(setenv("AGENTD_CONFIG", conf_path, 1), 0);
	write_conf(""); /* tests that need another file overwrite it */
}

static void teardown(void)
{
	unlink(conf_path);
	rmdir(tmpdir);
}

TestSuite(config, .init = setup, .fini = teardown);

/* Writes len bytes of text as the config file. */
static void write_conf_len(const char *text, size_t len)
{
	int fd = open(conf_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	cr_assert_geq(fd, 0);
	while (len > 0) {
		ssize_t n = write(fd, text, len);

		cr_assert_gt(n, 0);
		text += n;
		len -= (size_t)n;
	}
	cr_assert_eq(close(fd), 0);
}

static void write_conf(const char *text)
{
	write_conf_len(text, strlen(text));
}

/* Loads and expects success. */
static void load_ok(struct config *cfg)
{
	struct cause c = {{0}};
	int r = config_load(cfg, &c);

	cr_assert_eq(r, 0, "config_load: %d (%s)", r, c.msg);
}

/* Loads and expects err, with every want[] string in the cause. */
static void load_fails(int err, const char *want1, const char *want2)
{
	struct config cfg;
	struct cause c = {{0}};
	int r = config_load(&cfg, &c);

	cr_assert_eq(r, err, "config_load: %d, want %d (cause: %s)", r, err, c.msg);
	if (want1 != NULL)
		cr_assert_not_null(strstr(c.msg, want1), "cause '%s' lacks '%s'", c.msg, want1);
	if (want2 != NULL)
		cr_assert_not_null(strstr(c.msg, want2), "cause '%s' lacks '%s'", c.msg, want2);
}

static void assert_defaults(const struct config *cfg)
{
	cr_assert_str_eq(cfg->listen, "127.0.0.1:8080");
	cr_assert_str_eq(cfg->runtime_dir, "/run/agentd");
	cr_assert_str_eq(cfg->base_dir, "/code");
	cr_assert_str_eq(cfg->repo_url, "https://github.com/{owner}/{name}.git");
	cr_assert_str_eq(cfg->claude, "claude");
	cr_assert_str_eq(cfg->claude_args, "");
	cr_assert_str_eq(cfg->prompt, "Work on {owner}/{name}#{issue}. Start by running: gh issue "
				      "view {issue} -R {owner}/{name}");
	cr_assert_str_eq(cfg->agent_env, "HOME PATH LANG ANTHROPIC_API_KEY ANTHROPIC_BASE_URL "
					 "CLAUDE_CONFIG_DIR GH_TOKEN GITHUB_TOKEN");
	cr_assert_eq(cfg->max_sessions, 16);
	cr_assert_str_eq(cfg->allowed_origins, "");
	cr_assert_str_eq(cfg->allowed_hosts, "");
	cr_assert_eq(cfg->permission_timeout, 600);
	cr_assert_str_eq(cfg->tmux, "tmux");
	cr_assert_str_eq(cfg->url, "");
	cr_assert_str_eq(cfg->token, "");
	cr_assert_str_eq(cfg->telegram_token, "");
	cr_assert_str_eq(cfg->telegram_token_file, "");
	cr_assert_str_eq(cfg->telegram_api, "https://api.telegram.org");
	cr_assert_str_eq(cfg->telegram_users, "");
	cr_assert_str_eq(cfg->telegram_state, "");
	cr_assert_str_eq(cfg->telegram_web_url, "");
	cr_assert_str_eq(cfg->hook, "");
	cr_assert_eq(cfg->terminal_permission_wait, 600);
	cr_assert_str_eq(cfg->agent_user, "agentd");
	cr_assert_str_eq(cfg->agent_home, "");
}

Test(config, defaults_match_design_table)
{
	struct config cfg;

	memset(&cfg, 0x5a, sizeof(cfg));
	config_defaults(&cfg);
	assert_defaults(&cfg);
}

Test(config, empty_file_gives_defaults)
{
	struct config cfg;

	write_conf("");
	load_ok(&cfg);
	assert_defaults(&cfg);
}

Test(config, missing_default_file_is_not_an_error)
{
	struct config cfg;
	struct stat sb;

	if (stat(CONFIG_DEFAULT_FILE, &sb) == 0)
		cr_skip_test("%s exists on this machine", CONFIG_DEFAULT_FILE);
	cr_assert_eq(unsetenv("AGENTD_CONFIG"), 0);
	load_ok(&cfg);
	assert_defaults(&cfg);
	cr_assert_eq(setenv("AGENTD_CONFIG", "", 1), 0); /* empty means the default too */
	load_ok(&cfg);
	assert_defaults(&cfg);
}

Test(config, missing_named_file_is_enoent)
{
	cr_assert_eq(unlink(conf_path), 0);
	load_fails(-ENOENT, conf_path, NULL);
}

Test(config, unreadable_file_is_an_error)
{
	struct config cfg;
	struct cause c = {{0}};

	/* A directory opens but cannot be read: that must not pass as an empty file. */
	cr_assert_eq(setenv("AGENTD_CONFIG", tmpdir, 1), 0);
	cr_assert_lt(config_load(&cfg, &c), 0, "reading a directory as config succeeded");
}

Test(config, file_parsing)
{
	struct config cfg;

	write_conf("# agentd configuration\n"
		   "\n"
		   "   \t\n"
		   "  # an indented comment\n"
		   "AGENTD_LISTEN=0.0.0.0:9000\n"
		   "  AGENTD_RUNTIME_DIR = /tmp/rt  \n"
		   "AGENTD_BASE_DIR=\"/srv/code with space\"\n"
		   "AGENTD_REPO_URL='file:///srv/git/{owner}/{name}.git'\n"
		   "AGENTD_CLAUDE=\t/usr/local/bin/claude\t\n"
		   "AGENTD_CLAUDE_ARGS=\"--model=sonnet --verbose\"\n"
		   "AGENTD_PROMPT=Fix #{issue} # not a comment; 'x' \"y\"\n"
		   "AGENTD_AGENT_ENV=HOME PATH\n"
		   "AGENTD_MAX_SESSIONS=4\n"
		   "AGENTD_ALLOWED_ORIGINS=https://a.example, https://b.example\n"
		   "AGENTD_ALLOWED_HOSTS=machine.tailnet.ts.net, box.local:8443\n"
		   "AGENTD_PERMISSION_TIMEOUT=30\n"
		   "AGENTD_TMUX=/usr/bin/tmux\n"
		   "AGENTD_HOST_BIN=/opt/agentd/agentd-host\n"
		   "AGENTD_URL=http://127.0.0.1:9000\n"
		   "AGENTD_TOKEN=t0k\n"
		   "AGENTD_TELEGRAM_TOKEN=123:abc\n"
		   "AGENTD_TELEGRAM_TOKEN_FILE=/etc/agentd/telegram.token\n"
		   "AGENTD_TELEGRAM_API=http://127.0.0.1:1\n"
		   "AGENTD_TELEGRAM_USERS=1, 2\n"
		   "AGENTD_TELEGRAM_STATE=/var/lib/x/telegram.json\n"
		   "AGENTD_TELEGRAM_WEB_URL=https://box.example:8443\n");
	load_ok(&cfg);
	cr_assert_str_eq(cfg.url, "http://127.0.0.1:9000");
	cr_assert_str_eq(cfg.token, "t0k");
	cr_assert_str_eq(cfg.telegram_token, "123:abc");
	cr_assert_str_eq(cfg.telegram_token_file, "/etc/agentd/telegram.token");
	cr_assert_str_eq(cfg.telegram_api, "http://127.0.0.1:1");
	cr_assert_str_eq(cfg.telegram_users, "1, 2");
	cr_assert_str_eq(cfg.telegram_state, "/var/lib/x/telegram.json");
	cr_assert_str_eq(cfg.telegram_web_url, "https://box.example:8443");
	cr_assert_str_eq(cfg.listen, "0.0.0.0:9000");
	cr_assert_str_eq(cfg.runtime_dir, "/tmp/rt");
	cr_assert_str_eq(cfg.base_dir, "/srv/code with space");
	cr_assert_str_eq(cfg.repo_url, "file:///srv/git/{owner}/{name}.git");
	cr_assert_str_eq(cfg.claude, "/usr/local/bin/claude");
	cr_assert_str_eq(cfg.claude_args, "--model=sonnet --verbose");
	cr_assert_str_eq(cfg.prompt, "Fix #{issue} # not a comment; 'x' \"y\"");
	cr_assert_str_eq(cfg.agent_env, "HOME PATH");
	cr_assert_eq(cfg.max_sessions, 4);
	cr_assert_str_eq(cfg.allowed_origins, "https://a.example, https://b.example");
	cr_assert_str_eq(cfg.allowed_hosts, "machine.tailnet.ts.net, box.local:8443");
	cr_assert_eq(cfg.permission_timeout, 30);
	cr_assert_str_eq(cfg.tmux, "/usr/bin/tmux");
	cr_assert_str_eq(cfg.host, "/opt/agentd/agentd-host");
}

Test(config, quotes)
{
	struct config cfg;

	write_conf("AGENTD_CLAUDE_ARGS=\"\"\n"
		   "AGENTD_PROMPT=\"a\"b\"\n"
		   "AGENTD_REPO_URL=\"mismatched'\n"
		   "AGENTD_BASE_DIR='\"inner\"'\n"
		   "AGENTD_LISTEN=\"\n"
		   "AGENTD_TMUX=\"\"\"\"\n");
	load_ok(&cfg);
	cr_assert_str_eq(cfg.claude_args, "");
	cr_assert_str_eq(cfg.prompt, "a\"b", "one level of quotes is stripped");
	cr_assert_str_eq(cfg.repo_url, "\"mismatched'", "mismatched quotes stay");
	cr_assert_str_eq(cfg.base_dir, "\"inner\"");
	cr_assert_str_eq(cfg.listen, "\"", "a lone quote is a value");
	cr_assert_str_eq(cfg.tmux, "\"\"");
}

Test(config, crlf_lines)
{
	struct config cfg;

	write_conf("# windows editor\r\n"
		   "\r\n"
		   "AGENTD_LISTEN=127.0.0.1:8181\r\n"
		   "AGENTD_BASE_DIR=\"/srv/x\"\r\n"
		   "AGENTD_MAX_SESSIONS=8\r\n"
		   "AGENTD_TMUX=tmux-next"); /* and no final newline */
	load_ok(&cfg);
	cr_assert_str_eq(cfg.listen, "127.0.0.1:8181");
	cr_assert_str_eq(cfg.base_dir, "/srv/x");
	cr_assert_eq(cfg.max_sessions, 8);
	cr_assert_str_eq(cfg.tmux, "tmux-next");
}

Test(config, later_line_wins)
{
	struct config cfg;

	write_conf("AGENTD_MAX_SESSIONS=2\nAGENTD_MAX_SESSIONS=3\n");
	load_ok(&cfg);
	cr_assert_eq(cfg.max_sessions, 3);
}

Test(config, non_utf8_value_kept_verbatim)
{
	struct config cfg;

	write_conf("AGENTD_PROMPT=\xff\xfe caf\xc3\xa9 $HOME `x` ;\n");
	load_ok(&cfg);
	cr_assert_str_eq(cfg.prompt, "\xff\xfe caf\xc3\xa9 $HOME `x` ;");
}

Test(config, unknown_key_names_line)
{
	write_conf("# ok\nAGENTD_LISTEN=x\nAGENTD_LISTNE=y\n");
	load_fails(-EINVAL, ":3:", "AGENTD_LISTNE");
}

Test(config, unknown_non_agentd_key)
{
	write_conf("\n\n\n\nPATH=/usr/bin\n");
	load_fails(-EINVAL, ":5:", "PATH");
}

Test(config, lowercase_key_is_unknown)
{
	write_conf("agentd_listen=x\n");
	load_fails(-EINVAL, ":1:", "agentd_listen");
}

Test(config, line_without_equals)
{
	write_conf("AGENTD_LISTEN=x\nexport AGENTD_BASE_DIR\n");
	load_fails(-EINVAL, ":2:", NULL);
}

Test(config, empty_key)
{
	write_conf("=value\n");
	load_fails(-EINVAL, ":1:", NULL);
}

Test(config, too_long_line)
{
	size_t n = CONFIG_VALUE_MAX + 1000;
	char *text = malloc(n + 64);

	cr_assert_not_null(text);
	strcpy(text, "AGENTD_LISTEN=a\n# fine\n#");
	memset(text + strlen(text), 'x', n);
	text[24 + n] = '\0';
	strcat(text, "\nAGENTD_TMUX=t\n");
	write_conf(text);
	load_fails(-ENAMETOOLONG, ":3:", "too long");
	free(text);
}

Test(config, value_longer_than_field)
{
	/* listen holds 255 bytes; 256 is over. Every value limit is the field's size. */
	char text[512];
	struct config cfg;

	snprintf(text, sizeof(text), "AGENTD_LISTEN=%0255d\n", 0);
	write_conf(text);
	load_ok(&cfg);
	cr_assert_eq(strlen(cfg.listen), 255);
	snprintf(text, sizeof(text), "AGENTD_LISTEN=%0256d\n", 0);
	write_conf(text);
	load_fails(-ENAMETOOLONG, ":1:", "AGENTD_LISTEN");
}

Test(config, longest_value_fits)
{
	struct config cfg;
	size_t n = CONFIG_VALUE_MAX - 1;
	char *text = malloc(n + 64);

	cr_assert_not_null(text);
	strcpy(text, "AGENTD_PROMPT=");
	memset(text + 14, 'p', n);
	strcpy(text + 14 + n, "\r\n");
	write_conf(text);
	load_ok(&cfg);
	cr_assert_eq(strlen(cfg.prompt), n);
	free(text);
}

Test(config, oversize_file)
{
	/* Only comments, so nothing but the size can fail it. */
	size_t n = CONFIG_FILE_MAX + 1;
	char *text = malloc(n);

	cr_assert_not_null(text);
	for (size_t i = 0; i < n; i++)
		text[i] = (i % 64 == 63) ? '\n' : '#';
	write_conf_len(text, n);
	load_fails(-EFBIG, NULL, NULL);
	/* Exactly CONFIG_FILE_MAX bytes is still accepted. */
	write_conf_len(text, CONFIG_FILE_MAX);
	{
		struct config cfg;
		load_ok(&cfg);
	}
	free(text);
}

Test(config, ten_megabyte_file)
{
	size_t n = 10 * 1024 * 1024;
	char *text = malloc(n);

	cr_assert_not_null(text);
	for (size_t i = 0; i < n; i++)
		text[i] = (i % 100 == 99) ? '\n' : '#';
	write_conf_len(text, n);
	load_fails(-EFBIG, NULL, NULL);
	free(text);
}

Test(config, nul_byte_rejected)
{
	/* A NUL must not hide the rest of a line: here it would turn a commented-out line into a
	 * setting, once the line is longer than the reader's buffer and gets read in two parts. */
	static const char head[] = "#";
	size_t pad = CONFIG_VALUE_MAX + 200;
	const char *tail = "AGENTD_CLAUDE=/tmp/evil\n";
	size_t n = sizeof(head) - 1 + 1 + pad + strlen(tail);
	char *text = malloc(n);
	struct config cfg;
	struct cause c = {{0}};
	int r;

	cr_assert_not_null(text);
	memcpy(text, head, sizeof(head) - 1);
	text[1] = '\0';
	memset(text + 2, ' ', pad);
	/* Put the setting where the second read starts. */
	memcpy(text + CONFIG_VALUE_MAX + 127, tail, strlen(tail));
	n = CONFIG_VALUE_MAX + 127 + strlen(tail);
	write_conf_len(text, n);
	r = config_load(&cfg, &c);
	cr_assert_str_neq(cfg.claude, "/tmp/evil", "a setting was smuggled behind a NUL");
	cr_assert_lt(r, 0, "a file with a NUL byte was accepted");
	free(text);
}

Test(config, nul_byte_in_value_rejected)
{
	static const char text[] = "AGENTD_CLAUDE=/usr/bin/claude\0 --evil\n";
	struct config cfg;
	struct cause c = {{0}};

	write_conf_len(text, sizeof(text) - 1);
	cr_assert_lt(config_load(&cfg, &c), 0, "value silently cut at a NUL: '%s'", cfg.claude);
}

Test(config, environment_overrides_file)
{
	struct config cfg;

	write_conf("AGENTD_MAX_SESSIONS=4\nAGENTD_LISTEN=1.1.1.1:1\nAGENTD_PROMPT=from file\n");
	cr_assert_eq(setenv("AGENTD_MAX_SESSIONS", "7", 1), 0);
	cr_assert_eq(setenv("AGENTD_PROMPT", "from env {issue}", 1), 0);
	cr_assert_eq(setenv("AGENTD_CLAUDE_ARGS", "--model=opus", 1), 0);
	load_ok(&cfg);
	cr_assert_eq(cfg.max_sessions, 7);
	cr_assert_str_eq(cfg.prompt, "from env {issue}");
	cr_assert_str_eq(cfg.listen, "1.1.1.1:1", "the file still applies where env is silent");
	cr_assert_str_eq(cfg.claude_args, "--model=opus");
	cr_assert_eq(cfg.permission_timeout, 600, "defaults where both are silent");
}

Test(config, environment_value_taken_literally)
{
	struct config cfg;

	/* No trimming or unquoting for the environment: the shell already did that. */
	cr_assert_eq(setenv("AGENTD_BASE_DIR", "'/srv/q' ", 1), 0);
	cr_assert_eq(setenv("AGENTD_ALLOWED_ORIGINS", "", 1), 0);
	load_ok(&cfg);
	cr_assert_str_eq(cfg.base_dir, "'/srv/q' ");
	cr_assert_str_eq(cfg.allowed_origins, "");
}

/*
 * AGENTD_ALLOWED_HOSTS is rendered into nginx by deploy/up; the daemons read the same file, so a
 * file that names it must load everywhere (an unknown key would stop every daemon).
 */
Test(config, allowed_hosts_from_file_and_environment)
{
	struct config cfg;

	write_conf("AGENTD_ALLOWED_HOSTS=\"machine.tailnet.ts.net\"\n");
	load_ok(&cfg);
	cr_assert_str_eq(cfg.allowed_hosts, "machine.tailnet.ts.net");
	cr_assert_eq(setenv("AGENTD_ALLOWED_HOSTS", "a.example:8443,b.example", 1), 0);
	load_ok(&cfg);
	cr_assert_str_eq(cfg.allowed_hosts, "a.example:8443,b.example");
}

Test(config, unknown_agentd_env_ignored)
{
	struct config cfg;

	cr_assert_eq(setenv("AGENTD_TEST_SOMETHING", "1", 1), 0);
	cr_assert_eq(setenv("AGENTD_", "x", 1), 0);
	load_ok(&cfg);
	assert_defaults(&cfg);
}

Test(config, bad_env_int)
{
	cr_assert_eq(setenv("AGENTD_MAX_SESSIONS", "many", 1), 0);
	load_fails(-EINVAL, "AGENTD_MAX_SESSIONS", "many");
}

Test(config, env_value_too_long)
{
	char *v = malloc(CONFIG_PATH_MAX + 1);

	cr_assert_not_null(v);
	memset(v, 'r', CONFIG_PATH_MAX);
	v[CONFIG_PATH_MAX] = '\0';
	cr_assert_eq(setenv("AGENTD_RUNTIME_DIR", v, 1), 0);
	load_fails(-ENAMETOOLONG, "AGENTD_RUNTIME_DIR", NULL);
	free(v);
}

Test(config, bad_ints)
{
	const char *bad[] = {"",           "abc", "12x",  "0",   "-1",
			     "10001",      "1e3", "0x10", "3.5", "99999999999999999999",
			     "2147483648", "--1"};
	struct config cfg;

	config_defaults(&cfg);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cause c = {{0}};

		cr_assert_eq(config_set(&cfg, "AGENTD_MAX_SESSIONS", bad[i], &c), -EINVAL,
			     "'%s' accepted", bad[i]);
		cr_assert_not_null(strstr(c.msg, "AGENTD_MAX_SESSIONS"));
	}
	cr_assert_eq(cfg.max_sessions, 16, "a rejected value leaves the field alone");
	cr_assert_eq(config_set(&cfg, "AGENTD_PERMISSION_TIMEOUT", "86401", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_PERMISSION_TIMEOUT", "0", NULL), -EINVAL);
}

Test(config, int_bounds)
{
	struct config cfg;

	config_defaults(&cfg);
	cr_assert_eq(config_set(&cfg, "AGENTD_MAX_SESSIONS", "1", NULL), 0);
	cr_assert_eq(cfg.max_sessions, 1);
	cr_assert_eq(config_set(&cfg, "AGENTD_MAX_SESSIONS", "10000", NULL), 0);
	cr_assert_eq(cfg.max_sessions, 10000);
	cr_assert_eq(config_set(&cfg, "AGENTD_PERMISSION_TIMEOUT", "1", NULL), 0);
	cr_assert_eq(cfg.permission_timeout, 1);
	cr_assert_eq(config_set(&cfg, "AGENTD_PERMISSION_TIMEOUT", "86400", NULL), 0);
	cr_assert_eq(cfg.permission_timeout, 86400);
}

Test(config, terminal_permission_wait_bounds)
{
	struct config cfg;

	config_defaults(&cfg);
	cr_assert_eq(config_set(&cfg, "AGENTD_TERMINAL_PERMISSION_WAIT", "0", NULL), 0);
	cr_assert_eq(cfg.terminal_permission_wait, 0);
	cr_assert_eq(config_set(&cfg, "AGENTD_TERMINAL_PERMISSION_WAIT", "86400", NULL), 0);
	cr_assert_eq(config_set(&cfg, "AGENTD_TERMINAL_PERMISSION_WAIT", "86401", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_TERMINAL_PERMISSION_WAIT", "-1", NULL), -EINVAL);
	cr_assert_eq(cfg.terminal_permission_wait, 86400);
}

/* The hook's path goes into a command line claude hands to a shell: only plain absolute paths. */
Test(config, hook_path_must_be_plain_and_absolute)
{
	static const char *const bad[] = {"agentd-hook",   "./agentd-hook",  "/usr/bin/a b",
					  "/usr/bin/a;id", "/usr/bin/$HOME", "/usr/bin/a'b",
					  "/usr/../bin/x", "/usr/./x",       "/x/..",
					  "/usr/bin/a\\b", "/usr/bin/`id`",  "/tmp/*"};
	struct config cfg;

	config_defaults(&cfg);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cause c = {{0}};

		cr_assert_eq(config_set(&cfg, "AGENTD_HOOK", bad[i], &c), -EINVAL, "'%s' accepted",
			     bad[i]);
		cr_assert_not_null(strstr(c.msg, "AGENTD_HOOK"));
		cr_assert(!config_path_plain(bad[i]));
	}
	cr_assert_str_eq(cfg.hook, "");
	cr_assert_eq(config_set(&cfg, "AGENTD_HOOK", "/opt/agentd-1.0/bin/agentd-hook", NULL), 0);
	cr_assert_str_eq(cfg.hook, "/opt/agentd-1.0/bin/agentd-hook");
	cr_assert_eq(config_set(&cfg, "AGENTD_HOOK", "", NULL), 0, "empty: beside agentd-api");
	cr_assert_str_eq(cfg.hook, "");
	cr_assert(config_path_plain("/run/agentd"));
	cr_assert(config_path_plain("/home/u/.cache/x..y/~a+b@c"));
}

Test(config, bad_int_in_file_names_line)
{
	write_conf("\nAGENTD_PERMISSION_TIMEOUT=soon\n");
	load_fails(-EINVAL, ":2:", "AGENTD_PERMISSION_TIMEOUT");
}

Test(config, set_rejects_newline)
{
	struct config cfg;

	config_defaults(&cfg);
	cr_assert_eq(config_set(&cfg, "AGENTD_PROMPT", "a\nb", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_NOPE", "x", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "", "x", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_CLAUDE", "/opt/c", NULL), 0);
	cr_assert_str_eq(cfg.claude, "/opt/c");
}

Test(config, env_newline_rejected)
{
	cr_assert_eq(setenv("AGENTD_PROMPT", "line1\nline2", 1), 0);
	load_fails(-EINVAL, "AGENTD_PROMPT", NULL);
}

Test(config, runtime_path)
{
	struct config cfg;
	char out[32];

	config_defaults(&cfg);
	cr_assert_eq(config_runtime_path(&cfg, "tmux.sock", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/run/agentd/tmux.sock");
	/* "/run/agentd/x" is 13 characters. */
	cr_assert_eq(config_runtime_path(&cfg, "x", out, 14), 0);
	cr_assert_eq(config_runtime_path(&cfg, "x", out, 13), -ENAMETOOLONG);
}

Test(config, agent_user_is_a_plain_user_name)
{
	static const char *const good[] = {"agentd", "_agent", "Agent.1", "a-b_c", "a"};
	static const char *const bad[] = {
	    "",    "1000", "-r", "a b", "a;b",
	    "a/b", "$x",   "ä",  "a:b", "abcdefghijklmnopqrstuvwxyz0123456"};
	struct config cfg;
	struct cause c = {{0}};

	config_defaults(&cfg);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cr_assert_eq(config_set(&cfg, "AGENTD_AGENT_USER", good[i], &c), 0, "%s: %s",
			     good[i], c.msg);
		cr_assert_str_eq(cfg.agent_user, good[i]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = config_set(&cfg, "AGENTD_AGENT_USER", bad[i], &c);

		cr_assert(r == -EINVAL || r == -ENAMETOOLONG, "'%s' accepted (%d)", bad[i], r);
		cr_assert_not_null(strstr(c.msg, "AGENTD_AGENT_USER"), "%s", c.msg);
		cr_assert_str_eq(cfg.agent_user, "a", "a refused value changed nothing");
	}
}

Test(config, agent_user_from_file_names_line)
{
	write_conf("AGENTD_AGENT_USER=agent\nAGENTD_AGENT_USER=--reuid=0\n");
	load_fails(-EINVAL, ":2:", "AGENTD_AGENT_USER");
}

Test(config, agent_home_is_absolute_or_empty)
{
	struct config cfg;

	config_defaults(&cfg);
	cr_assert_eq(config_set(&cfg, "AGENTD_AGENT_HOME", "/home/agent", NULL), 0);
	cr_assert_str_eq(cfg.agent_home, "/home/agent");
	cr_assert_eq(config_set(&cfg, "AGENTD_AGENT_HOME", "", NULL), 0);
	cr_assert_str_eq(cfg.agent_home, "");
	cr_assert_eq(config_set(&cfg, "AGENTD_AGENT_HOME", "home/agent", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_AGENT_HOME", "/", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_AGENT_HOME", "//", NULL), -EINVAL);
	cr_assert_str_eq(cfg.agent_home, "");
}

Test(config, session_limits_default_and_parse)
{
	struct config cfg;
	struct cause c = {{0}};

	config_defaults(&cfg);
	cr_assert_eq(cfg.session_memory_max, 4ULL << 30);
	cr_assert_eq(cfg.session_cpu_milli, 2000);
	cr_assert_eq(cfg.session_tasks_max, 4096);
	cr_assert_str_eq(cfg.cgroup_parent, "agentd");
	cr_assert_eq(config_set(&cfg, "AGENTD_SESSION_MEMORY_MAX", "256M", &c), 0, "%s", c.msg);
	cr_assert_eq(cfg.session_memory_max, 256ULL << 20);
	cr_assert_eq(config_set(&cfg, "AGENTD_SESSION_CPUS", "1.5", &c), 0, "%s", c.msg);
	cr_assert_eq(cfg.session_cpu_milli, 1500);
	cr_assert_eq(config_set(&cfg, "AGENTD_SESSION_TASKS_MAX", "256", &c), 0, "%s", c.msg);
	cr_assert_eq(cfg.session_tasks_max, 256);
	cr_assert_eq(config_set(&cfg, "AGENTD_CGROUP_PARENT", "agentd-test-1/x", &c), 0, "%s",
		     c.msg);
	cr_assert_str_eq(cfg.cgroup_parent, "agentd-test-1/x");
}

Test(config, port_keys_default_off_and_refuse_bad_values)
{
	struct config cfg;
	struct cause c = {{0}};

	config_defaults(&cfg);
	cr_assert_str_eq(cfg.port_base, "");
	cr_assert_eq(config_port_base(&cfg), 0, "off by default");
	cr_assert_eq(cfg.port_span, 10);
	cr_assert_eq(config_set(&cfg, "AGENTD_PORT_BASE", "41000", &c), 0, "%s", c.msg);
	cr_assert_eq(config_port_base(&cfg), 41000);
	cr_assert_eq(config_set(&cfg, "AGENTD_PORT_BASE", "", &c), 0, "%s", c.msg);
	cr_assert_eq(config_port_base(&cfg), 0);
	cr_assert_eq(config_set(&cfg, "AGENTD_PORT_BASE", "80", &c), -EINVAL);
	cr_assert(strstr(c.msg, "AGENTD_PORT_BASE") != NULL, "%s", c.msg);
	cr_assert_eq(config_set(&cfg, "AGENTD_PORT_BASE", "65536", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_PORT_BASE", "4x", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_PORT_SPAN", "0", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_PORT_SPAN", "1001", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_PORT_SPAN", "100", &c), 0, "%s", c.msg);
	cr_assert_eq(cfg.port_span, 100);
}

Test(config, session_limits_refuse_bad_values)
{
	struct config cfg;
	struct cause c = {{0}};

	config_defaults(&cfg);
	cr_assert_eq(config_set(&cfg, "AGENTD_SESSION_MEMORY_MAX", "4", &c), -EINVAL);
	cr_assert(strstr(c.msg, "AGENTD_SESSION_MEMORY_MAX") != NULL, "%s", c.msg);
	cr_assert_eq(config_set(&cfg, "AGENTD_SESSION_MEMORY_MAX", "lots", NULL), -EINVAL);
	cr_assert_eq(cfg.session_memory_max, 4ULL << 30, "unchanged");
	cr_assert_eq(config_set(&cfg, "AGENTD_SESSION_CPUS", "0", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_SESSION_CPUS", "two", NULL), -EINVAL);
	cr_assert_eq(cfg.session_cpu_milli, 2000, "unchanged");
	cr_assert_eq(config_set(&cfg, "AGENTD_SESSION_TASKS_MAX", "0", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_CGROUP_PARENT", "../x", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_CGROUP_PARENT", "", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_CGROUP_PARENT", "a b", NULL), -EINVAL);
	cr_assert_str_eq(cfg.cgroup_parent, "agentd");
}

Test(config, cage_keys_default_and_refuse_bad_values)
{
	struct config cfg;

	config_defaults(&cfg);
	cr_assert_str_eq(cfg.session_uids, "61184-65519");
	cr_assert_str_eq(cfg.secrets_dir, "/etc/agentd/secrets");
	cr_assert_str_eq(cfg.agent_home_template, "");
	cr_assert_str_eq(cfg.cage, "auto");
	cr_assert_eq(config_set(&cfg, "AGENTD_CAGE", "on", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_CAGE", "off", NULL), 0);
	cr_assert_eq(config_set(&cfg, "AGENTD_SESSION_UIDS", "70000-70001", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_SESSION_UIDS", "0-10", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_SESSION_UIDS", "62000", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_SESSION_UIDS", "62000-62010", NULL), 0);
	cr_assert_str_eq(cfg.session_uids, "62000-62010");
	cr_assert_eq(config_set(&cfg, "AGENTD_HOMES_DIR", "homes", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_HOMES_DIR", "/", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_AGENT_HOME_TEMPLATE", "tpl", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_SECRETS_DIR", "secrets", NULL), -EINVAL);
	cr_assert_eq(config_set(&cfg, "AGENTD_SECRETS_DIR", "", NULL), 0);
}

/* ---- the key table: one list of every key, its default and meaning ---------------------- */

Test(config, every_key_has_a_default_and_a_meaning)
{
	struct config_keydoc doc;
	size_t n = config_key_count();

	cr_assert_gt(n, 0);
	cr_assert_leq(n, CONFIG_KEYS_MAX);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(config_key_doc(i, &doc), 0);
		cr_assert_not_null(doc.def, "%s has no default in config.c's table", doc.name);
		cr_assert_not_null(doc.meaning, "%s has no meaning in config.c's table", doc.name);
		cr_assert_gt(strlen(doc.meaning), 0, "%s's meaning is empty", doc.name);
		cr_assert_eq(strncmp(doc.name, "AGENTD_", 7), 0, "%s", doc.name);
		for (size_t j = 0; j < i; j++) {
			struct config_keydoc other;

			cr_assert_eq(config_key_doc(j, &other), 0);
			cr_assert_str_neq(doc.name, other.name, "%s is in the table twice",
					  doc.name);
		}
	}
	cr_assert_eq(config_key_doc(n, &doc), -ENOENT);
}

/* Every default passes its key's rule, is what config_defaults sets, and reads back as itself. */
Test(config, defaults_come_from_the_table_and_read_back)
{
	struct config cfg, again;
	struct config_keydoc doc;
	char value[CONFIG_VALUE_MAX], back[CONFIG_VALUE_MAX];

	config_defaults(&cfg);
	config_defaults(&again);
	for (size_t i = 0; config_key_doc(i, &doc) == 0; i++) {
		struct cause c = {{0}};

		cr_assert_eq(config_set(&again, doc.name, doc.def, &c), 0, "default of %s: %s",
			     doc.name, c.msg);
		cr_assert_eq(config_format(&cfg, i, value, sizeof(value)), 0);
		cr_assert_str_eq(value, doc.def, "%s: config_defaults gives '%s', the table '%s'",
				 doc.name, value, doc.def);
		cr_assert_eq(config_set(&again, doc.name, value, &c), 0, "%s: %s", doc.name, c.msg);
		cr_assert_eq(config_format(&again, i, back, sizeof(back)), 0);
		cr_assert_str_eq(back, value);
		cr_assert_eq(config_key_source(&cfg, i), CONFIG_SOURCE_DEFAULT);
	}
	assert_defaults(&cfg);
}

/* config_format writes a value as config_set reads it back. */
Test(config, format_reads_back)
{
	static const char *const cases[][3] = {
	    {"AGENTD_SESSION_MEMORY_MAX", "512M", "512M"},
	    {"AGENTD_SESSION_MEMORY_MAX", "1024M", "1G"},
	    {"AGENTD_SESSION_MEMORY_MAX", "16777217", "16777217"},
	    {"AGENTD_SESSION_CPUS", "1.5", "1.5"},
	    {"AGENTD_SESSION_CPUS", "0.125", "0.125"},
	    {"AGENTD_SESSION_CPUS", "0.250", "0.25"},
	    {"AGENTD_MAX_SESSIONS", "42", "42"},
	    {"AGENTD_LISTEN", "[::1]:9", "[::1]:9"},
	};
	struct config cfg;
	struct config_keydoc doc;
	char value[64];

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct cause cause = {{0}};
		size_t i;

		config_defaults(&cfg);
		cr_assert_eq(config_set(&cfg, cases[c][0], cases[c][1], &cause), 0, "%s",
			     cause.msg);
		for (i = 0; config_key_doc(i, &doc) == 0; i++)
			if (strcmp(doc.name, cases[c][0]) == 0)
				break;
		cr_assert_eq(config_format(&cfg, i, value, sizeof(value)), 0);
		cr_assert_str_eq(value, cases[c][2], "%s=%s", cases[c][0], cases[c][1]);
	}
	cr_assert_eq(config_format(&cfg, 0, value, 4), -ENAMETOOLONG);
}

/* The index of key name in the table. */
static size_t key_index(const char *name)
{
	struct config_keydoc doc;
	size_t i;

	for (i = 0; config_key_doc(i, &doc) == 0; i++)
		if (strcmp(doc.name, name) == 0)
			return i;
	cr_assert_fail("%s is not in the table", name);
	return i;
}

/* config_load says where each value came from: the environment over the file over the default. */
Test(config, load_notes_each_source)
{
	struct config cfg;

	write_conf("AGENTD_LISTEN=127.0.0.1:9000\nAGENTD_TMUX=/usr/bin/tmux\n");
	cr_assert_eq(setenv("AGENTD_TMUX", "/opt/tmux", 1), 0);
	load_ok(&cfg);
	cr_assert_str_eq(cfg.file, conf_path);
	cr_assert_eq(config_key_source(&cfg, key_index("AGENTD_LISTEN")), CONFIG_SOURCE_FILE);
	cr_assert_eq(config_key_source(&cfg, key_index("AGENTD_TMUX")), CONFIG_SOURCE_ENV);
	cr_assert_eq(config_key_source(&cfg, key_index("AGENTD_BASE_DIR")), CONFIG_SOURCE_DEFAULT);
	cr_assert_str_eq(config_source_name(CONFIG_SOURCE_FILE), "file");
	cr_assert_str_eq(config_source_name(CONFIG_SOURCE_ENV), "environment");
	cr_assert_str_eq(config_source_name(CONFIG_SOURCE_DEFAULT), "default");
}

Test(config, only_credentials_are_secret)
{
	struct config_keydoc doc;

	for (size_t i = 0; config_key_doc(i, &doc) == 0; i++) {
		bool credential = strcmp(doc.name, "AGENTD_TOKEN") == 0 ||
				  strcmp(doc.name, "AGENTD_TELEGRAM_TOKEN") == 0 ||
				  strcmp(doc.name, "AGENTD_METRICS_TOKEN") == 0;

		cr_assert_eq(doc.secret, credential, "%s: secret %d", doc.name, doc.secret);
	}
}

/* ---- README.md's configuration table names exactly the table's keys ---------------------- */

/* Names the README's table may carry that are no key of the file: AGENTD_CONFIG names the file
 * itself (environment only). */
static bool readme_extra(const char *name)
{
	/* AGENTD_AGENT_<NAME>_COMMAND and its kin (core/config.c: config_agent_key) are a family
	 * of keys, one per configured agent, that no one-line-per-key table lists; README names
	 * the family as `AGENTD_AGENT_<NAME>_...`, which reads here up to the '<'. */
	return strcmp(name, "AGENTD_CONFIG") == 0 || strcmp(name, "AGENTD_AGENT_") == 0;
}

/* Reads README.md's "## Configuration" table: each row's key cell and default cell. Returns
 * the number of rows. */
static size_t readme_rows(char rows[][2][1024], size_t max)
{
	FILE *f = fopen(AGENTD_README, "re");
	char line[8192];
	bool section = false, table = false;
	size_t n = 0;

	cr_assert_not_null(f, "cannot open %s", AGENTD_README);
	while (fgets(line, sizeof(line), f) != NULL) {
		char *cell, *next;

		if (strncmp(line, "## ", 3) == 0) {
			section = strcmp(line, "## Configuration\n") == 0;
			table = false;
			continue;
		}
		if (!section)
			continue;
		if (strncmp(line, "| key | default | meaning |", 27) == 0) {
			table = true;
			continue;
		}
		if (!table || strncmp(line, "|---", 4) == 0)
			continue;
		if (line[0] != '|') {
			if (n > 0)
				break;
			continue;
		}
		cr_assert_lt(n, max, "README's table has more rows than the test reads");
		cell = line + 1;
		next = strchr(cell, '|');
		cr_assert_not_null(next, "README row without cells: %s", line);
		snprintf(rows[n][0], sizeof(rows[n][0]), "%.*s", (int)(next - cell), cell);
		cell = next + 1;
		next = strchr(cell, '|');
		cr_assert_not_null(next, "README row without a default: %s", line);
		snprintf(rows[n][1], sizeof(rows[n][1]), "%.*s", (int)(next - cell), cell);
		n++;
	}
	fclose(f);
	return n;
}

/* Calls fn on every `AGENTD_...` name in text. */
static void each_name(const char *text, void (*fn)(const char *name, void *arg), void *arg)
{
	for (const char *p = text; (p = strstr(p, "`AGENTD_")) != NULL;) {
		char name[128];
		size_t len = strspn(p + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");

		cr_assert_lt(len, sizeof(name));
		snprintf(name, sizeof(name), "%.*s", (int)len, p + 1);
		fn(name, arg);
		p += 1 + len;
	}
}

static void name_is_key(const char *name, void *arg)
{
	struct config_keydoc doc;
	size_t i;

	(void)arg;
	for (i = 0; config_key_doc(i, &doc) == 0; i++)
		if (strcmp(doc.name, name) == 0)
			return;
	cr_assert(readme_extra(name),
		  "README.md's configuration table names %s, which is no key "
		  "of core/config.c's table",
		  name);
}

struct readme_find {
	const char *name;
	bool found;
};

static void name_matches(const char *name, void *arg)
{
	struct readme_find *f = arg;

	if (strcmp(name, f->name) == 0)
		f->found = true;
}

#define README_ROWS_MAX 128

Test(config, readme_table_names_every_key_and_no_other)
{
	static char rows[README_ROWS_MAX][2][1024];
	struct config_keydoc doc;
	size_t n = readme_rows(rows, README_ROWS_MAX);

	cr_assert_gt(n, 10, "README.md's configuration table was not found");
	for (size_t r = 0; r < n; r++)
		each_name(rows[r][0], name_is_key, NULL);
	for (size_t i = 0; config_key_doc(i, &doc) == 0; i++) {
		struct readme_find f = {doc.name, false};
		char def[CONFIG_VALUE_MAX + 4];
		size_t r;

		for (r = 0; r < n && !f.found; r++)
			each_name(rows[r][0], name_matches, &f);
		cr_assert(f.found, "%s is missing from README.md's configuration table", doc.name);
		/* A default that is a value is written as one in its row. */
		snprintf(def, sizeof(def), "`%s`", doc.def);
		cr_assert(doc.def[0] == '\0' || strstr(rows[r - 1][1], def) != NULL,
			  "README.md gives %s the default '%s', core/config.c %s", doc.name,
			  rows[r - 1][1], def);
	}
}
