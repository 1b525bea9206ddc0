#include "tokencmd.h"

#include "fsutil.h"
#include "isotime.h"
#include "tokens.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char tokencmd_usage[] =
    "usage: agentd-api token add NAME [--read-only]   make a token, print it once\n"
    "       agentd-api token list                     names, rights, created, last used\n"
    "       agentd-api token revoke NAME              the token stops working\n"
    "       agentd-api token init NAME                an admin token NAME, printed, only when\n"
    "                                                 the store holds no token (first start)\n";

/* Creates the state directory (private) and takes the store's lock. Returns the fd or -1. */
static int tokencmd_lock(const struct config *cfg, char *store, size_t storelen)
{
	char lock[CONFIG_PATH_MAX];
	int fd, r;

	if (config_state_path(cfg, TOKENCMD_STORE, store, storelen) < 0 ||
	    config_state_path(cfg, TOKENCMD_LOCK, lock, sizeof(lock)) < 0) {
		fprintf(stderr, "agentd-api: AGENTD_STATE_DIR is too long\n");
		return -1;
	}
	r = fsutil_mkdir_p(cfg->state_dir);
	if (r < 0) {
		fprintf(stderr, "agentd-api: cannot create %s: %s\n", cfg->state_dir, strerror(-r));
		return -1;
	}
	fd = fsutil_lock(lock, LOCK_EX, 0600);
	if (fd < 0) {
		fprintf(stderr, "agentd-api: cannot lock %s: %s\n", lock, strerror(-fd));
		return -1;
	}
	return fd;
}

static void tokencmd_time(int64_t t, char *out, size_t outlen)
{
	if (t == 0)
		snprintf(out, outlen, "never");
	else
		isotime_format(t, out, outlen);
}

int tokencmd_main(const struct config *cfg, int argc, char **argv)
{
	char store[CONFIG_PATH_MAX], text[TOKEN_TEXT_LEN + 1];
	struct cause cause = {{0}};
	struct tokens t = {0};
	bool add, list, revoke, init, read_only = false;
	int fd, r, status = 1;

	add = argc >= 3 && strcmp(argv[1], "add") == 0;
	list = argc == 2 && strcmp(argv[1], "list") == 0;
	revoke = argc == 3 && strcmp(argv[1], "revoke") == 0;
	init = argc == 3 && strcmp(argv[1], "init") == 0;
	if (add && argc == 4 && strcmp(argv[3], "--read-only") == 0)
		read_only = true;
	else if (add && argc != 3)
		add = false;
	if (!add && !list && !revoke && !init) {
		fputs(tokencmd_usage, stderr);
		return 2;
	}
	fd = tokencmd_lock(cfg, store, sizeof(store));
	if (fd < 0)
		return 1;
	r = tokens_load(store, &t, &cause);
	if (r < 0 && r != -ENOENT) {
		fprintf(stderr, "agentd-api: %s\n", cause.msg);
		goto out;
	}
	if (list) {
		printf("%-24s %-10s %-21s %s\n", "NAME", "RIGHTS", "CREATED", "LAST USED");
		for (size_t i = 0; i < t.n; i++) {
			char created[32], used[32];

			tokencmd_time(t.v[i].created_at, created, sizeof(created));
			tokencmd_time(t.v[i].last_used, used, sizeof(used));
			printf("%-24s %-10s %-21s %s\n", t.v[i].name,
			       t.v[i].read_only ? "read-only" : "admin", created, used);
		}
		status = 0;
		goto out;
	}
	if (init && t.n > 0) {
		status = 0; /* not the first start: nothing to print */
		goto out;
	}
	add = add || init;
	if (revoke) {
		if (tokens_revoke(&t, argv[2]) < 0) {
			fprintf(stderr, "agentd-api: no token named %s\n", argv[2]);
			goto out;
		}
	} else if (tokens_add(&t, argv[2], read_only, (int64_t)time(NULL), text, &cause) < 0) {
		fprintf(stderr, "agentd-api: %s\n", cause.msg);
		goto out;
	}
	if (tokens_save(store, &t, &cause) < 0) {
		fprintf(stderr, "agentd-api: %s\n", cause.msg);
		goto out;
	}
	if (add)
		printf("%s\n", text); /* the only time it is shown */
	else
		fprintf(stderr, "agentd-api: token %s revoked\n", argv[2]);
	status = 0;
out:
	tokens_free(&t);
	close(fd); /* releases the lock */
	return status;
}
