#include "turns.h"

#include "eventnames.h"
#include "log.h"
#include "render.h"
#include "session.h"
#include "split.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TURN_WORKING  "⏳ working…"
#define TURN_CUT_NOTE "\n[… the rest of this output is not shown here]\n"

struct turn {
	struct turn *next;
	struct bot *b;
	char session[SESSION_ID_MAX + 1];
	int64_t chat;
	int64_t user;
	struct agentc_stream *s;
	struct buf text;     /* the answer's text not yet in finished messages */
	uint64_t last_id;    /* the last session event rendered into text */
	int64_t message;     /* the message showing text's start (0: none yet) */
	char *shown;         /* what that message shows now */
	uint64_t shown_hash; /* after a restart, a hash of it (shown is not kept) */
	bool op;             /* a call of ours is queued or running */
	bool started;        /* the stream brought an event */
	bool ended;          /* its result (or end) is in text */
	bool detached;       /* a newer turn of the chat and session owns the state entry */
	bool cut;            /* text reached TURN_TEXT_MAX once: the rest was dropped */
	int64_t retry_at;    /* when a broken stream is taken up again (0: not broken) */
	int64_t backoff;
	char pending[SPLIT_MAX * 4 + 1]; /* the text of the call running (a part, or all) */
	size_t pending_cut;              /* > 0: the call finishes a part of this many bytes */
};

static void turn_flush(struct turn *t);

/* FNV-1a: what a message shows, remembered in the state in eight bytes. Never 0. */
static uint64_t turn_hash(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h != 0 ? h : 1;
}

static void turn_header(struct buf *text, const char *session, bool continued)
{
	buf_addf(text, "💬 %s%s\n", session, continued ? " (continued)" : "");
}

static struct turn *turn_new(struct bot *b, int64_t chat, int64_t user, const char *session)
{
	struct turn *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	t->b = b;
	t->chat = chat;
	t->user = user;
	snprintf(t->session, sizeof(t->session), "%s", session);
	buf_init(&t->text, 0);
	t->backoff = BOT_BACKOFF_MS;
	t->next = b->turns;
	b->turns = t;
	return t;
}

static void turn_free(struct turn *t)
{
	struct turn **pp = &t->b->turns;

	while (*pp != NULL && *pp != t)
		pp = &(*pp)->next;
	if (*pp == t)
		*pp = t->next;
	agentc_stream_close(t->s);
	outbox_forget(t->b->out, t);
	buf_free(&t->text);
	free(t->shown);
	free(t);
}

/* Records text, last id and message in the state (once an event id is known). */
static void turn_persist(struct turn *t)
{
	struct state_turn *st;

	if (t->detached || t->last_id == 0)
		return;
	st = state_turn(t->b->st, t->chat, t->session, true);
	if (st == NULL) {
		log_warn("turn of %s in chat %" PRId64 ": the state holds %d turns already; it is "
			 "not kept across a restart",
			 t->session, t->chat, STATE_TURNS_MAX);
		return;
	}
	st->user = t->user;
	st->message = t->message;
	st->after = t->last_id;
	st->ended = t->ended;
	st->shown = t->shown != NULL ? turn_hash(t->shown) : t->shown_hash;
	if (state_turn_set_text(st, buf_str(&t->text)) < 0)
		log_error("out of memory keeping a turn's text");
	bot_changed(t->b);
}

/* The turn is over: shown whole, or given up. */
static void turn_finish(struct turn *t)
{
	struct state_turn *st;

	if (!t->detached && (st = state_turn(t->b->st, t->chat, t->session, false)) != NULL) {
		state_turn_remove(t->b->st, st);
		bot_changed(t->b);
	}
	turn_free(t);
}

/* Whether text is only its header line (nothing to show yet). */
static bool turn_header_only(const struct buf *text)
{
	const char *nl = strchr(buf_str(text), '\n');

	return nl != NULL && (size_t)(nl - text->p) == text->len - 1;
}

static void turn_op_done(void *arg, const struct outbox_result *r)
{
	struct turn *t = arg;

	t->op = false;
	if (!r->ok) {
		/* The message is gone (deleted in the chat) or Telegram refuses the text. */
		log_warn("turn of %s in chat %" PRId64
			 ": Telegram refused the answer (%s); it is not "
			 "shown further",
			 t->session, t->chat, r->description);
		turn_finish(t);
		return;
	}
	if (r->message_id > 0)
		t->message = r->message_id;
	if (t->pending_cut > 0) {
		/* A full message is finished: the rest starts the next one. */
		struct buf rest;
		size_t skip = t->pending_cut;

		buf_init(&rest, 0);
		while (skip < t->text.len && t->text.p[skip] == '\n')
			skip++;
		turn_header(&rest, t->session, true);
		buf_add(&rest, t->text.p + skip, t->text.len - skip);
		buf_free(&t->text);
		t->text = rest;
		t->message = 0;
		free(t->shown);
		t->shown = NULL;
		t->shown_hash = 0;
		t->pending_cut = 0;
	} else {
		free(t->shown);
		t->shown = strdup(t->pending);
	}
	turn_persist(t);
	turn_flush(t);
}

/* Shows text as it is now, if the message does not yet; finishes the turn when all is shown. */
static void turn_flush(struct turn *t)
{
	const char *text = buf_str(&t->text);
	size_t len = t->text.len, cut = 0;
	int r;

	if (t->op)
		return;
	if (split_units(text, len) > SPLIT_MAX) {
		cut = split_point(text, len, SPLIT_MAX);
		memcpy(t->pending, text, cut);
		t->pending[cut] = '\0';
	} else if (turn_header_only(&t->text)) {
		snprintf(t->pending, sizeof(t->pending), "%s%s", text, TURN_WORKING);
	} else {
		memcpy(t->pending, text, len + 1);
	}
	if (cut == 0 && t->message != 0 &&
	    (t->shown != NULL ? strcmp(t->shown, t->pending) == 0
			      : t->shown_hash == turn_hash(t->pending))) {
		if (t->ended)
			turn_finish(t);
		return;
	}
	t->pending_cut = cut;
	if (t->message == 0)
		r = outbox_send(t->b->out, t->chat, t->pending, NULL, turn_op_done, t);
	else
		r = outbox_edit(t->b->out, t->chat, t->message, t->pending, NULL, turn_op_done, t);
	if (r < 0) {
		log_error("turn of %s: cannot queue its message: %s", t->session, strerror(-r));
		turn_finish(t);
		return;
	}
	t->op = true;
}

/* Appends what an event adds, within TURN_TEXT_MAX. */
static void turn_render(struct turn *t, const char *name, json_object *data)
{
	struct buf frag;
	size_t room, ctx = t->text.len < 2 ? t->text.len : 2;

	if (t->cut && !render_turn_ends(name))
		return;
	buf_init(&frag, 0);
	/* Rendered after the text's last two bytes, which decide how a paragraph or a line is
	 * separated from what comes before (as in one buffer), then without them. */
	buf_add(&frag, t->text.p != NULL ? t->text.p + t->text.len - ctx : "", ctx);
	if (render_turn_event(&frag, name, data) < 0) {
		buf_free(&frag);
		return;
	}
	buf_consume(&frag, ctx);
	room = TURN_TEXT_MAX > t->text.len ? TURN_TEXT_MAX - t->text.len : 0;
	if (frag.len > room && !render_turn_ends(name)) {
		buf_add(&t->text, frag.p, split_prefix(frag.p, frag.len, room / 4));
		buf_adds(&t->text, TURN_CUT_NOTE);
		t->cut = true;
	} else {
		buf_add(&t->text, buf_str(&frag), frag.len);
	}
	buf_free(&frag);
}

static void turn_event(void *arg, const struct sseread_event *ev, json_object *data)
{
	struct turn *t = arg;

	if (ev->has_id) {
		if (ev->id <= t->last_id)
			return; /* already shown (a replay from before the break) */
		t->last_id = ev->id;
	}
	t->started = true;
	t->backoff = BOT_BACKOFF_MS;
	if (data != NULL || strcmp(ev->name, EV_ERROR) == 0)
		turn_render(t, ev->name, data);
	if (render_turn_ends(ev->name)) {
		t->ended = true;
		agentc_stream_close(t->s);
		t->s = NULL;
	}
	turn_persist(t);
	turn_flush(t);
}

/* The answer ends with a note (the stream cannot go on). */
static void turn_end_with(struct turn *t, const char *note)
{
	char line[AGENTC_ERROR_MAX + 16];

	snprintf(line, sizeof(line), "\n\n⚠️ %s", note);
	buf_adds(&t->text, line);
	t->ended = true;
	turn_persist(t);
	turn_flush(t);
}

static void turn_refused(struct turn *t, const struct agentc_answer *a)
{
	char msg[1024 + AGENTC_ERROR_MAX];
	struct bot *b = t->b;

	if (strcmp(a->code, "not_structured") == 0)
		snprintf(msg, sizeof(msg),
			 "%s is in terminal mode. Send /mode structured to drive it from here, or "
			 "open its terminal: %s/#/s/%s",
			 t->session, b->set->web_url, t->session);
	else if (strcmp(a->code, "turn_running") == 0)
		snprintf(msg, sizeof(msg),
			 "A turn is already running in %s: wait for its answer, or /interrupt it.",
			 t->session);
	else if (strcmp(a->code, "budget_exceeded") == 0)
		/* The server's sentence has the figures; the words first say why nothing runs. */
		snprintf(msg, sizeof(msg),
			 "%s is over its budget: it takes no new prompt. %s\n/sessions shows each "
			 "session's cost and budget.",
			 t->session, a->err);
	else if (a->status == 404)
		snprintf(msg, sizeof(msg),
			 "There is no session %s (any more). /sessions lists them.", t->session);
	else
		snprintf(msg, sizeof(msg), "%s did not take the prompt: %s", t->session, a->err);
	bot_say(b, t->chat, msg);
}

static void turn_end(void *arg, const struct agentc_answer *a)
{
	struct turn *t = arg;

	t->s = NULL;
	if (t->ended || a->aborted)
		return;
	if (t->last_id == 0) {
		/* Nothing of this turn was shown: a refusal, or a stream that brought nothing. */
		if (!t->started && a->status != 200) {
			turn_refused(t, a);
			turn_finish(t);
		} else {
			turn_end_with(t, "the stream ended before the answer came; see /sessions");
		}
		return;
	}
	if (a->status >= 400 && !a->transient) {
		turn_end_with(t, a->status == 404 ? "the session is gone" : a->err);
		return;
	}
	/* Broken mid-turn: taken up again from the last event shown. */
	log_warn("turn of %s: the stream broke (%s); going on from event %" PRIu64, t->session,
		 a->err, t->last_id);
	t->started = false;
	t->retry_at = outbox_now() + t->backoff;
	t->backoff = t->backoff * 2 > BOT_BACKOFF_MAX_MS ? BOT_BACKOFF_MAX_MS : t->backoff * 2;
	bot_wake_at(t->b, t->retry_at);
}

static struct turn *turn_find(struct bot *b, int64_t chat, const char *session)
{
	for (struct turn *t = b->turns; t != NULL; t = t->next)
		if (t->chat == chat && strcmp(t->session, session) == 0 && !t->detached)
			return t;
	return NULL;
}

void turns_prompt(struct bot *b, int64_t chat, int64_t user, const char *session,
		  const char *prompt)
{
	struct turn *t = turn_find(b, chat, session);
	json_object *body;

	if (t != NULL && !t->ended) {
		char msg[256];

		snprintf(msg, sizeof(msg),
			 "A turn is already running in %s: wait for its answer, or /interrupt it.",
			 session);
		bot_say(b, chat, msg);
		return;
	}
	if (t != NULL) {
		/* Its last edits still go out, but the state entry is the new turn's. */
		struct state_turn *st = state_turn(b->st, chat, session, false);

		if (st != NULL) {
			state_turn_remove(b->st, st);
			bot_changed(b);
		}
		t->detached = true;
	}
	t = turn_new(b, chat, user, session);
	if (t == NULL) {
		bot_say(b, chat, "Out of memory: the prompt was not sent.");
		return;
	}
	turn_header(&t->text, session, false);
	body = json_object_new_object();
	json_object_object_add(body, "prompt", json_object_new_string(prompt));
	{
		char path[64 + SESSION_ID_MAX];

		snprintf(path, sizeof(path), "/sessions/%s/prompt", session);
		t->s = agentc_stream_open(b->agentd, "POST", path, body, 0, user, turn_event,
					  turn_end, t);
	}
	if (t->s == NULL) {
		bot_say(b, chat, "The prompt could not be sent (out of memory).");
		turn_free(t);
	}
}

/* (Re)opens the session's event stream after the last event shown. */
static void turn_reopen(struct turn *t)
{
	char path[64 + SESSION_ID_MAX];

	t->retry_at = 0;
	snprintf(path, sizeof(path), "/sessions/%s/events", t->session);
	t->s = agentc_stream_open(t->b->agentd, "GET", path, NULL, t->last_id, 0, turn_event,
				  turn_end, t);
	if (t->s == NULL) {
		t->retry_at = outbox_now() + t->backoff;
		bot_wake_at(t->b, t->retry_at);
	}
}

void turns_resume(struct bot *b)
{
	struct state *st = b->st;

	for (unsigned i = 0; i < st->nturns; i++) {
		struct state_turn *s = &st->turns[i];
		struct turn *t = turn_new(b, s->chat, s->user, s->session);

		if (t == NULL) {
			log_error("out of memory taking up the turn of %s", s->session);
			continue;
		}
		buf_adds(&t->text, s->text != NULL ? s->text : "");
		t->message = s->message;
		t->last_id = s->after;
		t->ended = s->ended;
		t->started = true;
		t->shown_hash = s->shown;
		log_info("taking up the answer of %s in chat %" PRId64 " after event %" PRIu64,
			 t->session, t->chat, t->last_id);
		if (!t->ended)
			turn_reopen(t);
		/* An edit only if the message does not show the text already. */
		turn_flush(t);
	}
}

void turns_tick(struct bot *b, int64_t now)
{
	for (struct turn *t = b->turns; t != NULL; t = t->next) {
		if (t->s != NULL || t->ended || t->retry_at == 0)
			continue;
		if (t->retry_at <= now)
			turn_reopen(t);
		else
			bot_wake_at(b, t->retry_at);
	}
}

void turns_destroy_all(struct bot *b)
{
	while (b->turns != NULL)
		turn_free(b->turns);
}
