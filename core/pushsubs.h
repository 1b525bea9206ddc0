/*
 * The Web Push subscriptions (docs/API.md, "Push"): each identity's devices, as the browser's
 * pushManager.subscribe gave them. One JSON file in the state dir, replaced atomically (mode
 * 0600), written by agentd-api (the REST resource) and agentd-push (which drops a subscription
 * its push service says is gone), each under the lock file's flock:
 *   {"subscriptions":[{"id":"<16 hex>","identity":"alice","endpoint":"https://…",
 *     "p256dh":"<base64url>","auth":"<base64url>","name":"…","createdAt":"…"}]}
 * Everything here but pushsubs_lock/load/save is pure.
 */
#ifndef AGENTD_PUSHSUBS_H
#define AGENTD_PUSHSUBS_H

#include "auth.h"
#include "cause.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PUSHSUBS_FILE "push-subscriptions.json" /* in AGENTD_STATE_DIR */
#define PUSHSUBS_LOCK "push-subscriptions.lock"
/* Push services' endpoints are a few hundred bytes (FCM's about 200, Mozilla's about 300). */
#define PUSHSUB_ENDPOINT_MAX 1024
/* A person's phones, tablets and browsers; more is a script, not devices. */
#define PUSHSUBS_PER_IDENTITY 16
#define PUSHSUBS_MAX          1024 /* every identity's together */
#define PUSHSUBS_FILE_MAX     (4 * 1024 * 1024)
#define PUSHSUB_NAME_MAX      64 /* a label the page gives the device ("Firefox on Android") */
#define PUSHSUB_ID_LEN        16 /* hex of the endpoint's SHA-256: one id per device */
#define PUSHSUB_P256DH_MAX    90 /* base64url of 65 bytes (87), padded (88) */
#define PUSHSUB_AUTH_MAX      24 /* base64url of 16 bytes (22), padded (24) */

struct pushsub {
	char id[PUSHSUB_ID_LEN + 1];
	char identity[AUTH_IDENTITY_MAX + 1];
	char endpoint[PUSHSUB_ENDPOINT_MAX + 1];
	char p256dh[PUSHSUB_P256DH_MAX + 1];
	char auth[PUSHSUB_AUTH_MAX + 1];
	char name[PUSHSUB_NAME_MAX + 1];
	int64_t created_at;
};

struct pushsubs {
	struct pushsub *v;
	size_t n;
};

/* Takes the store's lock (lock_path, made 0600): returns the fd to close, or -errno. */
int pushsubs_lock(const char *lock_path);

/* Reads the store (empty when absent). Returns 0 or -errno / -EINVAL with cause. */
int pushsubs_load(const char *path, struct pushsubs *s, struct cause *cause);

/* Writes the store atomically (fsync'ed, 0600). Returns 0 or -errno with cause. */
int pushsubs_save(const char *path, const struct pushsubs *s, struct cause *cause);

void pushsubs_free(struct pushsubs *s);

/*
 * True when endpoint may be sent to: https://host[:port]/path, or http:// when its origin is
 * exactly allow_http_origin (a test's fake push service; "" allows none). At most
 * PUSHSUB_ENDPOINT_MAX bytes of printable ASCII, no userinfo, no fragment.
 */
bool pushsub_endpoint_valid(const char *endpoint, const char *allow_http_origin);

/* A name as the page gives it: 0 to PUSHSUB_NAME_MAX bytes of printable characters (UTF-8
 * allowed, no control character). */
bool pushsub_name_valid(const char *name);

/*
 * Adds sub (id computed from its endpoint) or replaces the entry of the same endpoint when it is
 * the same identity's. Returns 1 (added), 0 (replaced), -EEXIST (another identity's endpoint),
 * -E2BIG (the identity's or the store's cap), -ENOMEM.
 */
int pushsubs_put(struct pushsubs *s, const struct pushsub *sub);

/* Removes the entry id of identity (NULL: of anyone). Returns 0 or -ENOENT. */
int pushsubs_remove(struct pushsubs *s, const char *identity, const char *id);

/* The id of endpoint: PUSHSUB_ID_LEN hex digits of its SHA-256 and a NUL. */
void pushsub_id(const char *endpoint, char out[PUSHSUB_ID_LEN + 1]);

#endif
