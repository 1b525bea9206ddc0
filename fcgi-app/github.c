/*
 * GitHub REST calls with libcurl's easy interface (github.h). One handle per call: the calls are
 * rare (a POST per pull request, a poll a minute per open one), so no connection is kept.
 */
#include "github.h"

#include "cage.h"
#include "jsontext.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Nesting of a GitHub answer: a pull request object is 5 deep. */
#define GITHUB_JSON_DEPTH 32
/* Header lines kept for the Authorization header: "Authorization: Bearer " and a token. */
#define GITHUB_HEADER_MAX 8300

struct github_buf {
	char *data;
	size_t len;
	bool too_large;
	struct github_reply *reply;
};

static size_t github_write(char *p, size_t size, size_t n, void *arg)
{
	struct github_buf *b = arg;
	size_t len = size * n;
	char *grown;

	if (b->len + len > GITHUB_BODY_MAX) {
		b->too_large = true;
		return 0; /* ends the transfer: CURLE_WRITE_ERROR */
	}
	if ((grown = realloc(b->data, b->len + len + 1)) == NULL)
		return 0;
	b->data = grown;
	memcpy(b->data + b->len, p, len);
	b->len += len;
	b->data[b->len] = '\0';
	return len;
}

/* The value of header line h when it is name's, trimmed, into out; true when it was. */
static bool github_header_value(const char *h, size_t len, const char *name, char *out,
				size_t outlen)
{
	size_t nlen = strlen(name), vlen;
	const char *v;

	if (len <= nlen || strncasecmp(h, name, nlen) != 0 || h[nlen] != ':')
		return false;
	v = h + nlen + 1;
	vlen = len - nlen - 1;
	while (vlen > 0 && (*v == ' ' || *v == '\t')) {
		v++;
		vlen--;
	}
	while (vlen > 0 && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
		vlen--;
	if (vlen >= outlen)
		vlen = outlen - 1;
	memcpy(out, v, vlen);
	out[vlen] = '\0';
	return true;
}

static size_t github_header(char *p, size_t size, size_t n, void *arg)
{
	struct github_reply *r = ((struct github_buf *)arg)->reply;
	size_t len = size * n;
	char v[GITHUB_ETAG_MAX + 1];

	if (github_header_value(p, len, "ETag", r->etag, sizeof(r->etag)))
		return len;
	if (github_header_value(p, len, "Retry-After", v, sizeof(v)))
		r->retry_after = strtol(v, NULL, 10);
	else if (github_header_value(p, len, "X-RateLimit-Reset", v, sizeof(v)))
		r->reset = strtoll(v, NULL, 10);
	else if (github_header_value(p, len, "X-RateLimit-Remaining", v, sizeof(v)))
		r->remaining = strtol(v, NULL, 10);
	return len;
}

/* GitHub's own words for a failure: "message", and the first of "errors" that has one. */
static void github_message(struct github_reply *r)
{
	json_object *m, *errs, *e;

	if (r->body == NULL || !json_object_is_type(r->body, json_type_object))
		return;
	if (json_object_object_get_ex(r->body, "message", &m) &&
	    json_object_is_type(m, json_type_string))
		snprintf(r->message, sizeof(r->message), "%s", json_object_get_string(m));
	if (json_object_object_get_ex(r->body, "errors", &errs) &&
	    json_object_is_type(errs, json_type_array) && json_object_array_length(errs) > 0 &&
	    (e = json_object_array_get_idx(errs, 0)) != NULL &&
	    json_object_object_get_ex(e, "message", &m) &&
	    json_object_is_type(m, json_type_string)) {
		size_t used = strlen(r->message);

		snprintf(r->message + used, sizeof(r->message) - used, "%s%s", used > 0 ? ": " : "",
			 json_object_get_string(m));
	}
}

int github_call(const char *api, const char *token, const char *method, const char *path,
		const char *body, const char *etag, struct github_reply *out, struct cause *cause)
{
	char url[GITHUB_URL_MAX], auth[GITHUB_HEADER_MAX], inm[GITHUB_ETAG_MAX + 32];
	struct github_buf buf = {.reply = out};
	struct curl_slist *headers = NULL;
	struct cause ignored;
	size_t alen = strlen(api);
	CURLcode cc;
	CURL *h;
	int r = 0;

	memset(out, 0, sizeof(*out));
	out->retry_after = -1;
	out->reset = -1;
	out->remaining = -1;
	while (alen > 0 && api[alen - 1] == '/')
		alen--;
	if ((size_t)snprintf(url, sizeof(url), "%.*s%s", (int)alen, api, path) >= sizeof(url))
		return cause_fail(cause, ENAMETOOLONG, "GitHub URL too long");
	if ((h = curl_easy_init()) == NULL)
		return cause_fail(cause, ENOMEM, "cannot start a GitHub request");
	headers = curl_slist_append(headers, "Accept: application/vnd.github+json");
	headers = curl_slist_append(headers, "X-GitHub-Api-Version: 2022-11-28");
	headers = curl_slist_append(headers, "Content-Type: application/json");
	if (token != NULL && token[0] != '\0') {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		headers = curl_slist_append(headers, auth);
		explicit_bzero(auth, sizeof(auth));
	}
	if (etag != NULL && etag[0] != '\0') {
		snprintf(inm, sizeof(inm), "If-None-Match: %s", etag);
		headers = curl_slist_append(headers, inm);
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	/* GitHub refuses a request without a User-Agent. */
	curl_easy_setopt(h, CURLOPT_USERAGENT, "agent-daemon");
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for DNS timeouts */
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, (long)GITHUB_CONNECT_SECONDS);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)GITHUB_TOTAL_SECONDS);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, github_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &buf);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, github_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &buf);
	if (body != NULL)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	cc = curl_easy_perform(h);
	if (cc != CURLE_OK) {
		r = buf.too_large
			? cause_fail(cause, EIO, "GitHub's answer is over %d bytes",
				     GITHUB_BODY_MAX)
			: cause_fail(cause, cc == CURLE_OPERATION_TIMEDOUT ? ETIMEDOUT : EIO,
				     "GitHub (%s) did not answer: %s", url, curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
	if (buf.len > 0)
		out->body = jsontext_parse(buf.data, buf.len, GITHUB_JSON_DEPTH, &ignored);
	github_message(out);
out:
	curl_slist_free_all(headers);
	curl_easy_cleanup(h);
	free(buf.data);
	return r;
}

void github_reply_free(struct github_reply *r)
{
	json_object_put(r->body);
	r->body = NULL;
}

long github_backoff(const struct github_reply *r, int64_t now, long fallback)
{
	if (r->status != 403 && r->status != 429)
		return 0;
	if (r->retry_after >= 0)
		return r->retry_after;
	if (r->remaining == 0 && r->reset > now)
		return (long)(r->reset - now);
	return fallback;
}

/* True when the blank- or comma-separated list names name. */
static bool github_listed(const char *list, const char *name)
{
	size_t nlen = strlen(name);

	for (const char *p = list; *p != '\0';) {
		size_t len;

		p += strspn(p, " \t,");
		len = strcspn(p, " \t,");
		if (len == nlen && strncmp(p, name, len) == 0)
			return true;
		p += len;
	}
	return false;
}

int github_token(const struct config *cfg, char out[GITHUB_TOKEN_MAX + 1], struct cause *cause)
{
	static const char *const names[] = {"GH_TOKEN", "GITHUB_TOKEN"};
	struct cage_secrets secrets;
	int r;

	out[0] = '\0';
	if ((r = cage_secrets_read(cfg->secrets_dir, &secrets, cause)) < 0)
		return r;
	for (size_t k = 0; k < 2 && out[0] == '\0'; k++)
		for (size_t i = 0; i < secrets.n; i++) {
			size_t nlen = strlen(names[k]);

			if (strncmp(secrets.words[i], names[k], nlen) == 0 &&
			    secrets.words[i][nlen] == '=') {
				snprintf(out, GITHUB_TOKEN_MAX + 1, "%s",
					 secrets.words[i] + nlen + 1);
				break;
			}
		}
	cage_secrets_free(&secrets);
	for (size_t k = 0; k < 2 && out[0] == '\0'; k++) {
		const char *v = getenv(names[k]);

		if (v != NULL && github_listed(cfg->agent_env, names[k]))
			snprintf(out, GITHUB_TOKEN_MAX + 1, "%s", v);
	}
	return 0;
}
