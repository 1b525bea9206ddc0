/*
 * The configuration file (core/config.c: KEY=value lines, '#' comments, quotes stripped once).
 * Input: the file's bytes, in a memfd named by AGENTD_CONFIG (/proc/self/fd/N); no other
 * AGENTD_* variable is set. A file that loads gives a configuration whose strings fit their
 * fields without a newline and whose numbers lie in their ranges, and writing that configuration
 * back out as KEY="value" lines loads the very same configuration again.
 */
#include "fuzz.h"

#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

extern char **environ;

static const struct {
	const char *key;
	size_t offset, size;
} strs[] = {
    {"AGENTD_LISTEN", offsetof(struct config, listen), sizeof(((struct config *)0)->listen)},
    {"AGENTD_RUNTIME_DIR", offsetof(struct config, runtime_dir), CONFIG_PATH_MAX},
    {"AGENTD_BASE_DIR", offsetof(struct config, base_dir), CONFIG_PATH_MAX},
    {"AGENTD_REPO_URL", offsetof(struct config, repo_url), CONFIG_VALUE_MAX},
    {"AGENTD_CLAUDE", offsetof(struct config, claude), CONFIG_PATH_MAX},
    {"AGENTD_CLAUDE_ARGS", offsetof(struct config, claude_args), CONFIG_VALUE_MAX},
    {"AGENTD_PROMPT", offsetof(struct config, prompt), CONFIG_VALUE_MAX},
    {"AGENTD_AGENT_ENV", offsetof(struct config, agent_env), CONFIG_VALUE_MAX},
    {"AGENTD_ALLOWED_ORIGINS", offsetof(struct config, allowed_origins), CONFIG_VALUE_MAX},
    {"AGENTD_ALLOWED_HOSTS", offsetof(struct config, allowed_hosts), CONFIG_VALUE_MAX},
    {"AGENTD_TMUX", offsetof(struct config, tmux), CONFIG_PATH_MAX},
    {"AGENTD_HOST_BIN", offsetof(struct config, host), CONFIG_PATH_MAX},
    {"AGENTD_AGENT_USER", offsetof(struct config, agent_user), CONFIG_USER_MAX + 1},
    {"AGENTD_AGENT_HOME", offsetof(struct config, agent_home), CONFIG_PATH_MAX},
};
#define NSTRS (sizeof(strs) / sizeof(strs[0]))

static int memfd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char path[64];

	/* Only the file under test may configure: drop every AGENTD_* of the environment. */
	for (char **e = environ; *e != NULL;) {
		if (strncmp(*e, "AGENTD_", 7) == 0) {
			char name[256];
			size_t n = strcspn(*e, "=");

			snprintf(name, sizeof(name), "%.*s", (int)n, *e);
			unsetenv(name);
			e = environ;
		} else {
			e++;
		}
	}
	memfd = memfd_create("agentd.conf", MFD_CLOEXEC);
	FUZZ_CHECK(memfd >= 0, "memfd_create");
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	setenv("AGENTD_CONFIG", path, 1);
	return 0;
}

static void put(const void *p, size_t n)
{
	FUZZ_CHECK(ftruncate(memfd, 0) == 0 && pwrite(memfd, p, n, 0) == (ssize_t)n,
		   "writing the memfd");
}

static int load(const void *p, size_t n, struct config *cfg, struct cause *cause)
{
	put(p, n);
	memset(cfg, 0x5a, sizeof(*cfg));
	memset(cause, 0, sizeof(*cause));
	return config_load(cfg, cause);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config a, b;
	struct cause cause;
	char *out, *o;
	size_t cap;
	int r;

	if (size > CONFIG_FILE_MAX + 1)
		return -1;
	r = load(data, size, &a, &cause);
	FUZZ_CHECK(r == 0 || r == -EINVAL || r == -EFBIG || r == -ENAMETOOLONG,
		   "config_load returned %d", r);
	if (r < 0) {
		FUZZ_CHECK(cause.msg[0] != '\0', "refused without a cause");
		return 0;
	}
	cap = 256;
	for (size_t i = 0; i < NSTRS; i++) {
		const char *v = (const char *)&a + strs[i].offset;
		size_t n = strnlen(v, strs[i].size);

		FUZZ_CHECK(n < strs[i].size, "%s is not NUL-terminated in its field", strs[i].key);
		FUZZ_CHECK(strchr(v, '\n') == NULL, "%s holds a newline", strs[i].key);
		cap += strlen(strs[i].key) + n + 4;
	}
	FUZZ_CHECK(a.max_sessions >= 1 && a.max_sessions <= 10000, "max_sessions %d",
		   a.max_sessions);
	FUZZ_CHECK(a.permission_timeout >= 1 && a.permission_timeout <= 86400,
		   "permission_timeout %d", a.permission_timeout);

	out = o = malloc(cap);
	FUZZ_CHECK(out != NULL, "out of memory");
	for (size_t i = 0; i < NSTRS; i++)
		o += sprintf(o, "%s=\"%s\"\n", strs[i].key, (const char *)&a + strs[i].offset);
	o += sprintf(o, "# numbers\nAGENTD_MAX_SESSIONS=%d\nAGENTD_PERMISSION_TIMEOUT=%d\n",
		     a.max_sessions, a.permission_timeout);
	r = load(out, (size_t)(o - out), &b, &cause);
	FUZZ_CHECK(r == 0, "the loaded configuration written out is refused: %s", cause.msg);
	for (size_t i = 0; i < NSTRS; i++)
		FUZZ_CHECK(strcmp((const char *)&a + strs[i].offset,
				  (const char *)&b + strs[i].offset) == 0,
			   "%s changed in a round trip", strs[i].key);
	FUZZ_CHECK(a.max_sessions == b.max_sessions && a.permission_timeout == b.permission_timeout,
		   "numbers changed in a round trip");
	free(out);
	return 0;
}
