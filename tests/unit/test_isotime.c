/*
 * isotime: the one ISO-8601 codec of records and stores. Seconds and milliseconds format and
 * parse back; the parsers refuse what is not exactly such a time, and times outside 1970..9999,
 * which would not format back to the same characters.
 */
#include "isotime.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>

/* Moved from test_session.c with session_format_time. */
Test(isotime, format)
{
	char out[32];

	isotime_format(0, out, sizeof(out));
	cr_assert_str_eq(out, "1970-01-01T00:00:00Z");
	isotime_format(1773397800, out, sizeof(out));
	cr_assert_str_eq(out, "2026-03-13T10:30:00Z");
	isotime_format(4102444799LL, out, sizeof(out));
	cr_assert_str_eq(out, "2099-12-31T23:59:59Z");
}

Test(isotime, format_needs_room)
{
	char out[ISOTIME_LEN + 1];

	isotime_format(ISOTIME_LAST, out, sizeof(out));
	cr_assert_str_eq(out, "9999-12-31T23:59:59Z");
	memset(out, 'x', sizeof(out));
	isotime_format(ISOTIME_LAST, out, ISOTIME_LEN);
	cr_assert_str_eq(out, "", "a buffer one byte short gets nothing, not a cut time");
}

Test(isotime, parse_round_trips)
{
	const int64_t times[] = {0, 1, 1773397800, 4102444799LL, ISOTIME_LAST};
	char buf[ISOTIME_LEN + 1];
	int64_t t;

	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		isotime_format(times[i], buf, sizeof(buf));
		cr_assert_eq(isotime_parse(buf, &t), 0, "%s", buf);
		cr_assert_eq(t, times[i], "%s", buf);
	}
}

Test(isotime, parse_refuses)
{
	const char *bad[] = {
	    "",
	    "yesterday",
	    "2026-03-13T10:30:00Zjunk",
	    "2026-03-13 10:30:00Z",
	    "2026-13-13T10:30:00Z",
	    "2026-03-13T10:30:00",
	    "2026-03-13T10:30:00.000Z",
	    "0001-11-25T10:00:00Z", /* would format as "1-…" */
	    "1969-12-31T23:59:59Z", /* before 1970: negative */
	};
	int64_t t = 42;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(isotime_parse(bad[i], &t), -EINVAL, "%s", bad[i]);
		cr_assert_eq(t, 42, "a refused time leaves *out alone: %s", bad[i]);
	}
}

Test(isotime, format_ms)
{
	char out[ISOTIME_MS_LEN + 1];

	isotime_format_ms(1773397872005LL, out, sizeof(out));
	cr_assert_str_eq(out, "2026-03-13T10:31:12.005Z");
	isotime_format_ms(0, out, sizeof(out));
	cr_assert_str_eq(out, "1970-01-01T00:00:00.000Z");
	isotime_format_ms(999, out, sizeof(out));
	cr_assert_str_eq(out, "1970-01-01T00:00:00.999Z");
	isotime_format_ms(1773397872005LL, out, ISOTIME_MS_LEN);
	cr_assert_str_eq(out, "", "a buffer one byte short gets nothing");
}

Test(isotime, parse_ms)
{
	int64_t ms = 7;

	cr_assert_eq(isotime_parse_ms("2026-03-13T10:31:12.005Z", &ms), 0);
	cr_assert_eq(ms, 1773397872005LL);
	cr_assert_eq(isotime_parse_ms("9999-12-31T23:59:59.999Z", &ms), 0);
	cr_assert_eq(ms, ISOTIME_LAST * 1000 + 999);

	const char *bad[] = {
	    "2026-03-13T10:31:12Z",     "2026-03-13T10:31:12.5Z",   "2026-03-13T10:31:12.0050Z",
	    "2026-03-13T10:31:12,005Z", "2026-03-13T10:31:12.0a5Z", "2026-03-13T10:31:12.005z",
	    "0001-11-25T10:00:00.000Z", "1969-12-31T23:59:59.999Z", "",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ms = 7;
		cr_assert_eq(isotime_parse_ms(bad[i], &ms), -EINVAL, "%s", bad[i]);
		cr_assert_eq(ms, 7, "a refused time leaves *out alone: %s", bad[i]);
	}
}
