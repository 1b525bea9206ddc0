/*
 * Matching a request path against a route pattern, for both daemons' route tables
 * (fcgi-app/router.c, ptybridge/route.c). A pattern is literal bytes, "*" for one non-empty
 * segment without '/', and "**" at its end for the rest of the path, slashes included (a branch
 * name such as "feat/issue-7").
 */
#ifndef AGENTD_PATHMATCH_H
#define AGENTD_PATHMATCH_H

#include <stdbool.h>

#define PATHMATCH_ARGS_MAX    3
#define PATHMATCH_SEGMENT_MAX 256 /* a captured segment, with its NUL */

/* The segments a match captured, in order. */
struct pathmatch {
	int n;
	char args[PATHMATCH_ARGS_MAX][PATHMATCH_SEGMENT_MAX];
};

/*
 * True when path matches pattern. With m, the segments are captured into it, and a pattern with
 * more than PATHMATCH_ARGS_MAX of them, or a segment (or "**" rest) of PATHMATCH_SEGMENT_MAX bytes
 * or more, never matches (the validators would refuse it anyway). m may be NULL: nothing captured,
 * no length limit.
 */
bool pathmatch(const char *pattern, const char *path, struct pathmatch *m);

#endif
