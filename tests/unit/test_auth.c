#include "auth.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static struct tokens store;
static char admin_tok[TOKEN_TEXT_LEN + 1], viewer_tok[TOKEN_TEXT_LEN + 1];
static const struct auth_policy policy = {.ts_users = "alice@github, Bob@Example.com",
					  .ts_viewers = "carol@github"};

static void setup(void)
{
	struct cause cause = {{0}};

	memset(&store, 0, sizeof(store));
	cr_assert_eq(tokens_add(&store, "admin", false, 1, admin_tok, &cause), 0);
	cr_assert_eq(tokens_add(&store, "telegram", true, 1, viewer_tok, &cause), 0);
}

static void teardown(void)
{
	tokens_free(&store);
}

TestSuite(auth, .init = setup, .fini = teardown);

static int decide(struct auth_input *in, struct auth_result *out)
{
	if (in->method == NULL)
		in->method = "GET";
	return auth_decide(in, &store, &policy, out);
}

Test(auth, no_credentials_is_401)
{
	struct auth_input in = {0};
	struct auth_result out;

	cr_assert_eq(decide(&in, &out), 401);
	cr_assert_str_eq(out.code, "unauthenticated");
}

Test(auth, bearer_token_names_the_identity)
{
	char hdr[80];
	struct auth_input in = {.authorization = hdr, .method = "POST"};
	struct auth_result out;

	snprintf(hdr, sizeof(hdr), "Bearer %s", admin_tok);
	cr_assert_eq(decide(&in, &out), 200);
	cr_assert(out.admin);
	cr_assert_str_eq(out.identity, "admin");
	cr_assert_str_eq(out.by, "admin");
	cr_assert_not_null(out.token);
	snprintf(hdr, sizeof(hdr), "bearer  %s", admin_tok);
	cr_assert_eq(decide(&in, &out), 200, "the scheme is case-insensitive");
}

Test(auth, bad_or_malformed_token_is_401)
{
	char hdr[80];
	struct auth_input in = {.authorization = hdr};
	struct auth_result out;

	snprintf(hdr, sizeof(hdr), "Bearer %s", admin_tok);
	hdr[strlen(hdr) - 1] ^= 1;
	cr_assert_eq(decide(&in, &out), 401);
	cr_assert_str_eq(out.code, "invalid_token");
	in.authorization = "Basic YWRtaW46eA==";
	cr_assert_eq(decide(&in, &out), 401);
	in.authorization = "Bearer";
	cr_assert_eq(decide(&in, &out), 401);
}

Test(auth, revoked_token_is_401)
{
	char hdr[80];
	struct auth_input in = {.authorization = hdr};
	struct auth_result out;

	snprintf(hdr, sizeof(hdr), "Bearer %s", admin_tok);
	cr_assert_eq(tokens_revoke(&store, "admin"), 0);
	cr_assert_eq(decide(&in, &out), 401);
	cr_assert_str_eq(out.code, "invalid_token");
}

Test(auth, cookie_is_used_without_authorization)
{
	struct auth_input in = {.cookie = admin_tok};
	struct auth_result out;

	cr_assert_eq(decide(&in, &out), 200);
	cr_assert_str_eq(out.identity, "admin");
}

Test(auth, read_only_may_only_read)
{
	struct auth_input in = {.cookie = viewer_tok, .method = "GET"};
	struct auth_result out;

	cr_assert_eq(decide(&in, &out), 200);
	cr_assert_not(out.admin);
	in.method = "HEAD";
	cr_assert_eq(decide(&in, &out), 200);
	in.method = "POST";
	cr_assert_eq(decide(&in, &out), 403);
	cr_assert_str_eq(out.code, "read_only");
	in.method = "DELETE";
	cr_assert_eq(decide(&in, &out), 403);
}

/* nginx keeps a grant marked reusable (the door's cache): only reads, never a change, never a
 * refusal, so a revoked token and a viewer's cached read can never let a change through. */
Test(auth, only_granted_reads_are_reusable)
{
	char hdr[80];
	struct auth_input in = {.authorization = hdr, .method = "GET"};
	struct auth_result out;

	snprintf(hdr, sizeof(hdr), "Bearer %s", admin_tok);
	cr_assert_eq(decide(&in, &out), 200);
	cr_assert_eq(out.reuse_secs, AUTH_REUSE_SECS);
	cr_assert_gt(AUTH_REUSE_SECS, 0);
	in.method = "HEAD";
	cr_assert_eq(decide(&in, &out), 200);
	cr_assert_eq(out.reuse_secs, AUTH_REUSE_SECS);
	in.method = "POST";
	cr_assert_eq(decide(&in, &out), 200);
	cr_assert_eq(out.reuse_secs, 0, "an admin's change is decided each time");
	in.method = "DELETE";
	cr_assert_eq(decide(&in, &out), 200);
	cr_assert_eq(out.reuse_secs, 0);
	in.method = "get";
	cr_assert_eq(decide(&in, &out), 200);
	cr_assert_eq(out.reuse_secs, 0, "methods compare exactly");
	in.method = "GET";
	snprintf(hdr, sizeof(hdr), "Bearer %s", viewer_tok);
	cr_assert_eq(decide(&in, &out), 200);
	cr_assert_eq(out.reuse_secs, AUTH_REUSE_SECS, "a viewer's read");
	in.method = "POST";
	cr_assert_eq(decide(&in, &out), 403);
	cr_assert_eq(out.reuse_secs, 0, "a refusal is never reused");
	in.method = "GET";
	snprintf(hdr, sizeof(hdr), "Bearer agentd_%043d", 0);
	cr_assert_eq(decide(&in, &out), 401);
	cr_assert_eq(out.reuse_secs, 0);
	in.authorization = NULL;
	cr_assert_eq(decide(&in, &out), 401);
	cr_assert_eq(out.reuse_secs, 0);
	in.cookie = admin_tok;
	in.actor = "a b";
	cr_assert_eq(decide(&in, &out), 403);
	cr_assert_eq(out.reuse_secs, 0);
	cr_assert_eq(auth_decide(&in, NULL, &policy, &out), 401);
	cr_assert_eq(out.reuse_secs, 0, "nor is an unreadable store's refusal");
}

Test(auth, actor_narrows_by_and_is_checked)
{
	struct auth_input in = {.cookie = viewer_tok, .actor = "12345"};
	struct auth_result out;

	cr_assert_eq(decide(&in, &out), 200);
	cr_assert_str_eq(out.identity, "telegram");
	cr_assert_str_eq(out.by, "telegram:12345");
	in.actor = "a b";
	cr_assert_eq(decide(&in, &out), 403);
	cr_assert_str_eq(out.code, "invalid_actor");
	in.actor = "12345678901234567890123456789012345678901234567890123456789012345";
	cr_assert_eq(decide(&in, &out), 403, "65 characters");
}

Test(auth, tailscale_login_counts_only_on_the_trusted_path)
{
	struct auth_input in = {.ts_login = "alice@github", .method = "POST"};
	struct auth_result out;

	cr_assert_eq(decide(&in, &out), 401, "forged on loopback");
	in.via_tailscale = true;
	cr_assert_eq(decide(&in, &out), 200);
	cr_assert(out.admin);
	cr_assert_str_eq(out.by, "alice@github");
	in.ts_login = "bob@example.com";
	cr_assert_eq(decide(&in, &out), 200, "logins compare without case");
	in.ts_login = "mallory@github";
	cr_assert_eq(decide(&in, &out), 401);
	cr_assert_str_eq(out.code, "tailscale_user_not_allowed");
	in.ts_login = "carol@github";
	cr_assert_eq(decide(&in, &out), 403, "a viewer may not POST");
	in.method = "GET";
	cr_assert_eq(decide(&in, &out), 200);
	cr_assert_not(out.admin);
	in.ts_funnel = "?1";
	in.ts_login = "alice@github";
	cr_assert_eq(decide(&in, &out), 401, "a funnel request is anonymous");
	in.ts_funnel = NULL;
	in.ts_login = "alice\"@github";
	cr_assert_eq(decide(&in, &out), 401, "a login with a quote");
}

Test(auth, star_admits_any_identified_user)
{
	struct auth_policy star = {.ts_users = "*"};
	struct auth_input in = {.via_tailscale = true, .ts_login = "x@y", .method = "GET"};
	struct auth_result out;

	cr_assert_eq(auth_decide(&in, &store, &star, &out), 200);
	in.ts_login = "";
	cr_assert_eq(auth_decide(&in, &store, &star, &out), 401, "no login is anonymous");
}

Test(auth, unreadable_store_refuses_everyone)
{
	struct auth_input in = {.cookie = admin_tok, .method = "GET"};
	struct auth_result out;

	cr_assert_eq(auth_decide(&in, NULL, &policy, &out), 401);
	cr_assert_str_eq(out.code, "credentials_unavailable");
	in.cookie = NULL;
	in.via_tailscale = true;
	in.ts_login = "alice@github";
	cr_assert_eq(auth_decide(&in, NULL, &policy, &out), 401);
}

Test(auth, who_without_role_is_read_only)
{
	struct auth_who who;

	auth_who_from_headers(&who, NULL, NULL);
	cr_assert_not(who.admin);
	cr_assert_str_eq(who.by, "unknown");
	auth_who_from_headers(&who, "admin", "telegram:12345");
	cr_assert(who.admin);
	cr_assert_str_eq(who.by, "telegram:12345");
	auth_who_from_headers(&who, "Admin", "a\"b");
	cr_assert_not(who.admin);
	cr_assert_str_eq(who.by, "unknown");
}

Test(auth, grant_names_its_credential)
{
	char hdr[80], hex[TOKEN_HASH_HEX + 1];
	struct auth_input in = {.authorization = hdr, .method = "GET"};
	struct auth_result out;

	snprintf(hdr, sizeof(hdr), "Bearer %s", admin_tok);
	cr_assert_eq(decide(&in, &out), 200);
	tokens_hash_hex(out.token->hash, hex);
	cr_assert_eq(strncmp(out.credential, AUTH_CREDENTIAL_TOKEN, 6), 0);
	cr_assert_str_eq(out.credential + 6, hex,
			 "the token's stored hash, as the store writes it");
	in =
	    (struct auth_input){.via_tailscale = true, .ts_login = "alice@github", .method = "GET"};
	cr_assert_eq(decide(&in, &out), 200);
	cr_assert_str_eq(out.credential, AUTH_CREDENTIAL_TAILSCALE);
}

Test(auth, metrics_token_opens_only_with_the_exact_token)
{
	const char *tok = "m3tr1cs-0123456789abcdef0123456789abcdef";

	cr_assert(auth_metrics_token_ok("Bearer m3tr1cs-0123456789abcdef0123456789abcdef", tok));
	cr_assert(auth_metrics_token_ok("bearer m3tr1cs-0123456789abcdef0123456789abcdef", tok));
	cr_assert_not(auth_metrics_token_ok("Bearer m3tr1cs-0123456789abcdef0123456789abcde", tok));
	cr_assert_not(
	    auth_metrics_token_ok("Bearer m3tr1cs-0123456789abcdef0123456789abcdef0", tok));
	cr_assert_not(auth_metrics_token_ok("Basic m3tr1cs-0123456789abcdef0123456789abcdef", tok));
	cr_assert_not(auth_metrics_token_ok("Bearer ", tok));
	cr_assert_not(auth_metrics_token_ok(NULL, tok));
	cr_assert_not(auth_metrics_token_ok("", tok));
}

Test(auth, metrics_token_unset_or_short_opens_nothing)
{
	cr_assert_not(auth_metrics_token_ok("Bearer ", ""));
	cr_assert_not(auth_metrics_token_ok("Bearer x", NULL));
	/* 31 bytes: below AUTH_METRICS_TOKEN_MIN, refused even when presented exactly. */
	cr_assert_not(auth_metrics_token_ok("Bearer 0123456789012345678901234567890",
					    "0123456789012345678901234567890"));
}
