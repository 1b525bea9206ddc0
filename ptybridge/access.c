#include "access.h"

#include "auth.h"
#include "cause.h"
#include "log.h"

#include <errno.h>
#include <string.h>

int access_init(struct access *a, const struct config *cfg)
{
	memset(a, 0, sizeof(*a));
	if (config_state_path(cfg, TOKENS_STORE, a->path, sizeof(a->path)) < 0)
		return -ENAMETOOLONG;
	access_refresh(a);
	return 0;
}

void access_finish(struct access *a)
{
	tokens_free(&a->t);
}

static bool access_same_file(const struct stat *x, const struct stat *y)
{
	return x->st_dev == y->st_dev && x->st_ino == y->st_ino && x->st_size == y->st_size &&
	       x->st_mtim.tv_sec == y->st_mtim.tv_sec && x->st_mtim.tv_nsec == y->st_mtim.tv_nsec &&
	       x->st_ctim.tv_sec == y->st_ctim.tv_sec && x->st_ctim.tv_nsec == y->st_ctim.tv_nsec;
}

/* The store cannot be read: nobody is let in until it can (said once). */
static void access_broken(struct access *a, const char *why)
{
	if (!a->loaded || !a->broken)
		log_error("cannot read the token store %s: %s: every connection is closed", a->path,
			  why);
	tokens_free(&a->t);
	a->loaded = a->broken = true;
	a->missing = false;
	memset(&a->st, 0, sizeof(a->st));
}

bool access_refresh(struct access *a)
{
	struct cause cause = {{0}};
	struct tokens fresh = {0};
	struct stat st;
	int r;

	if (stat(a->path, &st) < 0) {
		if (errno != ENOENT) {
			bool was = a->loaded && a->broken;

			access_broken(a, strerror(errno));
			return !was;
		}
		if (a->loaded && a->missing)
			return false;
		tokens_free(&a->t);
		a->loaded = a->missing = true;
		a->broken = false;
		return true;
	}
	if (a->loaded && !a->missing && access_same_file(&st, &a->st))
		return false;
	r = tokens_load(a->path, &fresh, &cause);
	if (r < 0 && r != -ENOENT) {
		bool was = a->loaded && a->broken;

		access_broken(a, cause.msg);
		a->st = st; /* read again when it changes */
		return !was;
	}
	if (a->loaded && a->broken)
		log_info("the token store %s is readable again", a->path);
	tokens_free(&a->t);
	a->t = fresh;
	a->st = st;
	a->loaded = true;
	a->broken = false;
	a->missing = r == -ENOENT;
	return true;
}

void access_parse(const char *value, struct access_cred *cred)
{
	size_t n = sizeof(AUTH_CREDENTIAL_TOKEN) - 1;

	memset(cred, 0, sizeof(*cred));
	if (value == NULL)
		cred->kind = ACCESS_NONE;
	else if (strcmp(value, AUTH_CREDENTIAL_TAILSCALE) == 0)
		cred->kind = ACCESS_TAILSCALE;
	else if (strncmp(value, AUTH_CREDENTIAL_TOKEN, n) == 0 &&
		 tokens_hash_unhex(value + n, cred->hash) == 0)
		cred->kind = ACCESS_TOKEN;
	else
		cred->kind = ACCESS_INVALID;
}

static bool access_refuse(struct access_refusal *why, const char *code, const char *message)
{
	why->code = code;
	why->message = message;
	return false;
}

bool access_allowed(const struct access *a, const struct access_cred *cred,
		    struct access_refusal *why)
{
	if (a->broken)
		return access_refuse(why, "credentials_unavailable",
				     "the credential store cannot be read: nobody is let in");
	switch (cred->kind) {
	case ACCESS_NONE:
	case ACCESS_TAILSCALE:
		return true;
	case ACCESS_TOKEN:
		if (tokens_find_hash(&a->t, cred->hash) != NULL)
			return true;
		return access_refuse(why, "credentials_revoked",
				     "the token of this connection was revoked");
	case ACCESS_INVALID:
		break;
	}
	return access_refuse(why, "invalid_token",
			     "the credential of this connection is malformed");
}
