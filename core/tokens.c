#include "tokens.h"

#include "fsutil.h"
#include "isotime.h"
#include "jsonfile.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

bool tokens_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > TOKEN_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && strchr("._@:-", name[i]) == NULL)
			return false;
	return true;
}

static int tokens_hash(const char *text, size_t len, uint8_t out[TOKEN_HASH_LEN])
{
	unsigned int n = 0;

	if (EVP_Digest(text, len, out, &n, EVP_sha256(), NULL) != 1 || n != TOKEN_HASH_LEN)
		return -EIO;
	return 0;
}

void tokens_hash_hex(const uint8_t hash[TOKEN_HASH_LEN], char out[TOKEN_HASH_HEX + 1])
{
	for (size_t i = 0; i < TOKEN_HASH_LEN; i++)
		snprintf(out + 2 * i, 3, "%02x", hash[i]);
}

int tokens_hash_unhex(const char *s, uint8_t out[TOKEN_HASH_LEN])
{
	if (strlen(s) != 2 * TOKEN_HASH_LEN)
		return -EINVAL;
	for (size_t i = 0; i < TOKEN_HASH_LEN; i++) {
		unsigned v;

		if (!isxdigit((unsigned char)s[2 * i]) || !isxdigit((unsigned char)s[2 * i + 1]) ||
		    sscanf(s + 2 * i, "%2x", &v) != 1)
			return -EINVAL;
		out[i] = (uint8_t)v;
	}
	return 0;
}

static int tokens_time(json_object *o, const char *key, bool nullable, int64_t *out)
{
	json_object *v;

	*out = 0;
	if (!json_object_object_get_ex(o, key, &v))
		return nullable ? 0 : -EINVAL;
	if (v == NULL && nullable)
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return -EINVAL;
	return isotime_parse(json_object_get_string(v), out);
}

static int tokens_entry(json_object *o, struct token_entry *e, struct cause *cause)
{
	json_object *name, *hash, *ro;

	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "name", &name) ||
	    !json_object_is_type(name, json_type_string) ||
	    !tokens_name_valid(json_object_get_string(name)))
		return cause_fail(cause, EINVAL, "an entry has no valid name");
	snprintf(e->name, sizeof(e->name), "%s", json_object_get_string(name));
	if (!json_object_object_get_ex(o, "sha256", &hash) ||
	    !json_object_is_type(hash, json_type_string) ||
	    tokens_hash_unhex(json_object_get_string(hash), e->hash) < 0)
		return cause_fail(cause, EINVAL, "token %s has no valid sha256", e->name);
	if (!json_object_object_get_ex(o, "readOnly", &ro) ||
	    !json_object_is_type(ro, json_type_boolean))
		return cause_fail(cause, EINVAL, "token %s has no readOnly boolean", e->name);
	e->read_only = json_object_get_boolean(ro);
	if (tokens_time(o, "createdAt", false, &e->created_at) < 0 ||
	    tokens_time(o, "lastUsed", true, &e->last_used) < 0)
		return cause_fail(cause, EINVAL, "token %s has a bad time", e->name);
	return 0;
}

int tokens_load(const char *path, struct tokens *t, struct cause *cause)
{
	json_object *root, *arr;
	size_t n;
	int r;

	t->v = NULL;
	t->n = 0;
	r = jsonfile_load(path, TOKENS_FILE_MAX, "tokens", TOKENS_MAX, "the token store", &root,
			  &arr, cause);
	if (r < 0)
		return r;
	n = json_object_array_length(arr);
	t->v = n > 0 ? calloc(n, sizeof(*t->v)) : NULL;
	if (n > 0 && t->v == NULL) {
		r = cause_fail(cause, ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		r = tokens_entry(json_object_array_get_idx(arr, i), &t->v[i], cause);
		if (r < 0)
			goto out;
		for (size_t j = 0; j < i; j++)
			if (strcmp(t->v[j].name, t->v[i].name) == 0) {
				r = cause_fail(cause, EINVAL, "token %s is listed twice",
					       t->v[i].name);
				goto out;
			}
		t->n = i + 1;
	}
out:
	if (r < 0)
		tokens_free(t);
	json_object_put(root);
	return r;
}

static json_object *tokens_time_json(int64_t t)
{
	char buf[ISOTIME_LEN + 1];

	if (t == 0)
		return NULL;
	isotime_format(t, buf, sizeof(buf));
	return json_object_new_string(buf);
}

int tokens_save(const char *path, const struct tokens *t, struct cause *cause)
{
	json_object *arr = json_object_new_array();
	int r;

	if (arr == NULL)
		return cause_fail(cause, ENOMEM, "out of memory");
	for (size_t i = 0; i < t->n; i++) {
		json_object *o = json_object_new_object();
		char hex[TOKEN_HASH_HEX + 1];

		tokens_hash_hex(t->v[i].hash, hex);
		json_object_object_add(o, "name", json_object_new_string(t->v[i].name));
		json_object_object_add(o, "sha256", json_object_new_string(hex));
		json_object_object_add(o, "readOnly", json_object_new_boolean(t->v[i].read_only));
		json_object_object_add(o, "createdAt", tokens_time_json(t->v[i].created_at));
		json_object_object_add(o, "lastUsed", tokens_time_json(t->v[i].last_used));
		json_object_array_add(arr, o);
	}
	r = jsonfile_save(path, "tokens", arr, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED,
			  TOKEN_FILE_MODE);
	json_object_put(arr);
	if (r < 0)
		return cause_fail(cause, -r, "cannot write the token store %s: %s", path,
				  strerror(-r));
	return 0;
}

/* base64url without padding of n bytes (4 * ceil(n / 3) characters at most, and a NUL). */
static void tokens_base64url(const uint8_t *in, size_t n, char *out)
{
	int len = EVP_EncodeBlock((unsigned char *)out, in, (int)n);

	while (len > 0 && out[len - 1] == '=')
		out[--len] = '\0';
	for (int i = 0; i < len; i++)
		out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
}

int tokens_add(struct tokens *t, const char *name, bool read_only, int64_t now,
	       char text[TOKEN_TEXT_LEN + 1], struct cause *cause)
{
	uint8_t raw[TOKEN_RANDOM];
	char b64[4 * ((TOKEN_RANDOM + 2) / 3) + 1];
	struct token_entry *grown;
	size_t got = 0;
	int r;

	if (!tokens_name_valid(name))
		return cause_fail(cause, EINVAL, "a token name is 1 to %d of A-Z a-z 0-9 . _ @ : -",
				  TOKEN_NAME_MAX);
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->v[i].name, name) == 0)
			return cause_fail(cause, EEXIST, "a token named %s exists", name);
	if (t->n >= TOKENS_MAX)
		return cause_fail(cause, E2BIG, "the store holds %d tokens already", TOKENS_MAX);
	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return cause_fail(cause, errno, "no randomness: %s", strerror(errno));
		got += (size_t)n;
	}
	tokens_base64url(raw, sizeof(raw), b64);
	OPENSSL_cleanse(raw, sizeof(raw));
	memcpy(text, TOKEN_PREFIX, strlen(TOKEN_PREFIX));
	memcpy(text + strlen(TOKEN_PREFIX), b64, TOKEN_TEXT_LEN - strlen(TOKEN_PREFIX));
	text[TOKEN_TEXT_LEN] = '\0';
	grown = realloc(t->v, (t->n + 1) * sizeof(*t->v));
	if (grown == NULL)
		return cause_fail(cause, ENOMEM, "out of memory");
	t->v = grown;
	memset(&t->v[t->n], 0, sizeof(t->v[t->n]));
	snprintf(t->v[t->n].name, sizeof(t->v[t->n].name), "%s", name);
	r = tokens_hash(text, strlen(text), t->v[t->n].hash);
	if (r < 0)
		return cause_fail(cause, -r, "cannot hash the token");
	t->v[t->n].read_only = read_only;
	t->v[t->n].created_at = now;
	t->n++;
	return 0;
}

int tokens_revoke(struct tokens *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->v[i].name, name) == 0) {
			memmove(&t->v[i], &t->v[i + 1], (t->n - i - 1) * sizeof(*t->v));
			t->n--;
			return 0;
		}
	return -ENOENT;
}

struct token_entry *tokens_match(const struct tokens *t, const char *presented, size_t len)
{
	uint8_t h[TOKEN_HASH_LEN];
	struct token_entry *found = NULL;

	if (len != TOKEN_TEXT_LEN || tokens_hash(presented, len, h) < 0)
		return NULL;
	for (size_t i = 0; i < t->n; i++)
		if (CRYPTO_memcmp(h, t->v[i].hash, TOKEN_HASH_LEN) == 0)
			found = &t->v[i];
	return found;
}

const struct token_entry *tokens_find_hash(const struct tokens *t,
					   const uint8_t hash[TOKEN_HASH_LEN])
{
	for (size_t i = 0; i < t->n; i++)
		if (memcmp(hash, t->v[i].hash, TOKEN_HASH_LEN) == 0)
			return &t->v[i];
	return NULL;
}

void tokens_free(struct tokens *t)
{
	free(t->v);
	t->v = NULL;
	t->n = 0;
}
