/*
 * Web Push subscriptions (docs/API.md, "Push"): the VAPID public key a page subscribes with, and
 * each identity's own devices, added, listed and removed. The identity is the door's decision
 * (AGENTD_IDENTITY): one identity never sees nor removes another's devices. agentd-push sends.
 */
#include "router.h"

#include "auth.h"
#include "isotime.h"
#include "log.h"
#include "pushsubs.h"
#include "webpush.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define API_PUSH_JSON_DEPTH 3          /* {"keys": {...}} */
#define API_PUSH_BODY_MAX   (4 * 1024) /* an endpoint, two keys and a name fit many times */

/* The request's identity (the door's), or NULL after answering 403. */
static const char *api_push_identity(struct request *req)
{
	const char *identity = request_param_value(req, "AGENTD_IDENTITY");

	if (identity == NULL || !auth_by_valid(identity) || strchr(identity, ':') != NULL) {
		request_error(req, 403, "no_identity",
			      "push subscriptions belong to an identity; this request has none");
		return NULL;
	}
	return identity;
}

static void api_push_key(const struct app *app, struct request *req,
			 const char *const args[ROUTER_MAX_ARGS])
{
	char path[CONFIG_PATH_MAX];
	struct cause cause = {{0}};
	struct webpush_keys *k;
	json_object *o;

	if (config_state_path(app->cfg, WEBPUSH_KEYS_FILE, path, sizeof(path)) < 0 ||
	    (k = webpush_keys_open(path, &cause)) == NULL) {
		log_error("push key: %s", cause.msg);
		request_error(req, 500, "push_unavailable", "the push key cannot be read or made");
		return;
	}
	o = json_object_new_object();
	json_object_object_add(o, "publicKey", json_object_new_string(webpush_keys_public_b64(k)));
	webpush_keys_free(k);
	request_reply(req, 200, o, "Cache-Control: no-store\r\n");
}

static json_object *api_push_json(const struct pushsub *s)
{
	json_object *o = json_object_new_object();
	char created[32], origin[WEBPUSH_ORIGIN_MAX];

	isotime_format(s->created_at, created, sizeof(created));
	if (webpush_origin(s->endpoint, origin, sizeof(origin)) < 0)
		origin[0] = '\0';
	json_object_object_add(o, "id", json_object_new_string(s->id));
	json_object_object_add(o, "name", json_object_new_string(s->name));
	json_object_object_add(o, "service", json_object_new_string(origin));
	json_object_object_add(o, "createdAt", json_object_new_string(created));
	return o;
}

/* Opens the store under its lock. Returns the lock's fd, or -1 after answering 500. */
static int api_push_open(const struct app *app, struct request *req, char *path, size_t pathlen,
			 struct pushsubs *subs)
{
	char lock[CONFIG_PATH_MAX];
	struct cause cause = {{0}};
	int fd;

	if (config_state_path(app->cfg, PUSHSUBS_FILE, path, pathlen) < 0 ||
	    config_state_path(app->cfg, PUSHSUBS_LOCK, lock, sizeof(lock)) < 0 ||
	    (fd = pushsubs_lock(lock)) < 0) {
		request_error(req, 500, "push_unavailable",
			      "the subscription store cannot be locked");
		return -1;
	}
	if (pushsubs_load(path, subs, &cause) < 0) {
		log_error("push subscriptions: %s", cause.msg);
		request_error(req, 500, "push_unavailable",
			      "the subscription store cannot be read");
		close(fd);
		return -1;
	}
	return fd;
}

static void api_push_list(const struct app *app, struct request *req,
			  const char *const args[ROUTER_MAX_ARGS])
{
	const char *identity = api_push_identity(req);
	char path[CONFIG_PATH_MAX];
	struct pushsubs subs;
	json_object *o, *arr;
	int fd;

	if (identity == NULL || (fd = api_push_open(app, req, path, sizeof(path), &subs)) < 0)
		return;
	close(fd);
	o = json_object_new_object();
	arr = json_object_new_array();
	for (size_t i = 0; i < subs.n; i++)
		if (strcmp(subs.v[i].identity, identity) == 0)
			json_object_array_add(arr, api_push_json(&subs.v[i]));
	json_object_object_add(o, "subscriptions", arr);
	pushsubs_free(&subs);
	request_reply(req, 200, o, "Cache-Control: no-store\r\n");
}

/* The string member key of o into out, or false. Absent is "" when optional. */
static bool api_push_member(json_object *o, const char *key, bool optional, char *out,
			    size_t outlen)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v)) {
		out[0] = '\0';
		return optional;
	}
	if (!json_object_is_type(v, json_type_string) ||
	    (size_t)json_object_get_string_len(v) >= outlen)
		return false;
	memcpy(out, json_object_get_string(v), (size_t)json_object_get_string_len(v) + 1);
	return true;
}

/* Fills sub from a PushSubscription's toJSON() and a name: {"endpoint", "keys": {"p256dh",
 * "auth"}, "expirationTime": null or a number, "name"}. Nothing else. Returns the reason it is
 * not one, or NULL. */
static const char *api_push_parse(const struct app *app, json_object *root, struct pushsub *sub)
{
	json_object *keys = NULL, *v;

	if (!json_object_is_type(root, json_type_object))
		return "the body must be a JSON object";
	json_object_object_foreach(root, k, val)
	{
		(void)val;
		if (strcmp(k, "endpoint") != 0 && strcmp(k, "keys") != 0 &&
		    strcmp(k, "expirationTime") != 0 && strcmp(k, "name") != 0)
			return "unknown member (endpoint, keys, expirationTime, name)";
	}
	if (json_object_object_get_ex(root, "expirationTime", &v) && v != NULL &&
	    !json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
		return "expirationTime must be null or a number";
	if (!api_push_member(root, "endpoint", false, sub->endpoint, sizeof(sub->endpoint)) ||
	    !pushsub_endpoint_valid(sub->endpoint, app->cfg->push_allow_http_origin))
		return "endpoint must be an https:// URL of at most 1024 bytes";
	if (!json_object_object_get_ex(root, "keys", &keys) ||
	    !json_object_is_type(keys, json_type_object) || json_object_object_length(keys) != 2 ||
	    !api_push_member(keys, "p256dh", false, sub->p256dh, sizeof(sub->p256dh)) ||
	    !api_push_member(keys, "auth", false, sub->auth, sizeof(sub->auth)) ||
	    webpush_check_keys(sub->p256dh, sub->auth) < 0)
		return "keys must be {\"p256dh\": a P-256 public key, \"auth\": 16 bytes}, in "
		       "base64url";
	if (!api_push_member(root, "name", true, sub->name, sizeof(sub->name)) ||
	    !pushsub_name_valid(sub->name))
		return "name must be a string of at most 64 bytes without control characters";
	return NULL;
}

static void api_push_add(const struct app *app, struct request *req,
			 const char *const args[ROUTER_MAX_ARGS])
{
	const char *identity = api_push_identity(req), *why;
	char path[CONFIG_PATH_MAX];
	struct cause cause = {{0}};
	struct pushsubs subs;
	struct pushsub sub;
	json_object *root;
	int fd, r;

	if (identity == NULL ||
	    (root = request_json_body(req, API_PUSH_BODY_MAX, API_PUSH_JSON_DEPTH)) == NULL)
		return;
	memset(&sub, 0, sizeof(sub));
	why = api_push_parse(app, root, &sub);
	json_object_put(root);
	if (why != NULL) {
		request_error(req, 400, "invalid_subscription", "%s", why);
		return;
	}
	snprintf(sub.identity, sizeof(sub.identity), "%s", identity);
	sub.created_at = (int64_t)time(NULL);
	if ((fd = api_push_open(app, req, path, sizeof(path), &subs)) < 0)
		return;
	r = pushsubs_put(&subs, &sub);
	if (r == -EEXIST)
		request_error(req, 409, "subscription_taken",
			      "this endpoint is subscribed by another identity");
	else if (r == -E2BIG)
		request_error(req, 409, "too_many_subscriptions",
			      "an identity has at most %d subscriptions (and the server %d)",
			      PUSHSUBS_PER_IDENTITY, PUSHSUBS_MAX);
	else if (r < 0)
		request_error(req, 500, "internal", "out of memory");
	else if (pushsubs_save(path, &subs, &cause) < 0) {
		log_error("push subscriptions: %s", cause.msg);
		request_error(req, 500, "push_unavailable",
			      "the subscription store cannot be written");
	} else {
		pushsub_id(sub.endpoint, sub.id);
		for (size_t i = 0; i < subs.n; i++)
			if (strcmp(subs.v[i].id, sub.id) == 0)
				sub = subs.v[i];
		request_reply(req, r == 1 ? 201 : 200, api_push_json(&sub), NULL);
	}
	pushsubs_free(&subs);
	close(fd);
}

static void api_push_delete(const struct app *app, struct request *req,
			    const char *const args[ROUTER_MAX_ARGS])
{
	const char *identity = api_push_identity(req);
	char path[CONFIG_PATH_MAX];
	struct cause cause = {{0}};
	struct pushsubs subs;
	json_object *o;
	int fd;

	if (identity == NULL || (fd = api_push_open(app, req, path, sizeof(path), &subs)) < 0)
		return;
	if (pushsubs_remove(&subs, identity, args[0]) < 0)
		request_error(req, 404, "not_found", "this identity has no subscription %.*s",
			      PUSHSUB_ID_LEN, args[0]);
	else if (pushsubs_save(path, &subs, &cause) < 0) {
		log_error("push subscriptions: %s", cause.msg);
		request_error(req, 500, "push_unavailable",
			      "the subscription store cannot be written");
	} else {
		o = json_object_new_object();
		json_object_object_add(o, "id", json_object_new_string(args[0]));
		json_object_object_add(o, "deleted", json_object_new_boolean(true));
		request_reply(req, 200, o, NULL);
	}
	pushsubs_free(&subs);
	close(fd);
}

const struct route api_push_routes[] = {
    {"GET", "/push/key", api_push_key, false},
    {"GET", "/push/subscriptions", api_push_list, false},
    {"POST", "/push/subscriptions", api_push_add, true},
    {"DELETE", "/push/subscriptions/*", api_push_delete, true},
    {NULL, NULL, NULL, false},
};
