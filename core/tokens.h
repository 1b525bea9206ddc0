/*
 * The token store: named bearer tokens for bots, scripts and browsers. A token is
 * shown once, when it is made; the store keeps only its SHA-256, so reading the file gives no
 * credential. One JSON file, replaced atomically (mode 0600):
 *   {"tokens":[{"name":"admin","sha256":"<64 hex>","readOnly":false,
 *               "createdAt":"2026-11-25T12:00:00Z","lastUsed":"…" or null}]}
 * (times are isotime's: 1970..9999, as the session records').
 * Tokens are 32 random bytes as "agentd_" + 43 base64url characters: a fast hash is enough (no
 * password to guess), and a presented token is compared with every entry in constant time.
 * Everything here but tokens_load/tokens_save is pure.
 */
#ifndef AGENTD_TOKENS_H
#define AGENTD_TOKENS_H

#include "cause.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TOKENS_MAX      256          /* entries in a store */
#define TOKENS_FILE_MAX (256 * 1024) /* a store file larger is refused */
#define TOKEN_NAME_MAX  64           /* 1..64 of [A-Za-z0-9._@:-] */
#define TOKEN_PREFIX    "agentd_"    /* names the credential in logs and scanners */
#define TOKEN_RANDOM    32           /* random bytes of a token */
#define TOKEN_TEXT_LEN  (7 + 43)     /* the prefix and the base64url of the bytes */
#define TOKEN_HASH_LEN  32           /* SHA-256 */
#define TOKEN_HASH_HEX  (2 * TOKEN_HASH_LEN)
#define TOKEN_FILE_MODE 0600
#define TOKENS_STORE    "tokens.json" /* in AGENTD_STATE_DIR */

struct token_entry {
	char name[TOKEN_NAME_MAX + 1];
	uint8_t hash[TOKEN_HASH_LEN];
	bool read_only;
	int64_t created_at; /* unix seconds */
	int64_t last_used;  /* unix seconds, 0: never */
};

struct tokens {
	struct token_entry *v;
	size_t n;
};

bool tokens_name_valid(const char *name);

/* Reads the store at path into t (empty when the file does not exist: -ENOENT is returned then,
 * with t usable). Returns 0, -ENOENT, or -errno / -EINVAL (a corrupt store: cause says why; t is
 * then empty, and a caller deciding access must refuse everything). */
int tokens_load(const char *path, struct tokens *t, struct cause *cause);

/* Writes t to path atomically (fsync'ed, mode TOKEN_FILE_MODE). Returns 0 or -errno with cause. */
int tokens_save(const char *path, const struct tokens *t, struct cause *cause);

/*
 * Makes a token for name: its text (TOKEN_TEXT_LEN characters and a NUL) is written to text and
 * only its hash kept in t. Returns 0, -EINVAL (bad name), -EEXIST (the name is taken), -E2BIG
 * (TOKENS_MAX entries), or -errno (no randomness, no memory).
 */
int tokens_add(struct tokens *t, const char *name, bool read_only, int64_t now,
	       char text[TOKEN_TEXT_LEN + 1], struct cause *cause);

/* Removes name. Returns 0 or -ENOENT. */
int tokens_revoke(struct tokens *t, const char *name);

/* The entry whose token is presented (len bytes, not NUL-terminated), or NULL. Every entry is
 * compared, in constant time, whatever matches. */
struct token_entry *tokens_match(const struct tokens *t, const char *presented, size_t len);

/* The entry whose stored hash is hash, or NULL (the hash is no secret: no constant time). */
const struct token_entry *tokens_find_hash(const struct tokens *t,
					   const uint8_t hash[TOKEN_HASH_LEN]);

/* The hash as the store writes it: TOKEN_HASH_HEX lowercase hex digits and a NUL. */
void tokens_hash_hex(const uint8_t hash[TOKEN_HASH_LEN], char out[TOKEN_HASH_HEX + 1]);

/* Reads exactly TOKEN_HASH_HEX hex digits (either case). Returns 0 or -EINVAL. */
int tokens_hash_unhex(const char *s, uint8_t out[TOKEN_HASH_LEN]);

void tokens_free(struct tokens *t);

#endif
