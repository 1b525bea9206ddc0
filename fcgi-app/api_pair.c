/*
 * Pairing a phone (docs/API.md, "Pairing"): an admin's page asks for a one-time link (valid
 * PAIR_TTL seconds, used once) and shows it as a QR code; the phone that opens it gets a token of
 * its own, named device-<name>, made then in the token store, and is signed in with it through
 * GET /?token= (the same exchange and its checks as any token link). Never the admin's token.
 * The devices' tokens are listed and revoked here too. The pending links are pairings.json in
 * the state dir (0600; only the SHA-256 of a link's code is kept), under pairings.lock.
 */
#include "router.h"

#include "auth.h"
#include "fsutil.h"
#include "isotime.h"
#include "jsonfile.h"
#include "log.h"
#include "tokencmd.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <qrencode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#define PAIR_FILE       "pairings.json"
#define PAIR_LOCK       "pairings.lock"
#define PAIR_TTL        300 /* a link lives 5 minutes: long enough to take the phone out */
#define PAIR_MAX        16  /* links pending at once; each is one device in the making */
#define PAIR_CODE_BYTES 32  /* as much chance to guess as a token */
#define PAIR_CODE_LEN   43  /* their base64url */
#define PAIR_NAME_MAX   32  /* "device-" + name is a token name (TOKEN_NAME_MAX) */
#define PAIR_PREFIX     "device-"
#define PAIR_JSON_DEPTH 2
#define PAIR_FILE_MAX   (64 * 1024) /* PAIR_MAX links of a few hundred bytes, with room */
#define PAIR_URL_MAX    (2 * CONFIG_VALUE_MAX)

/* True for 1 to PAIR_NAME_MAX of [A-Za-z0-9._-]. */
static bool pair_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > PAIR_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && strchr("._-", name[i]) == NULL)
			return false;
	return true;
}

static void pair_hash(const char *code, char out[2 * 32 + 1])
{
	uint8_t h[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	memset(h, 0, sizeof(h));
	EVP_Digest(code, strlen(code), h, &n, EVP_sha256(), NULL);
	for (size_t i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", h[i]);
}

static int pair_lock(const struct app *app, const char *leaf)
{
	char path[CONFIG_PATH_MAX];

	if (config_state_path(app->cfg, leaf, path, sizeof(path)) < 0)
		return -ENAMETOOLONG;
	return fsutil_lock(path, LOCK_EX, 0600);
}

/* The pending links (an array; expired ones dropped), or NULL when the file is unreadable. */
static json_object *pair_load(const struct app *app, int64_t now)
{
	char path[CONFIG_PATH_MAX];
	json_object *root, *arr, *out;
	int r;

	if (config_state_path(app->cfg, PAIR_FILE, path, sizeof(path)) < 0)
		return NULL;
	r = jsonfile_load(path, PAIR_FILE_MAX, "pairings", PAIR_MAX, NULL, &root, &arr, NULL);
	if (r == -ENOENT)
		return json_object_new_array();
	if (r < 0)
		return NULL;
	if ((out = json_object_new_array()) == NULL) {
		json_object_put(root);
		return NULL;
	}
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *p = json_object_array_get_idx(arr, i), *exp;

		if (json_object_object_get_ex(p, "expires", &exp) &&
		    json_object_get_int64(exp) > now)
			json_object_array_add(out, json_object_get(p));
	}
	json_object_put(root);
	return out;
}

static int pair_save(const struct app *app, json_object *arr)
{
	char path[CONFIG_PATH_MAX];

	if (config_state_path(app->cfg, PAIR_FILE, path, sizeof(path)) < 0)
		return -ENAMETOOLONG;
	return jsonfile_save(path, "pairings", arr, JSON_C_TO_STRING_PLAIN, 0600);
}

/* The QR code of text as {"size": N, "rows": ["0110…", …]} (1: dark), or NULL. */
static json_object *pair_qr(const char *text)
{
	QRcode *q = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1);
	json_object *o, *rows;
	char *line;

	if (q == NULL)
		return NULL;
	line = malloc((size_t)q->width + 1);
	if (line == NULL) {
		QRcode_free(q);
		return NULL;
	}
	o = json_object_new_object();
	rows = json_object_new_array();
	for (int y = 0; y < q->width; y++) {
		for (int x = 0; x < q->width; x++)
			line[x] = (q->data[y * q->width + x] & 1) ? '1' : '0';
		line[q->width] = '\0';
		json_object_array_add(rows, json_object_new_string(line));
	}
	json_object_object_add(o, "size", json_object_new_int(q->width));
	json_object_object_add(o, "rows", rows);
	free(line);
	QRcode_free(q);
	return o;
}

/* POST /pairings {"name": "phone"}: a one-time link and its QR code. */
static void api_pair_create(const struct app *app, struct request *req,
			    const char *const args[ROUTER_MAX_ARGS])
{
	uint8_t raw[PAIR_CODE_BYTES];
	char code[PAIR_CODE_LEN + 8], hash[2 * 32 + 1], url[PAIR_URL_MAX];
	char expires[ISOTIME_LEN + 1], name[PAIR_NAME_MAX + 1];
	const char *secure = request_param_value(req, "AGENTD_SECURE");
	int64_t now = (int64_t)time(NULL);
	json_object *root, *v, *arr = NULL, *entry, *o, *qr;
	int fd = -1;

	if ((root = request_json_body(req, APP_BODY_MAX, PAIR_JSON_DEPTH)) == NULL)
		return;
	if (!json_object_is_type(root, json_type_object) || json_object_object_length(root) != 1 ||
	    !json_object_object_get_ex(root, "name", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    !pair_name_valid(json_object_get_string(v))) {
		json_object_put(root);
		request_error(req, 400, "invalid_request",
			      "the body must be {\"name\": 1 to %d of A-Z a-z 0-9 . _ -}",
			      PAIR_NAME_MAX);
		return;
	}
	snprintf(name, sizeof(name), "%s", json_object_get_string(v));
	json_object_put(root);
	if (RAND_bytes(raw, sizeof(raw)) != 1) {
		request_error(req, 500, "internal", "no randomness");
		return;
	}
	{
		int len = EVP_EncodeBlock((unsigned char *)code, raw, (int)sizeof(raw));

		while (len > 0 && code[len - 1] == '=')
			code[--len] = '\0';
		for (int i = 0; i < len; i++)
			code[i] = code[i] == '+' ? '-' : code[i] == '/' ? '_' : code[i];
	}
	OPENSSL_cleanse(raw, sizeof(raw));
	/* The Host nginx let in (its Host rule) and the scheme the browser talks. */
	snprintf(url, sizeof(url), "%s://%s/?pair=%s",
		 secure != NULL && strcmp(secure, "1") == 0 ? "https" : req->scheme, req->host,
		 code);
	pair_hash(code, hash);
	if ((fd = pair_lock(app, PAIR_LOCK)) < 0 || (arr = pair_load(app, now)) == NULL) {
		request_error(req, 500, "pairing_unavailable", "the pairing store cannot be read");
		goto out;
	}
	if (json_object_array_length(arr) >= PAIR_MAX) {
		request_error(req, 429, "too_many_pairings",
			      "%d pairing links are pending: use one or wait %d s", PAIR_MAX,
			      PAIR_TTL);
		goto out;
	}
	entry = json_object_new_object();
	json_object_object_add(entry, "sha256", json_object_new_string(hash));
	json_object_object_add(entry, "name", json_object_new_string(name));
	json_object_object_add(entry, "by", json_object_new_string(req->by));
	json_object_object_add(entry, "expires", json_object_new_int64(now + PAIR_TTL));
	json_object_array_add(arr, entry);
	if (pair_save(app, arr) < 0) {
		request_error(req, 500, "pairing_unavailable",
			      "the pairing store cannot be written");
		goto out;
	}
	qr = pair_qr(url);
	isotime_format(now + PAIR_TTL, expires, sizeof(expires));
	o = json_object_new_object();
	json_object_object_add(o, "url", json_object_new_string(url));
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "device", json_object_new_string(PAIR_PREFIX));
	json_object_object_add(o, "expiresAt", json_object_new_string(expires));
	json_object_object_add(o, "qr", qr);
	request_reply(req, 201, o, "Cache-Control: no-store\r\n");
out:
	OPENSSL_cleanse(code, sizeof(code));
	json_object_put(arr);
	if (fd >= 0)
		close(fd);
}

/* Takes the pending link of code (valid, not expired) out of the store: its name into name.
 * Returns 0, -ENOENT (no such link, used or expired), or -EIO. */
static int pair_take(const struct app *app, const char *code, char name[PAIR_NAME_MAX + 1])
{
	char hash[2 * 32 + 1];
	json_object *arr, *keep;
	int fd, r = -ENOENT;

	pair_hash(code, hash);
	if ((fd = pair_lock(app, PAIR_LOCK)) < 0)
		return -EIO;
	arr = pair_load(app, (int64_t)time(NULL));
	if (arr == NULL) {
		close(fd);
		return -EIO;
	}
	keep = json_object_new_array();
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *p = json_object_array_get_idx(arr, i), *h, *n;

		if (r == -ENOENT && json_object_object_get_ex(p, "sha256", &h) &&
		    json_object_is_type(h, json_type_string) &&
		    CRYPTO_memcmp(json_object_get_string(h), hash, sizeof(hash)) == 0 &&
		    json_object_object_get_ex(p, "name", &n) &&
		    pair_name_valid(json_object_get_string(n))) {
			snprintf(name, PAIR_NAME_MAX + 1, "%s", json_object_get_string(n));
			r = 0;
			continue;
		}
		json_object_array_add(keep, json_object_get(p));
	}
	/* Used once: gone before the token exists, so two phones racing get one token. */
	if (r == 0 && pair_save(app, keep) < 0)
		r = -EIO;
	json_object_put(keep);
	json_object_put(arr);
	close(fd);
	return r;
}

/* Makes the device's token: device-<name>, or device-<name>-2 … when taken. */
static int pair_mint(const struct app *app, const char *name, char text[TOKEN_TEXT_LEN + 1],
		     char *made, size_t madelen)
{
	char store[CONFIG_PATH_MAX];
	struct cause cause = {{0}};
	struct tokens t = {0};
	int fd, r;

	if (config_state_path(app->cfg, TOKENCMD_STORE, store, sizeof(store)) < 0 ||
	    (fd = pair_lock(app, TOKENCMD_LOCK)) < 0)
		return -EIO;
	r = tokens_load(store, &t, &cause);
	if (r < 0 && r != -ENOENT)
		goto out;
	r = -EEXIST;
	for (int i = 1; i <= PAIR_MAX && r == -EEXIST; i++) {
		if (i == 1)
			snprintf(made, madelen, "%s%s", PAIR_PREFIX, name);
		else
			snprintf(made, madelen, "%s%s-%d", PAIR_PREFIX, name, i);
		r = tokens_add(&t, made, false, (int64_t)time(NULL), text, &cause);
	}
	if (r == 0)
		r = tokens_save(store, &t, &cause);
	if (r < 0)
		log_error("pairing: %s", cause.msg);
out:
	tokens_free(&t);
	close(fd);
	return r;
}

/* GET /.agentd/pair (from GET /?pair=<code>): a new device token, then the token link's
 * exchange (GET /?token=: the cookie, or the login page's question). */
static void api_pair_use(const struct app *app, struct request *req,
			 const char *const args[ROUTER_MAX_ARGS])
{
	const char *code = request_param_value(req, "AGENTD_PAIR");
	char name[PAIR_NAME_MAX + 1], made[TOKEN_NAME_MAX + 1], text[TOKEN_TEXT_LEN + 1];
	char head[TOKEN_TEXT_LEN + 64];
	int r;

	if (code == NULL || strlen(code) != PAIR_CODE_LEN ||
	    (r = pair_take(app, code, name)) == -ENOENT) {
		request_reply_head(req, 303, "Location: /login?error=invalid_pairing\r\n");
		return;
	}
	if (r < 0 || pair_mint(app, name, text, made, sizeof(made)) < 0) {
		request_reply_head(req, 303, "Location: /login?error=pairing_failed\r\n");
		return;
	}
	log_info("paired a device: token %s", made);
	snprintf(head, sizeof(head), "Location: /?token=%s\r\n", text);
	OPENSSL_cleanse(text, sizeof(text));
	request_reply_head(req, 303, head);
	OPENSSL_cleanse(head, sizeof(head));
}

/* GET /devices: the paired devices' tokens (never their text). */
static void api_devices_list(const struct app *app, struct request *req,
			     const char *const args[ROUTER_MAX_ARGS])
{
	char store[CONFIG_PATH_MAX], t1[ISOTIME_LEN + 1], t2[ISOTIME_LEN + 1];
	struct cause cause = {{0}};
	struct tokens t = {0};
	struct auth_who who;
	json_object *o, *arr;
	int r;

	/* Who holds a token is the admins' business: a viewer lists nothing it could revoke. */
	auth_who_from_headers(&who, request_param_value(req, "AGENTD_ROLE"), req->by);
	if (!who.admin) {
		request_error(req, 403, "read_only", "only an admin sees the paired devices");
		return;
	}
	if (config_state_path(app->cfg, TOKENCMD_STORE, store, sizeof(store)) < 0 ||
	    ((r = tokens_load(store, &t, &cause)) < 0 && r != -ENOENT)) {
		request_error(req, 500, "credentials_unavailable",
			      "the token store cannot be read");
		return;
	}
	arr = json_object_new_array();
	for (size_t i = 0; i < t.n; i++) {
		if (strncmp(t.v[i].name, PAIR_PREFIX, strlen(PAIR_PREFIX)) != 0)
			continue;
		o = json_object_new_object();
		isotime_format(t.v[i].created_at, t1, sizeof(t1));
		json_object_object_add(o, "name", json_object_new_string(t.v[i].name));
		json_object_object_add(o, "readOnly", json_object_new_boolean(t.v[i].read_only));
		json_object_object_add(o, "createdAt", json_object_new_string(t1));
		if (t.v[i].last_used != 0)
			isotime_format(t.v[i].last_used, t2, sizeof(t2));
		json_object_object_add(o, "lastUsed",
				       t.v[i].last_used != 0 ? json_object_new_string(t2) : NULL);
		json_object_array_add(arr, o);
	}
	tokens_free(&t);
	o = json_object_new_object();
	json_object_object_add(o, "devices", arr);
	request_reply(req, 200, o, "Cache-Control: no-store\r\n");
}

/* DELETE /devices/<name>: revokes a paired device's token (only those: an operator's tokens are
 * `agentd-api token revoke`'s). */
static void api_devices_revoke(const struct app *app, struct request *req,
			       const char *const args[ROUTER_MAX_ARGS])
{
	char store[CONFIG_PATH_MAX];
	struct cause cause = {{0}};
	struct tokens t = {0};
	json_object *o;
	int fd, r;

	if (strncmp(args[0], PAIR_PREFIX, strlen(PAIR_PREFIX)) != 0 ||
	    !tokens_name_valid(args[0])) {
		request_error(req, 404, "not_found", "no paired device of that name");
		return;
	}
	if (config_state_path(app->cfg, TOKENCMD_STORE, store, sizeof(store)) < 0 ||
	    (fd = pair_lock(app, TOKENCMD_LOCK)) < 0) {
		request_error(req, 500, "credentials_unavailable",
			      "the token store cannot be locked");
		return;
	}
	r = tokens_load(store, &t, &cause);
	if (r < 0 && r != -ENOENT)
		request_error(req, 500, "credentials_unavailable",
			      "the token store cannot be read");
	else if (tokens_revoke(&t, args[0]) < 0)
		request_error(req, 404, "not_found", "no paired device of that name");
	else if (tokens_save(store, &t, &cause) < 0)
		request_error(req, 500, "credentials_unavailable",
			      "the token store cannot be written");
	else {
		o = json_object_new_object();
		json_object_object_add(o, "name", json_object_new_string(args[0]));
		json_object_object_add(o, "revoked", json_object_new_boolean(true));
		request_reply(req, 200, o, NULL);
	}
	tokens_free(&t);
	close(fd);
}

const struct route api_pair_routes[] = {
    {"POST", "/pairings", api_pair_create, true},
    {"GET", "/.agentd/pair", api_pair_use, false},
    {"GET", "/devices", api_devices_list, false},
    {"DELETE", "/devices/*", api_devices_revoke, true},
    {NULL, NULL, NULL, false},
};
