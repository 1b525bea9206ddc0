/*
 * pathmatch: the route patterns of both daemons. Literals, "*" segments, the "**" rest, what is
 * captured, and the limits that apply only when capturing.
 */
#include "pathmatch.h"

#include <criterion/criterion.h>

#include <string.h>

Test(pathmatch, literals_and_segments)
{
	struct pathmatch m;

	cr_assert(pathmatch("/sessions", "/sessions", &m));
	cr_assert_eq(m.n, 0);
	cr_assert_not(pathmatch("/sessions", "/sessions/", &m));
	cr_assert_not(pathmatch("/sessions/", "/sessions", &m));
	cr_assert(pathmatch("/sessions/*/mode", "/sessions/a.b-1/mode", &m));
	cr_assert_eq(m.n, 1);
	cr_assert_str_eq(m.args[0], "a.b-1");
	cr_assert_not(pathmatch("/sessions/*/mode", "/sessions//mode", &m));
	cr_assert_not(pathmatch("/sessions/*", "/sessions/a/b", &m));
	cr_assert_not(pathmatch("/sessions/*", "/sessions/", &m));
	cr_assert(pathmatch("/x/*/*/*", "/x/a/b/c", &m));
	cr_assert_eq(m.n, 3);
	cr_assert_str_eq(m.args[2], "c");
}

Test(pathmatch, rest_of_the_path)
{
	struct pathmatch m;

	cr_assert(pathmatch("/branches/*/*/**", "/branches/acme/w/feat/issue-7", &m));
	cr_assert_eq(m.n, 3);
	cr_assert_str_eq(m.args[1], "w");
	cr_assert_str_eq(m.args[2], "feat/issue-7");
	cr_assert_not(pathmatch("/branches/*/*/**", "/branches/acme/w/", &m));
	cr_assert_not(pathmatch("/a/**/b", "/a/x/b", &m), "** only at the end");
}

Test(pathmatch, limits_only_when_capturing)
{
	char path[PATHMATCH_SEGMENT_MAX + 16];
	struct pathmatch m;

	memset(path, 'a', sizeof(path));
	memcpy(path, "/s/", 3);
	path[3 + PATHMATCH_SEGMENT_MAX - 1] = '\0'; /* a segment of SEGMENT_MAX - 1 bytes fits */
	cr_assert(pathmatch("/s/*", path, &m));
	cr_assert_eq(strlen(m.args[0]), PATHMATCH_SEGMENT_MAX - 1);
	path[3 + PATHMATCH_SEGMENT_MAX - 1] = 'a';
	path[3 + PATHMATCH_SEGMENT_MAX] = '\0';
	cr_assert_not(pathmatch("/s/*", path, &m));
	cr_assert_not(pathmatch("/s/**", path, &m));
	cr_assert(pathmatch("/s/*", path, NULL));
	cr_assert_not(pathmatch("/*/*/*/*", "/a/b/c/d", &m),
		      "more segments than PATHMATCH_ARGS_MAX");
	cr_assert(pathmatch("/*/*/*/*", "/a/b/c/d", NULL));
}
