#include "pushsubs.h"

#include "fsutil.h"
#include "isotime.h"
#include "jsonfile.h"
#include "jsontext.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define PUSHSUBS_FILE_MODE 0600

int pushsubs_lock(const char *lock_path)
{
	return fsutil_lock(lock_path, LOCK_EX, PUSHSUBS_FILE_MODE);
}

void pushsub_id(const char *endpoint, char out[PUSHSUB_ID_LEN + 1])
{
	uint8_t h[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	memset(h, 0, sizeof(h));
	EVP_Digest(endpoint, strlen(endpoint), h, &n, EVP_sha256(), NULL);
	for (size_t i = 0; i < PUSHSUB_ID_LEN / 2; i++)
		snprintf(out + 2 * i, 3, "%02x", h[i]);
}

bool pushsub_endpoint_valid(const char *endpoint, const char *allow_http_origin)
{
	size_t n = strlen(endpoint), o = allow_http_origin ? strlen(allow_http_origin) : 0;
	const char *host;

	if (n == 0 || n > PUSHSUB_ENDPOINT_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (endpoint[i] <= ' ' || endpoint[i] >= 0x7f || endpoint[i] == '#' ||
		    endpoint[i] == '"' || endpoint[i] == '\\')
			return false;
	if (strncmp(endpoint, "https://", 8) == 0)
		host = endpoint + 8;
	else if (o > 0 && strncmp(endpoint, "http://", 7) == 0 &&
		 strncmp(endpoint, allow_http_origin, o) == 0 && endpoint[o] == '/')
		host = endpoint + 7;
	else
		return false;
	/* A host, then the path: no userinfo (it would hide the real host from a reader). */
	for (const char *p = host; *p != '\0' && *p != '/'; p++)
		if (*p == '@' || *p == '?')
			return false;
	return *host != '/' && *host != '\0' && strchr(host, '/') != NULL;
}

bool pushsub_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n > PUSHSUB_NAME_MAX || !jsontext_utf8_valid(name, n))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)name[i] < ' ' || name[i] == 0x7f)
			return false;
	return true;
}

static int pushsubs_str(json_object *o, const char *key, char *out, size_t outlen)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string) ||
	    (size_t)json_object_get_string_len(v) >= outlen)
		return -EINVAL;
	memcpy(out, json_object_get_string(v), (size_t)json_object_get_string_len(v) + 1);
	return 0;
}

static int pushsubs_entry(json_object *o, struct pushsub *e)
{
	char created[ISOTIME_LEN + 1];

	if (!json_object_is_type(o, json_type_object) ||
	    pushsubs_str(o, "id", e->id, sizeof(e->id)) < 0 ||
	    pushsubs_str(o, "identity", e->identity, sizeof(e->identity)) < 0 ||
	    pushsubs_str(o, "endpoint", e->endpoint, sizeof(e->endpoint)) < 0 ||
	    pushsubs_str(o, "p256dh", e->p256dh, sizeof(e->p256dh)) < 0 ||
	    pushsubs_str(o, "auth", e->auth, sizeof(e->auth)) < 0 ||
	    pushsubs_str(o, "name", e->name, sizeof(e->name)) < 0 ||
	    pushsubs_str(o, "createdAt", created, sizeof(created)) < 0 ||
	    isotime_parse(created, &e->created_at) < 0)
		return -EINVAL;
	return 0;
}

int pushsubs_load(const char *path, struct pushsubs *s, struct cause *cause)
{
	json_object *root, *arr;
	size_t n;
	int r;

	s->v = NULL;
	s->n = 0;
	r = jsonfile_load(path, PUSHSUBS_FILE_MAX, "subscriptions", PUSHSUBS_MAX, NULL, &root, &arr,
			  cause);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	n = json_object_array_length(arr);
	s->v = n > 0 ? calloc(n, sizeof(*s->v)) : NULL;
	if (n > 0 && s->v == NULL) {
		r = cause_fail(cause, ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (pushsubs_entry(json_object_array_get_idx(arr, i), &s->v[i]) < 0) {
			r = cause_fail(cause, EINVAL, "%s: entry %zu is not valid", path, i);
			goto out;
		}
		s->n = i + 1;
	}
out:
	if (r < 0)
		pushsubs_free(s);
	json_object_put(root);
	return r;
}

int pushsubs_save(const char *path, const struct pushsubs *s, struct cause *cause)
{
	json_object *arr = json_object_new_array();
	int r;

	if (arr == NULL)
		return cause_fail(cause, ENOMEM, "out of memory");
	for (size_t i = 0; i < s->n; i++) {
		const struct pushsub *e = &s->v[i];
		json_object *o = json_object_new_object();
		char created[ISOTIME_LEN + 1];

		isotime_format(e->created_at, created, sizeof(created));
		json_object_object_add(o, "id", json_object_new_string(e->id));
		json_object_object_add(o, "identity", json_object_new_string(e->identity));
		json_object_object_add(o, "endpoint", json_object_new_string(e->endpoint));
		json_object_object_add(o, "p256dh", json_object_new_string(e->p256dh));
		json_object_object_add(o, "auth", json_object_new_string(e->auth));
		json_object_object_add(o, "name", json_object_new_string(e->name));
		json_object_object_add(o, "createdAt", json_object_new_string(created));
		json_object_array_add(arr, o);
	}
	r = jsonfile_save(path, "subscriptions", arr, JSON_C_TO_STRING_PLAIN, PUSHSUBS_FILE_MODE);
	json_object_put(arr);
	if (r < 0)
		return cause_fail(cause, -r, "cannot write %s: %s", path, strerror(-r));
	return 0;
}

void pushsubs_free(struct pushsubs *s)
{
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

int pushsubs_put(struct pushsubs *s, const struct pushsub *sub)
{
	struct pushsub e = *sub, *grown;
	size_t mine = 0;

	pushsub_id(e.endpoint, e.id);
	for (size_t i = 0; i < s->n; i++) {
		if (strcmp(s->v[i].endpoint, e.endpoint) == 0) {
			/* A browser's endpoint is its own: another identity cannot take it over
			 * (it would get the first one's notifications). */
			if (strcmp(s->v[i].identity, e.identity) != 0)
				return -EEXIST;
			e.created_at = s->v[i].created_at;
			s->v[i] = e;
			return 0;
		}
		if (strcmp(s->v[i].identity, e.identity) == 0)
			mine++;
	}
	if (mine >= PUSHSUBS_PER_IDENTITY || s->n >= PUSHSUBS_MAX)
		return -E2BIG;
	grown = realloc(s->v, (s->n + 1) * sizeof(*s->v));
	if (grown == NULL)
		return -ENOMEM;
	s->v = grown;
	s->v[s->n++] = e;
	return 1;
}

int pushsubs_remove(struct pushsubs *s, const char *identity, const char *id)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i].id, id) == 0 &&
		    (identity == NULL || strcmp(s->v[i].identity, identity) == 0)) {
			memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof(*s->v));
			s->n--;
			return 0;
		}
	return -ENOENT;
}
