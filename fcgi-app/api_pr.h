/*
 * What DELETE /sessions/<id> asks of POST /sessions/<id>/pr's side (api_pr.c): the pull request's
 * state as GitHub has it now, for a delete that comes before the poller's next look.
 */
#ifndef AGENTD_API_PR_H
#define AGENTD_API_PR_H

#include "app.h"
#include "session.h"

/*
 * When s has an open pull request, asks GitHub once for its state (unconditional: a 304 of the
 * poller's ETag could be as old as GitHub's cache) and puts a merge or close into s->pr. Nothing
 * is asked without a token. Returns 1 when s->pr changed, 0 when not (also when GitHub could not
 * say: the record's state stands), or -errno.
 */
int api_pr_refresh(const struct app *app, struct session *s);

#endif
