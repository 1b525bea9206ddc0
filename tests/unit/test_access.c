#include "access.h"

#include "auth.h"
#include "testdir.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char dir[64];
static struct config cfg;

static void setup(void)
{
	testdir_make(dir, sizeof(dir), "/tmp/test_access-XXXXXX");
	config_defaults(&cfg);
	snprintf(cfg.state_dir, sizeof(cfg.state_dir), "%s", dir);
}

static void teardown(void)
{
	testdir_remove(dir);
}

TestSuite(access, .init = setup, .fini = teardown);

/* The store at dir with t in it, replaced by a rename as `token add|revoke` do. */
static void save(const struct tokens *t)
{
	struct cause cause = {{0}};
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", dir, TOKENS_STORE);
	cr_assert_eq(tokens_save(path, t, &cause), 0, "%s", cause.msg);
}

/* The credential header nginx passes for token entry e. */
static void cred_of(const struct token_entry *e, struct access_cred *cred)
{
	char value[AUTH_CREDENTIAL_MAX + 1];

	memcpy(value, AUTH_CREDENTIAL_TOKEN, sizeof(AUTH_CREDENTIAL_TOKEN) - 1);
	tokens_hash_hex(e->hash, value + sizeof(AUTH_CREDENTIAL_TOKEN) - 1);
	access_parse(value, cred);
	cr_assert_eq(cred->kind, ACCESS_TOKEN);
}

Test(access, parses_the_credential_header)
{
	struct access_cred c;

	access_parse(NULL, &c);
	cr_assert_eq(c.kind, ACCESS_NONE);
	access_parse("tailscale", &c);
	cr_assert_eq(c.kind, ACCESS_TAILSCALE);
	access_parse("token:abc", &c);
	cr_assert_eq(c.kind, ACCESS_INVALID, "a short hash is no credential");
	access_parse("", &c);
	cr_assert_eq(c.kind, ACCESS_INVALID);
	access_parse("Tailscale", &c);
	cr_assert_eq(c.kind, ACCESS_INVALID);
}

Test(access, a_revoke_ends_only_that_token)
{
	struct cause cause = {{0}};
	struct tokens t = {0};
	struct access a;
	struct access_cred keep, gone, ts, none, bad;
	struct access_refusal why;
	char text[TOKEN_TEXT_LEN + 1];

	cr_assert_eq(tokens_add(&t, "keep", false, 1, text, &cause), 0);
	cr_assert_eq(tokens_add(&t, "gone", true, 1, text, &cause), 0);
	save(&t);
	cr_assert_eq(access_init(&a, &cfg), 0);
	cred_of(&t.v[0], &keep);
	cred_of(&t.v[1], &gone);
	access_parse("tailscale", &ts);
	access_parse(NULL, &none);
	access_parse("token:xyz", &bad);
	cr_assert(access_allowed(&a, &keep, &why));
	cr_assert(access_allowed(&a, &gone, &why));
	cr_assert_not(access_refresh(&a), "the same file: nothing changed");

	cr_assert_eq(tokens_revoke(&t, "gone"), 0);
	save(&t);
	cr_assert(access_refresh(&a), "a revoke is a change");
	cr_assert(access_allowed(&a, &keep, &why));
	cr_assert_not(access_allowed(&a, &gone, &why));
	cr_assert_str_eq(why.code, "credentials_revoked");
	cr_assert(access_allowed(&a, &ts, &why));
	cr_assert(access_allowed(&a, &none, &why));
	cr_assert_not(access_allowed(&a, &bad, &why), "a malformed credential is never let in");

	/* The name made again is another token: what the old one opened stays ended. */
	cr_assert_eq(tokens_add(&t, "gone", true, 2, text, &cause), 0);
	save(&t);
	cr_assert(access_refresh(&a));
	cr_assert_not(access_allowed(&a, &gone, &why));
	access_finish(&a);
	tokens_free(&t);
}

Test(access, a_broken_store_refuses_everyone_and_a_missing_one_every_token)
{
	struct cause cause = {{0}};
	struct tokens t = {0};
	struct access a;
	struct access_cred tok, ts;
	struct access_refusal why;
	char text[TOKEN_TEXT_LEN + 1], path[128];

	cr_assert_eq(tokens_add(&t, "one", false, 1, text, &cause), 0);
	save(&t);
	cr_assert_eq(access_init(&a, &cfg), 0);
	cred_of(&t.v[0], &tok);
	access_parse("tailscale", &ts);
	snprintf(path, sizeof(path), "%s/%s", dir, TOKENS_STORE);
	testdir_write(path, "{\"tokens\": [");
	cr_assert(access_refresh(&a));
	cr_assert_not(access_allowed(&a, &tok, &why));
	cr_assert_str_eq(why.code, "credentials_unavailable");
	cr_assert_not(access_allowed(&a, &ts, &why), "nobody, as at the door");
	cr_assert_not(access_refresh(&a), "still the same broken file");
	cr_assert_not(access_allowed(&a, &ts, &why));

	cr_assert_eq(unlink(path), 0);
	cr_assert(access_refresh(&a));
	cr_assert_not(access_allowed(&a, &tok, &why), "a missing store is an empty one");
	cr_assert(access_allowed(&a, &ts, &why));
	save(&t);
	cr_assert(access_refresh(&a));
	cr_assert(access_allowed(&a, &tok, &why));
	access_finish(&a);
	tokens_free(&t);
}
