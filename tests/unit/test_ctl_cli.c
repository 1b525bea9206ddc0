/* agentctl's command line (agentctl/cli.c): commands, options, operands, usage errors. */
#include "cli.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#define PARSE(a, cause, ...)                                                                       \
	({                                                                                         \
		char *argv_[] = {"agentctl", __VA_ARGS__, NULL};                                   \
		ctl_args_parse((int)(sizeof(argv_) / sizeof(argv_[0])) - 1, argv_, (a), (cause));  \
	})

Test(ctl_cli, new_takes_owner_name_issue_and_options)
{
	struct ctl_args a;
	struct cause c = {{0}};

	cr_assert_eq(PARSE(&a, &c, "new", "acme/widgets", "42", "--structured", "--agent", "codex",
			   "--prompt=do it"),
		     0, "%s", c.msg);
	cr_assert_eq(a.cmd, CTL_CMD_NEW);
	cr_assert_str_eq(a.owner, "acme");
	cr_assert_str_eq(a.name, "widgets");
	cr_assert_eq(a.issue, 42);
	cr_assert(a.structured);
	cr_assert_str_eq(a.agent, "codex");
	cr_assert_str_eq(a.prompt, "do it");
}

Test(ctl_cli, new_refuses_what_the_api_would)
{
	struct ctl_args a;
	struct cause c = {{0}};

	cr_assert_eq(PARSE(&a, &c, "new", "acme/../x", "1"), -EINVAL);
	cr_assert_eq(PARSE(&a, &c, "new", "acme", "1"), -EINVAL);
	cr_assert_eq(PARSE(&a, &c, "new", "acme/widgets.git", "1"), -EINVAL);
	cr_assert_eq(PARSE(&a, &c, "new", "acme/widgets", "0"), -EINVAL);
	cr_assert_eq(PARSE(&a, &c, "new", "acme/widgets", "2147483648"), -EINVAL);
	cr_assert_eq(PARSE(&a, &c, "new", "acme/widgets", "-3"), -EINVAL);
	cr_assert_eq(PARSE(&a, &c, "new", "acme/widgets", "12x"), -EINVAL);
	cr_assert_eq(PARSE(&a, &c, "new", "acme/widgets"), -EINVAL);
	cr_assert_eq(PARSE(&a, &c, "new", "acme/widgets", "1", "--agent"), -EINVAL);
	cr_assert(strstr(c.msg, "--agent needs a value") != NULL, "%s", c.msg);
	cr_assert_eq(PARSE(&a, &c, "new", "acme/widgets", "1", "--agent="), -EINVAL);
}

Test(ctl_cli, options_belong_to_their_command)
{
	struct ctl_args a;
	struct cause c = {{0}};

	cr_assert_eq(PARSE(&a, &c, "ls", "--all", "--json"), 0);
	cr_assert(a.all && a.json);
	cr_assert_eq(PARSE(&a, &c, "ls", "--force"), -EINVAL);
	cr_assert(strstr(c.msg, "ls takes no option '--force'") != NULL, "%s", c.msg);
	cr_assert_eq(PARSE(&a, &c, "rm", "widgets-1", "--all"), -EINVAL);
	cr_assert_eq(PARSE(&a, &c, "rm", "widgets-1", "--force"), 0);
	cr_assert(a.force);
	cr_assert_eq(PARSE(&a, &c, "logs", "widgets-1", "-f"), 0);
	cr_assert(a.follow);
	cr_assert_eq(PARSE(&a, &c, "events", "--follow"), 0);
	cr_assert(a.follow);
	cr_assert_eq(PARSE(&a, &c, "events", "extra"), -EINVAL);
	cr_assert_eq(PARSE(&a, &c, "ls", "--allx"), -EINVAL);
}

Test(ctl_cli, operands_are_checked)
{
	struct ctl_args a;
	struct cause c = {{0}};

	cr_assert_eq(PARSE(&a, &c, "attach", "widgets-1"), 0);
	cr_assert_str_eq(a.id, "widgets-1");
	cr_assert_eq(PARSE(&a, &c, "attach", "no/such"), -EINVAL);
	cr_assert_eq(PARSE(&a, &c, "attach"), -EINVAL);
	cr_assert_eq(PARSE(&a, &c, "attach", "widgets-1", "widgets-2"), -EINVAL);
	cr_assert_eq(PARSE(&a, &c, "mode", "widgets-1", "structured"), 0);
	cr_assert_str_eq(a.mode, "structured");
	cr_assert_eq(PARSE(&a, &c, "mode", "widgets-1", "tui"), -EINVAL);
	cr_assert_eq(PARSE(&a, &c, "approve", "widgets-1"), 0);
	cr_assert_null(a.rid);
	cr_assert_eq(PARSE(&a, &c, "deny", "widgets-1", "r1", "--message", "no"), 0);
	cr_assert_str_eq(a.rid, "r1");
	cr_assert_str_eq(a.message, "no");
	cr_assert_eq(PARSE(&a, &c, "approve", "widgets-1", "../x"), -EINVAL);
	cr_assert_eq(PARSE(&a, &c, "approve", "widgets-1", "--message", "x"), -EINVAL);
	cr_assert_eq(PARSE(&a, &c, "prompt", "widgets-1", ""), -EINVAL);
	/* A prompt may start with a dash after "--". */
	cr_assert_eq(PARSE(&a, &c, "prompt", "widgets-1", "--", "-v please"), 0);
	cr_assert_str_eq(a.text, "-v please");
}

Test(ctl_cli, help_anywhere_and_unknown_commands)
{
	struct ctl_args a;
	struct cause c = {{0}};

	cr_assert_eq(PARSE(&a, &c, "--help"), 0);
	cr_assert(a.help);
	cr_assert_eq(a.cmd, CTL_CMD_NONE);
	cr_assert_eq(PARSE(&a, &c, "rm", "--help"), 0);
	cr_assert(a.help);
	cr_assert_eq(a.cmd, CTL_CMD_RM);
	/* --help wins over what would be a usage error. */
	cr_assert_eq(PARSE(&a, &c, "new", "bad", "-h"), 0);
	cr_assert(a.help);
	cr_assert_eq(PARSE(&a, &c, "prompt", "widgets-1", "--", "--help"), 0);
	cr_assert_not(a.help);
	cr_assert_eq(PARSE(&a, &c, "frobnicate"), -EINVAL);
	cr_assert(strstr(c.msg, "unknown command 'frobnicate'") != NULL, "%s", c.msg);
	cr_assert_eq(PARSE(&a, &c, "--all"), -EINVAL);
	cr_assert_str_eq(ctl_cmd_name(CTL_CMD_WHOAMI), "whoami");
}

Test(ctl_cli, request_ids_need_no_escaping)
{
	struct ctl_args a;
	struct cause c = {{0}};

	cr_assert_eq(PARSE(&a, &c, "approve", "widgets-1", "3f6c2a1e-8a55-4a43-9a6b-2d0f4f0d9c12"),
		     0);
	cr_assert_eq(PARSE(&a, &c, "approve", "widgets-1", "toolu_01:x.y"), 0);
	cr_assert_eq(PARSE(&a, &c, "approve", "widgets-1", "a b"), -EINVAL);
	cr_assert_eq(PARSE(&a, &c, "approve", "widgets-1", "a%2Fb"), -EINVAL);
	cr_assert_eq(PARSE(&a, &c, "approve", "widgets-1", "a?b"), -EINVAL);
}
