/*
 * split (agentd-telegram): texts are measured in UTF-16 code units as Telegram counts them, a
 * long text is cut into messages of at most 4096 units that never split a UTF-8 sequence,
 * preferring a line end, then a blank, in the second half; cutting every part off in turn gives
 * back the whole text.
 */
#include "split.h"

#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

/* A text of n copies of unit. */
static char *repeat(const char *unit, size_t n)
{
	size_t len = strlen(unit);
	char *s = malloc(len * n + 1);

	cr_assert_not_null(s);
	for (size_t i = 0; i < n; i++)
		memcpy(s + i * len, unit, len);
	s[len * n] = '\0';
	return s;
}

Test(tg_split, counts_utf16_units)
{
	cr_assert_eq(split_units("", 0), 0);
	cr_assert_eq(split_units("abc", 3), 3);
	cr_assert_eq(split_units("é", strlen("é")), 1); /* 2 bytes, 1 unit */
	cr_assert_eq(split_units("€", strlen("€")), 1); /* 3 bytes, 1 unit */
	cr_assert_eq(split_units("😀", strlen("😀")), 2); /* 4 bytes, a surrogate pair */
	cr_assert_eq(split_units("a😀b", strlen("a😀b")), 4);
}

Test(tg_split, invalid_bytes_count_one_each)
{
	/* A lone continuation byte, a truncated sequence, an overlong form, a surrogate. */
	cr_assert_eq(split_units("\x80", 1), 1);
	cr_assert_eq(split_units("\xe2\x82", 2), 2);
	cr_assert_eq(split_units("\xc0\xaf", 2), 2);
	cr_assert_eq(split_units("\xed\xa0\x80", 3), 3);
}

Test(tg_split, a_text_that_fits_is_not_cut)
{
	char *s = repeat("x", SPLIT_MAX);

	cr_assert_eq(split_point(s, strlen(s), SPLIT_MAX), strlen(s));
	free(s);
}

Test(tg_split, one_over_is_cut_at_the_limit_without_a_break)
{
	char *s = repeat("x", SPLIT_MAX + 1);

	cr_assert_eq(split_point(s, strlen(s), SPLIT_MAX), SPLIT_MAX);
	free(s);
}

Test(tg_split, prefers_the_last_newline_in_the_second_half)
{
	char *s = repeat("abcdefg ", 1000); /* 8000 units, blanks everywhere */

	s[3000] = '\n';
	s[3500] = '\n';
	cr_assert_eq(split_point(s, strlen(s), SPLIT_MAX), 3501, "after the last newline");
	s[3000] = 'x';
	s[3500] = 'x';
	/* No newline: after the last blank within the limit (at 4095, "abcdefg " * 512 ends). */
	cr_assert_eq(split_point(s, strlen(s), SPLIT_MAX), 4096);
	free(s);
}

Test(tg_split, an_early_newline_does_not_make_a_short_message)
{
	char *s = repeat("x", 9000);

	s[10] = '\n'; /* in the first half: ignored */
	cr_assert_eq(split_point(s, strlen(s), SPLIT_MAX), SPLIT_MAX);
	free(s);
}

Test(tg_split, never_inside_a_character)
{
	/* 3-byte characters: 4096 of them fit in one message. */
	char *s = repeat("€", 5000);
	size_t cut = split_point(s, strlen(s), SPLIT_MAX);

	cr_assert_eq(cut, 4096 * 3);
	free(s);
	/* Surrogate pairs: 2048 emoji are 4096 units; the 2049th does not fit. */
	s = repeat("😀", 3000);
	cut = split_point(s, strlen(s), SPLIT_MAX);
	cr_assert_eq(cut, 2048 * 4);
	cr_assert_eq(split_units(s, cut), SPLIT_MAX);
	free(s);
	/* One unit short of the next emoji: it moves to the next message whole. */
	s = malloc(1 + 3000 * 4 + 1);
	cr_assert_not_null(s);
	s[0] = 'a';
	for (int i = 0; i < 3000; i++)
		memcpy(s + 1 + i * 4, "😀", 4);
	s[1 + 3000 * 4] = '\0';
	cut = split_point(s, strlen(s), SPLIT_MAX);
	cr_assert_eq(cut, 1 + 2047 * 4);
	free(s);
}

Test(tg_split, parts_rebuild_the_text_and_each_fits)
{
	/* Mixed widths, lines and blanks. */
	char *s = repeat("word wörd 😀 line\nmore € text ", 700);
	size_t len = strlen(s), off = 0, parts = 0;
	char *back = calloc(len + 1, 1);

	cr_assert_not_null(back);
	while (off < len) {
		size_t n = split_point(s + off, len - off, SPLIT_MAX);

		cr_assert_gt(n, 0);
		cr_assert_leq(split_units(s + off, n), SPLIT_MAX, "part %zu fits", parts);
		memcpy(back + off, s + off, n);
		off += n;
		parts++;
	}
	cr_assert_str_eq(back, s);
	cr_assert_geq(parts, 5);
	free(back);
	free(s);
}

Test(tg_split, a_tiny_limit_still_makes_progress)
{
	cr_assert_eq(split_point("😀😀", 8, 1), 4, "a character wider than the limit goes alone");
	cr_assert_eq(split_prefix("😀😀", 8, 1), 0);
	cr_assert_eq(split_prefix("😀😀", 8, 3), 4);
}
