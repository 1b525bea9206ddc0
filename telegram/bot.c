#include "bot.h"

#include "approvals.h"
#include "commands.h"
#include "feed.h"
#include "fsutil.h"
#include "log.h"
#include "sigfd.h"
#include "split.h"
#include "turns.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BOT_POLL_TIMEOUT_MS ((BOTAPI_POLL_S + 15) * 1000L) /* Telegram's wait and a margin */
#define BOT_REFUSAL                                                                                \
	"This bot serves only the users its operator listed. Your Telegram user id is %" PRId64    \
	"; ask the operator to add it to AGENTD_TELEGRAM_USERS."
/* Before the operator lists anyone (README.md: the first run), writing to the bot is how a
 * person learns the id to list. */
#define BOT_NOBODY_YET                                                                             \
	"This bot serves nobody yet. Your Telegram user id is %" PRId64                            \
	"; the operator adds it to AGENTD_TELEGRAM_USERS to let you in."

void bot_changed(struct bot *b)
{
	b->dirty = true;
}

void bot_wake_at(struct bot *b, int64_t at)
{
	if (b->wake == 0 || at < b->wake)
		b->wake = at;
}

void bot_say(struct bot *b, int64_t chat, const char *text)
{
	size_t len = strlen(text), off = 0;

	while (off < len) {
		size_t n = split_point(text + off, len - off, SPLIT_MAX);
		char *part = strndup(text + off, n);
		int r = part != NULL ? outbox_send(b->out, chat, part, NULL, NULL, NULL) : -ENOMEM;

		free(part);
		if (r < 0) {
			log_error("cannot queue a message to chat %" PRId64 ": %s", chat,
				  strerror(-r));
			return;
		}
		off += n;
	}
}

/* Writes the state when it changed. A failure is logged and tried again next round. */
static void bot_save(struct bot *b)
{
	struct cause cause = {{0}};

	if (!b->dirty)
		return;
	if (state_save(b->st, b->set->state_path, &cause) < 0) {
		log_error("%s", cause.msg);
		return;
	}
	b->dirty = false;
}

/* ---- updates ----------------------------------------------------------------------------------
 */

static void bot_update(struct bot *b, const struct botapi_update *u)
{
	if (u->kind == BOTAPI_OTHER)
		return;
	if (!settings_user_allowed(b->set, u->user)) {
		bool first = state_refuse(b->st, u->user);
		char msg[sizeof(BOT_NOBODY_YET) + sizeof(BOT_REFUSAL) + 32];

		if (first) {
			bot_changed(b);
			log_warn("refused Telegram user %" PRId64 " (not in AGENTD_TELEGRAM_USERS)",
				 u->user);
		}
		if (b->set->nusers == 0)
			snprintf(msg, sizeof(msg), BOT_NOBODY_YET, u->user);
		else
			snprintf(msg, sizeof(msg), BOT_REFUSAL, u->user);
		if (u->kind == BOTAPI_CALLBACK)
			/* The button's spinner stops either way; the refusal is said once. */
			outbox_answer(b->out, u->callback_id, first ? msg : NULL, NULL, NULL);
		else if (first)
			bot_say(b, u->chat, msg);
		return;
	}
	if (u->kind == BOTAPI_CALLBACK)
		approvals_press(b, u);
	else
		commands_message(b, u);
}

static void bot_poll_done(void *arg, const struct botapi_answer *a)
{
	struct bot *b = arg;
	int64_t now = outbox_now();
	json_object *list = a->result;

	b->poll = NULL;
	if (a->aborted)
		return;
	if (!a->ok || !json_object_is_type(list, json_type_array)) {
		int64_t wait = b->poll_backoff;

		if (a->retry_after > 0)
			wait = (int64_t)a->retry_after * 1000;
		if (a->error_code == 401 || a->error_code == 404)
			log_error("getUpdates: Telegram refuses the bot token (%d %s)",
				  a->error_code, a->description);
		else if (a->error_code == 409)
			log_error("getUpdates: %s (another process polls with this token)",
				  a->description);
		else
			log_warn("getUpdates failed (%s); again in %lld ms", a->description,
				 (long long)wait);
		b->poll_at = now + wait;
		b->poll_backoff = b->poll_backoff * 2 > BOT_BACKOFF_MAX_MS ? BOT_BACKOFF_MAX_MS
									   : b->poll_backoff * 2;
		bot_wake_at(b, b->poll_at);
		return;
	}
	b->poll_backoff = BOT_BACKOFF_MS;
	b->poll_at = now;
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		struct botapi_update u;

		if (botapi_parse_update(json_object_array_get_idx(list, i), &u) < 0)
			continue;
		if (u.update_id < b->st->offset)
			continue; /* confirmed before: handled */
		/* Recorded before anything is done for it: the state is written before the
		 * request it causes leaves, so a restart never acts on it twice. */
		b->st->offset = u.update_id + 1;
		bot_changed(b);
		bot_update(b, &u);
	}
}

static void bot_poll(struct bot *b, int64_t now)
{
	json_object *p, *allowed;

	if (b->poll != NULL)
		return;
	if (b->poll_at > now) {
		bot_wake_at(b, b->poll_at);
		return;
	}
	p = json_object_new_object();
	allowed = json_object_new_array();
	json_object_array_add(allowed, json_object_new_string("message"));
	json_object_array_add(allowed, json_object_new_string("callback_query"));
	json_object_object_add(p, "offset", json_object_new_int64(b->st->offset));
	json_object_object_add(p, "timeout", json_object_new_int(BOTAPI_POLL_S));
	json_object_object_add(p, "allowed_updates", allowed);
	b->poll = botapi_call(b->api, "getUpdates", p, BOT_POLL_TIMEOUT_MS, bot_poll_done, b);
	if (b->poll == NULL) {
		b->poll_at = now + b->poll_backoff;
		bot_wake_at(b, b->poll_at);
	}
}

/* ---- the loop -----------------------------------------------------------------------------------
 */

struct bot *bot_create(const struct settings *set, struct cause *cause)
{
	struct bot *b = calloc(1, sizeof(*b));
	int r;

	if (b == NULL) {
		cause_set(cause, "out of memory");
		return NULL;
	}
	b->set = set;
	b->poll_backoff = BOT_BACKOFF_MS;
	if ((b->st = state_create()) == NULL || (b->loop = xfer_loop_create()) == NULL ||
	    (b->api = botapi_create(b->loop, set->api, set->token)) == NULL ||
	    (b->agentd = agentc_create(b->loop, set->url, set->agentd_token)) == NULL ||
	    (b->rl = ratelimit_create()) == NULL ||
	    (b->out = outbox_create(b->api, b->rl)) == NULL || (b->feed = feed_create(b)) == NULL) {
		cause_set(cause, "out of memory (or libcurl cannot start)");
		goto fail;
	}
	r = fsutil_mkdir_parent(set->state_path);
	if (r < 0) {
		cause_set(cause, "cannot create the directory of %s: %s", set->state_path,
			  strerror(-r));
		goto fail;
	}
	if (state_load(b->st, set->state_path, cause) < 0)
		goto fail;
	/* Writable before anything happens: better to stop now than to forget later. */
	b->dirty = true;
	bot_save(b);
	if (b->dirty) {
		cause_set(cause, "cannot write the state file %s", set->state_path);
		goto fail;
	}
	log_info("state %s: offset %" PRId64 ", events after %" PRIu64 ", %u chats, %u approvals, "
		 "%u answers being streamed",
		 set->state_path, b->st->offset, b->st->events_id, b->st->nchats, b->st->napprovals,
		 b->st->nturns);
	/* The process before this one may have called Telegram a moment ago (a crash and a quick
	 * restart): the first calls wait for any gap it started. */
	ratelimit_pause(b->rl, 0, outbox_now() + RATELIMIT_EDIT_GAP_MS);
	turns_resume(b);
	return b;
fail:
	bot_destroy(b);
	return NULL;
}

void bot_destroy(struct bot *b)
{
	if (b == NULL)
		return;
	/* Every transfer's owner lets go of it first (the outbox keeps its calls queued). */
	if (b->loop != NULL)
		xfer_loop_finish(b->loop);
	if (b->st != NULL && b->set != NULL)
		bot_save(b);
	turns_destroy_all(b);
	feed_destroy(b->feed);
	outbox_destroy(b->out);
	ratelimit_destroy(b->rl);
	agentc_destroy(b->agentd);
	botapi_destroy(b->api);
	xfer_loop_destroy(b->loop);
	state_destroy(b->st);
	free(b);
}

int bot_run(struct bot *b, int sigfd)
{
	while (!b->stop) {
		int64_t now = outbox_now(), next;
		bool sig = false;
		int signo;
		int timeout, r;

		b->wake = 0;
		bot_poll(b, now);
		feed_tick(b->feed, now);
		turns_tick(b, now);
		next = outbox_tick(b->out, now);
		if (next >= 0)
			bot_wake_at(b, now + next);
		/* Before any byte leaves: what was decided above is on disk. */
		bot_save(b);
		timeout = BOT_ROUND_MAX_MS;
		if (b->wake != 0 && b->wake - now < timeout)
			timeout = b->wake > now ? (int)(b->wake - now) : 0;
		r = xfer_loop_run_once(b->loop, timeout, sigfd, &sig);
		if (r < 0)
			return r;
		agentc_dispatch(b->agentd);
		if (sig && (signo = sigfd_next(sigfd)) > 0) {
			log_info("signal %d: stopping", signo);
			b->stop = true;
		}
	}
	bot_save(b);
	return 0;
}
