#include "pushsubs.h"
#include "webpush.h"

#include "testdir.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <json-c/json.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];
static char path[256];

static void setup(void)
{
	testdir_make(dir, sizeof(dir), "/tmp/agentd-webpush-XXXXXX");
	snprintf(path, sizeof(path), "%s/%s", dir, WEBPUSH_KEYS_FILE);
}

static void teardown(void)
{
	testdir_remove(dir);
}

TestSuite(webpush, .init = setup, .fini = teardown);

Test(webpush, base64url_round_trip_and_strictness)
{
	uint8_t in[40], out[41];
	char text[WEBPUSH_B64_MAX(40)];

	for (size_t n = 0; n <= sizeof(in); n++) {
		for (size_t i = 0; i < n; i++)
			in[i] = (uint8_t)(i * 37 + 250);
		webpush_b64url(in, n, text);
		cr_assert_null(strpbrk(text, "+/="), "%s", text);
		cr_assert_eq(webpush_unb64url(text, out, sizeof(out)), (int)n);
		cr_assert_eq(memcmp(in, out, n), 0);
	}
	cr_assert_eq(webpush_unb64url("AQ==", out, sizeof(out)), 1);        /* padding is allowed */
	cr_assert_eq(webpush_unb64url("a+b/", out, sizeof(out)), -EINVAL);  /* base64, not -url */
	cr_assert_eq(webpush_unb64url("AR", out, sizeof(out)), -EINVAL);    /* bits left over */
	cr_assert_eq(webpush_unb64url("AAAAA", out, sizeof(out)), -EINVAL); /* 5 characters */
	cr_assert_eq(webpush_unb64url("AAAA", out, 2), -EINVAL);            /* too long for out */
	cr_assert_eq(webpush_unb64url("AA AA", out, sizeof(out)), -EINVAL);
}

Test(webpush, keys_made_once_private_and_kept)
{
	struct cause cause = {{0}};
	struct webpush_keys *a = webpush_keys_open(path, &cause), *b;
	struct stat st;
	char pub[WEBPUSH_PUBKEY_B64];
	uint8_t raw[WEBPUSH_PUBKEY_LEN + 1];

	cr_assert_not_null(a, "%s", cause.msg);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	snprintf(pub, sizeof(pub), "%s", webpush_keys_public_b64(a));
	cr_assert_eq(strlen(pub), 87);
	cr_assert_eq(webpush_unb64url(pub, raw, sizeof(raw)), WEBPUSH_PUBKEY_LEN);
	cr_assert_eq(raw[0], 0x04);
	b = webpush_keys_open(path, &cause);
	cr_assert_not_null(b, "%s", cause.msg);
	cr_assert_str_eq(webpush_keys_public_b64(b), pub, "the key is read again, not made anew");
	webpush_keys_free(a);
	webpush_keys_free(b);
	chmod(path, 0644);
	cr_assert_null(webpush_keys_open(path, &cause), "a key others can read is refused");
	cr_assert_eq(access(path, F_OK), 0);
}

/* A subscription's keys as a browser makes them. */
static void browser_keys(char *p256dh, char *auth)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	uint8_t pub[WEBPUSH_PUBKEY_LEN], secret[WEBPUSH_AUTH_LEN] = {1, 2, 3};
	size_t len = 0;

	cr_assert_not_null(k);
	cr_assert_eq(EVP_PKEY_get_octet_string_param(k, "encoded-pub-key", pub, sizeof(pub), &len),
		     1);
	webpush_b64url(pub, sizeof(pub), p256dh);
	webpush_b64url(secret, sizeof(secret), auth);
	EVP_PKEY_free(k);
}

Test(webpush, subscription_keys_checked)
{
	char p256dh[WEBPUSH_PUBKEY_B64], auth[WEBPUSH_B64_MAX(16)], bad[WEBPUSH_PUBKEY_B64];
	uint8_t off[WEBPUSH_PUBKEY_LEN] = {0x04, 1, 2, 3};

	browser_keys(p256dh, auth);
	cr_assert_eq(webpush_check_keys(p256dh, auth), 0);
	webpush_b64url(off, sizeof(off), bad);
	cr_assert_eq(webpush_check_keys(bad, auth), -EINVAL, "a point off the curve");
	cr_assert_eq(webpush_check_keys(p256dh, "AAAAAAAAAAAAAAAAAAAA"), -EINVAL, "15 bytes");
	snprintf(bad, sizeof(bad), "%.86s", p256dh);
	cr_assert_eq(webpush_check_keys(bad, auth), -EINVAL, "64 bytes");
}

Test(webpush, message_is_one_aes128gcm_record)
{
	char p256dh[WEBPUSH_PUBKEY_B64], auth[WEBPUSH_B64_MAX(16)];
	uint8_t a[WEBPUSH_BODY_MAX], b[WEBPUSH_BODY_MAX];
	static char big[WEBPUSH_MESSAGE_MAX + 2];
	struct cause cause = {{0}};
	size_t alen = 0, blen = 0;

	browser_keys(p256dh, auth);
	cr_assert_eq(webpush_encrypt(p256dh, auth, "{\"x\":1}", 7, a, &alen, &cause), 0, "%s",
		     cause.msg);
	/* salt 16, rs 4096, idlen 65, our key, then the record: 7 bytes, delimiter, tag */
	cr_assert_eq(alen, 16 + 4 + 1 + 65 + 7 + 1 + 16);
	cr_assert_eq(a[16] << 24 | a[17] << 16 | a[18] << 8 | a[19], 4096);
	cr_assert_eq(a[20], 65);
	cr_assert_eq(a[21], 0x04);
	cr_assert_eq(webpush_encrypt(p256dh, auth, "{\"x\":1}", 7, b, &blen, &cause), 0);
	cr_assert_neq(memcmp(a, b, 16), 0, "a fresh salt each time");
	cr_assert_neq(memcmp(a + 21, b + 21, 65), 0, "a fresh key each time");
	memset(big, 'a', sizeof(big) - 1);
	cr_assert_eq(webpush_encrypt(p256dh, auth, big, sizeof(big) - 1, a, &alen, &cause),
		     -EMSGSIZE);
	cr_assert_eq(webpush_encrypt("AAAA", auth, "x", 1, a, &alen, &cause), -EINVAL);
}

Test(webpush, vapid_header_names_the_audience_and_key)
{
	struct cause cause = {{0}};
	struct webpush_keys *k = webpush_keys_open(path, &cause);
	char out[WEBPUSH_AUTH_MAX], want_k[WEBPUSH_PUBKEY_B64 + 8], payload[512];
	uint8_t raw[512];
	const char *t, *dot1, *dot2;
	json_object *claims;
	int n;

	cr_assert_not_null(k, "%s", cause.msg);
	cr_assert_eq(webpush_vapid_header(k, "https://push.example", "", 1000, out, &cause), 0);
	cr_assert_eq(strncmp(out, "vapid t=", 8), 0, "%s", out);
	snprintf(want_k, sizeof(want_k), ", k=%s", webpush_keys_public_b64(k));
	cr_assert_not_null(strstr(out, want_k), "%s", out);
	t = out + 8;
	dot1 = strchr(t, '.');
	dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
	cr_assert_not_null(dot2);
	snprintf(payload, sizeof(payload), "%.*s", (int)(dot2 - dot1 - 1), dot1 + 1);
	n = webpush_unb64url(payload, raw, sizeof(raw) - 1);
	cr_assert_gt(n, 0);
	raw[n] = '\0';
	claims = json_tokener_parse((const char *)raw);
	cr_assert_str_eq(json_object_get_string(json_object_object_get(claims, "aud")),
			 "https://push.example");
	cr_assert_eq(json_object_get_int64(json_object_object_get(claims, "exp")),
		     1000 + WEBPUSH_JWT_LIFETIME);
	json_object_put(claims);
	cr_assert_eq(webpush_vapid_header(k, "https://a\"b", "", 1000, out, &cause), -EINVAL);
	webpush_keys_free(k);
}

Test(webpush, origin_of_an_endpoint)
{
	char o[WEBPUSH_ORIGIN_MAX];

	cr_assert_eq(webpush_origin("https://fcm.googleapis.com/fcm/send/abc", o, sizeof(o)), 0);
	cr_assert_str_eq(o, "https://fcm.googleapis.com");
	cr_assert_eq(webpush_origin("http://127.0.0.1:9/push/x", o, sizeof(o)), 0);
	cr_assert_str_eq(o, "http://127.0.0.1:9");
	cr_assert_eq(webpush_origin("https://u@evil/x", o, sizeof(o)), -EINVAL);
	cr_assert_eq(webpush_origin("ftp://x/y", o, sizeof(o)), -EINVAL);
}

Test(webpush, endpoints_allowed)
{
	cr_assert(pushsub_endpoint_valid("https://push.example/x", ""));
	cr_assert(pushsub_endpoint_valid("https://push.example:8443/a/b?c=d", ""));
	cr_assert_not(pushsub_endpoint_valid("http://push.example/x", ""));
	cr_assert(pushsub_endpoint_valid("http://127.0.0.1:9/push/x", "http://127.0.0.1:9"));
	cr_assert_not(pushsub_endpoint_valid("http://127.0.0.1:99/push/x", "http://127.0.0.1:9"));
	cr_assert_not(pushsub_endpoint_valid("http://127.0.0.1:9", "http://127.0.0.1:9"));
	cr_assert_not(pushsub_endpoint_valid("https://a@push.example/x", ""));
	cr_assert_not(pushsub_endpoint_valid("https://push.example", ""));
	cr_assert_not(pushsub_endpoint_valid("https:///x", ""));
	cr_assert_not(pushsub_endpoint_valid("https://push.example/x#y", ""));
	cr_assert_not(pushsub_endpoint_valid("https://push.example/a b", ""));
	cr_assert_not(pushsub_endpoint_valid("https://push.example/\xc3\xa9", ""));
}

static struct pushsub sub(const char *identity, const char *endpoint)
{
	struct pushsub s;

	memset(&s, 0, sizeof(s));
	snprintf(s.identity, sizeof(s.identity), "%s", identity);
	snprintf(s.endpoint, sizeof(s.endpoint), "%s", endpoint);
	snprintf(s.p256dh, sizeof(s.p256dh), "p");
	snprintf(s.auth, sizeof(s.auth), "a");
	s.created_at = 1700000000;
	return s;
}

Test(webpush, subscriptions_per_identity)
{
	struct pushsubs s = {0}, back = {0};
	struct pushsub x = sub("alice", "https://push.example/1");
	struct cause cause = {{0}};
	char ep[64], file[256];

	cr_assert_eq(pushsubs_put(&s, &x), 1);
	cr_assert_eq(pushsubs_put(&s, &x), 0, "the same endpoint replaces");
	x = sub("bob", "https://push.example/1");
	cr_assert_eq(pushsubs_put(&s, &x), -EEXIST, "another identity cannot take it");
	for (int i = 2; i <= PUSHSUBS_PER_IDENTITY; i++) {
		snprintf(ep, sizeof(ep), "https://push.example/%d", i);
		x = sub("alice", ep);
		cr_assert_eq(pushsubs_put(&s, &x), 1);
	}
	x = sub("alice", "https://push.example/over");
	cr_assert_eq(pushsubs_put(&s, &x), -E2BIG);
	x = sub("bob", "https://push.example/bob");
	cr_assert_eq(pushsubs_put(&s, &x), 1, "the cap is per identity");
	cr_assert_eq(pushsubs_remove(&s, "alice", s.v[s.n - 1].id), -ENOENT, "not alice's");
	snprintf(file, sizeof(file), "%s/%s", dir, PUSHSUBS_FILE);
	cr_assert_eq(pushsubs_save(file, &s, &cause), 0, "%s", cause.msg);
	cr_assert_eq(pushsubs_load(file, &back, &cause), 0, "%s", cause.msg);
	cr_assert_eq(back.n, s.n);
	cr_assert_str_eq(back.v[0].id, s.v[0].id);
	cr_assert_eq(back.v[0].created_at, 1700000000);
	cr_assert_eq(pushsubs_remove(&back, NULL, s.v[0].id), 0);
	cr_assert_eq(back.n, s.n - 1);
	pushsubs_free(&s);
	pushsubs_free(&back);
	testdir_write(file, "{\"subscriptions\":[{\"id\":1}]}");
	cr_assert_lt(pushsubs_load(file, &back, &cause), 0, "a corrupt store is an error");
}
