/*
 * Who a request is, and what it may do: the decision nginx asks agentd-api for on
 * every request (auth_request), and how the daemons read the answer back from the headers nginx
 * sets. Pure: the token store is passed in, nothing here does I/O.
 *
 * Credentials, in this order:
 *   1. a bearer token (Authorization: Bearer <token>), or else the cookie AUTH_COOKIE a browser
 *      got for one (GET /?token=, POST /login): the token's name is the identity, its readOnly
 *      the role;
 *   2. on the trusted path only (the unix socket only `tailscale serve` reaches, see
 *      deploy/tailscale.md), the Tailscale-User-Login serve sets, when it is listed in
 *      AGENTD_TAILSCALE_USERS (admin; "*": any identified tailnet user) or
 *      AGENTD_TAILSCALE_VIEWERS (read-only). A Funnel request (Tailscale-Funnel-Request) is
 *      anonymous, and so is every request elsewhere, whatever Tailscale-* headers it carries.
 * No credential, a bad or revoked one, an unlisted login: 401. A read-only identity may only
 * GET (and HEAD): anything else is 403. A token store that cannot be read refuses everyone.
 *
 * An optional client header X-Agentd-Actor (1..AUTH_ACTOR_MAX of [A-Za-z0-9._@-]) narrows the
 * identity for the record: by = "<identity>:<actor>" (a bot with token `telegram` acting for
 * its user 12345 is `telegram:12345`). It grants nothing.
 */
#ifndef AGENTD_AUTH_H
#define AGENTD_AUTH_H

#include "tokens.h"

#include <stdbool.h>
#include <stddef.h>

#define AUTH_COOKIE       "agentd_token"
#define AUTH_IDENTITY_MAX 128 /* a token name (64) or a Tailscale login */
#define AUTH_ACTOR_MAX    64
#define AUTH_BY_MAX       (AUTH_IDENTITY_MAX + 1 + AUTH_ACTOR_MAX)
/* The headers nginx sets for the daemons from the decision (and strips from clients). */
#define AUTH_HEADER_IDENTITY "X-Agentd-Identity"
#define AUTH_HEADER_ROLE     "X-Agentd-Role"
#define AUTH_HEADER_BY       "X-Agentd-By"
/* Which credential let the request in, for the bridge to check again while a connection it let
 * in stays open: AUTH_CREDENTIAL_TOKEN and the token's stored SHA-256 in hex (what the store
 * holds: no credential), or AUTH_CREDENTIAL_TAILSCALE. */
#define AUTH_HEADER_CREDENTIAL    "X-Agentd-Credential"
#define AUTH_CREDENTIAL_TOKEN     "token:"
#define AUTH_CREDENTIAL_TAILSCALE "tailscale"
#define AUTH_CREDENTIAL_MAX       (sizeof(AUTH_CREDENTIAL_TOKEN) - 1 + TOKEN_HASH_HEX)
#define AUTH_ROLE_ADMIN           "admin"
#define AUTH_ROLE_VIEWER          "viewer"
/*
 * How long nginx may give a granted read (GET, HEAD) again to requests with the same credentials
 * without asking (the door's cache, nginx/agentd.conf.in), in whole seconds: nginx counts them on
 * its clock's whole seconds, so a grant is reused for less than AUTH_REUSE_SECS + 1 seconds, and a
 * token revoked (or a store that breaks) is refused for reads at most that long after. Changes
 * (every other method) and refusals are never reused: each is decided when it is made.
 */
#define AUTH_REUSE_SECS  1
#define AUTH_REUSE_BOUND (AUTH_REUSE_SECS + 1) /* the bound on a revocation's delay */

/* What nginx passes about one request (each string may be NULL or "": absent). */
struct auth_input {
	const char *method;        /* the request's own method */
	const char *authorization; /* Authorization */
	const char *cookie;        /* the value of the AUTH_COOKIE cookie */
	const char *actor;         /* X-Agentd-Actor */
	bool via_tailscale;        /* arrived on the trusted tailscale serve socket */
	const char *ts_login;      /* Tailscale-User-Login (read only when via_tailscale) */
	const char *ts_funnel;     /* Tailscale-Funnel-Request (likewise) */
};

/* The lists of AGENTD_TAILSCALE_USERS and AGENTD_TAILSCALE_VIEWERS (borrowed). */
struct auth_policy {
	const char *ts_users;
	const char *ts_viewers;
};

struct auth_result {
	int status;          /* 200, 401 or 403 */
	const char *code;    /* on 401/403: "unauthenticated", "invalid_token", "read_only", ... */
	const char *message; /* on 401/403: a sentence for the client */
	bool admin;
	char identity[AUTH_IDENTITY_MAX + 1];     /* on 200 */
	char by[AUTH_BY_MAX + 1];                 /* on 200: identity[:actor] */
	char credential[AUTH_CREDENTIAL_MAX + 1]; /* on 200: AUTH_HEADER_CREDENTIAL's value */
	struct token_entry *token;                /* on 200 by token: its entry in the store */
	int reuse_secs; /* on 200: AUTH_REUSE_SECS for a read, else 0 (the answer is not reused) */
};

/*
 * Decides for in. tokens is the loaded store, or NULL when it could not be read (everyone is
 * refused then, code "credentials_unavailable"). Fills out; returns out->status.
 */
int auth_decide(const struct auth_input *in, const struct tokens *tokens,
		const struct auth_policy *policy, struct auth_result *out);

/* True when login is listed in list (blank- or comma-separated; "*" lists everyone; logins
 * compare without regard to case). */
bool auth_list_has(const char *list, const char *login);

/* True for 1..AUTH_ACTOR_MAX characters of [A-Za-z0-9._@-]. */
bool auth_actor_valid(const char *actor);

/* True for a value the daemons accept as X-Agentd-By: 1..AUTH_BY_MAX of [A-Za-z0-9._@:+-]. */
bool auth_by_valid(const char *by);

/*
 * The monitoring token (AGENTD_METRICS_TOKEN): a bearer token a Prometheus server scrapes
 * GET /metrics with, and nothing else. nginx asks for it only from the /metrics location (its
 * own door, /.agentd/auth-metrics), so no other path can be opened with it. A configured token
 * shorter than AUTH_METRICS_TOKEN_MIN is no token: a guessable one would be worse than none.
 */
#define AUTH_METRICS_TOKEN_MIN 32
#define AUTH_METRICS_IDENTITY  "metrics"

/* True when authorization ("Bearer <token>") presents expected, a token of at least
 * AUTH_METRICS_TOKEN_MIN bytes. Compared in constant time (SHA-256 of both, CRYPTO_memcmp): the
 * time says nothing of how much of a guess was right, nor of the token's length. */
bool auth_metrics_token_ok(const char *authorization, const char *expected);

/* What a daemon knows of the request's sender, from the headers nginx set. */
struct auth_who {
	bool admin;               /* X-Agentd-Role is exactly "admin" */
	char by[AUTH_BY_MAX + 1]; /* X-Agentd-By, or "unknown" when absent or malformed */
};

/* Fills who from the role and by header values (each NULL when absent). Without a role the
 * sender is read-only: a daemon reached without nginx's decision grants nothing. */
void auth_who_from_headers(struct auth_who *who, const char *role, const char *by);

#endif
