/*
 * The access door's side in agentd-api (core/auth.h): the decision nginx asks for on every
 * request (auth_request to GET /.agentd/auth), and the two ways a browser trades a token for the
 * cookie: GET /?token=<t> (nginx rewrites it to GET /.agentd/token) and the /login page's POST
 * (to POST /.agentd/login). nginx reaches these paths only internally: a client cannot name them.
 */
#include "router.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define AUTH_JSON_DEPTH 4
/* The cookie lives 30 days; revoking the token ends it sooner. */
#define AUTH_COOKIE_MAX_AGE (30 * 24 * 3600)
#define AUTH_COOKIE_LINE    (sizeof(AUTH_COOKIE) + TOKEN_TEXT_LEN + 128)

/* nginx passes what the decision needs as parameters of its own (AGENTD_*): a client's headers
 * arrive as HTTP_* and cannot be mistaken for them. These seven and nothing else: they are also
 * the key under which nginx keeps a grant (fastcgi_cache_key, nginx/agentd.conf.in), and a value
 * read here but left out of the key would let requests that differ in it share a decision. */
static void api_auth_input(struct request *req, struct auth_input *in)
{
	const char *via = request_param_value(req, "AGENTD_VIA_TAILSCALE");

	memset(in, 0, sizeof(*in));
	in->method = request_param_value(req, "AGENTD_METHOD");
	in->authorization = request_param_value(req, "AGENTD_AUTHORIZATION");
	in->cookie = request_param_value(req, "AGENTD_COOKIE");
	in->actor = request_param_value(req, "AGENTD_ACTOR");
	in->via_tailscale = via != NULL && strcmp(via, "1") == 0;
	in->ts_login = request_param_value(req, "AGENTD_TS_LOGIN");
	in->ts_funnel = request_param_value(req, "AGENTD_TS_FUNNEL");
}

/* GET /.agentd/auth: 200 with the identity headers nginx passes on, or 401/403 with the code and
 * sentence of nginx's JSON error page. No body: auth_request reads only the head. A read granted
 * may be reused by nginx for a moment (X-Accel-Expires); nothing else is. */
static void api_auth_check(const struct app *app, struct request *req,
			   const char *const args[ROUTER_MAX_ARGS])
{
	struct auth_input in;
	struct auth_result out;
	char head[512 + AUTH_BY_MAX + AUTH_IDENTITY_MAX + AUTH_CREDENTIAL_MAX];

	api_auth_input(req, &in);
	authcache_decide(app->auth, &in, (int64_t)time(NULL), &out);
	if (out.status != 200) {
		snprintf(head, sizeof(head),
			 "X-Agentd-Auth-Code: %s\r\nX-Agentd-Auth-Error: %s\r\n%s", out.code,
			 out.message,
			 out.status == 401 ? "WWW-Authenticate: Bearer realm=\"agentd\"\r\n" : "");
		request_reply_head(req, out.status, head);
		return;
	}
	snprintf(head, sizeof(head), "%s: %s\r\n%s: %s\r\n%s: %s\r\n%s: %s\r\n",
		 AUTH_HEADER_IDENTITY, out.identity, AUTH_HEADER_ROLE,
		 out.admin ? AUTH_ROLE_ADMIN : AUTH_ROLE_VIEWER, AUTH_HEADER_BY, out.by,
		 AUTH_HEADER_CREDENTIAL, out.credential);
	/* A read granted goes into nginx's cache of the door, keyed on every parameter above, for
	 * out.reuse_secs (core/auth.h); everything else is asked again next time. */
	if (out.reuse_secs > 0)
		request_reply_head_reusable(req, 200, out.reuse_secs, head);
	else
		request_reply_head(req, 200, head);
}

/* GET /.agentd/auth-metrics: the door of GET /metrics alone (nginx asks it from that location
 * only). AGENTD_METRICS_TOKEN is accepted here, and only here; any other credential is decided
 * as for every request. */
static void api_auth_metrics(const struct app *app, struct request *req,
			     const char *const args[ROUTER_MAX_ARGS])
{
	const char *authorization = request_param_value(req, "AGENTD_AUTHORIZATION");

	if (auth_metrics_token_ok(authorization, app->cfg->metrics_token)) {
		request_reply_head(req, 200,
				   AUTH_HEADER_IDENTITY ": " AUTH_METRICS_IDENTITY
							"\r\n" AUTH_HEADER_ROLE
							": " AUTH_ROLE_VIEWER "\r\n" AUTH_HEADER_BY
							": " AUTH_METRICS_IDENTITY "\r\n");
		return;
	}
	api_auth_check(app, req, args);
}

/* The Set-Cookie line for token: HttpOnly (no script reads it), SameSite=Strict (no other site's
 * request carries it), Secure when the browser talks https (tailscale serve in front). */
static void api_auth_cookie(struct request *req, const char *token, char *out, size_t outlen)
{
	const char *secure = request_param_value(req, "AGENTD_SECURE");

	snprintf(out, outlen,
		 "Set-Cookie: %s=%s; Path=/; Max-Age=%d; HttpOnly; SameSite=Strict%s\r\n",
		 AUTH_COOKIE, token, AUTH_COOKIE_MAX_AGE,
		 secure != NULL && strcmp(secure, "1") == 0 ? "; Secure" : "");
}

/* True when token is one of the store's (any role): the cookie would let its holder in. Its
 * identity goes to identity (AUTH_IDENTITY_MAX + 1 bytes) when not NULL. */
static bool api_auth_token_ok(const struct app *app, const char *token, char *identity)
{
	struct auth_input in = {.method = "GET", .cookie = token};
	struct auth_result out;

	if (token == NULL || strlen(token) != TOKEN_TEXT_LEN ||
	    authcache_decide(app->auth, &in, (int64_t)time(NULL), &out) != 200)
		return false;
	if (identity != NULL)
		memcpy(identity, out.identity, sizeof(out.identity));
	return true;
}

/* True when the browser may be signed in with token's identity without asking: a link to
 * /?token= on another site must not replace who the browser is signed in as (login CSRF). So
 * the cookie is set at once only when the browser sent no cookie of another identity that is
 * still good, and the navigation did not come from another site (Sec-Fetch-Site, which browsers
 * send: SameSite=Strict keeps the cookie out of such a navigation, so its absence says nothing
 * then). Otherwise the login page asks (it sees who is signed in: GET /whoami). */
static bool api_auth_exchange_now(const struct app *app, struct request *req, const char *token,
				  const char *identity)
{
	const char *cookie = request_param_value(req, "AGENTD_COOKIE");
	const char *site = request_param_value(req, "AGENTD_FETCH_SITE");
	char current[AUTH_IDENTITY_MAX + 1];

	if (site != NULL && *site != '\0' && strcmp(site, "none") != 0 &&
	    strcmp(site, "same-origin") != 0)
		return false;
	if (cookie == NULL || *cookie == '\0' || strcmp(cookie, token) == 0)
		return true;
	return !api_auth_token_ok(app, cookie, current) || strcmp(current, identity) == 0;
}

/* GET /.agentd/token (from GET /?token=<t>): the cookie and a redirect to / without the token in
 * the address bar; a bad token goes to the login page, which says so; over another identity's
 * sign-in, or from another site, to the login page with the token in the fragment (never sent
 * to a server, so in no log), which asks before it signs in. */
static void api_auth_exchange(const struct app *app, struct request *req,
			      const char *const args[ROUTER_MAX_ARGS])
{
	const char *token = request_param_value(req, "AGENTD_TOKEN");
	char cookie[AUTH_COOKIE_LINE], head[AUTH_COOKIE_LINE + 32];
	char identity[AUTH_IDENTITY_MAX + 1];

	if (!api_auth_token_ok(app, token, identity)) {
		request_reply_head(req, 303, "Location: /login?error=invalid_token\r\n");
		return;
	}
	if (!api_auth_exchange_now(app, req, token, identity)) {
		snprintf(head, sizeof(head), "Location: /login#token=%s\r\n", token);
		request_reply_head(req, 303, head);
		return;
	}
	api_auth_cookie(req, token, cookie, sizeof(cookie));
	snprintf(head, sizeof(head), "%sLocation: /\r\n", cookie);
	request_reply_head(req, 303, head);
}

/* POST /.agentd/login {"token": "<t>"} (the /login page): 204 with the cookie, or 401. */
static void api_auth_login(const struct app *app, struct request *req,
			   const char *const args[ROUTER_MAX_ARGS])
{
	json_object *root, *v;
	char head[AUTH_COOKIE_LINE];

	if ((root = request_json_body(req, APP_BODY_MAX, AUTH_JSON_DEPTH)) == NULL)
		return;
	if (!json_object_object_get_ex(root, "token", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		request_error(req, 400, "invalid_request", "the body must be {\"token\": \"...\"}");
		goto out;
	}
	if (!api_auth_token_ok(app, json_object_get_string(v), NULL)) {
		request_error(req, 401, "invalid_token",
			      "this token is not valid (unknown or revoked)");
		goto out;
	}
	api_auth_cookie(req, json_object_get_string(v), head, sizeof(head));
	request_reply_head(req, 204, head);
out:
	json_object_put(root);
}

const struct route api_auth_routes[] = {
    {"GET", "/.agentd/auth", api_auth_check, false},
    {"GET", "/.agentd/auth-metrics", api_auth_metrics, false},
    {"GET", "/.agentd/token", api_auth_exchange, false},
    {"POST", "/.agentd/login", api_auth_login, true},
    {NULL, NULL, NULL, false},
};
