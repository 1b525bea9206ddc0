#include "auth.h"

#include <ctype.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "session.h"

_Static_assert(SESSION_BY_MAX == AUTH_BY_MAX, "a record holds any by");

/* A Tailscale login as serve sends it (alice@example.com, alice@github): it is written into a
 * header and the event log, so only these characters pass. */
static bool auth_login_valid(const char *login)
{
	size_t n = strlen(login);

	if (n == 0 || n > AUTH_IDENTITY_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)login[i]) && strchr("._@+-", login[i]) == NULL)
			return false;
	return true;
}

bool auth_actor_valid(const char *actor)
{
	size_t n = strlen(actor);

	if (n == 0 || n > AUTH_ACTOR_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)actor[i]) && strchr("._@-", actor[i]) == NULL)
			return false;
	return true;
}

bool auth_by_valid(const char *by)
{
	size_t n = strlen(by);

	if (n == 0 || n > AUTH_BY_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)by[i]) && strchr("._@:+-", by[i]) == NULL)
			return false;
	return true;
}

bool auth_list_has(const char *list, const char *login)
{
	size_t n = strlen(login);

	for (const char *p = list != NULL ? list : ""; *p != '\0';) {
		size_t len;

		p += strspn(p, " \t,");
		len = strcspn(p, " \t,");
		if (len == 1 && *p == '*')
			return true;
		if (len > 0 && len == n && strncasecmp(p, login, n) == 0)
			return true;
		p += len;
	}
	return false;
}

static bool auth_empty(const char *s)
{
	return s == NULL || *s == '\0';
}

static int auth_refuse(struct auth_result *out, int status, const char *code, const char *message)
{
	out->status = status;
	out->code = code;
	out->message = message;
	return status;
}

/* The token of an Authorization value: "Bearer <token>" (the scheme in any case). NULL for any
 * other scheme. */
static const char *auth_bearer(const char *authorization, size_t *len)
{
	const char *t;

	if (strncasecmp(authorization, "Bearer ", 7) != 0)
		return NULL;
	t = authorization + 7;
	t += strspn(t, " ");
	*len = strcspn(t, " \t");
	return t[*len] == '\0' ? t : NULL;
}

static bool auth_reads_only(const char *method)
{
	return !auth_empty(method) && (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0);
}

int auth_decide(const struct auth_input *in, const struct tokens *tokens,
		const struct auth_policy *policy, struct auth_result *out)
{
	const char *presented = NULL;
	size_t len = 0;

	memset(out, 0, sizeof(*out));
	if (tokens == NULL)
		return auth_refuse(out, 401, "credentials_unavailable",
				   "the credential store cannot be read: nobody is let in (see "
				   "agentd-api's log)");
	if (!auth_empty(in->authorization)) {
		presented = auth_bearer(in->authorization, &len);
		if (presented == NULL)
			return auth_refuse(out, 401, "invalid_token",
					   "Authorization must be: Bearer <token>");
	} else if (!auth_empty(in->cookie)) {
		presented = in->cookie;
		len = strlen(presented);
	}
	if (presented != NULL) {
		out->token = tokens_match(tokens, presented, len);
		if (out->token == NULL)
			return auth_refuse(out, 401, "invalid_token",
					   "this token is not valid (unknown or revoked)");
		snprintf(out->identity, sizeof(out->identity), "%s", out->token->name);
		out->admin = !out->token->read_only;
		memcpy(out->credential, AUTH_CREDENTIAL_TOKEN, sizeof(AUTH_CREDENTIAL_TOKEN) - 1);
		tokens_hash_hex(out->token->hash,
				out->credential + sizeof(AUTH_CREDENTIAL_TOKEN) - 1);
	} else if (in->via_tailscale && auth_empty(in->ts_funnel) && !auth_empty(in->ts_login)) {
		if (!auth_login_valid(in->ts_login))
			return auth_refuse(out, 401, "tailscale_user_not_allowed",
					   "this Tailscale login cannot be used here");
		if (auth_list_has(policy->ts_users, in->ts_login))
			out->admin = true;
		else if (!auth_list_has(policy->ts_viewers, in->ts_login))
			return auth_refuse(out, 401, "tailscale_user_not_allowed",
					   "this Tailscale user is not allowed here (see "
					   "AGENTD_TAILSCALE_USERS)");
		snprintf(out->identity, sizeof(out->identity), "%s", in->ts_login);
		snprintf(out->credential, sizeof(out->credential), "%s", AUTH_CREDENTIAL_TAILSCALE);
	} else {
		return auth_refuse(out, 401, "unauthenticated",
				   "credentials are required: Authorization: Bearer <token>, or "
				   "sign in at /login");
	}
	if (!auth_empty(in->actor) && !auth_actor_valid(in->actor)) {
		return auth_refuse(out, 403, "invalid_actor",
				   "X-Agentd-Actor must be 1 to 64 of A-Z a-z 0-9 . _ @ -");
	}
	if (!out->admin && !auth_reads_only(in->method))
		return auth_refuse(out, 403, "read_only",
				   "this identity is read-only: it may not change anything");
	if (auth_empty(in->actor))
		snprintf(out->by, sizeof(out->by), "%s", out->identity);
	else
		snprintf(out->by, sizeof(out->by), "%s:%s", out->identity, in->actor);
	/* A read granted may be given again for a moment (the lists nginx polls); a change is
	 * always decided when it is made, so a revoked token changes nothing after its revoke. */
	out->reuse_secs = auth_reads_only(in->method) ? AUTH_REUSE_SECS : 0;
	out->status = 200;
	return 200;
}

bool auth_metrics_token_ok(const char *authorization, const char *expected)
{
	uint8_t want[SHA256_DIGEST_LENGTH], got[SHA256_DIGEST_LENGTH];
	const char *presented;
	size_t len = 0;

	if (auth_empty(authorization) || expected == NULL ||
	    strlen(expected) < AUTH_METRICS_TOKEN_MIN ||
	    (presented = auth_bearer(authorization, &len)) == NULL)
		return false;
	SHA256((const unsigned char *)expected, strlen(expected), want);
	SHA256((const unsigned char *)presented, len, got);
	return CRYPTO_memcmp(want, got, sizeof(want)) == 0;
}

void auth_who_from_headers(struct auth_who *who, const char *role, const char *by)
{
	who->admin = role != NULL && strcmp(role, AUTH_ROLE_ADMIN) == 0;
	snprintf(who->by, sizeof(who->by), "%s", by != NULL && auth_by_valid(by) ? by : "unknown");
}
