#include "config.h"

#include "agents.h"
#include "cageuid.h"

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
};

#define STR_KEY(n, f) STR_KEY_CHECKED(n, f, NULL)
#define STR_KEY_CHECKED(n, f, c)                                                                   \
	{                                                                                          \
		n, CONFIG_STR, offsetof(struct config, f), sizeof(((struct config *)0)->f), 0, c   \
	}
#define PATH_KEY(n, f)                                                                             \
	{                                                                                          \
		n, CONFIG_PLAIN_PATH, offsetof(struct config, f), sizeof(((struct config *)0)->f), \
		    0, NULL                                                                        \
	}
#define LIMIT_KEY(n, kind, f)                                                                      \
	{                                                                                          \
		n, kind, offsetof(struct config, f), sizeof(((struct config *)0)->f), 0, NULL      \
	}
#define INT_KEY(n, f, lo, hi)                                                                      \
	{                                                                                          \
		n, CONFIG_INT, offsetof(struct config, f), hi, lo, NULL                            \
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

int config_port_base(const struct config *cfg)
{
	return config_check_port(cfg->port_base) == NULL ? atoi(cfg->port_base) : 0;
}

static const struct config_key config_keys[] = {
    STR_KEY("AGENTD_LISTEN", listen),
    STR_KEY("AGENTD_RUNTIME_DIR", runtime_dir),
    STR_KEY("AGENTD_STATE_DIR", state_dir),
    STR_KEY("AGENTD_BASE_DIR", base_dir),
    STR_KEY_CHECKED("AGENTD_GIT_STORE_DIR", git_store_dir, config_check_store),
    STR_KEY("AGENTD_REPO_URL", repo_url),
    STR_KEY("AGENTD_CLAUDE", claude),
    STR_KEY("AGENTD_CLAUDE_ARGS", claude_args),
    STR_KEY("AGENTD_PROMPT", prompt),
    STR_KEY("AGENTD_AGENT_ENV", agent_env),
    INT_KEY("AGENTD_MAX_SESSIONS", max_sessions, 1, 10000),
    STR_KEY("AGENTD_ALLOWED_ORIGINS", allowed_origins),
    STR_KEY("AGENTD_ALLOWED_HOSTS", allowed_hosts),
    INT_KEY("AGENTD_PERMISSION_TIMEOUT", permission_timeout, 1, 86400),
    STR_KEY("AGENTD_TMUX", tmux),
    STR_KEY("AGENTD_HOST_BIN", host),
    STR_KEY_CHECKED("AGENTD_AGENT_USER", agent_user, config_check_user),
    STR_KEY_CHECKED("AGENTD_AGENT_HOME", agent_home, config_check_home),
    STR_KEY_CHECKED("AGENTD_CAGE", cage, config_check_cage),
    STR_KEY_CHECKED("AGENTD_SESSION_UIDS", session_uids, config_check_uids),
    STR_KEY_CHECKED("AGENTD_HOMES_DIR", homes_dir, config_check_dir),
    STR_KEY_CHECKED("AGENTD_AGENT_HOME_TEMPLATE", agent_home_template, config_check_home),
    STR_KEY_CHECKED("AGENTD_SECRETS_DIR", secrets_dir, config_check_home),
    STR_KEY("AGENTD_URL", url),
    STR_KEY("AGENTD_TOKEN", token),
    STR_KEY("AGENTD_TELEGRAM_TOKEN", telegram_token),
    STR_KEY("AGENTD_TELEGRAM_TOKEN_FILE", telegram_token_file),
    STR_KEY("AGENTD_TELEGRAM_API", telegram_api),
    STR_KEY("AGENTD_TELEGRAM_USERS", telegram_users),
    STR_KEY("AGENTD_TELEGRAM_STATE", telegram_state),
    STR_KEY("AGENTD_TELEGRAM_WEB_URL", telegram_web_url),
    STR_KEY("AGENTD_TAILSCALE_USERS", tailscale_users),
    STR_KEY("AGENTD_TAILSCALE_VIEWERS", tailscale_viewers),
    STR_KEY("AGENTD_TAILSCALE_SOCKET", tailscale_socket),
    STR_KEY("AGENTD_METRICS_TOKEN", metrics_token),
    PATH_KEY("AGENTD_HOOK", hook),
    INT_KEY("AGENTD_TERMINAL_PERMISSION_WAIT", terminal_permission_wait, 0, 86400),
    LIMIT_KEY("AGENTD_SESSION_MEMORY_MAX", CONFIG_MEMORY, session_memory_max),
    LIMIT_KEY("AGENTD_SESSION_CPUS", CONFIG_CPUS, session_cpu_milli),
    /* pid_max's ceiling (PID_MAX_LIMIT, 2^22): no cgroup holds more tasks. */
    INT_KEY("AGENTD_SESSION_TASKS_MAX", session_tasks_max, 1, 4194304),
    STR_KEY_CHECKED("AGENTD_CGROUP_PARENT", cgroup_parent, config_check_cgroup),
    STR_KEY_CHECKED("AGENTD_PORT_BASE", port_base, config_check_port),
    /* A dev server, its tests and a debugger fit in a few; 1000 keeps 60 sessions apart. */
    INT_KEY("AGENTD_PORT_SPAN", port_span, 1, 1000),
    STR_KEY("AGENTD_DEFAULT_AGENT", default_agent),
};

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
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->listen, sizeof(cfg->listen), "127.0.0.1:8080");
	snprintf(cfg->runtime_dir, sizeof(cfg->runtime_dir), "/run/agentd");
	snprintf(cfg->state_dir, sizeof(cfg->state_dir), "/var/lib/agentd");
	snprintf(cfg->base_dir, sizeof(cfg->base_dir), "/code");
	snprintf(cfg->repo_url, sizeof(cfg->repo_url), "https://github.com/{owner}/{name}.git");
	snprintf(cfg->claude, sizeof(cfg->claude), "claude");
	snprintf(cfg->prompt, sizeof(cfg->prompt), "%s", CONFIG_DEFAULT_PROMPT);
	snprintf(cfg->agent_env, sizeof(cfg->agent_env), "%s", CONFIG_DEFAULT_AGENT_ENV);
	cfg->max_sessions = 16;
	cfg->port_span = 10;
	cfg->permission_timeout = 600;
	cfg->terminal_permission_wait = 600;
	snprintf(cfg->tmux, sizeof(cfg->tmux), "tmux");
	snprintf(cfg->agent_user, sizeof(cfg->agent_user), "agentd");
	snprintf(cfg->telegram_api, sizeof(cfg->telegram_api), "https://api.telegram.org");
	snprintf(cfg->tailscale_socket, sizeof(cfg->tailscale_socket),
		 "/run/agentd-tailscale/nginx.sock");
	/* The share the issue asks of a container's equal: 4 GB and 2 CPUs per session. */
	cfg->session_memory_max = 4ULL << 30;
	cfg->session_cpu_milli = 2000;
	cfg->session_tasks_max = 4096;
	snprintf(cfg->cgroup_parent, sizeof(cfg->cgroup_parent), "agentd");
	snprintf(cfg->cage, sizeof(cfg->cage), "auto");
	snprintf(cfg->session_uids, sizeof(cfg->session_uids), "%u-%u", CAGEUID_DEFAULT_MIN,
		 CAGEUID_DEFAULT_MAX);
	snprintf(cfg->homes_dir, sizeof(cfg->homes_dir), "/var/lib/agentd-homes");
	snprintf(cfg->secrets_dir, sizeof(cfg->secrets_dir), "/etc/agentd/secrets");
	snprintf(cfg->default_agent, sizeof(cfg->default_agent), "claude");
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
	for (size_t i = 0; i < sizeof(config_keys) / sizeof(config_keys[0]); i++)
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
		r = config_set(cfg, config_trim(s), config_unquote(config_trim(eq + 1)), cause);
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
		r = config_set(cfg, key, eq + 1, cause);
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
