#include "tokens.h"

#include "testdir.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];
static char path[256];

static void setup(void)
{
	testdir_make(dir, sizeof(dir), "/tmp/agentd-tokens-XXXXXX");
	snprintf(path, sizeof(path), "%s/tokens.json", dir);
}

static void teardown(void)
{
	testdir_remove(dir);
}

TestSuite(tokens, .init = setup, .fini = teardown);

Test(tokens, names)
{
	cr_assert(tokens_name_valid("admin"));
	cr_assert(tokens_name_valid("telegram:bot-1@host.x_y"));
	cr_assert_not(tokens_name_valid(""));
	cr_assert_not(tokens_name_valid("a b"));
	cr_assert_not(tokens_name_valid("a/b"));
	cr_assert_not(tokens_name_valid("a\"b"));
	cr_assert_not(
	    tokens_name_valid("0123456789012345678901234567890123456789012345678901234567890123x"));
}

Test(tokens, add_save_load_match_revoke)
{
	struct tokens t = {0}, back = {0};
	char admin[TOKEN_TEXT_LEN + 1], viewer[TOKEN_TEXT_LEN + 1];
	struct cause cause = {{0}};
	struct token_entry *e;
	struct stat st;
	FILE *f;
	char buf[4096];
	size_t n;

	cr_assert_eq(tokens_load(path, &t, &cause), -ENOENT, "a missing store is empty, -ENOENT");
	cr_assert_eq(t.n, 0);
	cr_assert_eq(tokens_add(&t, "admin", false, 1764072000, admin, &cause), 0);
	cr_assert_eq(tokens_add(&t, "viewer", true, 1764072001, viewer, &cause), 0);
	cr_assert_eq(strlen(admin), TOKEN_TEXT_LEN);
	cr_assert_eq(strncmp(admin, TOKEN_PREFIX, strlen(TOKEN_PREFIX)), 0);
	cr_assert_str_neq(admin, viewer);
	for (size_t i = strlen(TOKEN_PREFIX); i < TOKEN_TEXT_LEN; i++)
		cr_assert(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
				 admin[i]) != NULL,
			  "base64url: %s", admin);
	cr_assert_eq(tokens_add(&t, "admin", false, 1, buf, &cause), -EEXIST);
	cr_assert_eq(tokens_add(&t, "bad name", false, 1, buf, &cause), -EINVAL);
	cr_assert_eq(tokens_save(path, &t, &cause), 0, "%s", cause.msg);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600, "the store is private");
	/* Only hashes on disk: neither token's text is in the file. */
	f = fopen(path, "r");
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	cr_assert_null(strstr(buf, admin + strlen(TOKEN_PREFIX)));
	cr_assert_null(strstr(buf, viewer + strlen(TOKEN_PREFIX)));
	cr_assert_eq(tokens_load(path, &back, &cause), 0, "%s", cause.msg);
	cr_assert_eq(back.n, 2);
	e = tokens_match(&back, admin, strlen(admin));
	cr_assert_not_null(e);
	cr_assert_str_eq(e->name, "admin");
	cr_assert_not(e->read_only);
	cr_assert_eq(e->created_at, 1764072000);
	e = tokens_match(&back, viewer, strlen(viewer));
	cr_assert_not_null(e);
	cr_assert(e->read_only);
	/* Near misses. */
	admin[TOKEN_TEXT_LEN - 1] ^= 1;
	cr_assert_null(tokens_match(&back, admin, strlen(admin)));
	admin[TOKEN_TEXT_LEN - 1] ^= 1;
	cr_assert_null(tokens_match(&back, admin, strlen(admin) - 1));
	cr_assert_null(tokens_match(&back, "", 0));
	cr_assert_eq(tokens_revoke(&back, "admin"), 0);
	cr_assert_eq(tokens_revoke(&back, "admin"), -ENOENT);
	cr_assert_null(tokens_match(&back, admin, strlen(admin)),
		       "a revoked token matches nothing");
	cr_assert_not_null(tokens_match(&back, viewer, strlen(viewer)));
	tokens_free(&t);
	tokens_free(&back);
}

Test(tokens, a_corrupt_store_is_refused_whole)
{
	static const char *const bad[] = {
	    "",
	    "not json",
	    "[]",
	    "{\"tokens\":{}}",
	    "{\"tokens\":[{\"name\":\"a\"}]}",
	    "{\"tokens\":[{\"name\":\"a b\",\"sha256\":\"00\",\"readOnly\":false,"
	    "\"createdAt\":\"2026-01-01T00:00:00Z\"}]}",
	    "{\"tokens\":[{\"name\":\"a\",\"sha256\":\"zz\",\"readOnly\":false,"
	    "\"createdAt\":\"2026-01-01T00:00:00Z\"}]}",
	    "{\"tokens\":[{\"name\":\"a\",\"sha256\":"
	    "\"00000000000000000000000000000000000000000000000000000000000000\","
	    "\"readOnly\":\"no\",\"createdAt\":\"2026-01-01T00:00:00Z\"}]}",
	};
	static const char dup[] =
	    "{\"tokens\":[{\"name\":\"a\",\"sha256\":"
	    "\"0000000000000000000000000000000000000000000000000000000000000000\","
	    "\"readOnly\":false,\"createdAt\":\"2026-01-01T00:00:00Z\",\"lastUsed\":null},"
	    "{\"name\":\"a\",\"sha256\":"
	    "\"1111111111111111111111111111111111111111111111111111111111111111\","
	    "\"readOnly\":false,\"createdAt\":\"2026-01-01T00:00:00Z\",\"lastUsed\":null}]}";

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tokens t = {0};
		struct cause cause = {{0}};

		testdir_write(path, bad[i]);
		cr_assert_lt(tokens_load(path, &t, &cause), 0, "accepted: %s", bad[i]);
		cr_assert_neq(cause.msg[0], '\0');
		cr_assert_eq(t.n, 0, "a refused store holds nothing");
	}
	{
		struct tokens t = {0};
		struct cause cause = {{0}};

		testdir_write(path, dup);
		cr_assert_eq(tokens_load(path, &t, &cause), -EINVAL, "a name listed twice");
		cr_assert_eq(t.n, 0);
	}
}
