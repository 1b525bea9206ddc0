/*
 * claude: the terminal-mode argv. First launch: claude --session-id=<uuid> [extra] <prompt>, the
 * prompt one word whatever it contains; later launches: --resume=<uuid> [extra], no prompt.
 */
#include "claude.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	cr_assert_eq(claude_terminal_argv(&cfg, &s, &out), 0);
	expect_argv(&out, (const char *[]){"claude", id, prompt}, 3);
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
	cr_assert_eq(claude_terminal_argv(&cfg, &s, &out), 0);
	expect_argv(&out, (const char *[]){"claude", id}, 2);
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
	cr_assert_eq(claude_terminal_argv(&cfg, &s, &out), 0);
	/* The executable is one word even with a blank; extra args have no quoting by design. */
	expect_argv(&out,
		    (const char *[]){"/opt/claude bin/claude", id, "--model=sonnet", "--add-dir=/x",
				     "'quoted", "word'", "p"},
		    7);

	s.launched = true;
	snprintf(id, sizeof(id), "--resume=%s", s.agent_session_id);
	cr_assert_eq(claude_terminal_argv(&cfg, &s, &out), 0);
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
	cr_assert_eq(claude_terminal_argv(&cfg, &s, &out), 0);
	cr_assert_eq(argv_count(out.argv), 3);
	cr_assert_str_eq(out.argv[2], "p");
}

Test(claude, empty_prompt_is_left_out)
{
	struct config cfg;
	struct session s;
	struct claude_argv out;

	config_defaults(&cfg);
	make_session(&s, "");
	cr_assert_eq(claude_terminal_argv(&cfg, &s, &out), 0);
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
	cr_assert_eq(claude_terminal_argv(&cfg, &s, &out), 0);
	cr_assert_eq(argv_count(out.argv), 4);
	cr_assert_str_eq(out.argv[2], "--verbose");
	cr_assert_str_eq(out.argv[3], prompt);
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
	cr_assert_eq(claude_terminal_argv(cfg, s, out), 0);
	cr_assert_eq(argv_count(out->argv), 4);
	cr_assert_eq(strlen(out->argv[0]), sizeof(cfg->claude) - 1);
	cr_assert_eq(strlen(out->argv[2]), sizeof(cfg->claude_args) - 1);
	cr_assert_eq(strlen(out->argv[3]), SESSION_PROMPT_MAX);
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

	/* claude + --session-id + 61 extras + prompt = CLAUDE_ARGV_MAX words: fits. */
	extra_words(&cfg, CLAUDE_ARGV_MAX - 3);
	cr_assert_eq(claude_terminal_argv(&cfg, &s, &out), 0);
	cr_assert_eq(argv_count(out.argv), CLAUDE_ARGV_MAX);
	cr_assert_str_eq(out.argv[CLAUDE_ARGV_MAX - 1], "prompt");

	/* One more word than fits, the prompt being the one too many. */
	extra_words(&cfg, CLAUDE_ARGV_MAX - 2);
	cr_assert_eq(claude_terminal_argv(&cfg, &s, &out), -E2BIG);

	/* Without the prompt (resume) the same extras fit. */
	s.launched = true;
	cr_assert_eq(claude_terminal_argv(&cfg, &s, &out), 0);
	cr_assert_eq(argv_count(out.argv), CLAUDE_ARGV_MAX);

	/* Far too many (2000 words) fails the same way, without overrunning argv. */
	extra_words(&cfg, 2000);
	cr_assert_eq(claude_terminal_argv(&cfg, &s, &out), -E2BIG);
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
	expect_argv(&out,
		    (const char *[]){"/usr/bin/agentd-host", "--prompt", prompt, s.id, "--",
				     "claude", "-p", "--input-format", "stream-json",
				     "--output-format", "stream-json", "--verbose",
				     "--permission-prompt-tool", "stdio", id},
		    15);
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
		    (const char *[]){"agentd-host", s.id, "--", "claude", "-p", "--input-format",
				     "stream-json", "--output-format", "stream-json", "--verbose",
				     "--permission-prompt-tool", "stdio", id, "--model=x"},
		    14);
	cr_assert_eq(claude_structured_argv(&cfg, &s, "agentd-host", true, NULL, &out), 0);
	cr_assert_eq(argv_count(out.argv), 14);
}
