/*
 * The one configuration loader every agentd program uses: built-in defaults, then the file named
 * by AGENTD_CONFIG (default /etc/agentd/agentd.conf; KEY=value lines, '#' comments), then the
 * AGENTD_* environment. The result is read-only for the rest of the process and passed down as
 * const struct config *.
 */
#ifndef AGENTD_CONFIG_H
#define AGENTD_CONFIG_H

#include "cause.h"
#include "cgroup.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONFIG_PATH_MAX     1024
#define CONFIG_VALUE_MAX    4096
#define CONFIG_FILE_MAX     (64 * 1024)
#define CONFIG_DEFAULT_FILE "/etc/agentd/agentd.conf"
#define CONFIG_USER_MAX     32 /* a user name, as useradd allows it */
/* Room for every key of config.c's table (a static assertion there says when it is full): the
 * place each value came from is kept per key. */
#define CONFIG_KEYS_MAX 96

/* Where a key's value came from, as `agentd-api config --print` says. */
enum config_source {
	CONFIG_SOURCE_DEFAULT,
	CONFIG_SOURCE_FILE,
	CONFIG_SOURCE_ENV,
};

#define CONFIG_AGENTS_MAX      8    /* agents of AGENTD_AGENT_<NAME>_* (core/agents.h) */
#define CONFIG_AGENT_NAME_MAX  31   /* = SESSION_AGENT_MAX */
#define CONFIG_AGENT_WORDS_MAX 1024 /* a command line of the configuration */
#define CONFIG_AGENT_SHAPE_MAX 256  /* the prompt, start and resume words */

/* One agent of the configuration: a new one, or a built-in's executable and extra words. Set
 * from AGENTD_AGENT_<NAME>_COMMAND, _ARGS, _PROMPT, _START, _RESUME, _ACP (NAME upper case). */
struct config_agent {
	char name[CONFIG_AGENT_NAME_MAX + 1]; /* lower case; "" = a free slot */
	char command[CONFIG_AGENT_WORDS_MAX];
	char args[CONFIG_AGENT_WORDS_MAX];
	char prompt[CONFIG_AGENT_SHAPE_MAX];
	char start[CONFIG_AGENT_SHAPE_MAX];
	char resume[CONFIG_AGENT_SHAPE_MAX];
	char acp[CONFIG_AGENT_WORDS_MAX];       /* _ACP: its ACP mode's executable and words */
	bool has_prompt, has_start, has_resume; /* given (the default shapes apply otherwise) */
};

struct config {
	char listen[256];                       /* AGENTD_LISTEN */
	char runtime_dir[CONFIG_PATH_MAX];      /* AGENTD_RUNTIME_DIR */
	char state_dir[CONFIG_PATH_MAX];        /* AGENTD_STATE_DIR: what outlives a reboot */
	char base_dir[CONFIG_PATH_MAX];         /* AGENTD_BASE_DIR */
	char repo_url[CONFIG_VALUE_MAX];        /* AGENTD_REPO_URL, {owner} {name} replaced */
	char claude[CONFIG_PATH_MAX];           /* AGENTD_CLAUDE */
	char claude_args[CONFIG_VALUE_MAX];     /* AGENTD_CLAUDE_ARGS, split on blanks */
	char prompt[CONFIG_VALUE_MAX];          /* AGENTD_PROMPT, {owner} {name} {issue} replaced */
	char agent_env[CONFIG_VALUE_MAX];       /* AGENTD_AGENT_ENV, names split on blanks */
	int max_sessions;                       /* AGENTD_MAX_SESSIONS */
	char allowed_origins[CONFIG_VALUE_MAX]; /* AGENTD_ALLOWED_ORIGINS, split on blanks/commas */
	char allowed_hosts[CONFIG_VALUE_MAX];   /* AGENTD_ALLOWED_HOSTS: for nginx (deploy/up) */
	int permission_timeout;                 /* AGENTD_PERMISSION_TIMEOUT, seconds */
	char tmux[CONFIG_PATH_MAX];             /* AGENTD_TMUX: the tmux executable */
	char host[CONFIG_PATH_MAX]; /* AGENTD_HOST_BIN: agentd-host ("" = beside agentd-api) */
	char agent_user[CONFIG_USER_MAX + 1]; /* AGENTD_AGENT_USER: who claude runs as */
	char agent_home[CONFIG_PATH_MAX];     /* AGENTD_AGENT_HOME: its HOME ("" = passwd's) */
	/* Cages (core/cageuid.h, core/cage.h): each session's own uid from this range, its own
	 * HOME made from the template, and the credentials agentd-cage reads at each launch. */
	char cage[8];                              /* AGENTD_CAGE: "auto" or "off" */
	char session_uids[32];                     /* AGENTD_SESSION_UIDS: "MIN-MAX" */
	char homes_dir[CONFIG_PATH_MAX];           /* AGENTD_HOMES_DIR: the sessions' HOMEs */
	char agent_home_template[CONFIG_PATH_MAX]; /* AGENTD_AGENT_HOME_TEMPLATE ("" = HOME) */
	char secrets_dir[CONFIG_PATH_MAX];         /* AGENTD_SECRETS_DIR: one file per variable */
	/* What clients of agent-daemon read (agentd-telegram): in the one file like the rest, so
	 * that every program accepts the same file. */
	char url[CONFIG_VALUE_MAX]; /* AGENTD_URL: agent-daemon for clients ("" = AGENTD_LISTEN) */
	char token[CONFIG_VALUE_MAX]; /* AGENTD_TOKEN: a client's access token ("" = none) */
	char telegram_token[CONFIG_VALUE_MAX];     /* AGENTD_TELEGRAM_TOKEN: the bot's token */
	char telegram_token_file[CONFIG_PATH_MAX]; /* AGENTD_TELEGRAM_TOKEN_FILE: or read from it */
	char telegram_api[CONFIG_VALUE_MAX];       /* AGENTD_TELEGRAM_API: the Bot API base URL */
	char telegram_users[CONFIG_VALUE_MAX];     /* AGENTD_TELEGRAM_USERS: user ids served */
	char telegram_state[CONFIG_PATH_MAX];      /* AGENTD_TELEGRAM_STATE ("" = the default) */
	char telegram_web_url[CONFIG_VALUE_MAX];   /* AGENTD_TELEGRAM_WEB_URL ("" = AGENTD_URL) */
	/* Tailscale logins admitted without a token on the trusted path (core/auth.h): blank- or
	 * comma-separated, "*" for any identified tailnet user. */
	char tailscale_users[CONFIG_VALUE_MAX];   /* AGENTD_TAILSCALE_USERS: admins */
	char tailscale_viewers[CONFIG_VALUE_MAX]; /* AGENTD_TAILSCALE_VIEWERS: read-only */
	char tailscale_socket[CONFIG_PATH_MAX]; /* AGENTD_TAILSCALE_SOCKET: for nginx (deploy/up) */
	/* A bearer token that opens GET /metrics and nothing else (core/auth.h; "" = none). */
	char metrics_token[CONFIG_VALUE_MAX]; /* AGENTD_METRICS_TOKEN */
	/* Web Push (core/webpush.h): the one http:// origin a subscription's endpoint may have (a
	 * test's fake push service; "" = https only). */
	char push_allow_http_origin[CONFIG_VALUE_MAX]; /* AGENTD_PUSH_ALLOW_HTTP_ORIGIN */
	char hook[CONFIG_PATH_MAX];   /* AGENTD_HOOK: agentd-hook ("" = beside agentd-api) */
	int terminal_permission_wait; /* AGENTD_TERMINAL_PERMISSION_WAIT, seconds (0: none) */

	/* AGENTD_GIT_STORE_DIR: the stores of the store layout (gitstore.h); "" keeps the
	 * worktrees of the agent's bare clones. */
	char git_store_dir[CONFIG_PATH_MAX];

	/* Each session's share of the machine (core/cgroup.h): the default and the most a
	 * POST /sessions may ask for. */
	uint64_t session_memory_max;             /* AGENTD_SESSION_MEMORY_MAX: bytes ("4G") */
	uint32_t session_cpu_milli;              /* AGENTD_SESSION_CPUS: thousandths of a CPU */
	int session_tasks_max;                   /* AGENTD_SESSION_TASKS_MAX */
	char cgroup_parent[CGROUP_NAME_MAX + 1]; /* AGENTD_CGROUP_PARENT: sessions' cgroup parent */

	/* Each session's own TCP ports, so dev servers of parallel agents never collide:
	 * AGENTD_PORT_SPAN ports from AGENTD_PORT_BASE on, one range per session. */
	char port_base[8]; /* AGENTD_PORT_BASE: a port, "" = off */
	int port_span;     /* AGENTD_PORT_SPAN */

	/* What config_load read: each key's source (enum config_source, by its index in the key
	 * table), and the file ("" when the default file does not exist). */
	unsigned char source[CONFIG_KEYS_MAX];
	char file[CONFIG_PATH_MAX];
	/* Pull requests (fcgi-app/api_pr.c, prpoll.c): GitHub's REST API, and how often an open
	 * pull request's state and checks are asked for at most. */
	char github_api[CONFIG_VALUE_MAX]; /* AGENTD_GITHUB_API */
	int pr_poll_seconds;               /* AGENTD_PR_POLL_SECONDS */
	/* Policies (core/policy.h): what a session gets when its POST does not say, how long the
	 * daemon waits for an interrupted agent, and the setup command of a new worktree. */
	char restart_policy[16];  /* AGENTD_RESTART_POLICY: no, on-failure, always */
	int max_restarts;         /* AGENTD_MAX_RESTARTS */
	int restart_backoff_ms;   /* AGENTD_RESTART_BACKOFF_MS: the first wait */
	char session_timeout[24]; /* AGENTD_SESSION_TIMEOUT: a duration, "" = none */
	int stop_grace;           /* AGENTD_STOP_GRACE: seconds from interrupt to kill */
	char setup_command[CONFIG_VALUE_MAX]; /* AGENTD_SETUP_COMMAND: argv as a JSON array */
	char setup_dir[CONFIG_PATH_MAX];      /* AGENTD_SETUP_DIR: <dir>/<owner>/<name> programs */
	/* The agent a POST /sessions without "agent" gets, and the configured agents. */
	char default_agent[CONFIG_AGENT_NAME_MAX + 1]; /* AGENTD_DEFAULT_AGENT */
	char session_budget_usd[24]; /* AGENTD_SESSION_BUDGET_USD: dollars, "" = none */
	struct config_agent agents[CONFIG_AGENTS_MAX];
};

/* One key of the table in config.c, the one list of every key, its default and meaning. */
struct config_keydoc {
	const char *name;    /* "AGENTD_LISTEN" */
	const char *def;     /* its default, as a value config_set accepts */
	const char *meaning; /* one line */
	bool secret;         /* a credential: shown as set or not, never as its value */
};

/* The number of keys, and key i's entry (0, or -ENOENT past the last). */
size_t config_key_count(void);
int config_key_doc(size_t i, struct config_keydoc *doc);

/* Where key i's value in cfg came from. */
enum config_source config_key_source(const struct config *cfg, size_t i);
const char *config_source_name(enum config_source source);

/* Key i's value in cfg as text config_set accepts back ("4G", "1.5", "600"). Returns 0, -ENOENT
 * past the last key, or -ENAMETOOLONG when out is too small. */
int config_format(const struct config *cfg, size_t i, char *out, size_t outlen);

/* AGENTD_PORT_BASE as a number, 0 when off. */
int config_port_base(const struct config *cfg);

/*
 * Fills cfg. Returns 0, or a negative errno with cause set: -EINVAL for a malformed line or value
 * (cause names the key), -EFBIG for a file over CONFIG_FILE_MAX, -ENAMETOOLONG for a value over its
 * field. A missing default file is not an error; a missing AGENTD_CONFIG file is (-ENOENT).
 */
int config_load(struct config *cfg, struct cause *cause);

/*
 * Applies one KEY=value setting (used by config_load for file lines and the environment).
 * Unknown AGENTD_* keys are -EINVAL so typos are noticed, and so is a value a key's rule refuses:
 * an AGENTD_HOOK that is not empty or a plain absolute path (config_path_plain); an
 * AGENTD_AGENT_USER that is not a user name (a letter or '_', then letters, digits, '.', '_',
 * '-'; at most CONFIG_USER_MAX bytes); an AGENTD_AGENT_HOME that is not empty or an absolute path
 * other than "/"; an AGENTD_SESSION_MEMORY_MAX that cgroup_parse_memory refuses, an
 * AGENTD_SESSION_CPUS that cgroup_parse_cpus refuses, an AGENTD_CGROUP_PARENT that is not a
 * cgroup path (cgroup_name_valid). AGENTD_AGENT_<NAME>_COMMAND, _ARGS, _PROMPT, _START and
 * _RESUME (NAME of [A-Z0-9_], a letter first) set the agent <name> (lower case) of cfg->agents:
 * -E2BIG past CONFIG_AGENTS_MAX agents; a _PROMPT other than "--", "none" or an option ending in
 * '=' is -EINVAL. agents_check_config (core/agents.h) checks the whole once it is loaded.
 */
int config_set(struct config *cfg, const char *key, const char *value, struct cause *cause);

/*
 * True when path is absolute and "plain": only [A-Za-z0-9._/+@~-], no "." or ".." component, so
 * that it can go into a command line a shell reads (claude runs its hook commands with one)
 * without quoting.
 */
bool config_path_plain(const char *path);

/* Fills cfg with the built-in defaults only. */
void config_defaults(struct config *cfg);

/* Path helpers: write "<runtime_dir>/<leaf>" (or "<state_dir>/<leaf>") into out. Return 0 or
 * -ENAMETOOLONG. */
int config_runtime_path(const struct config *cfg, const char *leaf, char *out, size_t outlen);
int config_state_path(const struct config *cfg, const char *leaf, char *out, size_t outlen);

#endif
