#include "config.h"

#include "agents.h"
#include "cageuid.h"
#include "cost.h"
#include "policy.h"

#include <json-c/json.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CONFIG_KEY_MAX 128
/* Below 1024 a port needs privileges the agents do not have. */
#define CONFIG_PORT_BASE_MIN 1024

#define CONFIG_DEFAULT_PROMPT                                                                      \
	"Work on {owner}/{name}#{issue}. Start by running: gh issue view {issue} -R "              \
	"{owner}/{name}"
#define CONFIG_DEFAULT_AGENT_ENV                                                                   \
	"HOME PATH LANG ANTHROPIC_API_KEY ANTHROPIC_BASE_URL CLAUDE_CONFIG_DIR GH_TOKEN "          \
	"GITHUB_TOKEN"

enum config_kind {
	CONFIG_STR,
	CONFIG_INT,
	CONFIG_PLAIN_PATH, /* a string: empty, or an absolute path config_path_plain accepts */
	CONFIG_MEMORY,     /* a uint64_t of bytes: cgroup_parse_memory ("4G") */
	CONFIG_CPUS,       /* a uint32_t of thousandths of a CPU: cgroup_parse_cpus ("1.5") */
};

struct config_key {
	const char *name;
	enum config_kind kind;
	size_t offset;
	size_t size; /* for strings: field size; for ints: maximum value */
	int min;
	/* For strings: NULL, or the rule a value must follow (a sentence saying what is wrong, or
	 * NULL when the value is fine). */
	const char *(*check)(const char *value);
	const char *def;     /* the default, as a value config_set accepts */
	const char *meaning; /* one line for `agentd-api config --print` and README.md's table */
	bool secret;         /* a credential: --print shows whether it is set, never what it is */
};

#define CONFIG_FIELD(f) offsetof(struct config, f), sizeof(((struct config *)0)->f)
#define KEY_STR(n, f, def, doc)                                                                    \
	{                                                                                          \
		n, CONFIG_STR, CONFIG_FIELD(f), 0, NULL, def, doc, false                           \
	}
#define KEY_SECRET(n, f, def, doc)                                                                 \
	{                                                                                          \
		n, CONFIG_STR, CONFIG_FIELD(f), 0, NULL, def, doc, true                            \
	}
#define KEY_CHECKED(n, f, c, def, doc)                                                             \
	{                                                                                          \
		n, CONFIG_STR, CONFIG_FIELD(f), 0, c, def, doc, false                              \
	}
#define KEY_PATH(n, f, def, doc)                                                                   \
	{                                                                                          \
		n, CONFIG_PLAIN_PATH, CONFIG_FIELD(f), 0, NULL, def, doc, false                    \
	}
#define KEY_LIMIT(n, kind, f, def, doc)                                                            \
	{                                                                                          \
		n, kind, CONFIG_FIELD(f), 0, NULL, def, doc, false                                 \
	}
/* The table's forms before it held defaults and meanings: a key still written so compiles, and
 * tests/unit/test_config.c names it until its line says both. */
#define STR_KEY(n, f)            KEY_STR(n, f, NULL, NULL)
#define STR_KEY_CHECKED(n, f, c) KEY_CHECKED(n, f, c, NULL, NULL)
#define PATH_KEY(n, f)           KEY_PATH(n, f, NULL, NULL)
#define LIMIT_KEY(n, kind, f)    KEY_LIMIT(n, kind, f, NULL, NULL)
#define INT_KEY(n, f, lo, hi)    KEY_INT(n, f, lo, hi, NULL, NULL)
#define KEY_INT(n, f, lo, hi, def, doc)                                                            \
	{                                                                                          \
		n, CONFIG_INT, offsetof(struct config, f), hi, lo, NULL, def, doc, false           \
	}

/* A user name useradd accepts and that goes through argv, chown and setpriv unchanged: no
 * shell or option characters, no leading digit (setpriv would read a number as a uid). */
static const char *config_check_user(const char *v)
{
	if (v[0] == '\0')
		return "must name a user";
	if (!((v[0] >= 'a' && v[0] <= 'z') || (v[0] >= 'A' && v[0] <= 'Z') || v[0] == '_'))
		return "must start with a letter or '_'";
	for (const char *p = v; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.'))
			return "may hold only letters, digits, '.', '_' and '-'";
	return NULL;
}

static const char *config_check_home(const char *v)
{
	if (v[0] == '\0')
		return NULL;
	if (v[0] != '/')
		return "must be an absolute path (or empty: the user's home directory)";
	if (v[strspn(v, "/")] == '\0')
		return "must not be /";
	return NULL;
}

/* The stores are read by every agent and written by the daemon only: a path of its own. */
static const char *config_check_store(const char *v)
{
	if (v[0] == '\0')
		return NULL;
	if (v[0] != '/')
		return "must be an absolute path (or empty: worktrees of the agent's bare clones)";
	if (v[strspn(v, "/")] == '\0')
		return "must not be /";
	return NULL;
}

static const char *config_check_cgroup(const char *v)
{
	if (!cgroup_name_valid(v, true))
		return "must be a cgroup name or path of them ([A-Za-z0-9._-], '/' between)";
	return NULL;
}

static const char *config_check_uids(const char *v)
{
	uid_t lo, hi;

	return cageuid_parse_range(v, &lo, &hi) < 0
		   ? "must be MIN-MAX, 1 <= MIN <= MAX <= 65533 (e.g. 61184-65519)"
		   : NULL;
}

static const char *config_check_cage(const char *v)
{
	return strcmp(v, "auto") == 0 || strcmp(v, "off") == 0 ? NULL : "must be auto or off";
}

static const char *config_check_dir(const char *v)
{
	if (v[0] != '/')
		return "must be an absolute path";
	if (v[strspn(v, "/")] == '\0')
		return "must not be /";
	return NULL;
}

static const char *config_check_port(const char *v)
{
	char *end;
	long p;

	if (v[0] == '\0')
		return NULL;
	p = strtol(v, &end, 10);
	return *end != '\0' || p < CONFIG_PORT_BASE_MIN || p > 65535
		   ? "must be empty (off) or a port in 1024..65535"
		   : NULL;
}

static const char *config_check_restart(const char *v)
{
	enum policy_restart r;

	return policy_restart_parse(v, &r) < 0 ? "must be no, on-failure or always" : NULL;
}

static const char *config_check_duration(const char *v)
{
	int64_t secs;

	return v[0] != '\0' && policy_parse_duration(v, &secs) < 0
		   ? "must be empty (none) or a duration such as 90s, 30m, 2h or 1d"
		   : NULL;
}

static const char *config_check_budget(const char *v)
{
	uint64_t micros;

	return v[0] != '\0' && cost_parse_usd(v, &micros) < 0
		   ? "must be empty (none) or dollars above 0, at most 1000000, to a millionth "
		     "(0.5, 20)"
		   : NULL;
}

/* argv as a JSON array of 1 to POLICY_SETUP_ARGV_MAX strings, the first an absolute path: no
 * shell reads it. */
static const char *config_check_setup(const char *v)
{
	const char *why = NULL;
	json_object *a;
	size_t n;

	if (v[0] == '\0')
		return NULL;
	a = json_tokener_parse(v);
	if (a == NULL || !json_object_is_type(a, json_type_array) ||
	    (n = json_object_array_length(a)) == 0 || n > POLICY_SETUP_ARGV_MAX)
		why = "must be a JSON array of 1 to 64 strings (argv; no shell)";
	for (size_t i = 0; why == NULL && i < n; i++) {
		json_object *w = json_object_array_get_idx(a, i);

		if (!json_object_is_type(w, json_type_string) ||
		    strlen(json_object_get_string(w)) != (size_t)json_object_get_string_len(w))
			why = "must hold strings only, without NUL";
		else if (i == 0 && json_object_get_string(w)[0] != '/')
			why = "must start with an absolute path";
	}
	json_object_put(a);
	return why;
}

int config_port_base(const struct config *cfg)
{
	return config_check_port(cfg->port_base) == NULL ? atoi(cfg->port_base) : 0;
}

/*
 * Add new keys here: one line each, with its default (a value config_set accepts) and its
 * meaning. This table is the configuration's one list: config_defaults, config_load,
 * `agentd-api config` and README.md's table (tests/unit/test_config.c checks it) all follow it.
 */
/* clang-format off */
static const struct config_key config_keys[] = {
    KEY_STR("AGENTD_LISTEN", listen, "127.0.0.1:8080", "[host:]port nginx listens on"),
    KEY_STR("AGENTD_RUNTIME_DIR", runtime_dir, "/run/agentd", "sockets, tmux, nginx's files: what a reboot may lose"),
    KEY_STR("AGENTD_STATE_DIR", state_dir, "/var/lib/agentd", "tokens, session records, event logs: what outlives a reboot"),
    KEY_STR("AGENTD_BASE_DIR", base_dir, "/code", "worktrees and bare clones"),
    KEY_CHECKED("AGENTD_GIT_STORE_DIR", git_store_dir, config_check_store, "", "the git stores of the store layout (empty: bare clones)"),
    KEY_STR("AGENTD_REPO_URL", repo_url, "https://github.com/{owner}/{name}.git", "where a repository is cloned from"),
    KEY_STR("AGENTD_CLAUDE", claude, "claude", "the agent executable"),
    KEY_STR("AGENTD_CLAUDE_ARGS", claude_args, "", "extra arguments for every launch"),
    KEY_STR("AGENTD_PROMPT", prompt, CONFIG_DEFAULT_PROMPT, "the bootstrap prompt"),
    KEY_STR("AGENTD_AGENT_ENV", agent_env, CONFIG_DEFAULT_AGENT_ENV, "the only variables of the daemons' environment an agent gets"),
    KEY_INT("AGENTD_MAX_SESSIONS", max_sessions, 1, 10000, "16", "sessions at most; creating more answers 429"),
    KEY_STR("AGENTD_ALLOWED_ORIGINS", allowed_origins, "", "browser origins allowed besides the same origin (nginx, the daemons)"),
    KEY_STR("AGENTD_ALLOWED_HOSTS", allowed_hosts, "", "Host names nginx answers besides the listen address and loopback"),
    KEY_INT("AGENTD_PERMISSION_TIMEOUT", permission_timeout, 1, 86400, "600", "seconds before an unanswered permission is denied"),
    KEY_STR("AGENTD_TMUX", tmux, "tmux", "the tmux executable"),
    KEY_STR("AGENTD_HOST_BIN", host, "", "agentd-host (empty: beside agentd-api)"),
    KEY_CHECKED("AGENTD_AGENT_USER", agent_user, config_check_user, "agentd", "the user agents run as"),
    KEY_CHECKED("AGENTD_AGENT_HOME", agent_home, config_check_home, "", "the agent's HOME (empty: the user's home directory)"),
    KEY_CHECKED("AGENTD_CAGE", cage, config_check_cage, "auto", "auto: cage each session when possible; off: never"),
    KEY_CHECKED("AGENTD_SESSION_UIDS", session_uids, config_check_uids, "61184-65519", "the range of per-session uids"),
    KEY_CHECKED("AGENTD_HOMES_DIR", homes_dir, config_check_dir, "/var/lib/agentd-homes", "each caged session's own HOME"),
    KEY_CHECKED("AGENTD_AGENT_HOME_TEMPLATE", agent_home_template, config_check_home, "", "what a new session's HOME is copied from (empty: AGENTD_AGENT_HOME)"),
    KEY_CHECKED("AGENTD_SECRETS_DIR", secrets_dir, config_check_home, "/etc/agentd/secrets", "credentials, one file per variable (empty: none)"),
    KEY_STR("AGENTD_URL", url, "", "where clients reach agent-daemon (empty: http://<AGENTD_LISTEN>)"),
    KEY_SECRET("AGENTD_TOKEN", token, "", "a client's access token"),
    KEY_SECRET("AGENTD_TELEGRAM_TOKEN", telegram_token, "", "the Telegram bot's token"),
    KEY_STR("AGENTD_TELEGRAM_TOKEN_FILE", telegram_token_file, "", "a file holding the Telegram bot's token"),
    KEY_STR("AGENTD_TELEGRAM_API", telegram_api, "https://api.telegram.org", "the Telegram Bot API"),
    KEY_STR("AGENTD_TELEGRAM_USERS", telegram_users, "", "the Telegram user ids the bot serves"),
    KEY_STR("AGENTD_TELEGRAM_STATE", telegram_state, "", "the bot's state file (empty: its default)"),
    KEY_STR("AGENTD_TELEGRAM_WEB_URL", telegram_web_url, "", "the web UI as a phone reaches it (empty: AGENTD_URL)"),
    KEY_STR("AGENTD_TAILSCALE_USERS", tailscale_users, "", "Tailscale logins let in as admins on the tailscale serve socket"),
    KEY_STR("AGENTD_TAILSCALE_VIEWERS", tailscale_viewers, "", "Tailscale logins let in read-only"),
    KEY_STR("AGENTD_TAILSCALE_SOCKET", tailscale_socket, "/run/agentd-tailscale/nginx.sock", "nginx's listener for tailscale serve"),
    KEY_SECRET("AGENTD_METRICS_TOKEN", metrics_token, "", "a token that opens GET /metrics only"),
    KEY_PATH("AGENTD_HOOK", hook, "", "agentd-hook (empty: beside agentd-api)"),
    KEY_INT("AGENTD_TERMINAL_PERMISSION_WAIT", terminal_permission_wait, 0, 86400, "600", "seconds a client may also answer a terminal's permission dialog"),
    KEY_LIMIT("AGENTD_SESSION_MEMORY_MAX", CONFIG_MEMORY, session_memory_max, "4G", "each session's memory, swap included"),
    KEY_LIMIT("AGENTD_SESSION_CPUS", CONFIG_CPUS, session_cpu_milli, "2", "each session's CPU time, in CPUs"),
    /* pid_max's ceiling (PID_MAX_LIMIT, 2^22): no cgroup holds more tasks. */
    KEY_INT("AGENTD_SESSION_TASKS_MAX", session_tasks_max, 1, 4194304, "4096", "each session's processes and threads"),
    KEY_CHECKED("AGENTD_CGROUP_PARENT", cgroup_parent, config_check_cgroup, "agentd", "the cgroup every session's cgroup is made under"),
    KEY_CHECKED("AGENTD_PORT_BASE", port_base, config_check_port, "", "the first of the sessions' own ports (empty: off)"),
    /* A dev server, its tests and a debugger fit in a few; 1000 keeps 60 sessions apart. */
    KEY_INT("AGENTD_PORT_SPAN", port_span, 1, 1000, "10", "how many ports each session gets"),
    KEY_STR("AGENTD_PUSH_ALLOW_HTTP_ORIGIN", push_allow_http_origin, "", "the one http:// origin a Web Push endpoint may have (a test's fake push service)"),
    KEY_STR("AGENTD_GITHUB_API", github_api, "https://api.github.com", "GitHub's REST API (pull requests)"),
    /* GitHub's own advice for polling: not more than once a minute; tests ask for less. */
    KEY_INT("AGENTD_PR_POLL_SECONDS", pr_poll_seconds, 1, 86400, "60", "seconds between polls of an open pull request, at least"),
    KEY_CHECKED("AGENTD_RESTART_POLICY", restart_policy, config_check_restart, "on-failure", "no, on-failure or always: whether an agent that ends is resumed"),
    KEY_INT("AGENTD_MAX_RESTARTS", max_restarts, 0, POLICY_MAX_RESTARTS_MAX, "5", "restarts before a crashing session stays exited (restart_limit)"),
    /* An hour: a first wait longer than that is no restart policy any more. */
    KEY_INT("AGENTD_RESTART_BACKOFF_MS", restart_backoff_ms, 1, 3600000, "3000", "the wait before the first restart, doubled at each one"),
    KEY_CHECKED("AGENTD_SESSION_TIMEOUT", session_timeout, config_check_duration, "", "how long a session may run (90s, 2h; empty: no limit)"),
    /* An hour: an agent that needs longer to write its transcript is stuck. */
    KEY_INT("AGENTD_STOP_GRACE", stop_grace, 0, 3600, "30", "seconds from an agent's interrupt to its kill"),
    KEY_CHECKED("AGENTD_SETUP_COMMAND", setup_command, config_check_setup, "", "argv (a JSON array) run once in a new worktree before the agent"),
    KEY_CHECKED("AGENTD_SETUP_DIR", setup_dir, config_check_home, "", "per-repository setup programs, <dir>/<owner>/<name>"),
    KEY_STR("AGENTD_DEFAULT_AGENT", default_agent, "claude", "the agent of a session whose POST names none (claude, codex, gemini, opencode or a configured one)"),
    KEY_CHECKED("AGENTD_SESSION_BUDGET_USD", session_budget_usd, config_check_budget, "", "a new session's budget in US dollars when its POST gives none (empty: none)"),
};
/* clang-format on */

#define CONFIG_KEY_COUNT (sizeof(config_keys) / sizeof(config_keys[0]))
_Static_assert(CONFIG_KEY_COUNT <= CONFIG_KEYS_MAX, "raise CONFIG_KEYS_MAX for the new keys");

#define CONFIG_AGENT_PREFIX "AGENTD_AGENT_"

/* The fields of an agent's keys, AGENTD_AGENT_<NAME><suffix>. */
static const struct config_agent_key {
	const char *suffix;
	size_t offset, size;
	size_t given; /* offset of its has_ flag, or SIZE_MAX */
} config_agent_keys[] = {
    {"_COMMAND", offsetof(struct config_agent, command), CONFIG_AGENT_WORDS_MAX, SIZE_MAX},
    {"_ARGS", offsetof(struct config_agent, args), CONFIG_AGENT_WORDS_MAX, SIZE_MAX},
    {"_PROMPT", offsetof(struct config_agent, prompt), CONFIG_AGENT_SHAPE_MAX,
     offsetof(struct config_agent, has_prompt)},
    {"_START", offsetof(struct config_agent, start), CONFIG_AGENT_SHAPE_MAX,
     offsetof(struct config_agent, has_start)},
    {"_RESUME", offsetof(struct config_agent, resume), CONFIG_AGENT_SHAPE_MAX,
     offsetof(struct config_agent, has_resume)},
    {"_ACP", offsetof(struct config_agent, acp), CONFIG_AGENT_WORDS_MAX, SIZE_MAX},
};

/*
 * The agent key's field: which one (its index in config_agent_keys) and the agent's lower-case
 * name into name. -1 when key is no agent key. The fixed keys that share the prefix
 * (AGENTD_AGENT_ENV, _USER, _HOME, _HOME_TEMPLATE) are found by config_find before this.
 */
static int config_agent_key(const char *key, char name[CONFIG_AGENT_NAME_MAX + 1])
{
	size_t plen = strlen(CONFIG_AGENT_PREFIX), klen = strlen(key);

	if (strncmp(key, CONFIG_AGENT_PREFIX, plen) != 0)
		return -1;
	for (size_t i = 0; i < sizeof(config_agent_keys) / sizeof(config_agent_keys[0]); i++) {
		size_t slen = strlen(config_agent_keys[i].suffix), nlen;

		if (klen <= plen + slen ||
		    strcmp(key + klen - slen, config_agent_keys[i].suffix) != 0)
			continue;
		nlen = klen - plen - slen;
		if (nlen > CONFIG_AGENT_NAME_MAX)
			return -1;
		for (size_t j = 0; j < nlen; j++) {
			char c = key[plen + j];

			if (!((c >= 'A' && c <= 'Z') ||
			      (j > 0 && ((c >= '0' && c <= '9') || c == '_'))))
				return -1;
			name[j] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
		}
		name[nlen] = '\0';
		return (int)i;
	}
	return -1;
}

/* A prompt shape: "--", "none", or an option the prompt is glued to ("--prompt="), so that the
 * prompt is never a word of its own that the CLI could read as an option. */
static bool config_prompt_shape_valid(const char *v)
{
	size_t n = strlen(v);

	return strcmp(v, "--") == 0 || strcmp(v, "none") == 0 ||
	       (n >= 2 && v[0] == '-' && v[n - 1] == '=' && strcspn(v, " \t") == n);
}

static int config_set_agent(struct config *cfg, int which, const char *name, const char *key,
			    const char *value, struct cause *cause)
{
	const struct config_agent_key *k = &config_agent_keys[which];
	struct config_agent *a = NULL;

	for (size_t i = 0; i < CONFIG_AGENTS_MAX && a == NULL; i++)
		if (strcmp(cfg->agents[i].name, name) == 0)
			a = &cfg->agents[i];
	for (size_t i = 0; i < CONFIG_AGENTS_MAX && a == NULL; i++)
		if (cfg->agents[i].name[0] == '\0') {
			a = &cfg->agents[i];
			snprintf(a->name, sizeof(a->name), "%s", name);
		}
	if (a == NULL)
		return cause_fail(cause, E2BIG, "%s: more than %d agents are configured", key,
				  CONFIG_AGENTS_MAX);
	if (strlen(value) >= k->size)
		return cause_fail(cause, ENAMETOOLONG, "%s is longer than %zu bytes", key,
				  k->size - 1);
	if (strchr(value, '\n') != NULL)
		return cause_fail(cause, EINVAL, "%s contains a newline", key);
	if (which == 2 && !config_prompt_shape_valid(value))
		return cause_fail(
		    cause, EINVAL,
		    "%s must be --, none or an option ending in '=' (e.g. --prompt=), "
		    "not '%s'",
		    key, value);
	memcpy((char *)a + k->offset, value, strlen(value) + 1);
	if (k->given != SIZE_MAX)
		*(bool *)(void *)((char *)a + k->given) = true;
	return 0;
}

void config_defaults(struct config *cfg)
{
	struct cause cause;

	memset(cfg, 0, sizeof(*cfg));
	/* Every default passes its key's rule (tests/unit/test_config.c checks each one). */
	for (size_t i = 0; i < CONFIG_KEY_COUNT; i++)
		if (config_keys[i].def != NULL)
			(void)config_set(cfg, config_keys[i].name, config_keys[i].def, &cause);
}

bool config_path_plain(const char *path)
{
	const char *p;

	if (path[0] != '/')
		return false;
	for (p = path; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("._/+@~-", *p) != NULL))
			return false;
	/* No "." or ".." component: the path says plainly where the file is. */
	for (p = path; (p = strchr(p, '/')) != NULL; p++) {
		size_t len = strcspn(p + 1, "/");

		if ((len == 1 && p[1] == '.') || (len == 2 && p[1] == '.' && p[2] == '.'))
			return false;
	}
	return true;
}

static const struct config_key *config_find(const char *key)
{
	for (size_t i = 0; i < CONFIG_KEY_COUNT; i++)
		if (strcmp(config_keys[i].name, key) == 0)
			return &config_keys[i];
	return NULL;
}

int config_set(struct config *cfg, const char *key, const char *value, struct cause *cause)
{
	const struct config_key *k = config_find(key);
	char agent[CONFIG_AGENT_NAME_MAX + 1];
	const char *why;
	char *field, *end;
	long v;
	int which;

	if (k == NULL && (which = config_agent_key(key, agent)) >= 0)
		return config_set_agent(cfg, which, agent, key, value, cause);
	if (k == NULL)
		return cause_fail(cause, EINVAL, "unknown configuration key %s", key);
	field = (char *)cfg + k->offset;
	if (k->kind == CONFIG_PLAIN_PATH && value[0] != '\0' && !config_path_plain(value))
		return cause_fail(
		    cause, EINVAL,
		    "%s must be an absolute path of letters, digits and ._/+@~- only, "
		    "not '%s'",
		    key, value);
	if (k->kind == CONFIG_MEMORY) {
		if (cgroup_parse_memory(value, (uint64_t *)(void *)field) < 0)
			return cause_fail(cause, EINVAL,
					  "%s must be a size of at least 16M (digits, then K, M, G "
					  "or T), not '%s'",
					  key, value);
		return 0;
	}
	if (k->kind == CONFIG_CPUS) {
		if (cgroup_parse_cpus(value, (uint32_t *)(void *)field) < 0)
			return cause_fail(cause, EINVAL,
					  "%s must be a number of CPUs above 0 and at most %d (up "
					  "to 3 decimals), not '%s'",
					  key, CGROUP_CPUS_MAX, value);
		return 0;
	}
	if (k->kind != CONFIG_INT) {
		if (strlen(value) >= k->size)
			return cause_fail(cause, ENAMETOOLONG, "%s is longer than %zu bytes", key,
					  k->size - 1);
		if (strchr(value, '\n') != NULL)
			return cause_fail(cause, EINVAL, "%s contains a newline", key);
		if (k->check != NULL && (why = k->check(value)) != NULL)
			return cause_fail(cause, EINVAL, "%s %s, not '%s'", key, why, value);
		memcpy(field, value, strlen(value) + 1);
		return 0;
	}
	errno = 0;
	v = strtol(value, &end, 10);
	if (errno != 0 || end == value || *end != '\0' || v < k->min || v > (long)k->size)
		return cause_fail(cause, EINVAL, "%s must be an integer in %d..%zu, not '%s'", key,
				  k->min, k->size, value);
	*(int *)(void *)field = (int)v;
	return 0;
}

/* config_set, and the note of where the value came from. */
static int config_apply(struct config *cfg, const char *key, const char *value,
			enum config_source source, struct cause *cause)
{
	const struct config_key *k = config_find(key);
	int r = config_set(cfg, key, value, cause);

	if (r == 0 && k != NULL)
		cfg->source[k - config_keys] = (unsigned char)source;
	return r;
}

static char *config_trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
		*--e = '\0';
	return s;
}

/* Strips one level of matching single or double quotes, as systemd EnvironmentFile does. */
static char *config_unquote(char *v)
{
	size_t n = strlen(v);

	if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
		v[n - 1] = '\0';
		return v + 1;
	}
	return v;
}

static int config_load_file(struct config *cfg, const char *path, bool must_exist,
			    struct cause *cause)
{
	char *line = NULL;
	size_t cap = 0;
	struct stat sb;
	ssize_t n;
	FILE *f;
	int lineno = 0, r = 0;

	f = fopen(path, "re");
	if (f == NULL) {
		if (errno == ENOENT && !must_exist)
			return 0;
		return cause_fail(cause, errno, "cannot open %s: %s", path, strerror(errno));
	}
	snprintf(cfg->file, sizeof(cfg->file), "%s", path);
	/* Bounding the file bounds every line getline can return. */
	if (fstat(fileno(f), &sb) < 0 || !S_ISREG(sb.st_mode)) {
		r = cause_fail(cause, EINVAL, "%s is not a regular file", path);
		goto out;
	}
	if (sb.st_size > CONFIG_FILE_MAX) {
		r = cause_fail(cause, EFBIG, "%s is larger than %d bytes", path, CONFIG_FILE_MAX);
		goto out;
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		char *s, *eq;

		lineno++;
		if (strlen(line) != (size_t)n) {
			r = cause_fail(cause, EINVAL, "%s:%d: line contains a NUL byte", path,
				       lineno);
			goto out;
		}
		if ((size_t)n > CONFIG_VALUE_MAX + CONFIG_KEY_MAX) {
			r = cause_fail(cause, ENAMETOOLONG, "%s:%d: line too long", path, lineno);
			goto out;
		}
		s = config_trim(line);
		if (*s == '\0' || *s == '#')
			continue;
		eq = strchr(s, '=');
		if (eq == NULL) {
			r = cause_fail(cause, EINVAL, "%s:%d: expected KEY=value", path, lineno);
			goto out;
		}
		*eq = '\0';
		r = config_apply(cfg, config_trim(s), config_unquote(config_trim(eq + 1)),
				 CONFIG_SOURCE_FILE, cause);
		if (r < 0) {
			struct cause inner = *cause;
			cause_set(cause, "%s:%d: %s", path, lineno, inner.msg);
			goto out;
		}
	}
	if (r == 0 && ferror(f))
		r = cause_fail(cause, EIO, "cannot read %s", path);
out:
	free(line);
	fclose(f);
	return r;
}

int config_load(struct config *cfg, struct cause *cause)
{
	extern char **environ;
	const char *file = getenv("AGENTD_CONFIG");
	int r;

	config_defaults(cfg);
	r = config_load_file(cfg, file != NULL && *file != '\0' ? file : CONFIG_DEFAULT_FILE,
			     file != NULL && *file != '\0', cause);
	if (r < 0)
		return r;
	for (char **e = environ; *e != NULL; e++) {
		char key[64], agent[CONFIG_AGENT_NAME_MAX + 1];
		const char *eq = strchr(*e, '=');
		size_t klen;

		if (strncmp(*e, "AGENTD_", 7) != 0 || eq == NULL)
			continue;
		klen = (size_t)(eq - *e);
		if (klen >= sizeof(key))
			return cause_fail(cause, EINVAL, "environment variable name too long");
		memcpy(key, *e, klen);
		key[klen] = '\0';
		if (config_find(key) == NULL && config_agent_key(key, agent) < 0)
			continue; /* AGENTD_* names used by tests and scripts, not by us */
		r = config_apply(cfg, key, eq + 1, CONFIG_SOURCE_ENV, cause);
		if (r < 0)
			return r;
	}
	return agents_check_config(cfg, cause);
}

int config_runtime_path(const struct config *cfg, const char *leaf, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "%s/%s", cfg->runtime_dir, leaf);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

int config_state_path(const struct config *cfg, const char *leaf, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "%s/%s", cfg->state_dir, leaf);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

size_t config_key_count(void)
{
	return CONFIG_KEY_COUNT;
}

int config_key_doc(size_t i, struct config_keydoc *doc)
{
	if (i >= CONFIG_KEY_COUNT)
		return -ENOENT;
	doc->name = config_keys[i].name;
	doc->def = config_keys[i].def;
	doc->meaning = config_keys[i].meaning;
	doc->secret = config_keys[i].secret;
	return 0;
}

enum config_source config_key_source(const struct config *cfg, size_t i)
{
	return i < CONFIG_KEY_COUNT ? (enum config_source)cfg->source[i] : CONFIG_SOURCE_DEFAULT;
}

const char *config_source_name(enum config_source source)
{
	switch (source) {
	case CONFIG_SOURCE_FILE:
		return "file";
	case CONFIG_SOURCE_ENV:
		return "environment";
	case CONFIG_SOURCE_DEFAULT:
		break;
	}
	return "default";
}

/* A byte count as cgroup_parse_memory reads it back: the largest unit that divides it. */
static int config_format_memory(uint64_t bytes, char *out, size_t outlen)
{
	static const char units[] = "TGMK";

	for (int i = 0; i < 4; i++) {
		uint64_t unit = 1ULL << (10 * (4 - i));

		if (bytes % unit == 0)
			return snprintf(out, outlen, "%llu%c", (unsigned long long)(bytes / unit),
					units[i]);
	}
	return snprintf(out, outlen, "%llu", (unsigned long long)bytes);
}

/* Thousandths of a CPU as cgroup_parse_cpus reads them back: "2", "1.5", "0.125". */
static int config_format_cpus(uint32_t milli, char *out, size_t outlen)
{
	char frac[8];
	size_t n;

	if (milli % 1000 == 0)
		return snprintf(out, outlen, "%u", milli / 1000);
	snprintf(frac, sizeof(frac), "%03u", milli % 1000);
	n = strlen(frac);
	while (n > 0 && frac[n - 1] == '0')
		frac[--n] = '\0';
	return snprintf(out, outlen, "%u.%s", milli / 1000, frac);
}

int config_format(const struct config *cfg, size_t i, char *out, size_t outlen)
{
	const struct config_key *k;
	const char *field;
	int n;

	if (i >= CONFIG_KEY_COUNT)
		return -ENOENT;
	k = &config_keys[i];
	field = (const char *)cfg + k->offset;
	switch (k->kind) {
	case CONFIG_INT:
		n = snprintf(out, outlen, "%d", *(const int *)(const void *)field);
		break;
	case CONFIG_MEMORY:
		n = config_format_memory(*(const uint64_t *)(const void *)field, out, outlen);
		break;
	case CONFIG_CPUS:
		n = config_format_cpus(*(const uint32_t *)(const void *)field, out, outlen);
		break;
	default:
		n = snprintf(out, outlen, "%s", field);
		break;
	}
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}
