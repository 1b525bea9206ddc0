#include "webpush.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WEBPUSH_KEY_FILE_MODE 0600
#define WEBPUSH_SECRET_LEN    32 /* an ECDH secret, HKDF's PRKs: SHA-256 sized */
#define WEBPUSH_CEK_LEN       16
#define WEBPUSH_NONCE_LEN     12
#define WEBPUSH_TAG_LEN       16
#define WEBPUSH_COORD_LEN     32 /* r and s of an ES256 signature */
#define WEBPUSH_JWT_MAX       (WEBPUSH_AUTH_MAX - WEBPUSH_PUBKEY_B64 - 16)
#define WEBPUSH_CLAIMS_MAX    (WEBPUSH_ORIGIN_MAX + 256)

struct webpush_keys {
	EVP_PKEY *key;
	char public_b64[WEBPUSH_PUBKEY_B64];
};

void webpush_b64url(const uint8_t *in, size_t n, char *out)
{
	int len = EVP_EncodeBlock((unsigned char *)out, in, (int)n);

	while (len > 0 && out[len - 1] == '=')
		out[--len] = '\0';
	for (int i = 0; i < len; i++)
		out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
}

static int webpush_b64val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

int webpush_unb64url(const char *in, uint8_t *out, size_t outmax)
{
	size_t n = strlen(in), len = 0;
	uint32_t acc = 0;
	int bits = 0;

	/* Browsers give the keys without padding; some libraries add it. */
	while (n > 0 && in[n - 1] == '=')
		n--;
	if (n % 4 == 1)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		int v = webpush_b64val(in[i]);

		if (v < 0)
			return -EINVAL;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (len >= outmax)
				return -EINVAL;
			out[len++] = (uint8_t)(acc >> bits);
		}
	}
	/* The bits left over must be zero: one text per byte string. */
	if ((acc & ((1u << bits) - 1)) != 0)
		return -EINVAL;
	return (int)len;
}

static int webpush_public_raw(EVP_PKEY *k, uint8_t out[WEBPUSH_PUBKEY_LEN])
{
	size_t len = 0;

	if (EVP_PKEY_get_octet_string_param(k, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, out,
					    WEBPUSH_PUBKEY_LEN, &len) != 1 ||
	    len != WEBPUSH_PUBKEY_LEN || out[0] != 0x04)
		return -EINVAL;
	return 0;
}

/* The P-256 public key whose uncompressed point is raw, checked to be on the curve, or NULL. */
static EVP_PKEY *webpush_peer_key(const uint8_t raw[WEBPUSH_PUBKEY_LEN])
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL), *check = NULL;
	EVP_PKEY *k = NULL;
	char group[] = "prime256v1";
	uint8_t copy[WEBPUSH_PUBKEY_LEN];
	OSSL_PARAM params[3];

	memcpy(copy, raw, sizeof(copy));
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0);
	params[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, copy, sizeof(copy));
	params[2] = OSSL_PARAM_construct_end();
	if (ctx == NULL || raw[0] != 0x04 || EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, &k, EVP_PKEY_PUBLIC_KEY, params) != 1)
		goto fail;
	check = EVP_PKEY_CTX_new_from_pkey(NULL, k, NULL);
	if (check == NULL || EVP_PKEY_public_check(check) != 1)
		goto fail;
	EVP_PKEY_CTX_free(check);
	EVP_PKEY_CTX_free(ctx);
	return k;
fail:
	EVP_PKEY_CTX_free(check);
	EVP_PKEY_CTX_free(ctx);
	EVP_PKEY_free(k);
	return NULL;
}

int webpush_check_keys(const char *p256dh, const char *auth)
{
	uint8_t pub[WEBPUSH_PUBKEY_LEN + 1], secret[WEBPUSH_AUTH_LEN + 1];
	EVP_PKEY *k;

	if (webpush_unb64url(p256dh, pub, sizeof(pub)) != WEBPUSH_PUBKEY_LEN ||
	    webpush_unb64url(auth, secret, sizeof(secret)) != WEBPUSH_AUTH_LEN)
		return -EINVAL;
	k = webpush_peer_key(pub);
	if (k == NULL)
		return -EINVAL;
	EVP_PKEY_free(k);
	return 0;
}

int webpush_origin(const char *endpoint, char *out, size_t outlen)
{
	const char *rest, *end;
	size_t n;

	if (strncmp(endpoint, "https://", 8) == 0)
		rest = endpoint + 8;
	else if (strncmp(endpoint, "http://", 7) == 0)
		rest = endpoint + 7;
	else
		return -EINVAL;
	end = rest + strcspn(rest, "/?#");
	n = (size_t)(end - endpoint);
	if (end == rest || n >= outlen || memchr(rest, '@', (size_t)(end - rest)) != NULL)
		return -EINVAL;
	memcpy(out, endpoint, n);
	out[n] = '\0';
	return 0;
}

static struct webpush_keys *webpush_keys_wrap(EVP_PKEY *key, struct cause *cause)
{
	struct webpush_keys *k = calloc(1, sizeof(*k));
	uint8_t raw[WEBPUSH_PUBKEY_LEN];

	if (k == NULL) {
		EVP_PKEY_free(key);
		cause_fail(cause, ENOMEM, "out of memory");
		return NULL;
	}
	k->key = key;
	if (EVP_PKEY_get_base_id(key) != EVP_PKEY_EC || webpush_public_raw(key, raw) < 0) {
		cause_fail(cause, EINVAL, "the VAPID key is not a P-256 key");
		webpush_keys_free(k);
		return NULL;
	}
	webpush_b64url(raw, sizeof(raw), k->public_b64);
	return k;
}

/* Makes a new key at path: a temporary file (0600) linked into place, so that of two daemons
 * starting at once one key wins and neither reads a half-written file. -EEXIST: one is there. */
static int webpush_keys_make(const char *path, struct cause *cause)
{
	char tmp[4096];
	EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	FILE *f = NULL;
	int fd = -1, r = 0;

	if (key == NULL)
		return cause_fail(cause, EIO, "cannot make a P-256 key");
	if (snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof(tmp)) {
		r = cause_fail(cause, ENAMETOOLONG, "%s: path too long", path);
		goto out;
	}
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, WEBPUSH_KEY_FILE_MODE);
	if (fd < 0 || (f = fdopen(fd, "w")) == NULL) {
		r = cause_fail(cause, errno, "cannot create %s: %s", tmp, strerror(errno));
		goto out;
	}
	fd = -1;
	if (PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL) != 1 || fflush(f) != 0 ||
	    fsync(fileno(f)) < 0) {
		r = cause_fail(cause, EIO, "cannot write %s", tmp);
		goto out;
	}
	if (link(tmp, path) < 0)
		r = errno == EEXIST
			? -EEXIST
			: cause_fail(cause, errno, "cannot link %s: %s", path, strerror(errno));
out:
	if (f != NULL)
		fclose(f);
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	EVP_PKEY_free(key);
	return r;
}

struct webpush_keys *webpush_keys_open(const char *path, struct cause *cause)
{
	EVP_PKEY *key;
	struct stat st;
	FILE *f;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT) {
		r = webpush_keys_make(path, cause);
		if (r < 0 && r != -EEXIST)
			return NULL;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	}
	if (fd < 0) {
		cause_fail(cause, errno, "cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	/* A private key others can read is no longer ours alone: refuse it rather than sign. */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) != 0) {
		close(fd);
		cause_fail(cause, EPERM, "%s must be a regular file of mode 0600", path);
		return NULL;
	}
	f = fdopen(fd, "r");
	if (f == NULL) {
		close(fd);
		cause_fail(cause, errno, "cannot read %s", path);
		return NULL;
	}
	key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	if (key == NULL) {
		cause_fail(cause, EINVAL, "%s holds no private key", path);
		return NULL;
	}
	return webpush_keys_wrap(key, cause);
}

void webpush_keys_free(struct webpush_keys *k)
{
	if (k == NULL)
		return;
	EVP_PKEY_free(k->key);
	free(k);
}

const char *webpush_keys_public_b64(const struct webpush_keys *k)
{
	return k->public_b64;
}

/* The ES256 signature of data as JWS wants it: r || s, 32 bytes each, base64url. */
static int webpush_sign(EVP_PKEY *key, const char *data, char *out, size_t outlen)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	uint8_t der[128], raw[2 * WEBPUSH_COORD_LEN];
	const uint8_t *p = der;
	size_t derlen = sizeof(der);
	ECDSA_SIG *sig = NULL;
	const BIGNUM *r, *s;
	int rc = -EIO;

	if (md == NULL || outlen < WEBPUSH_B64_MAX(sizeof(raw)) ||
	    EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1 ||
	    EVP_DigestSign(md, der, &derlen, (const uint8_t *)data, strlen(data)) != 1 ||
	    (sig = d2i_ECDSA_SIG(NULL, &p, (long)derlen)) == NULL)
		goto out;
	ECDSA_SIG_get0(sig, &r, &s);
	if (BN_bn2binpad(r, raw, WEBPUSH_COORD_LEN) != WEBPUSH_COORD_LEN ||
	    BN_bn2binpad(s, raw + WEBPUSH_COORD_LEN, WEBPUSH_COORD_LEN) != WEBPUSH_COORD_LEN)
		goto out;
	webpush_b64url(raw, sizeof(raw), out);
	rc = 0;
out:
	ECDSA_SIG_free(sig);
	EVP_MD_CTX_free(md);
	return rc;
}

int webpush_vapid_header(const struct webpush_keys *k, const char *aud, const char *sub,
			 int64_t now, char out[WEBPUSH_AUTH_MAX], struct cause *cause)
{
	static const char header[] = "{\"typ\":\"JWT\",\"alg\":\"ES256\"}";
	char claims[WEBPUSH_CLAIMS_MAX], jwt[WEBPUSH_JWT_MAX];
	char sig[WEBPUSH_B64_MAX(2 * WEBPUSH_COORD_LEN)];
	size_t n;
	int len;

	/* aud is an origin we cut from an endpoint we checked (webpush_origin: no quote or
	 * backslash can be in it, nor in sub, which the configuration checks): no escaping. */
	if (strlen(aud) >= WEBPUSH_ORIGIN_MAX || strpbrk(aud, "\"\\") != NULL ||
	    strpbrk(sub, "\"\\") != NULL)
		return cause_fail(cause, EINVAL, "a VAPID claim holds a quote or is too long");
	len = snprintf(claims, sizeof(claims), "{\"aud\":\"%s\",\"exp\":%lld%s%s%s}", aud,
		       (long long)(now + WEBPUSH_JWT_LIFETIME), *sub ? ",\"sub\":\"" : "", sub,
		       *sub ? "\"" : "");
	if (len < 0 || (size_t)len >= sizeof(claims) ||
	    WEBPUSH_B64_MAX(sizeof(header)) + WEBPUSH_B64_MAX((size_t)len) + sizeof(sig) + 2 >
		sizeof(jwt))
		return cause_fail(cause, EINVAL, "the VAPID claims are too long");
	webpush_b64url((const uint8_t *)header, sizeof(header) - 1, jwt);
	n = strlen(jwt);
	jwt[n++] = '.';
	webpush_b64url((const uint8_t *)claims, (size_t)len, jwt + n);
	if (webpush_sign(k->key, jwt, sig, sizeof(sig)) < 0)
		return cause_fail(cause, EIO, "cannot sign the VAPID claims");
	n = strlen(jwt);
	snprintf(jwt + n, sizeof(jwt) - n, ".%s", sig);
	if (snprintf(out, WEBPUSH_AUTH_MAX, "vapid t=%s, k=%s", jwt, k->public_b64) >=
	    WEBPUSH_AUTH_MAX)
		return cause_fail(cause, EINVAL, "the VAPID header is too long");
	return 0;
}

/* HKDF (RFC 5869) with SHA-256: extract, or expand to n <= 32 bytes (one block). */
static int webpush_hkdf_extract(const uint8_t *salt, size_t saltlen, const uint8_t *ikm,
				size_t ikmlen, uint8_t prk[WEBPUSH_SECRET_LEN])
{
	unsigned int n = 0;

	if (HMAC(EVP_sha256(), salt, (int)saltlen, ikm, ikmlen, prk, &n) == NULL ||
	    n != WEBPUSH_SECRET_LEN)
		return -EIO;
	return 0;
}

static int webpush_hkdf_expand(const uint8_t prk[WEBPUSH_SECRET_LEN], const uint8_t *info,
			       size_t infolen, uint8_t *out, size_t n)
{
	uint8_t block[WEBPUSH_SECRET_LEN], in[256];
	unsigned int len = 0;

	if (infolen + 1 > sizeof(in) || n > sizeof(block))
		return -EINVAL;
	memcpy(in, info, infolen);
	in[infolen] = 0x01;
	if (HMAC(EVP_sha256(), prk, WEBPUSH_SECRET_LEN, in, infolen + 1, block, &len) == NULL ||
	    len != WEBPUSH_SECRET_LEN)
		return -EIO;
	memcpy(out, block, n);
	OPENSSL_cleanse(block, sizeof(block));
	return 0;
}

static int webpush_ecdh(EVP_PKEY *mine, EVP_PKEY *peer, uint8_t out[WEBPUSH_SECRET_LEN])
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, mine, NULL);
	size_t len = WEBPUSH_SECRET_LEN;
	int r = -EIO;

	if (ctx != NULL && EVP_PKEY_derive_init(ctx) == 1 &&
	    EVP_PKEY_derive_set_peer(ctx, peer) == 1 && EVP_PKEY_derive(ctx, out, &len) == 1 &&
	    len == WEBPUSH_SECRET_LEN)
		r = 0;
	EVP_PKEY_CTX_free(ctx);
	return r;
}

/* AES-128-GCM of in (n bytes) into out, with the tag after it. */
static int webpush_seal(const uint8_t key[WEBPUSH_CEK_LEN], const uint8_t nonce[WEBPUSH_NONCE_LEN],
			const uint8_t *in, size_t n, uint8_t *out)
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int len = 0, fin = 0, r = -EIO;

	if (c != NULL && EVP_EncryptInit_ex(c, EVP_aes_128_gcm(), NULL, NULL, NULL) == 1 &&
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, WEBPUSH_NONCE_LEN, NULL) == 1 &&
	    EVP_EncryptInit_ex(c, NULL, NULL, key, nonce) == 1 &&
	    EVP_EncryptUpdate(c, out, &len, in, (int)n) == 1 &&
	    EVP_EncryptFinal_ex(c, out + len, &fin) == 1 && (size_t)(len + fin) == n &&
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, WEBPUSH_TAG_LEN, out + n) == 1)
		r = 0;
	EVP_CIPHER_CTX_free(c);
	return r;
}

int webpush_encrypt(const char *p256dh, const char *auth, const void *msg, size_t len, uint8_t *out,
		    size_t *outlen, struct cause *cause)
{
	static const char key_info[] = "WebPush: info";
	static const char cek_info[] = "Content-Encoding: aes128gcm";
	static const char nonce_info[] = "Content-Encoding: nonce";
	uint8_t ua_pub[WEBPUSH_PUBKEY_LEN + 1], secret[WEBPUSH_AUTH_LEN + 1];
	uint8_t as_pub[WEBPUSH_PUBKEY_LEN], salt[WEBPUSH_SALT_LEN];
	uint8_t ecdh[WEBPUSH_SECRET_LEN], prk[WEBPUSH_SECRET_LEN], ikm[WEBPUSH_SECRET_LEN];
	uint8_t cek[WEBPUSH_CEK_LEN], nonce[WEBPUSH_NONCE_LEN];
	uint8_t info[sizeof(key_info) + 2 * WEBPUSH_PUBKEY_LEN], plain[WEBPUSH_MESSAGE_MAX + 1];
	EVP_PKEY *peer = NULL, *eph = NULL;
	size_t h = 0;
	int r = -EIO;

	if (len > WEBPUSH_MESSAGE_MAX)
		return cause_fail(cause, EMSGSIZE, "a push message is at most %d bytes",
				  WEBPUSH_MESSAGE_MAX);
	if (webpush_unb64url(p256dh, ua_pub, sizeof(ua_pub)) != WEBPUSH_PUBKEY_LEN ||
	    webpush_unb64url(auth, secret, sizeof(secret)) != WEBPUSH_AUTH_LEN ||
	    (peer = webpush_peer_key(ua_pub)) == NULL)
		return cause_fail(cause, EINVAL, "the subscription's keys are not valid");
	eph = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	if (eph == NULL || webpush_public_raw(eph, as_pub) < 0 ||
	    RAND_bytes(salt, sizeof(salt)) != 1 || webpush_ecdh(eph, peer, ecdh) < 0)
		goto fail;
	/* RFC 8291 section 3.4: the key and nonce from the ECDH secret, auth and both keys. */
	memcpy(info, key_info, sizeof(key_info)); /* with its NUL, as the RFC's info */
	memcpy(info + sizeof(key_info), ua_pub, WEBPUSH_PUBKEY_LEN);
	memcpy(info + sizeof(key_info) + WEBPUSH_PUBKEY_LEN, as_pub, WEBPUSH_PUBKEY_LEN);
	if (webpush_hkdf_extract(secret, WEBPUSH_AUTH_LEN, ecdh, sizeof(ecdh), prk) < 0 ||
	    webpush_hkdf_expand(prk, info, sizeof(info), ikm, sizeof(ikm)) < 0 ||
	    webpush_hkdf_extract(salt, sizeof(salt), ikm, sizeof(ikm), prk) < 0 ||
	    webpush_hkdf_expand(prk, (const uint8_t *)cek_info, sizeof(cek_info), cek,
				sizeof(cek)) < 0 ||
	    webpush_hkdf_expand(prk, (const uint8_t *)nonce_info, sizeof(nonce_info), nonce,
				sizeof(nonce)) < 0)
		goto fail;
	/* RFC 8188: salt, record size (big-endian), key id length, key id = our public key. */
	memcpy(out, salt, sizeof(salt));
	h = sizeof(salt);
	out[h++] = (uint8_t)(WEBPUSH_RECORD_SIZE >> 24);
	out[h++] = (uint8_t)(WEBPUSH_RECORD_SIZE >> 16);
	out[h++] = (uint8_t)(WEBPUSH_RECORD_SIZE >> 8);
	out[h++] = (uint8_t)WEBPUSH_RECORD_SIZE;
	out[h++] = WEBPUSH_PUBKEY_LEN;
	memcpy(out + h, as_pub, WEBPUSH_PUBKEY_LEN);
	h += WEBPUSH_PUBKEY_LEN;
	memcpy(plain, msg, len);
	plain[len] = 0x02; /* the last (and only) record's delimiter, no padding */
	if (webpush_seal(cek, nonce, plain, len + 1, out + h) < 0)
		goto fail;
	*outlen = h + len + 1 + WEBPUSH_TAG_LEN;
	r = 0;
fail:
	OPENSSL_cleanse(ecdh, sizeof(ecdh));
	OPENSSL_cleanse(prk, sizeof(prk));
	OPENSSL_cleanse(ikm, sizeof(ikm));
	OPENSSL_cleanse(cek, sizeof(cek));
	OPENSSL_cleanse(plain, sizeof(plain));
	EVP_PKEY_free(eph);
	EVP_PKEY_free(peer);
	if (r < 0)
		return cause_fail(cause, EIO, "cannot encrypt the push message");
	return 0;
}
