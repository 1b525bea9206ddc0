/*
 * The token store as agentd-api's request threads see it: loaded once, loaded again when the
 * file changes (its device, inode, size, mtime or ctime differ from what was loaded: `token add`
 * and `token revoke` replace it by a rename), and the decision of core/auth.h taken under one
 * mutex. A store that exists but cannot be read or parsed refuses everyone (fail closed), with
 * one error line in the log each time it changes; a missing store is an empty one.
 *
 * "last used" is kept in memory and written back at most every AUTHCACHE_FLUSH_SECS seconds, by
 * the request that finds it due, under the store's lock (tokens.lock, as `agentd-api token`
 * takes it) and merged into the file as it is then: no write per request, and nothing a
 * concurrent `token revoke` did is undone.
 */
#ifndef AGENTD_AUTHCACHE_H
#define AGENTD_AUTHCACHE_H

#include "auth.h"
#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#define AUTHCACHE_FLUSH_SECS 60

struct authcache {
	pthread_mutex_t lock;
	char path[CONFIG_PATH_MAX];      /* tokens.json */
	char lock_path[CONFIG_PATH_MAX]; /* tokens.lock */
	struct auth_policy policy;       /* borrowed from the config */
	struct tokens t;
	bool loaded;  /* t and st describe the file as last read */
	bool broken;  /* ... which could not be read: everyone is refused */
	bool missing; /* ... which did not exist (t is empty) */
	struct stat st;
	bool dirty; /* a last_used in t is newer than the file's */
	int64_t last_flush;
};

/* Sets the paths and the policy from cfg; loads nothing yet. Returns 0 or -ENAMETOOLONG. */
int authcache_init(struct authcache *ac, const struct config *cfg);

void authcache_finish(struct authcache *ac);

/* Decides for in (core/auth.h) against the store as it is now, and notes a token's use at now
 * (unix seconds). Returns out->status; out->token is NULL on return (it is the cache's). */
int authcache_decide(struct authcache *ac, const struct auth_input *in, int64_t now,
		     struct auth_result *out);

#endif
