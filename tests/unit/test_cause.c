/*
 * cause: formatting into the fixed buffer, truncation at CAUSE_MAX, the errno sign convention of
 * cause_fail, and NULL-safety (modules pass a NULL cause when nobody wants the text).
 */
#include "cause.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

Test(cause, set_formats)
{
	struct cause c = {{0}};

	cause_set(&c, "%s:%d: %s", "file", 12, "bad key");
	cr_assert_str_eq(c.msg, "file:12: bad key");
	cause_set(&c, "second");
	cr_assert_str_eq(c.msg, "second", "a later cause_set replaces the text");
}

Test(cause, set_truncates_to_buffer)
{
	struct cause c;
	size_t big = 10 * 1024 * 1024;
	char *s = malloc(big + 1);

	cr_assert_not_null(s);
	memset(s, 'x', big);
	s[big] = '\0';
	memset(&c, 0x55, sizeof(c)); /* garbage: the result must still be terminated */
	cause_set(&c, "%s", s);
	cr_assert_eq(strlen(c.msg), CAUSE_MAX - 1);
	cr_assert_eq(c.msg[CAUSE_MAX - 1], '\0');
	cr_assert_eq(strspn(c.msg, "x"), CAUSE_MAX - 1);
	free(s);
}

Test(cause, set_boundary_exact_fit)
{
	struct cause c = {{0}};
	char s[CAUSE_MAX + 1];

	memset(s, 'a', sizeof(s));
	s[CAUSE_MAX - 1] = '\0'; /* CAUSE_MAX - 1 characters: fits exactly */
	cause_set(&c, "%s", s);
	cr_assert_str_eq(c.msg, s);

	s[CAUSE_MAX - 1] = 'b';
	s[CAUSE_MAX] = '\0'; /* one more: the 'b' is cut */
	cause_set(&c, "%s", s);
	cr_assert_eq(strlen(c.msg), CAUSE_MAX - 1);
	cr_assert_null(strchr(c.msg, 'b'));
}

Test(cause, set_keeps_bytes_verbatim)
{
	struct cause c = {{0}};

	/* Not UTF-8, control characters, quotes: a cause is bytes; escaping is the edge's job. */
	cause_set(&c, "%s", "\xff\xfe\x01\"';\n../");
	cr_assert_str_eq(c.msg, "\xff\xfe\x01\"';\n../");
}

Test(cause, fail_returns_negative_errno)
{
	struct cause c = {{0}};

	cr_assert_eq(cause_fail(&c, EINVAL, "field %s is missing", "id"), -EINVAL);
	cr_assert_str_eq(c.msg, "field id is missing");
	/* Callers forward an already negative code unchanged. */
	cr_assert_eq(cause_fail(&c, -ENOENT, "gone"), -ENOENT);
	cr_assert_str_eq(c.msg, "gone");
}

Test(cause, fail_truncates)
{
	struct cause c = {{0}};
	char s[CAUSE_MAX * 3];

	memset(s, 'q', sizeof(s) - 1);
	s[sizeof(s) - 1] = '\0';
	cr_assert_eq(cause_fail(&c, E2BIG, "%s%s", "prefix:", s), -E2BIG);
	cr_assert_eq(strlen(c.msg), CAUSE_MAX - 1);
	cr_assert_eq(strncmp(c.msg, "prefix:qqq", 10), 0);
}

Test(cause, null_safe)
{
	cause_set(NULL, "%s", "ignored");
	cr_assert_eq(cause_fail(NULL, EIO, "ignored %d", 1), -EIO);
	cr_assert_eq(cause_fail(NULL, -EPERM, "ignored"), -EPERM);
}
