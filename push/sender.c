#include "sender.h"

#include "agentc.h"
#include "auth.h"
#include "eventnames.h"
#include "fsutil.h"
#include "jsontext.h"
#include "log.h"
#include "pushsubs.h"
#include "session.h"
#include "sigfd.h"
#include "tokens.h"
#include "webpush.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* fcgi-app/tokencmd.h's lock of the token store: `agentd-api token` and we take turns. */
#define SENDER_TOKENS_LOCK "tokens.lock"
#define SENDER_ROUND_MS    1000
#define SENDER_TITLE_MAX   120 /* what sw.js shows of a title */
#define SENDER_BODY_MAX    400 /* and of a body */
#define SENDER_TOPIC_LEN   32  /* RFC 8030: a Topic is at most 32 base64url characters */
#define SENDER_REQUEST_MAX 128 /* a permission's requestId kept to tell a new one */
/* How long a push service keeps a message for a phone that is off: a waiting request is stale
 * after an hour (the bridge's own wait ends sooner); an ending is worth hearing about a day on. */
#define SENDER_TTL_WAITING 3600
#define SENDER_TTL_ENDED   86400

struct sender_session {
	char id[SESSION_ID_MAX + 1];
	char state[16];                       /* the last state seen */
	char request[SENDER_REQUEST_MAX + 1]; /* the permission request pushed, or "" */
	char prompter[AUTH_IDENTITY_MAX + 1]; /* whose prompt the running turn is, or "" */
	uint64_t used;                        /* the event id that last touched it */
};

struct sender {
	const struct config *cfg;
	struct xfer_loop *loop;
	struct agentc *agentd;
	struct agentc_stream *stream;
	struct webpush_keys *keys;
	char subs_path[CONFIG_PATH_MAX];
	char lock_path[CONFIG_PATH_MAX];
	char token[TOKEN_TEXT_LEN + 1];
	char url[CONFIG_VALUE_MAX + 16];
	struct timespec subs_mtime; /* the subscription store as last counted */
	off_t subs_size;
	bool have_subs; /* someone is subscribed: /events is worth following */
	struct sender_session *sessions;
	size_t nsessions;
	uint64_t last_id;
	unsigned inflight;
	int64_t retry_at, backoff;
	bool got_events;
};

/* One push on the wire: what its answer needs. */
struct sender_push {
	struct sender *s;
	char id[PUSHSUB_ID_LEN + 1];
	char service[WEBPUSH_ORIGIN_MAX];
};

static int64_t sender_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads our token from path into s->token. Returns 0 or -errno. */
static int sender_read_token(struct sender *s, const char *path)
{
	char buf[TOKEN_TEXT_LEN + 2];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < TOKEN_TEXT_LEN)
		return -EINVAL;
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	if (strlen(buf) != TOKEN_TEXT_LEN)
		return -EINVAL;
	memcpy(s->token, buf, sizeof(s->token));
	OPENSSL_cleanse(buf, sizeof(buf));
	return 0;
}

/*
 * Our own credential for GET /events: a read-only token named push, made in the token store the
 * first time (and again when its file is gone: the old one is revoked then), its text kept in
 * the state dir (0600). Never the admin's token: agentd-push only reads.
 */
static int sender_token(struct sender *s, struct cause *cause)
{
	char path[CONFIG_PATH_MAX], store[CONFIG_PATH_MAX], lock[CONFIG_PATH_MAX];
	struct tokens t = {0};
	int fd, r;

	if (config_state_path(s->cfg, SENDER_TOKEN_FILE, path, sizeof(path)) < 0 ||
	    config_state_path(s->cfg, TOKENS_STORE, store, sizeof(store)) < 0 ||
	    config_state_path(s->cfg, SENDER_TOKENS_LOCK, lock, sizeof(lock)) < 0)
		return cause_fail(cause, ENAMETOOLONG, "the state dir's paths are too long");
	if (sender_read_token(s, path) == 0)
		return 0;
	fd = fsutil_lock(lock, LOCK_EX, 0600);
	if (fd < 0) {
		r = cause_fail(cause, -fd, "cannot lock %s: %s", lock, strerror(-fd));
		goto out;
	}
	r = tokens_load(store, &t, cause);
	if (r < 0 && r != -ENOENT)
		goto out;
	tokens_revoke(&t, SENDER_TOKEN_NAME);
	unlink(path);
	if ((r = tokens_add(&t, SENDER_TOKEN_NAME, true, (int64_t)time(NULL), s->token, cause)) <
		0 ||
	    (r = tokens_save(store, &t, cause)) < 0)
		goto out;
	r = fsutil_write_new(path, s->token, 0600);
	if (r < 0)
		r = cause_fail(cause, -r, "cannot write %s: %s", path, strerror(-r));
	else
		log_info("made agentd-push's read-only token (%s) in the token store",
			 SENDER_TOKEN_NAME);
out:
	tokens_free(&t);
	if (fd >= 0)
		close(fd);
	return r < 0 ? r : 0;
}

struct sender *sender_create(const struct config *cfg, struct cause *cause)
{
	struct sender *s = calloc(1, sizeof(*s));
	char keys[CONFIG_PATH_MAX];

	if (s == NULL) {
		cause_fail(cause, ENOMEM, "out of memory");
		return NULL;
	}
	s->cfg = cfg;
	s->backoff = SENDER_BACKOFF_MS;
	if (config_state_path(cfg, WEBPUSH_KEYS_FILE, keys, sizeof(keys)) < 0 ||
	    config_state_path(cfg, PUSHSUBS_FILE, s->subs_path, sizeof(s->subs_path)) < 0 ||
	    config_state_path(cfg, PUSHSUBS_LOCK, s->lock_path, sizeof(s->lock_path)) < 0) {
		cause_fail(cause, ENAMETOOLONG, "the state dir's paths are too long");
		goto fail;
	}
	if ((s->keys = webpush_keys_open(keys, cause)) == NULL)
		goto fail;
	if (cfg->url[0] != '\0')
		snprintf(s->url, sizeof(s->url), "%s", cfg->url);
	else
		snprintf(s->url, sizeof(s->url), "http://%s", cfg->listen);
	s->loop = xfer_loop_create();
	if (s->loop == NULL) {
		cause_fail(cause, ENOMEM, "cannot set up libcurl");
		goto fail;
	}
	return s;
fail:
	sender_destroy(s);
	return NULL;
}

void sender_destroy(struct sender *s)
{
	if (s == NULL)
		return;
	agentc_stream_close(s->stream);
	agentc_destroy(s->agentd);
	xfer_loop_destroy(s->loop);
	webpush_keys_free(s->keys);
	free(s->sessions);
	OPENSSL_cleanse(s->token, sizeof(s->token));
	free(s);
}

/* What we know of session id; made when absent (the least recently used one makes room). */
static struct sender_session *sender_session(struct sender *s, const char *id)
{
	struct sender_session *grown, *oldest = NULL;

	for (size_t i = 0; i < s->nsessions; i++) {
		if (strcmp(s->sessions[i].id, id) == 0) {
			s->sessions[i].used = s->last_id;
			return &s->sessions[i];
		}
		if (oldest == NULL || s->sessions[i].used < oldest->used)
			oldest = &s->sessions[i];
	}
	if (s->nsessions >= SENDER_SESSIONS_MAX) {
		memset(oldest, 0, sizeof(*oldest));
		snprintf(oldest->id, sizeof(oldest->id), "%s", id);
		oldest->used = s->last_id;
		return oldest;
	}
	grown = realloc(s->sessions, (s->nsessions + 1) * sizeof(*s->sessions));
	if (grown == NULL)
		return NULL;
	s->sessions = grown;
	memset(&s->sessions[s->nsessions], 0, sizeof(*s->sessions));
	snprintf(s->sessions[s->nsessions].id, sizeof(s->sessions->id), "%s", id);
	s->sessions[s->nsessions].used = s->last_id;
	return &s->sessions[s->nsessions++];
}

static void sender_forget(struct sender *s, const char *id)
{
	for (size_t i = 0; i < s->nsessions; i++)
		if (strcmp(s->sessions[i].id, id) == 0) {
			s->sessions[i] = s->sessions[--s->nsessions];
			return;
		}
}

/* The identity part of a `by` (identity[:actor]) into out. */
static void sender_identity_of(const char *by, char out[AUTH_IDENTITY_MAX + 1])
{
	size_t n = by != NULL ? strcspn(by, ":") : 0;

	if (n > AUTH_IDENTITY_MAX)
		n = 0;
	memcpy(out, by != NULL ? by : "", n);
	out[n] = '\0';
}

/* Removes subscription id, the push service having said it is gone. */
static void sender_drop(struct sender *s, const char *id)
{
	struct cause cause = {{0}};
	struct pushsubs subs;
	int fd = pushsubs_lock(s->lock_path);

	if (fd < 0) {
		log_error("cannot lock %s: %s", s->lock_path, strerror(-fd));
		return;
	}
	if (pushsubs_load(s->subs_path, &subs, &cause) < 0)
		log_error("%s", cause.msg);
	else if (pushsubs_remove(&subs, NULL, id) < 0)
		; /* removed meanwhile (the page's revoke): nothing to do */
	else if (pushsubs_save(s->subs_path, &subs, &cause) < 0)
		log_error("%s", cause.msg);
	else
		log_info("subscription %s removed: its push service says it is gone", id);
	pushsubs_free(&subs);
	close(fd);
}

static void sender_push_done(void *arg, const struct xfer_result *res)
{
	struct sender_push *p = arg;

	p->s->inflight--;
	if (res->status == 404 || res->status == 410)
		sender_drop(p->s, p->id);
	else if (res->status < 200 || res->status > 299)
		log_warn("push to subscription %s at %s failed: %ld %s", p->id, p->service,
			 res->status, res->status == 0 ? res->error : "");
	free(p);
}

/* Sends msg to one subscription. */
static void sender_send(struct sender *s, const struct pushsub *sub, const char *msg,
			const char *topic, int ttl, const char *urgency)
{
	uint8_t body[WEBPUSH_BODY_MAX];
	char auth[WEBPUSH_AUTH_MAX + 16], ttl_h[32], urgency_h[32], topic_h[64];
	struct cause cause = {{0}};
	struct sender_push *p;
	size_t len = 0;

	if (s->inflight >= SENDER_INFLIGHT_MAX) {
		log_warn("%u pushes on the wire: this one to %s is dropped", s->inflight, sub->id);
		return;
	}
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return;
	p->s = s;
	memcpy(p->id, sub->id, sizeof(p->id));
	memcpy(auth, "Authorization: ", 15);
	if (webpush_origin(sub->endpoint, p->service, sizeof(p->service)) < 0 ||
	    webpush_vapid_header(s->keys, p->service, "", (int64_t)time(NULL), auth + 15, &cause) <
		0 ||
	    webpush_encrypt(sub->p256dh, sub->auth, msg, strlen(msg), body, &len, &cause) < 0) {
		log_error("push to %s: %s", sub->id, cause.msg[0] ? cause.msg : "bad endpoint");
		free(p);
		return;
	}
	snprintf(ttl_h, sizeof(ttl_h), "TTL: %d", ttl);
	snprintf(urgency_h, sizeof(urgency_h), "Urgency: %s", urgency);
	snprintf(topic_h, sizeof(topic_h), "Topic: %s", topic);
	struct xfer_req req = {
	    .method = "POST",
	    .url = sub->endpoint,
	    .body = (const char *)body,
	    .body_len = len,
	    .body_type = "application/octet-stream",
	    .headers = {auth, ttl_h, urgency_h, topic_h, "Content-Encoding: aes128gcm", NULL},
	    .timeout_ms = SENDER_PUSH_TIMEOUT,
	    .body_max = 4096,
	    .on_done = sender_push_done,
	    .arg = p,
	};
	if (xfer_start(s->loop, &req) == NULL) {
		log_error("cannot start a push to %s", sub->id);
		free(p);
		return;
	}
	s->inflight++;
}

/* Text cut to at most max bytes at a UTF-8 character boundary, into out (max + 1 bytes). */
static void sender_cut(const char *text, size_t max, char *out)
{
	size_t n = strlen(text);

	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)text[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(out, text, n);
	out[n] = '\0';
}

/*
 * One message for session id to the subscriptions of identity only (NULL: every identity),
 * except those of skip (NULL: none): {"session", "title", "body", "kind"} as sw.js reads it,
 * tagged by session (the Topic too, so a push service keeps only the newest).
 */
static void sender_notify(struct sender *s, const char *id, const char *kind, const char *title,
			  const char *body, const char *only, const char *skip, int ttl,
			  const char *urgency)
{
	char t[SENDER_TITLE_MAX + 1], b[SENDER_BODY_MAX + 1], topic[WEBPUSH_B64_MAX(32)];
	uint8_t hash[EVP_MAX_MD_SIZE];
	unsigned int hlen = 0;
	struct cause cause = {{0}};
	struct pushsubs subs;
	json_object *o;
	const char *msg;
	unsigned sent = 0;
	int fd;

	fd = pushsubs_lock(s->lock_path);
	if (fd < 0) {
		log_error("cannot lock %s: %s", s->lock_path, strerror(-fd));
		return;
	}
	if (pushsubs_load(s->subs_path, &subs, &cause) < 0) {
		log_error("%s", cause.msg);
		close(fd);
		return;
	}
	close(fd);
	EVP_Digest(id, strlen(id), hash, &hlen, EVP_sha256(), NULL);
	webpush_b64url(hash, 32, topic);
	topic[SENDER_TOPIC_LEN] = '\0';
	sender_cut(title, SENDER_TITLE_MAX, t);
	sender_cut(body, SENDER_BODY_MAX, b);
	o = json_object_new_object();
	json_object_object_add(o, "session", json_object_new_string(id));
	json_object_object_add(o, "title", json_object_new_string(t));
	json_object_object_add(o, "body", json_object_new_string(b));
	json_object_object_add(o, "kind", json_object_new_string(kind));
	msg = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	for (size_t i = 0; i < subs.n; i++) {
		if ((only != NULL && strcmp(subs.v[i].identity, only) != 0) ||
		    (skip != NULL && strcmp(subs.v[i].identity, skip) == 0))
			continue;
		sender_send(s, &subs.v[i], msg, topic, ttl, urgency);
		sent++;
	}
	if (sent > 0)
		log_info("session %s %s: pushed to %u devices", id, kind, sent);
	json_object_put(o);
	pushsubs_free(&subs);
}

/* A session object (snapshot or session event): its state; an ending notifies everyone. */
static void sender_session_state(struct sender *s, json_object *obj, bool announce)
{
	const char *id = jsontext_str(obj, "id"), *state = jsontext_str(obj, "state");
	struct sender_session *ss;
	char body[SENDER_BODY_MAX + 1];
	const char *what = NULL;

	if (id == NULL || !session_id_valid(id) || state == NULL ||
	    (ss = sender_session(s, id)) == NULL)
		return;
	if (announce && strcmp(ss->state, state) != 0) {
		if (strcmp(state, "failed") == 0)
			what = "failed";
		else if (strcmp(state, "exited") == 0)
			what = "exited";
		else if (strcmp(state, "lost") == 0)
			what = "was lost";
	}
	snprintf(ss->state, sizeof(ss->state), "%s", state);
	if (what == NULL)
		return;
	ss->request[0] = '\0';
	snprintf(body, sizeof(body), "%s",
		 jsontext_str(obj, "error")        ? jsontext_str(obj, "error")
		 : jsontext_str(obj, "exitReason") ? jsontext_str(obj, "exitReason")
						   : state);
	{
		char title[SENDER_TITLE_MAX + 1];

		snprintf(title, sizeof(title), "%s %s", id, what);
		sender_notify(s, id, state, title, body, NULL, NULL, SENDER_TTL_ENDED, "normal");
	}
}

/* A permission request: the session waits for a person. The tool, and what it would do. */
static void sender_permission(struct sender *s, const char *id, json_object *data)
{
	const char *rid = jsontext_str(data, "requestId"), *tool = jsontext_str(data, "toolName");
	const char *what = NULL;
	json_object *input = NULL;
	struct sender_session *ss = sender_session(s, id);
	char title[SENDER_TITLE_MAX + 1], body[SENDER_BODY_MAX + 1];

	if (ss == NULL || rid == NULL || strlen(rid) > SENDER_REQUEST_MAX ||
	    strcmp(ss->request, rid) == 0)
		return;
	snprintf(ss->request, sizeof(ss->request), "%s", rid);
	if (tool == NULL)
		tool = "a tool";
	json_object_object_get_ex(data, "input", &input);
	what = jsontext_str(input, "command");
	if (what == NULL)
		what = jsontext_str(input, "file_path");
	if (what == NULL)
		what = jsontext_str(data, "description");
	snprintf(title, sizeof(title), "%s waits: %s", id, tool);
	snprintf(body, sizeof(body), "%s: %s", tool, what != NULL ? what : "asks for approval");
	sender_notify(s, id, "waiting", title, body, NULL, NULL, SENDER_TTL_WAITING, "high");
}

/* A request answered: the others' phones show who answered instead of the request. Nothing for
 * the one who answered, nor for answers of no person (a timeout, the agent's end). */
static void sender_resolved(struct sender *s, const char *id, json_object *data)
{
	const char *rid = jsontext_str(data, "requestId"), *by = jsontext_str(data, "by");
	const char *behavior = jsontext_str(data, "behavior");
	struct sender_session *ss = sender_session(s, id);
	char who[AUTH_IDENTITY_MAX + 1], title[SENDER_TITLE_MAX + 1];

	if (ss == NULL || rid == NULL || strcmp(ss->request, rid) != 0)
		return;
	ss->request[0] = '\0';
	if (by == NULL || behavior == NULL ||
	    (strcmp(behavior, "allow") != 0 && strcmp(behavior, "deny") != 0) || !auth_by_valid(by))
		return;
	sender_identity_of(by, who);
	if (who[0] == '\0')
		return;
	snprintf(title, sizeof(title), "%s: %s by %s", id,
		 strcmp(behavior, "allow") == 0 ? "allowed" : "denied", by);
	sender_notify(s, id, "answered", title, "", NULL, who, SENDER_TTL_WAITING, "low");
}

/* A turn ended: to whoever asked for it. */
static void sender_result(struct sender *s, const char *id, json_object *data)
{
	struct sender_session *ss = sender_session(s, id);
	json_object *err = NULL;
	const char *text = jsontext_str(data, "result");
	char title[SENDER_TITLE_MAX + 1];

	if (ss == NULL || ss->prompter[0] == '\0')
		return;
	json_object_object_get_ex(data, "is_error", &err);
	snprintf(title, sizeof(title), "%s %s", id,
		 json_object_get_boolean(err) ? "ended its turn with an error" : "is done");
	sender_notify(s, id, "done", title, text != NULL ? text : "", ss->prompter, NULL,
		      SENDER_TTL_ENDED, "normal");
	ss->prompter[0] = '\0';
}

static void sender_event(void *arg, const struct sseread_event *ev, json_object *data)
{
	struct sender *s = arg;
	const char *id = jsontext_str(data, "session");

	s->got_events = true;
	if (!ev->has_id || data == NULL) {
		if (strcmp(ev->name, EV_ERROR) == 0)
			log_warn("/events: %s", ev->data);
		return;
	}
	if (ev->id <= s->last_id && strcmp(ev->name, EV_SNAPSHOT) != 0)
		return;
	s->last_id = ev->id;
	if (strcmp(ev->name, EV_SNAPSHOT) == 0) {
		json_object *list = NULL;

		/* What is already so when we connect was someone else's to say. */
		json_object_object_get_ex(data, "sessions", &list);
		for (size_t i = 0; i < json_object_array_length(list); i++)
			sender_session_state(s, json_object_array_get_idx(list, i), false);
		return;
	}
	if (strcmp(ev->name, EV_SESSION) == 0) {
		json_object *obj = NULL;
		const char *change = jsontext_str(data, "change");

		json_object_object_get_ex(data, "session", &obj);
		if (change != NULL && strcmp(change, "deleted") == 0) {
			if (jsontext_str(obj, "id") != NULL)
				sender_forget(s, jsontext_str(obj, "id"));
			return;
		}
		sender_session_state(s, obj, true);
		return;
	}
	if (id == NULL || !session_id_valid(id))
		return;
	if (strcmp(ev->name, EV_PERMISSION) == 0)
		sender_permission(s, id, data);
	else if (strcmp(ev->name, EV_PERMISSION_RESOLVED) == 0)
		sender_resolved(s, id, data);
	else if (strcmp(ev->name, EV_RESULT) == 0)
		sender_result(s, id, data);
	else if (strcmp(ev->name, EV_PROMPT) == 0) {
		struct sender_session *ss = sender_session(s, id);

		if (ss != NULL)
			sender_identity_of(jsontext_str(data, "by"), ss->prompter);
	}
}

static void sender_end(void *arg, const struct agentc_answer *a)
{
	struct sender *s = arg;

	s->stream = NULL;
	if (a->aborted)
		return;
	if (s->got_events)
		s->backoff = SENDER_BACKOFF_MS;
	if (a->status == 401)
		log_error(
		    "/events: agent-daemon refuses agentd-push's token (%s): was `push` revoked? "
		    "Remove %s from the state dir and restart agentd-push for a new one",
		    a->err, SENDER_TOKEN_FILE);
	else
		log_warn("/events ended (%ld %s); reconnecting in %lld ms", a->status, a->err,
			 (long long)s->backoff);
	s->retry_at = sender_now_ms() + s->backoff;
	s->backoff = s->backoff * 2 > SENDER_BACKOFF_MAX ? SENDER_BACKOFF_MAX : s->backoff * 2;
}

/* Counts the subscriptions again when their store changed (it is replaced whole: a new inode or
 * time). Without any, nothing is followed: no token is made, no connection of the bridge held. */
static void sender_watch_subs(struct sender *s)
{
	struct cause cause = {{0}};
	struct pushsubs subs;
	struct stat st;

	if (stat(s->subs_path, &st) < 0) {
		s->have_subs = false;
		return;
	}
	if (st.st_mtim.tv_sec == s->subs_mtime.tv_sec &&
	    st.st_mtim.tv_nsec == s->subs_mtime.tv_nsec && st.st_size == s->subs_size)
		return;
	s->subs_mtime = st.st_mtim;
	s->subs_size = st.st_size;
	if (pushsubs_load(s->subs_path, &subs, &cause) < 0) {
		log_error("%s", cause.msg);
		return;
	}
	s->have_subs = subs.n > 0;
	pushsubs_free(&subs);
}

/* Our client of agent-daemon, with our token: made when first needed. Returns 0 or -errno. */
static int sender_connect(struct sender *s)
{
	struct cause cause = {{0}};

	if (s->agentd != NULL)
		return 0;
	if (sender_token(s, &cause) < 0) {
		log_error("%s", cause.msg);
		return -EIO;
	}
	s->agentd = agentc_create(s->loop, s->url, s->token);
	return s->agentd != NULL ? 0 : -ENOMEM;
}

static void sender_tick(struct sender *s, int64_t now)
{
	sender_watch_subs(s);
	if (!s->have_subs) {
		if (s->stream != NULL) {
			/* Followed again later from a snapshot: what happened meanwhile was for
			 * nobody, and is not sent late. */
			log_info("no subscription left: not following /events");
			agentc_stream_close(s->stream);
			s->stream = NULL;
			s->last_id = 0;
			s->nsessions = 0;
		}
		return;
	}
	if (s->stream != NULL || s->retry_at > now)
		return;
	if (sender_connect(s) < 0) {
		s->retry_at = now + SENDER_BACKOFF_MAX;
		return;
	}
	s->got_events = false;
	s->stream = agentc_stream_open(s->agentd, "GET", "/events", NULL, s->last_id, 0,
				       sender_event, sender_end, s);
	if (s->stream == NULL)
		s->retry_at = now + s->backoff;
	else
		log_info("/events: connecting%s", s->last_id > 0 ? " (replay)" : "");
}

int sender_run(struct sender *s, int sigfd)
{
	for (;;) {
		bool sig = false;
		int signo;
		int r;

		sender_tick(s, sender_now_ms());
		r = xfer_loop_run_once(s->loop, SENDER_ROUND_MS, sigfd, &sig);
		if (r < 0)
			return r;
		if (s->agentd != NULL)
			agentc_dispatch(s->agentd);
		if (sig && (signo = sigfd_next(sigfd)) > 0) {
			log_info("signal %d: stopping", signo);
			return 0;
		}
	}
}
