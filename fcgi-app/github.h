/*
 * The few calls of GitHub's REST API agentd-api makes (AGENTD_GITHUB_API, default
 * https://api.github.com): blocking libcurl requests from a request thread or the PR poller, each
 * bounded in time and in the size of what it reads, with the rate-limit headers GitHub sends kept
 * for the caller to honour.
 */
#ifndef AGENTD_GITHUB_H
#define AGENTD_GITHUB_H

#include "cause.h"
#include "config.h"

#include <json-c/json.h>
#include <stdint.h>

/* A GitHub answer we read: a pull request or a page of check runs is a few KiB; 1 MiB leaves room
 * for a check-run list of 100 entries with long output titles. */
#define GITHUB_BODY_MAX        (1024 * 1024)
#define GITHUB_CONNECT_SECONDS 5  /* to reach api.github.com, or not */
#define GITHUB_TOTAL_SECONDS   20 /* one whole call: a request thread must come back */
#define GITHUB_ETAG_MAX        128
#define GITHUB_URL_MAX         2048

struct github_reply {
	long status;                    /* the HTTP status; 0 when no answer came */
	json_object *body;              /* the parsed JSON body (NULL on 304 or not JSON) */
	char etag[GITHUB_ETAG_MAX + 1]; /* ETag, "" when none */
	long retry_after;               /* Retry-After, seconds; -1 when absent */
	int64_t reset;                  /* X-RateLimit-Reset, unix seconds; -1 when absent */
	long remaining;                 /* X-RateLimit-Remaining; -1 when absent */
	char message[256];              /* GitHub's "message" (and its first error's), or "" */
};

/*
 * method path (e.g. "/repos/acme/widgets/pulls") on api with token (Authorization: Bearer), body
 * (JSON text or NULL), If-None-Match etag (NULL or ""). Fills out (release with
 * github_reply_free). Returns 0 when an answer came (any status), or -EIO / -ETIMEDOUT with
 * cause (no answer, or one larger than GITHUB_BODY_MAX).
 */
int github_call(const char *api, const char *token, const char *method, const char *path,
		const char *body, const char *etag, struct github_reply *out, struct cause *cause);

void github_reply_free(struct github_reply *r);

/* A GitHub token: the bytes of GH_TOKEN or GITHUB_TOKEN. */
#define GITHUB_TOKEN_MAX 8192

/*
 * The token the agent's own git and gh use, so that a pull request is opened with the session's
 * credentials and no wider ones: GH_TOKEN (else GITHUB_TOKEN) of AGENTD_SECRETS_DIR, else of the
 * daemon's environment when AGENTD_AGENT_ENV passes it to the agent. Writes it into out (""
 * when there is none). Returns 0, or -errno with cause when the secrets directory is unusable.
 */
int github_token(const struct config *cfg, char out[GITHUB_TOKEN_MAX + 1], struct cause *cause);

/* Seconds to wait before the next call after reply r, as GitHub asks on a 403 or 429 (Retry-After,
 * else X-RateLimit-Reset when the limit is spent, else fallback); 0 for any other answer. */
long github_backoff(const struct github_reply *r, int64_t now, long fallback);

#endif
