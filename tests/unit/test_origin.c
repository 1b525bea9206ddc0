/*
 * origin: the Origin rule of API.md. No Origin passes; otherwise the Origin must equal the
 * request's own scheme://host[:port] exactly (host case-insensitive) or be listed.
 */
#include "origin.h"

#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

Test(origin, no_origin_passes)
{
	cr_assert(origin_allowed(NULL, "http", "127.0.0.1:8080", NULL));
	cr_assert(origin_allowed(NULL, "https", "example.com", ""));
	cr_assert(origin_allowed(NULL, NULL, NULL, NULL));
}

Test(origin, same_origin_passes)
{
	cr_assert(origin_allowed("http://127.0.0.1:8080", "http", "127.0.0.1:8080", NULL));
	cr_assert(
	    origin_allowed("https://box.tail1234.ts.net", "https", "box.tail1234.ts.net", ""));
	cr_assert(origin_allowed("https://box.ts.net:8443", "https", "box.ts.net:8443", ""));
	cr_assert(origin_allowed("http://[::1]:8080", "http", "[::1]:8080", ""));
}

Test(origin, host_is_case_insensitive)
{
	cr_assert(origin_allowed("http://EXAMPLE.com:8080", "http", "example.COM:8080", NULL));
	cr_assert(origin_allowed("https://Box.TS.net", "https", "box.ts.net", NULL));
}

Test(origin, scheme_must_match)
{
	cr_assert_not(origin_allowed("http://example.com", "https", "example.com", NULL));
	cr_assert_not(origin_allowed("https://example.com", "http", "example.com", NULL));
	cr_assert_not(origin_allowed("ws://example.com", "http", "example.com", NULL));
	cr_assert_not(origin_allowed("//example.com", "http", "example.com", NULL));
}

Test(origin, null_origin_fails)
{
	/* Sandboxed iframes and file:// pages send the literal "null". */
	cr_assert_not(origin_allowed("null", "http", "127.0.0.1:8080", NULL));
	cr_assert_not(origin_allowed("null", "http", "null", NULL));
	cr_assert_not(origin_allowed("", "http", "127.0.0.1:8080", NULL));
}

Test(origin, other_port_fails)
{
	cr_assert_not(origin_allowed("http://127.0.0.1:8081", "http", "127.0.0.1:8080", NULL));
	cr_assert_not(origin_allowed("http://127.0.0.1", "http", "127.0.0.1:8080", NULL));
	cr_assert_not(origin_allowed("http://127.0.0.1:8080", "http", "127.0.0.1", NULL));
	cr_assert_not(origin_allowed("http://localhost:8080", "http", "127.0.0.1:8080", NULL));
}

Test(origin, lookalike_prefixes_and_suffixes_fail)
{
	const char *host = "127.0.0.1:8080";

	cr_assert_not(origin_allowed("http://127.0.0.1:80801", "http", host, NULL));
	cr_assert_not(origin_allowed("http://127.0.0.1:808", "http", host, NULL));
	cr_assert_not(origin_allowed("http://127.0.0.1:8080.evil.com", "http", host, NULL));
	cr_assert_not(origin_allowed("http://127.0.0.1:8080/", "http", host, NULL));
	cr_assert_not(origin_allowed("http://127.0.0.1:8080 ", "http", host, NULL));
	cr_assert_not(origin_allowed(" http://127.0.0.1:8080", "http", host, NULL));
	cr_assert_not(origin_allowed("http://127.0.0.1:8080\r\n", "http", host, NULL));
	cr_assert_not(origin_allowed("http://evil.com@127.0.0.1:8080", "http", host, NULL));
	cr_assert_not(origin_allowed("http://127.0.0.1:8080,http://evil", "http", host, NULL));
	cr_assert_not(origin_allowed("http://", "http", "", NULL));
}

Test(origin, missing_host_fails_unless_listed)
{
	cr_assert_not(origin_allowed("http://x", "http", NULL, NULL));
	cr_assert_not(origin_allowed("http://x", "http", "", NULL));
	cr_assert_not(origin_allowed("http://x", NULL, "x", NULL));
	cr_assert(origin_allowed("http://x", NULL, NULL, "http://x"));
}

Test(origin, listed_origins_pass)
{
	const char *allowed = "https://app.example.com http://localhost:5173";

	cr_assert(origin_allowed("https://app.example.com", "http", "127.0.0.1:8080", allowed));
	cr_assert(origin_allowed("http://localhost:5173", "http", "127.0.0.1:8080", allowed));
	cr_assert(origin_allowed("HTTPS://APP.example.com", "http", "127.0.0.1:8080", allowed));
	cr_assert_not(
	    origin_allowed("https://evil.example.com", "http", "127.0.0.1:8080", allowed));
	cr_assert_not(origin_allowed("https://app.example.co", "http", "127.0.0.1:8080", allowed));
	cr_assert_not(
	    origin_allowed("https://app.example.com.evil", "http", "127.0.0.1:8080", allowed));
	cr_assert_not(origin_allowed("http://localhost:51730", "http", "127.0.0.1:8080", allowed));
	cr_assert_not(origin_allowed("null", "http", "127.0.0.1:8080", allowed));
	/* The own origin still passes with a list. */
	cr_assert(origin_allowed("http://127.0.0.1:8080", "http", "127.0.0.1:8080", allowed));
}

Test(origin, comma_and_blank_lists)
{
	const char *allowed = " ,,https://a.example,\thttps://b.example , ,https://c.example,";

	cr_assert(origin_listed("https://a.example", allowed));
	cr_assert(origin_listed("https://b.example", allowed));
	cr_assert(origin_listed("https://c.example", allowed));
	cr_assert_not(origin_listed("https://d.example", allowed));
	cr_assert_not(origin_listed("https://a.example,", allowed));
	cr_assert_not(origin_listed("https://b.example ", allowed));
	cr_assert_not(origin_listed("", allowed), "an empty origin never matches a separator run");
	cr_assert_not(origin_listed("https://a", allowed));
}

Test(origin, empty_and_null_lists)
{
	cr_assert_not(origin_listed("https://a.example", ""));
	cr_assert_not(origin_listed("https://a.example", " , \t,"));
	cr_assert_not(origin_listed("https://a.example", NULL));
	cr_assert_not(origin_listed(NULL, "https://a.example"));
	cr_assert_not(origin_listed("", ""));
}

Test(origin, oversize_input_fails_closed)
{
	size_t big = 10 * 1024 * 1024;
	char *host = malloc(big + 1), *origin = malloc(big + 8);

	cr_assert(host != NULL && origin != NULL);
	memset(host, 'h', big);
	host[big] = '\0';
	memcpy(origin, "http://", 7);
	memcpy(origin + 7, host, big + 1);
	/* A truncated own origin must not compare equal to a truncated Origin. */
	cr_assert_not(origin_allowed(origin, "http", host, NULL));
	origin[1000] = '\0';
	cr_assert_not(origin_allowed(origin, "http", host, NULL));
	/* A 10 MB list is scanned without trouble and still matches exactly. */
	cr_assert_not(origin_listed("https://a.example", host));
	memcpy(host + big - 18, " https://a.example", 18);
	cr_assert(origin_listed("https://a.example", host));
	free(host);
	free(origin);
}

Test(origin, non_utf8_never_matches_other_bytes)
{
	cr_assert_not(origin_allowed("http://\xff\xfe", "http", "127.0.0.1", NULL));
	cr_assert(origin_allowed("http://\xff\xfe", "http", "\xff\xfe", NULL),
		  "bytes compare exactly");
	cr_assert_not(origin_listed("http://\xc3\xa9", "http://\xc3\x89"));
}
