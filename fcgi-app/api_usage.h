/*
 * What sessions cost (docs/API.md "cost", "GET /usage"): claude's transcripts taken into each
 * session's record for its terminal turns, and the totals per repository and per day.
 */
#ifndef AGENTD_API_USAGE_H
#define AGENTD_API_USAGE_H

#include "app.h"

/*
 * Takes in what claude's transcript of session id gained since it was last read (core/cost.h),
 * read as the agent (its own uid's when caged), and writes the record when that changed its
 * cursor. Nothing for another agent, or while claude has written no transcript. Returns 0,
 * -ENOENT (no such session) or -errno.
 */
int usage_refresh(const struct app *app, const char *id);

/* usage_refresh of every session: the liveness worker's passes keep the list's costs current. */
void usage_refresh_all(const struct app *app);

#endif
