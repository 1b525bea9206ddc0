/*
 * agentctl's command line: the command table (name, usage, what it does, its options), the parse
 * of argv into one struct ctl_args, and the exit codes every command shares. Parsing checks only
 * the shape (the options a command takes, the number of its operands, the rules of a session id
 * and of owner/name); whether the session exists is the server's answer.
 */
#ifndef AGENTD_CTL_CLI_H
#define AGENTD_CTL_CLI_H

#include "cause.h"

#include <stdbool.h>
#include <stdio.h>

/* Exit codes, for scripts (--help and agentctl.1 list them). */
#define CTL_EXIT_OK        0
#define CTL_EXIT_FAILURE   1 /* the server refused or failed, or it cannot be reached */
#define CTL_EXIT_USAGE     2 /* a bad command line or settings file */
#define CTL_EXIT_NOT_FOUND 3 /* no such session or permission request */
#define CTL_EXIT_DENIED    4 /* the door said no: no or a bad token, or read-only */

/* The longest owner and name the API accepts (docs/API.md, Session). */
#define CTL_OWNER_MAX 39
#define CTL_NAME_MAX  100

enum ctl_cmd {
	CTL_CMD_NONE, /* no command: "agentctl --help" or "agentctl" */
	CTL_CMD_LS,
	CTL_CMD_NEW,
	CTL_CMD_ATTACH,
	CTL_CMD_PROMPT,
	CTL_CMD_APPROVE,
	CTL_CMD_DENY,
	CTL_CMD_LOGS,
	CTL_CMD_EVENTS,
	CTL_CMD_MODE,
	CTL_CMD_RM,
	CTL_CMD_WHOAMI,
};

struct ctl_args {
	enum ctl_cmd cmd;
	bool help;       /* --help: print the command's usage and exit 0 */
	bool all;        /* ls --all */
	bool json;       /* ls --json */
	bool follow;     /* logs -f, events -f */
	bool force;      /* rm --force */
	bool structured; /* new --structured */
	/* Borrowed from argv. */
	const char *id;      /* the session id of attach, prompt, approve, deny, logs, mode, rm */
	const char *rid;     /* approve/deny: the request id (NULL: the session's only one) */
	const char *text;    /* prompt: the prompt */
	const char *agent;   /* new --agent */
	const char *prompt;  /* new --prompt */
	const char *message; /* deny --message */
	const char *mode;    /* mode: "terminal" or "structured" */
	char owner[CTL_OWNER_MAX + 1];
	char name[CTL_NAME_MAX + 1];
	long issue;
};

/*
 * Parses argv (argv[0] is the program) into a. Returns 0, or -EINVAL with cause set (a usage
 * error: exit CTL_EXIT_USAGE). With --help anywhere a->help is set and the rest of the line is
 * not checked.
 */
int ctl_args_parse(int argc, char *const argv[], struct ctl_args *a, struct cause *cause);

/* Writes the usage of cmd (CTL_CMD_NONE: the whole program's) to f. */
void ctl_usage(FILE *f, enum ctl_cmd cmd);

/* The command's name ("" for CTL_CMD_NONE). */
const char *ctl_cmd_name(enum ctl_cmd cmd);

#endif
