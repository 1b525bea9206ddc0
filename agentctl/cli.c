#include "cli.h"

#include "session.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Options a command may take (flags of struct ctl_cmd_def). */
#define OPT_ALL        (1u << 0)
#define OPT_JSON       (1u << 1)
#define OPT_FOLLOW     (1u << 2)
#define OPT_FORCE      (1u << 3)
#define OPT_STRUCTURED (1u << 4)
#define OPT_AGENT      (1u << 5)
#define OPT_PROMPT     (1u << 6)
#define OPT_MESSAGE    (1u << 7)

#define CTL_RID_MAX 128 /* a request id: a UUID or a tool-use id is far shorter */

/* Operands a command may have: more would be a mistake worth a usage error. */
#define CTL_OPERANDS_MAX 3

struct ctl_cmd_def {
	enum ctl_cmd cmd;
	const char *name;
	const char *usage; /* after "agentctl <name>" */
	const char *help;  /* what it does, and its options */
	unsigned opts;
	int min, max; /* operands */
};

static const struct ctl_cmd_def ctl_cmds[] = {
    {CTL_CMD_LS, "ls", "[--all] [--json]",
     "Lists the sessions, those waiting for a person first: state, activity, agent, mode, age,\n"
     "pending permission requests, cost when known. Without --all, sessions with no agent\n"
     "(exited, lost, failed, stopping) are left out.\n"
     "  --all   every session\n"
     "  --json  the sessions as the server gives them (a JSON array), in the same order\n",
     OPT_ALL | OPT_JSON, 0, 0},
    {CTL_CMD_NEW, "new", "owner/name N [--agent A] [--structured] [--prompt TEXT]",
     "Creates the session for issue N of owner/name (or starts it again) and prints its id.\n"
     "  --agent A       the agent to run (sent as \"agent\"; the server's default otherwise)\n"
     "  --structured    structured mode instead of the terminal\n"
     "  --prompt TEXT   the first prompt instead of the server's\n",
     OPT_AGENT | OPT_STRUCTURED | OPT_PROMPT, 2, 2},
    {CTL_CMD_ATTACH, "attach", "ID",
     "Shows the session's terminal in this one, as the web UI does (the same WebSocket): keys\n"
     "go to the agent, the size follows this terminal. Ctrl-] detaches; the session runs on.\n",
     0, 1, 1},
    {CTL_CMD_PROMPT, "prompt", "ID TEXT",
     "Sends a prompt to a structured session and prints the answer as it streams: the agent's\n"
     "text on stdout; permission requests, tools and the result on stderr.\n",
     0, 2, 2},
    {CTL_CMD_APPROVE, "approve", "ID [RID]",
     "Allows the session's pending permission request RID (without RID: its only one).\n", 0, 1, 2},
    {CTL_CMD_DENY, "deny", "ID [RID] [--message TEXT]",
     "Denies the session's pending permission request RID (without RID: its only one).\n"
     "  --message TEXT  why, for the agent\n",
     OPT_MESSAGE, 1, 2},
    {CTL_CMD_LOGS, "logs", "ID [-f]",
     "Prints a structured session's events (one JSON object a line: id, event, data) from the\n"
     "first; with -f it then follows them until interrupted or the session ends.\n"
     "  -f, --follow  keep following\n",
     OPT_FOLLOW, 1, 1},
    {CTL_CMD_EVENTS, "events", "[-f]",
     "Prints GET /events, one JSON object a line (id, event, data): the snapshot of every\n"
     "session, then with -f each change as it happens, until interrupted.\n"
     "  -f, --follow  keep following\n",
     OPT_FOLLOW, 0, 0},
    {CTL_CMD_MODE, "mode", "ID terminal|structured",
     "Switches the session's mode (claude starts again with --resume).\n", 0, 2, 2},
    {CTL_CMD_RM, "rm", "ID [--force]",
     "Deletes the session: its agent ends, its worktree is removed when nothing would be lost\n"
     "(otherwise kept, and the reason printed).\n"
     "  --force  remove the worktree anyway (its commits are kept under refs/agentd/kept/)\n",
     OPT_FORCE, 1, 1},
    {CTL_CMD_WHOAMI, "whoami", "", "Prints who the server takes this client for, and its role.\n",
     0, 0, 0},
};

#define CTL_NCMDS (sizeof(ctl_cmds) / sizeof(ctl_cmds[0]))

static const char ctl_exit_text[] =
    "Settings: AGENTD_URL and AGENTD_TOKEN from the environment, else from\n"
    "~/.config/agentd/agentctl.conf (AGENTD_URL=... and AGENTD_TOKEN=... lines; mode 0600:\n"
    "refused when others may read it). AGENTD_URL defaults to http://127.0.0.1:8080.\n"
    "Exit codes: 0 ok, 1 the server refused or failed (or cannot be reached), 2 usage error,\n"
    "3 not found, 4 access denied.\n";

static const struct ctl_cmd_def *ctl_def(enum ctl_cmd cmd)
{
	for (size_t i = 0; i < CTL_NCMDS; i++)
		if (ctl_cmds[i].cmd == cmd)
			return &ctl_cmds[i];
	return NULL;
}

const char *ctl_cmd_name(enum ctl_cmd cmd)
{
	const struct ctl_cmd_def *d = ctl_def(cmd);

	return d != NULL ? d->name : "";
}

void ctl_usage(FILE *f, enum ctl_cmd cmd)
{
	const struct ctl_cmd_def *d = ctl_def(cmd);

	if (d != NULL) {
		fprintf(f, "usage: agentctl %s%s%s\n%s%s", d->name, *d->usage ? " " : "", d->usage,
			d->help, ctl_exit_text);
		return;
	}
	fputs("usage: agentctl COMMAND [ARGS]   (agentctl COMMAND --help for each)\n"
	      "The operator's command line of agent-daemon.\n",
	      f);
	for (size_t i = 0; i < CTL_NCMDS; i++)
		fprintf(f, "  %s%s%s\n", ctl_cmds[i].name, ctl_cmds[i].usage[0] != '\0' ? " " : "",
			ctl_cmds[i].usage);
	fputs(ctl_exit_text, f);
}

/* Splits "owner/name" into a. */
static int ctl_parse_repo(const char *s, struct ctl_args *a, struct cause *cause)
{
	const char *slash = strchr(s, '/');
	size_t olen;

	if (slash == NULL)
		return cause_fail(cause, EINVAL, "'%s' is not owner/name", s);
	olen = (size_t)(slash - s);
	if (olen > CTL_OWNER_MAX || strlen(slash + 1) > CTL_NAME_MAX)
		return cause_fail(cause, EINVAL, "'%s' is not owner/name", s);
	memcpy(a->owner, s, olen);
	a->owner[olen] = '\0';
	strcpy(a->name, slash + 1);
	if (!session_owner_valid(a->owner) || !session_name_valid(a->name))
		return cause_fail(cause, EINVAL, "'%s' is not owner/name", s);
	return 0;
}

static int ctl_parse_issue(const char *s, struct ctl_args *a, struct cause *cause)
{
	char *end;
	long long v;

	if (*s < '0' || *s > '9')
		return cause_fail(cause, EINVAL, "the issue '%s' is not a number", s);
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || !session_issue_valid(v))
		return cause_fail(cause, EINVAL, "the issue '%s' is not a number from 1 to %d", s,
				  INT_MAX);
	a->issue = (long)v;
	return 0;
}

/* A request id goes into a URL path as it is: the characters agentd's ids use (UUIDs, claude's
 * tool-use ids), nothing that would need escaping. */
static bool ctl_rid_valid(const char *rid)
{
	size_t n = strlen(rid);

	return n >= 1 && n <= CTL_RID_MAX &&
	       strspn(rid, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") ==
		   n;
}

/* Takes the operands of a's command. */
static int ctl_operands(struct ctl_args *a, const char *const *op, int n, struct cause *cause)
{
	int r;

	switch (a->cmd) {
	case CTL_CMD_NEW:
		if ((r = ctl_parse_repo(op[0], a, cause)) < 0)
			return r;
		return ctl_parse_issue(op[1], a, cause);
	case CTL_CMD_ATTACH:
	case CTL_CMD_PROMPT:
	case CTL_CMD_APPROVE:
	case CTL_CMD_DENY:
	case CTL_CMD_LOGS:
	case CTL_CMD_MODE:
	case CTL_CMD_RM:
		a->id = op[0];
		if (!session_id_valid(a->id))
			return cause_fail(cause, EINVAL, "'%s' is not a session id (name-issue)",
					  a->id);
		break;
	default:
		return 0;
	}
	if (a->cmd == CTL_CMD_PROMPT) {
		a->text = op[1];
		if (*a->text == '\0')
			return cause_fail(cause, EINVAL, "the prompt is empty");
	} else if (a->cmd == CTL_CMD_APPROVE || a->cmd == CTL_CMD_DENY) {
		a->rid = n > 1 ? op[1] : NULL;
		if (a->rid != NULL && !ctl_rid_valid(a->rid))
			return cause_fail(cause, EINVAL, "'%s' is not a request id", a->rid);
	} else if (a->cmd == CTL_CMD_MODE) {
		a->mode = op[1];
		if (strcmp(a->mode, "terminal") != 0 && strcmp(a->mode, "structured") != 0)
			return cause_fail(cause, EINVAL,
					  "the mode is 'terminal' or 'structured', not '%s'",
					  a->mode);
	}
	return 0;
}

/* The value of an option that takes one: "--opt VALUE" or "--opt=VALUE". */
static int ctl_value(const char *arg, const char *opt, int argc, char *const argv[], int *i,
		     const char **out, struct cause *cause)
{
	size_t n = strlen(opt);

	if (arg[n] == '=') {
		*out = arg + n + 1;
		return 0;
	}
	if (*i + 1 >= argc)
		return cause_fail(cause, EINVAL, "%s needs a value", opt);
	*out = argv[++*i];
	return 0;
}

/* Is arg the option opt, alone or as "opt=value"? */
static bool ctl_is(const char *arg, const char *opt, bool takes_value)
{
	size_t n = strlen(opt);

	return strncmp(arg, opt, n) == 0 && (arg[n] == '\0' || (takes_value && arg[n] == '='));
}

int ctl_args_parse(int argc, char *const argv[], struct ctl_args *a, struct cause *cause)
{
	const struct ctl_cmd_def *d = NULL;
	const char *op[CTL_OPERANDS_MAX];
	bool no_more_opts = false;
	int nop = 0, r;

	memset(a, 0, sizeof(*a));
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0)
			break;
		else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			a->help = true;
	if (argc < 2 || argv[1][0] == '-') {
		if (a->help)
			return 0;
		return cause_fail(cause, EINVAL, argc < 2 ? "no command" : "unknown option '%s'",
				  argv[argc < 2 ? 0 : 1]);
	}
	for (size_t i = 0; i < CTL_NCMDS && d == NULL; i++)
		if (strcmp(argv[1], ctl_cmds[i].name) == 0)
			d = &ctl_cmds[i];
	if (d == NULL) {
		a->help = false;
		return cause_fail(cause, EINVAL, "unknown command '%s'", argv[1]);
	}
	a->cmd = d->cmd;
	if (a->help)
		return 0;
	for (int i = 2; i < argc; i++) {
		const char *arg = argv[i];
		unsigned opt = 0;

		if (no_more_opts || arg[0] != '-' || arg[1] == '\0') {
			if (nop == d->max)
				return cause_fail(cause, EINVAL, "too many arguments ('%s')", arg);
			op[nop++] = arg;
			continue;
		}
		if (strcmp(arg, "--") == 0) {
			no_more_opts = true;
			continue;
		}
		if (ctl_is(arg, "--all", false))
			a->all = true, opt = OPT_ALL;
		else if (ctl_is(arg, "--json", false))
			a->json = true, opt = OPT_JSON;
		else if (ctl_is(arg, "-f", false) || ctl_is(arg, "--follow", false))
			a->follow = true, opt = OPT_FOLLOW;
		else if (ctl_is(arg, "--force", false))
			a->force = true, opt = OPT_FORCE;
		else if (ctl_is(arg, "--structured", false))
			a->structured = true, opt = OPT_STRUCTURED;
		else if (ctl_is(arg, "--agent", true))
			opt = OPT_AGENT;
		else if (ctl_is(arg, "--prompt", true))
			opt = OPT_PROMPT;
		else if (ctl_is(arg, "--message", true))
			opt = OPT_MESSAGE;
		if (opt == 0 || (d->opts & opt) == 0)
			return cause_fail(cause, EINVAL, "%s takes no option '%s'", d->name, arg);
		r = 0;
		if (opt == OPT_AGENT)
			r = ctl_value(arg, "--agent", argc, argv, &i, &a->agent, cause);
		else if (opt == OPT_PROMPT)
			r = ctl_value(arg, "--prompt", argc, argv, &i, &a->prompt, cause);
		else if (opt == OPT_MESSAGE)
			r = ctl_value(arg, "--message", argc, argv, &i, &a->message, cause);
		if (r < 0)
			return r;
	}
	if (nop < d->min)
		return cause_fail(cause, EINVAL, "%s needs %s", d->name, d->usage);
	if (a->agent != NULL && *a->agent == '\0')
		return cause_fail(cause, EINVAL, "--agent is empty");
	return ctl_operands(a, op, nop, cause);
}
