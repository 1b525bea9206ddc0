#include "feed.h"

#include "approvals.h"
#include "eventnames.h"
#include "jsontext.h"
#include "log.h"
#include "render.h"
#include "session.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct feed_item {
	struct feed_item *next;
	uint64_t id; /* 0: no id */
	char name[SSEREAD_NAME_MAX + 1];
	json_object *data;
};

struct feed {
	struct bot *b;
	struct agentc_stream *s;
	struct feed_item *head, *tail;
	unsigned count;
	unsigned waiting;     /* messages of the head event not sent yet */
	bool head_started;    /* the head event is being handled */
	uint64_t last_queued; /* the last id read: a reconnect goes on after it */
	bool got_events;      /* the current connection brought something */
	int64_t retry_at;
	int64_t backoff;
};

static void feed_pump(struct feed *f);

struct feed *feed_create(struct bot *b)
{
	struct feed *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return NULL;
	f->b = b;
	f->backoff = BOT_BACKOFF_MS;
	return f;
}

static void feed_item_free(struct feed_item *it)
{
	json_object_put(it->data);
	free(it);
}

void feed_destroy(struct feed *f)
{
	if (f == NULL)
		return;
	agentc_stream_close(f->s);
	while (f->head != NULL) {
		struct feed_item *it = f->head;

		f->head = it->next;
		feed_item_free(it);
	}
	free(f);
}

/* The head event is handled: its id is recorded, the next one starts. */
static void feed_complete(struct feed *f)
{
	struct feed_item *it = f->head;

	f->head = it->next;
	if (f->head == NULL)
		f->tail = NULL;
	f->count--;
	f->head_started = false;
	if (it->id > f->b->st->events_id) {
		f->b->st->events_id = it->id;
		bot_changed(f->b);
	}
	feed_item_free(it);
}

static void feed_op_done(void *arg)
{
	struct feed *f = arg;

	if (f->waiting > 0 && --f->waiting == 0) {
		feed_complete(f);
		feed_pump(f);
	}
}

/* A snapshot: sessions that are gone are no longer followed; approvals are reconciled. */
static unsigned feed_snapshot(struct feed *f, json_object *data)
{
	struct state *st = f->b->st;
	json_object *sessions;

	if (!json_object_object_get_ex(data, "sessions", &sessions) ||
	    !json_object_is_type(sessions, json_type_array))
		return 0;
	for (unsigned i = 0; i < st->nchats; i++) {
		struct state_chat *c = &st->chats[i];

		for (unsigned j = 0; j < c->nfollows;) {
			bool found = false;

			for (size_t k = 0; !found && k < json_object_array_length(sessions); k++) {
				const char *id =
				    jsontext_str(json_object_array_get_idx(sessions, k), "id");

				found = id != NULL && strcmp(id, c->follows[j]) == 0;
			}
			if (found) {
				j++;
				continue;
			}
			log_info("session %s is gone: no chat follows it any more", c->follows[j]);
			state_unfollow_all(st, c->follows[j]);
			bot_changed(f->b);
		}
	}
	return approvals_snapshot(f->b, sessions, feed_op_done, f);
}

/* A pull request's news (opened, CI failed or passed, merged, closed) to every chat that follows
 * its session. Nothing waits for the messages: they are the outbox's. */
static unsigned feed_pr(struct feed *f, const char *session, json_object *data)
{
	char text[1024];

	if (!render_pr_event(text, sizeof(text), data))
		return 0;
	for (unsigned i = 0; i < f->b->st->nchats; i++)
		if (state_follows(&f->b->st->chats[i], session))
			bot_say(f->b, f->b->st->chats[i].chat, text);
	return 0;
}

/* Starts handling it; returns the messages it waits for. */
static unsigned feed_handle(struct feed *f, struct feed_item *it)
{
	const char *session = jsontext_str(it->data, "session");

	if (it->data == NULL)
		return 0;
	if (strcmp(it->name, EV_SNAPSHOT) == 0)
		return feed_snapshot(f, it->data);
	if (strcmp(it->name, EV_SESSION) == 0) {
		json_object *s = NULL;
		const char *change = jsontext_str(it->data, "change"), *id;

		json_object_object_get_ex(it->data, "session", &s);
		id = jsontext_str(s, "id");
		if (change != NULL && strcmp(change, "deleted") == 0 && id != NULL &&
		    session_id_valid(id)) {
			state_unfollow_all(f->b->st, id);
			bot_changed(f->b);
			return 0;
		}
		/* A terminal session that starts waiting: its requests (the permission events
		 * come first and say more; a request they brought already has its message). */
		if (jsontext_str(s, "mode") != NULL &&
		    strcmp(jsontext_str(s, "mode"), "terminal") == 0 &&
		    jsontext_str(s, "activity") != NULL &&
		    strcmp(jsontext_str(s, "activity"), "waiting") == 0)
			return approvals_pending(f->b, s, feed_op_done, f);
		return 0;
	}
	if (session == NULL || !session_id_valid(session))
		return 0;
	if (strcmp(it->name, EV_PERMISSION) == 0)
		return approvals_request(f->b, session, it->data, feed_op_done, f);
	if (strcmp(it->name, EV_PERMISSION_RESOLVED) == 0)
		return approvals_resolved(f->b, session, it->data, feed_op_done, f);
	if (strcmp(it->name, EV_PR) == 0)
		return feed_pr(f, session, it->data);
	return 0; /* result: a turn started here shows its own; others are not announced */
}

static void feed_pump(struct feed *f)
{
	while (f->head != NULL && !f->head_started) {
		f->head_started = true;
		f->waiting = feed_handle(f, f->head);
		if (f->waiting > 0)
			return;
		feed_complete(f);
	}
}

static void feed_event(void *arg, const struct sseread_event *ev, json_object *data)
{
	struct feed *f = arg;
	struct feed_item *it;
	uint64_t seen = f->last_queued > f->b->st->events_id ? f->last_queued : f->b->st->events_id;

	f->got_events = true;
	if (!ev->has_id) {
		if (strcmp(ev->name, EV_ERROR) == 0)
			log_warn("/events: %s", ev->data);
		return;
	}
	if (ev->id <= seen && strcmp(ev->name, EV_SNAPSHOT) != 0)
		return; /* handled already */
	if (f->count >= FEED_QUEUE_MAX) {
		/* Read again once the queue has room: from the last id queued. */
		log_warn("/events: %u events wait; reading again later", f->count);
		agentc_stream_close(f->s);
		f->s = NULL;
		f->retry_at = outbox_now() + f->backoff;
		bot_wake_at(f->b, f->retry_at);
		return;
	}
	it = calloc(1, sizeof(*it));
	if (it == NULL) {
		log_error("/events: out of memory; reading again later");
		agentc_stream_close(f->s);
		f->s = NULL;
		f->retry_at = outbox_now() + f->backoff;
		bot_wake_at(f->b, f->retry_at);
		return;
	}
	it->id = ev->id;
	memcpy(it->name, ev->name, sizeof(it->name));
	it->data = json_object_get(data);
	if (f->tail != NULL)
		f->tail->next = it;
	else
		f->head = it;
	f->tail = it;
	f->count++;
	if (ev->id > f->last_queued)
		f->last_queued = ev->id;
	feed_pump(f);
}

static void feed_end(void *arg, const struct agentc_answer *a)
{
	struct feed *f = arg;

	f->s = NULL;
	if (a->aborted)
		return;
	if (f->got_events)
		f->backoff = BOT_BACKOFF_MS;
	if (a->status == 401 || a->status == 403) {
		log_error("/events: agent-daemon refuses the bot (%ld: %s); check AGENTD_TOKEN",
			  a->status, a->err);
		f->backoff = BOT_BACKOFF_MAX_MS;
	} else {
		log_warn("/events ended (%s); reconnecting in %lld ms", a->err,
			 (long long)f->backoff);
	}
	f->retry_at = outbox_now() + f->backoff;
	f->backoff = f->backoff * 2 > BOT_BACKOFF_MAX_MS ? BOT_BACKOFF_MAX_MS : f->backoff * 2;
	bot_wake_at(f->b, f->retry_at);
}

void feed_tick(struct feed *f, int64_t now)
{
	uint64_t from;

	if (f->s != NULL)
		return;
	if (f->retry_at > now) {
		bot_wake_at(f->b, f->retry_at);
		return;
	}
	if (f->count >= FEED_QUEUE_MAX / 2) {
		f->retry_at = now + f->backoff;
		bot_wake_at(f->b, f->retry_at);
		return;
	}
	from = f->last_queued > f->b->st->events_id ? f->last_queued : f->b->st->events_id;
	f->got_events = false;
	f->s = agentc_stream_open(f->b->agentd, "GET", "/events", NULL, from, 0, feed_event,
				  feed_end, f);
	if (f->s == NULL) {
		f->retry_at = now + f->backoff;
		bot_wake_at(f->b, f->retry_at);
		return;
	}
	if (from > 0)
		log_info("/events: connecting, after event %" PRIu64, from);
	else
		log_info("/events: connecting (a snapshot first)");
}
