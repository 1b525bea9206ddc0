/*
 * Web Push as a sender does it (docs/DESIGN.md, "Notifications (Web Push)"): the VAPID key pair
 * (RFC 8292) kept in the state dir, the Authorization header that signs a request for a push
 * service's origin, and the aes128gcm encryption of a message for one subscription (RFC 8291,
 * RFC 8188), with OpenSSL's primitives. Everything here but webpush_keys_open is pure.
 */
#ifndef AGENTD_WEBPUSH_H
#define AGENTD_WEBPUSH_H

#include "cause.h"

#include <stddef.h>
#include <stdint.h>

#define WEBPUSH_KEYS_FILE  "push-vapid.pem" /* in AGENTD_STATE_DIR, mode 0600 */
#define WEBPUSH_PUBKEY_LEN 65               /* an uncompressed P-256 point: 0x04 || X || Y */
#define WEBPUSH_AUTH_LEN   16               /* the subscription's auth secret (RFC 8291) */
#define WEBPUSH_SALT_LEN   16
#define WEBPUSH_B64_MAX(n) (4 * (((n) + 2) / 3) + 1)
/* The public key as the page gives it to pushManager.subscribe: 87 base64url characters. */
#define WEBPUSH_PUBKEY_B64 WEBPUSH_B64_MAX(WEBPUSH_PUBKEY_LEN)
/* A message fits one record of a push service: RFC 8030 services take 4096 bytes of body, of
 * which the header (86) and the tag and delimiter (17) are not the message's. */
#define WEBPUSH_MESSAGE_MAX 3800
#define WEBPUSH_RECORD_SIZE 4096
#define WEBPUSH_HEADER_LEN  (WEBPUSH_SALT_LEN + 4 + 1 + WEBPUSH_PUBKEY_LEN)
#define WEBPUSH_BODY_MAX    (WEBPUSH_HEADER_LEN + WEBPUSH_MESSAGE_MAX + 1 + 16)
/* How long a VAPID signature is good for: RFC 8292 allows at most 24 hours. */
#define WEBPUSH_JWT_LIFETIME (12 * 3600)
#define WEBPUSH_AUTH_MAX     1024 /* the Authorization header's value */
#define WEBPUSH_ORIGIN_MAX   512

struct webpush_keys;

/*
 * The VAPID key pair of path: read, or made when the file does not exist (a new P-256 key,
 * written to a temporary file of mode 0600 and linked into place, so two daemons starting at once
 * end up with the same key and a reader never sees part of one). Returns the keys, or NULL with
 * cause.
 */
struct webpush_keys *webpush_keys_open(const char *path, struct cause *cause);
void webpush_keys_free(struct webpush_keys *k);

/* The public key, base64url without padding (the applicationServerKey). */
const char *webpush_keys_public_b64(const struct webpush_keys *k);

/* base64url without padding of n bytes into out (WEBPUSH_B64_MAX(n) bytes). */
void webpush_b64url(const uint8_t *in, size_t n, char *out);

/* Decodes base64url (padding allowed, nothing else) into out (at most outmax bytes). Returns
 * the length, or -EINVAL. */
int webpush_unb64url(const char *in, uint8_t *out, size_t outmax);

/* 0 when p256dh is a base64url P-256 point on the curve (65 bytes uncompressed) and auth 16
 * base64url bytes; -EINVAL otherwise. */
int webpush_check_keys(const char *p256dh, const char *auth);

/* The origin ("https://host[:port]") of endpoint into out. Returns 0 or -EINVAL. */
int webpush_origin(const char *endpoint, char *out, size_t outlen);

/*
 * The Authorization header's value for a request to aud (a push service's origin) valid until
 * now + WEBPUSH_JWT_LIFETIME: "vapid t=<ES256 JWT>, k=<public key>" (RFC 8292). sub ("" none)
 * is the contact claim. Returns 0 or -errno with cause.
 */
int webpush_vapid_header(const struct webpush_keys *k, const char *aud, const char *sub,
			 int64_t now, char out[WEBPUSH_AUTH_MAX], struct cause *cause);

/*
 * Encrypts msg (len <= WEBPUSH_MESSAGE_MAX bytes) for the subscription whose keys are p256dh
 * and auth (base64url) as one aes128gcm record: a fresh ephemeral key and salt each time.
 * out gets WEBPUSH_BODY_MAX bytes at most; *outlen its length. Returns 0 or -errno with cause.
 */
int webpush_encrypt(const char *p256dh, const char *auth, const void *msg, size_t len, uint8_t *out,
		    size_t *outlen, struct cause *cause);

#endif
