/*
 * claude: the terminal-mode argv. First launch: claude --session-id=<uuid> [extra] -- <prompt>,
 * the prompt one word after "--" whatever it contains; later launches: --resume=<uuid> [extra], no
 * prompt. Then the structured argv and the agent's environment.
 */
#include "claude.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void make_session(struct session *s, const char *prompt)
{
	cr_assert_eq(session_init(s, "/code", "octo", "socket.io", 3), 0);
	snprintf(s->prompt, sizeof(s->prompt), "%s", prompt);
}

static size_t argv_count(char *const *argv)
{
	size_t n = 0;

	while (argv[n] != NULL)
		n++;
	return n;
}

static void expect_argv(const struct claude_argv *out, const char *const *want, size_t n)
{
	cr_assert_eq(argv_count(out->argv), n, "argc %zu, want %zu", argv_count(out->argv), n);
	for (size_t i = 0; i < n; i++)
		cr_assert_str_eq(out->argv[i], want[i], "argv[%zu]", i);
	cr_assert_null(out->argv[n]);
}

Test(claude, first_launch_session_id_and_prompt_word)
{
	struct config cfg;
	struct session s;
	struct claude_argv out;
	char id[64];
	const char *prompt =
	    "Work on octo/socket.io#3. Start: gh issue view 3 -R 'octo/socket.io'; "
	    "echo $HOME \"x\" `id` ;";

	config_defaults(&cfg);
	make_session(&s, prompt);
	snprintf(id, sizeof(id), "--session-id=%s", s.agent_session_id);
	cr_assert_eq(claude_terminal_argv(&cfg, &s, NULL, &out), 0);
	expect_argv(&out, (const char *[]){"claude", id, "--", prompt}, 4);
}

Test(claude, later_launch_resumes_without_prompt)
{
	struct config cfg;
	struct session s;
	struct claude_argv out;
	char id[64];

	config_defaults(&cfg);
	make_session(&s, "do the thing");
	s.launched = true;
	snprintf(id, sizeof(id), "--resume=%s", s.agent_session_id);
	cr_assert_eq(claude_terminal_argv(&cfg, &s, NULL, &out), 0);
	expect_argv(&out, (const char *[]){"claude", id}, 2);
}

Test(claude, settings_follow_the_session_word)
{
	struct config cfg;
	struct session s;
	struct claude_argv out;
	char id[64];

	config_defaults(&cfg);
	snprintf(cfg.claude_args, sizeof(cfg.claude_args), "--model=sonnet");
	make_session(&s, "p");
	snprintf(id, sizeof(id), "--session-id=%s", s.agent_session_id);
	cr_assert_eq(claude_terminal_argv(&cfg, &s, "/run/agentd/claude-settings.json", &out), 0);
	expect_argv(&out,
		    (const char *[]){"claude", id, "--settings=/run/agentd/claude-settings.json",
				     "--model=sonnet", "--", "p"},
		    6);
	s.launched = true;
	snprintf(id, sizeof(id), "--resume=%s", s.agent_session_id);
	cr_assert_eq(claude_terminal_argv(&cfg, &s, "/r/s.json", &out), 0);
	expect_argv(&out, (const char *[]){"claude", id, "--settings=/r/s.json", "--model=sonnet"},
		    4);
}

/* The hook command of an event in the settings, and its timeout. */
static const char *hook_command(json_object *root, const char *event, int *timeout)
{
	json_object *hooks, *list, *h, *v;

	cr_assert(json_object_object_get_ex(root, "hooks", &hooks));
	if (!json_object_object_get_ex(hooks, event, &list))
		return NULL;
	cr_assert_eq(json_object_array_length(list), 1);
	v = json_object_array_get_idx(list, 0);
	cr_assert(json_object_object_get_ex(v, "matcher", &h));
	cr_assert_str_eq(json_object_get_string(h), "*");
	cr_assert(json_object_object_get_ex(v, "hooks", &h));
	h = json_object_array_get_idx(h, 0);
	cr_assert(json_object_object_get_ex(h, "type", &v));
	cr_assert_str_eq(json_object_get_string(v), "command");
	cr_assert(json_object_object_get_ex(h, "timeout", &v));
	*timeout = json_object_get_int(v);
	cr_assert(json_object_object_get_ex(h, "command", &v));
	return json_object_get_string(v);
}

Test(claude, hook_settings_name_every_event)
{
	static const char *const events[] = {"SessionStart", "UserPromptSubmit",   "PreToolUse",
					     "PostToolUse",  "PostToolUseFailure", "Notification",
					     "Stop",         "SessionEnd"};
	struct config cfg;
	struct cause c = {{0}};
	char *text, want[256];
	json_object *root;
	int timeout;

	config_defaults(&cfg);
	cfg.terminal_permission_wait = 120;
	text = claude_hook_settings(&cfg, "/usr/lib/agentd/agentd-hook", &c);
	cr_assert_not_null(text, "%s", c.msg);
	root = json_tokener_parse(text);
	cr_assert_not_null(root, "%s", text);
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		snprintf(want, sizeof(want),
			 "/usr/lib/agentd/agentd-hook --socket /run/agentd/hooks/hooks.sock %s",
			 events[i]);
		cr_assert_str_eq(hook_command(root, events[i], &timeout), want);
		cr_assert_eq(timeout, CLAUDE_HOOK_TIMEOUT_S);
	}
	cr_assert_str_eq(
	    hook_command(root, "PermissionRequest", &timeout),
	    "/usr/lib/agentd/agentd-hook --socket /run/agentd/hooks/hooks.sock --wait 120 "
	    "PermissionRequest");
	cr_assert_eq(timeout, 120 + CLAUDE_HOOK_GRACE_S, "claude never ends the wait itself");
	json_object_put(root);
	free(text);

	/* No wait: no client can answer, so the hook is not asked at all. */
	cfg.terminal_permission_wait = 0;
	text = claude_hook_settings(&cfg, "/h", &c);
	root = json_tokener_parse(text);
	cr_assert_null(hook_command(root, "PermissionRequest", &timeout));
	cr_assert_not_null(hook_command(root, "Stop", &timeout));
	json_object_put(root);
	free(text);
}

/* claude hands the command to a shell: nothing a shell would read goes into it. */
Test(claude, hook_settings_refuse_paths_a_shell_would_read)
{
	struct config cfg;
	struct cause c = {{0}};

	config_defaults(&cfg);
	cr_assert_null(claude_hook_settings(&cfg, "/x/agentd hook", &c));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(claude_hook_settings(&cfg, "agentd-hook", &c));
	snprintf(cfg.runtime_dir, sizeof(cfg.runtime_dir), "/run/a;gentd");
	cr_assert_null(claude_hook_settings(&cfg, "/x/agentd-hook", &c));
	cr_assert_not_null(strstr(c.msg, "AGENTD_RUNTIME_DIR"), "%s", c.msg);
}

Test(claude, hook_settings_written_whole_and_readable)
{
	char dir[] = "/tmp/test_claude.XXXXXX", path[CONFIG_PATH_MAX], buf[8192];
	struct cause c = {{0}};
	struct config cfg;
	struct stat sb;
	ssize_t n;
	int fd;

	cr_assert_not_null(mkdtemp(dir));
	config_defaults(&cfg);
	snprintf(cfg.runtime_dir, sizeof(cfg.runtime_dir), "%s", dir);
	cr_assert_eq(claude_hook_settings_write(&cfg, "/h/agentd-hook", path, sizeof(path), &c), 0,
		     "%s", c.msg);
	cr_assert_eq(strncmp(path, dir, strlen(dir)), 0);
	cr_assert_str_eq(path + strlen(dir), "/" CLAUDE_SETTINGS_NAME);
	cr_assert_eq(stat(path, &sb), 0);
	cr_assert_eq(sb.st_mode & 0777, 0644);
	fd = open(path, O_RDONLY);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	cr_assert(n > 0);
	buf[n] = '\0';
	json_object_put(json_tokener_parse(buf));
	cr_assert_not_null(strstr(buf, "/h/agentd-hook --socket"));
	/* Written again: the same file, and no temp file left. */
	cr_assert_eq(claude_hook_settings_write(&cfg, "/h/agentd-hook", path, sizeof(path), &c), 0);
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(rmdir(dir), 0, "only the settings file was there");
}

Test(claude, extra_args_split_on_blanks)
{
	struct config cfg;
	struct session s;
	struct claude_argv out;
	char id[64];

	config_defaults(&cfg);
	snprintf(cfg.claude, sizeof(cfg.claude), "/opt/claude bin/claude");
	snprintf(cfg.claude_args, sizeof(cfg.claude_args),
		 " \t--model=sonnet  --add-dir=/x\t'quoted word'  ");
	make_session(&s, "p");
	snprintf(id, sizeof(id), "--session-id=%s", s.agent_session_id);
	cr_assert_eq(claude_terminal_argv(&cfg, &s, NULL, &out), 0);
	/* The executable is one word even with a blank; extra args have no quoting by design. */
	expect_argv(&out,
		    (const char *[]){"/opt/claude bin/claude", id, "--model=sonnet", "--add-dir=/x",
				     "'quoted", "word'", "--", "p"},
		    8);

	s.launched = true;
	snprintf(id, sizeof(id), "--resume=%s", s.agent_session_id);
	cr_assert_eq(claude_terminal_argv(&cfg, &s, NULL, &out), 0);
	expect_argv(&out,
		    (const char *[]){"/opt/claude bin/claude", id, "--model=sonnet", "--add-dir=/x",
				     "'quoted", "word'"},
		    6);
}

Test(claude, blank_only_extra_args_add_nothing)
{
	struct config cfg;
	struct session s;
	struct claude_argv out;

	config_defaults(&cfg);
	snprintf(cfg.claude_args, sizeof(cfg.claude_args), " \t \t ");
	make_session(&s, "p");
	cr_assert_eq(claude_terminal_argv(&cfg, &s, NULL, &out), 0);
	cr_assert_eq(argv_count(out.argv), 4);
	cr_assert_str_eq(out.argv[3], "p");
}

Test(claude, empty_prompt_is_left_out)
{
	struct config cfg;
	struct session s;
	struct claude_argv out;

	config_defaults(&cfg);
	make_session(&s, "");
	cr_assert_eq(claude_terminal_argv(&cfg, &s, NULL, &out), 0);
	cr_assert_eq(argv_count(out.argv), 2, "no empty word for an empty prompt");
	cr_assert_eq(strncmp(out.argv[1], "--session-id=", 13), 0);
}

Test(claude, prompt_is_one_word_verbatim)
{
	struct config cfg;
	struct session s;
	struct claude_argv out;
	/* Leading/trailing blanks, newlines, a bare ';', non-UTF-8 and a leading dash. */
	const char *prompt = "  -p line1\nline2\t; \xff\xfe end;  ";

	config_defaults(&cfg);
	snprintf(cfg.claude_args, sizeof(cfg.claude_args), "--verbose");
	make_session(&s, prompt);
	cr_assert_eq(claude_terminal_argv(&cfg, &s, NULL, &out), 0);
	cr_assert_eq(argv_count(out.argv), 5);
	cr_assert_str_eq(out.argv[2], "--verbose");
	cr_assert_str_eq(out.argv[3], "--");
	cr_assert_str_eq(out.argv[4], prompt);
}

Test(claude, largest_inputs_fit)
{
	struct config *cfg = calloc(1, sizeof(*cfg));
	struct session *s = calloc(1, sizeof(*s));
	struct claude_argv *out = calloc(1, sizeof(*out));

	cr_assert(cfg != NULL && s != NULL && out != NULL);
	config_defaults(cfg);
	memset(cfg->claude, 'c', sizeof(cfg->claude) - 1);
	cfg->claude[sizeof(cfg->claude) - 1] = '\0';
	memset(cfg->claude_args, 'a', sizeof(cfg->claude_args) - 1);
	cfg->claude_args[sizeof(cfg->claude_args) - 1] = '\0';
	make_session(s, "");
	memset(s->prompt, 'p', SESSION_PROMPT_MAX);
	s->prompt[SESSION_PROMPT_MAX] = '\0';
	cr_assert_eq(claude_terminal_argv(cfg, s, NULL, out), 0);
	cr_assert_eq(argv_count(out->argv), 5);
	cr_assert_eq(strlen(out->argv[0]), sizeof(cfg->claude) - 1);
	cr_assert_eq(strlen(out->argv[2]), sizeof(cfg->claude_args) - 1);
	cr_assert_eq(strlen(out->argv[4]), SESSION_PROMPT_MAX);
	free(cfg);
	free(s);
	free(out);
}

/* Fills claude_args with n one-letter words. */
static void extra_words(struct config *cfg, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		cfg->claude_args[o++] = 'w';
		cfg->claude_args[o++] = ' ';
	}
	cfg->claude_args[o] = '\0';
}

Test(claude, too_many_args_e2big)
{
	struct config cfg;
	struct session s;
	struct claude_argv out;

	config_defaults(&cfg);
	make_session(&s, "prompt");

	/* claude + --session-id + 60 extras + -- + prompt = CLAUDE_ARGV_MAX words: fits. */
	extra_words(&cfg, CLAUDE_ARGV_MAX - 4);
	cr_assert_eq(claude_terminal_argv(&cfg, &s, NULL, &out), 0);
	cr_assert_eq(argv_count(out.argv), CLAUDE_ARGV_MAX);
	cr_assert_str_eq(out.argv[CLAUDE_ARGV_MAX - 1], "prompt");

	/* One more word than fits, the prompt being the one too many. */
	extra_words(&cfg, CLAUDE_ARGV_MAX - 3);
	cr_assert_eq(claude_terminal_argv(&cfg, &s, NULL, &out), -E2BIG);

	/* Without the prompt (resume) the same extras fit. */
	s.launched = true;
	cr_assert_eq(claude_terminal_argv(&cfg, &s, NULL, &out), 0);
	cr_assert_eq(argv_count(out.argv), CLAUDE_ARGV_MAX - 1);

	/* Far too many (2000 words) fails the same way, without overrunning argv. */
	extra_words(&cfg, 2000);
	cr_assert_eq(claude_terminal_argv(&cfg, &s, NULL, &out), -E2BIG);
}

/* Structured mode: agentd-host [--prompt P] <id> -- claude -p <stream-json flags> <id flag>. */
Test(claude, structured_first_launch_with_prompt)
{
	struct config cfg;
	struct session s;
	struct claude_argv out;
	char id[64];
	const char *prompt = "fix it; rm -rf / `x` \"y\"";

	config_defaults(&cfg);
	make_session(&s, prompt);
	snprintf(id, sizeof(id), "--session-id=%s", s.agent_session_id);
	cr_assert_eq(claude_structured_argv(&cfg, &s, "/usr/bin/agentd-host", false, prompt, &out),
		     0);
	const char *want[] = {"/usr/bin/agentd-host",
			      "--set",
			      "AGENTD_RUNTIME_DIR=/run/agentd",
			      "--set",
			      "AGENTD_STATE_DIR=/var/lib/agentd",
			      "--set",
			      "AGENTD_PERMISSION_TIMEOUT=600",
			      "--set",
			      "AGENTD_STOP_GRACE=30",
			      "--prompt",
			      prompt,
			      s.id,
			      "--",
			      "claude",
			      "-p",
			      "--input-format",
			      "stream-json",
			      "--output-format",
			      "stream-json",
			      "--verbose",
			      "--replay-user-messages",
			      "--permission-prompt-tool",
			      "stdio",
			      id};
	expect_argv(&out, want, sizeof(want) / sizeof(want[0]));
}

Test(claude, structured_resume_without_prompt)
{
	struct config cfg;
	struct session s;
	struct claude_argv out;
	char id[64];

	config_defaults(&cfg);
	snprintf(cfg.claude_args, sizeof(cfg.claude_args), "--model=x");
	make_session(&s, "ignored");
	snprintf(id, sizeof(id), "--resume=%s", s.agent_session_id);
	cr_assert_eq(claude_structured_argv(&cfg, &s, "agentd-host", true, "", &out), 0);
	expect_argv(&out,
		    (const char *[]){"agentd-host",
				     "--set",
				     "AGENTD_RUNTIME_DIR=/run/agentd",
				     "--set",
				     "AGENTD_STATE_DIR=/var/lib/agentd",
				     "--set",
				     "AGENTD_PERMISSION_TIMEOUT=600",
				     "--set",
				     "AGENTD_STOP_GRACE=30",
				     s.id,
				     "--",
				     "claude",
				     "-p",
				     "--input-format",
				     "stream-json",
				     "--output-format",
				     "stream-json",
				     "--verbose",
				     "--replay-user-messages",
				     "--permission-prompt-tool",
				     "stdio",
				     id,
				     "--model=x"},
		    23);
	cr_assert_eq(claude_structured_argv(&cfg, &s, "agentd-host", true, NULL, &out), 0);
	cr_assert_eq(argv_count(out.argv), 23);
}

/* A prompt that reads as an option stays the prompt. */
Test(claude, option_like_prompt_follows_double_dash)
{
	static const char *const prompts[] = {"--dangerously-skip-permissions", "--version please",
					      "-p", "--", "--resume=x"};
	struct config cfg;
	struct session s;
	struct claude_argv out;
	char id[64];

	config_defaults(&cfg);
	snprintf(cfg.claude_args, sizeof(cfg.claude_args), "--model=x");
	for (size_t i = 0; i < sizeof(prompts) / sizeof(prompts[0]); i++) {
		make_session(&s, prompts[i]);
		snprintf(id, sizeof(id), "--session-id=%s", s.agent_session_id);
		cr_assert_eq(claude_terminal_argv(&cfg, &s, NULL, &out), 0);
		expect_argv(&out, (const char *[]){"claude", id, "--model=x", "--", prompts[i]}, 5);

		/* Structured: the prompt is --prompt's value for the host, never claude's word. */
		cr_assert_eq(
		    claude_structured_argv(&cfg, &s, "agentd-host", false, prompts[i], &out), 0);
		cr_assert_str_eq(out.argv[9], "--prompt");
		cr_assert_str_eq(out.argv[10], prompts[i]);
		cr_assert_str_eq(out.argv[11], s.id);
		cr_assert_str_eq(out.argv[12], "--");
		/* claude's words are those it gets without a prompt. */
		cr_assert_eq(argv_count(out.argv), 25);
		cr_assert_str_eq(out.argv[13], "claude");
		cr_assert_str_eq(out.argv[24], "--model=x");
	}
}

static void expect_env(const struct claude_env *e, const char *const *want, size_t n)
{
	size_t got = 0;

	while (e->words[got] != NULL)
		got++;
	cr_assert_eq(got, n, "%zu variables, want %zu", got, n);
	for (size_t i = 0; i < n; i++)
		cr_assert_str_eq(e->words[i], want[i], "variable %zu", i);
}

Test(claude, env_is_the_listed_variables_that_are_set)
{
	char *const from[] = {"HOME=/h",     "AGENTD_SECRET_JUNK=1",
			      "FOO_TOKEN=x", "GH_TOKEN=g=h",
			      "PATH=/bin",   "GH=no",
			      "HOMER=no",    NULL};
	struct claude_env *e = malloc(sizeof(*e));
	struct config cfg;

	cr_assert_not_null(e);
	config_defaults(&cfg);
	/* The default list: HOME PATH LANG ANTHROPIC_* CLAUDE_CONFIG_DIR GH_TOKEN GITHUB_TOKEN. */
	cr_assert_eq(claude_env(&cfg, from, e), 0);
	expect_env(e,
		   (const char *[]){"HOME=/h", "PATH=/bin", "GH_TOKEN=g=h", "COLORTERM=truecolor",
				    "LANG=C.UTF-8"},
		   5);
	/* Commas, repeats (the first counts), a stray '=' and the terminal's own given. */
	snprintf(cfg.agent_env, sizeof(cfg.agent_env), ",GH_TOKEN, ,HOME,GH_TOKEN LANG= COLORTERM");
	cr_assert_eq(claude_env(&cfg,
				(char *const[]){"GH_TOKEN=1", "HOME=/x", "LANG=de_DE.UTF-8",
						"COLORTERM=24bit", NULL},
				e),
		     0);
	expect_env(
	    e, (const char *[]){"GH_TOKEN=1", "HOME=/x", "LANG=de_DE.UTF-8", "COLORTERM=24bit"}, 4);
	/* An empty list: only what a terminal needs. */
	cfg.agent_env[0] = '\0';
	cr_assert_eq(claude_env(&cfg, from, e), 0);
	expect_env(e, (const char *[]){"COLORTERM=truecolor", "LANG=C.UTF-8"}, 2);
	free(e);
}

Test(claude, env_limits)
{
	struct claude_env *e = malloc(sizeof(*e));
	struct config *cfg = calloc(1, sizeof(*cfg));
	char **from = calloc(CLAUDE_ENV_MAX + 2, sizeof(*from));
	char *big = malloc(CLAUDE_ENV_BUF);
	size_t o = 0;

	cr_assert(e != NULL && cfg != NULL && from != NULL && big != NULL);
	config_defaults(cfg);
	for (int i = 0; i < CLAUDE_ENV_MAX + 1; i++) {
		cr_assert_geq(asprintf(&from[i], "V%d=x", i), 0);
		o += (size_t)snprintf(cfg->agent_env + o, sizeof(cfg->agent_env) - o, "V%d ", i);
	}
	cr_assert_eq(claude_env(cfg, from, e), -E2BIG);
	snprintf(cfg->agent_env, sizeof(cfg->agent_env), "BIG");
	memcpy(big, "BIG=", 4);
	memset(big + 4, 'b', CLAUDE_ENV_BUF - 5);
	big[CLAUDE_ENV_BUF - 1] = '\0';
	cr_assert_eq(claude_env(cfg, (char *const[]){big, NULL}, e), -ENAMETOOLONG);
	for (int i = 0; i < CLAUDE_ENV_MAX + 1; i++)
		free(from[i]);
	free(from);
	free(big);
	free(cfg);
	free(e);
}
