/*
 * The door, again, for connections that stay open (docs/API.md "Access"): nginx asks agentd-api
 * once, when a connection opens, and passes the credential that let it in (core/auth.h
 * AUTH_HEADER_CREDENTIAL: a token's stored hash, or a Tailscale login). The bridge reads the
 * token store agentd-api decides from (core/tokens.h; root's, as the bridge is) again whenever
 * the file changes, and a connection whose token is gone (revoked), or any connection while the
 * store cannot be read (the door then refuses everyone), is no longer let in: the caller ends it.
 * A Tailscale login is decided by the configuration, which is read once: it stays let in while
 * the store can be read. A missing store is an empty one, as for agentd-api.
 */
#ifndef AGENTD_BRIDGE_ACCESS_H
#define AGENTD_BRIDGE_ACCESS_H

#include "config.h"
#include "tokens.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

/* What a connection was let in with (access_parse). */
enum access_kind {
	ACCESS_NONE,      /* no credential header: not through nginx's door; grants nothing */
	ACCESS_TOKEN,     /* a token: hash is its SHA-256 */
	ACCESS_TAILSCALE, /* a listed Tailscale login */
	ACCESS_INVALID,   /* a header that is neither: never let in */
};

struct access_cred {
	enum access_kind kind;
	uint8_t hash[TOKEN_HASH_LEN];
};

/* Why a connection is no longer let in: the API.md code and sentence (plain ASCII, no quote). */
struct access_refusal {
	const char *code;
	const char *message;
};

struct access {
	char path[CONFIG_PATH_MAX]; /* the token store */
	struct tokens t;
	struct stat st;
	bool loaded;  /* t and st describe the file as last read */
	bool broken;  /* ... which could not be read: nobody is let in */
	bool missing; /* ... which did not exist (t is empty) */
};

/* Sets the store's path from cfg and reads it. Returns 0 or -ENAMETOOLONG. */
int access_init(struct access *a, const struct config *cfg);

void access_finish(struct access *a);

/*
 * Reads the store again when the file is not the one read last (device, inode, size, mtime or
 * ctime differ; `token add|revoke` replace it by a rename), as agentd-api does. Returns true when
 * what it lets in may have changed (read again, or now unreadable), false when nothing changed.
 */
bool access_refresh(struct access *a);

/* Reads the value of AUTH_HEADER_CREDENTIAL (NULL when absent) into cred. */
void access_parse(const char *value, struct access_cred *cred);

/* True while cred is let in by the store as last read (access_refresh); false with *why set. A
 * connection without a credential (ACCESS_NONE) is only refused while the store is broken. */
bool access_allowed(const struct access *a, const struct access_cred *cred,
		    struct access_refusal *why);

#endif
