/*
 * state (agentd-telegram): what state_save writes, state_load reads back the same (offset, the
 * handled /events id, chats with their current and followed sessions, refusals, approvals with
 * their keys, texts and suggestions, streamed turns); the file is replaced atomically with mode
 * 0600 and no temporary is left; a missing file is a first start; a file that is not a state
 * file, or holds what the bot never writes (a bad session id, a key of another form, too much),
 * is refused with a reason rather than reset; keys are short, unique and survive a reload.
 */
#include "state.h"

#include "testdir.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];
static char path[256];

static void setup(void)
{
	testdir_make(dir, sizeof(dir), "/tmp/tg-state-XXXXXX");
	snprintf(path, sizeof(path), "%s/telegram.json", dir);
}

static void teardown(void)
{
	testdir_remove(dir);
}

TestSuite(tg_state, .init = setup, .fini = teardown);

/* Loads path into a new state, expecting err; returns the state (or NULL when it failed). */
static struct state *load(int err, const char *want)
{
	struct state *st = state_create();
	struct cause c = {{0}};
	int r;

	cr_assert_not_null(st);
	r = state_load(st, path, &c);
	cr_assert_eq(r, err, "state_load: %d, want %d (%s)", r, err, c.msg);
	if (want != NULL)
		cr_assert_not_null(strstr(c.msg, want), "cause '%s' lacks '%s'", c.msg, want);
	if (r < 0) {
		state_destroy(st);
		return NULL;
	}
	return st;
}

static struct state *sample(void)
{
	struct state *st = state_create();
	struct state_chat *c;
	struct state_approval *a;
	struct state_turn *t;

	cr_assert_not_null(st);
	st->offset = 123456789012LL;
	st->events_id = 77;
	c = state_chat(st, 1001, true);
	state_follow(c, "widgets-1");
	state_follow(c, "gadgets-2");
	snprintf(c->current, sizeof(c->current), "widgets-1");
	state_chat(st, -100200300, true); /* a group: negative ids */
	cr_assert(state_refuse(st, 2002));
	a = state_approval_add(st, 1001, "widgets-1", "3f6c-01", "Bash", false,
			       "🔐 widgets-1 asks to use Bash\ntouch x",
			       "[{\"type\":\"addRules\"}]");
	cr_assert_not_null(a);
	a->message = 55;
	a = state_approval_add(st, 1001, "gadgets-2", "r2", "Edit", true, "text \"quoted\"", NULL);
	cr_assert_not_null(a);
	t = state_turn(st, 1001, "widgets-1", true);
	cr_assert_not_null(t);
	t->user = 1001;
	t->message = 56;
	t->after = 42;
	cr_assert_eq(state_turn_set_text(t, "💬 widgets-1\n\nHello\\n"), 0);
	return st;
}

Test(tg_state, a_missing_file_is_a_first_start)
{
	struct state *st = load(0, NULL);

	cr_assert_eq(st->offset, 0);
	cr_assert_eq(st->events_id, 0);
	cr_assert_eq(st->nchats + st->napprovals + st->nturns + st->nrefused, 0);
	state_destroy(st);
}

Test(tg_state, what_is_saved_is_loaded)
{
	struct state *st = sample(), *back;
	struct cause c = {{0}};
	struct stat sb;
	char tmp[300], *a, *b;

	cr_assert_eq(state_save(st, path, &c), 0, "%s", c.msg);
	cr_assert_eq(stat(path, &sb), 0);
	cr_assert_eq(sb.st_mode & 0777, 0600, "mode %o", sb.st_mode & 0777);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	cr_assert_neq(access(tmp, F_OK), 0, "no temporary file is left");
	back = load(0, NULL);
	cr_assert_eq(back->offset, 123456789012LL);
	cr_assert_eq(back->events_id, 77);
	cr_assert_eq(back->nchats, 2);
	cr_assert_str_eq(back->chats[0].current, "widgets-1");
	cr_assert_eq(back->chats[0].nfollows, 2);
	cr_assert_str_eq(back->chats[0].follows[1], "gadgets-2");
	cr_assert_eq(back->chats[1].chat, -100200300);
	cr_assert(state_refused(back, 2002));
	cr_assert_eq(back->napprovals, 2);
	cr_assert_str_eq(back->approvals[0].key, st->approvals[0].key);
	cr_assert_eq(back->approvals[0].message, 55);
	cr_assert_str_eq(back->approvals[0].text, "🔐 widgets-1 asks to use Bash\ntouch x");
	cr_assert_str_eq(back->approvals[0].suggestions, "[{\"type\":\"addRules\"}]");
	cr_assert_eq(back->approvals[1].message, 0, "not sent yet");
	cr_assert(back->approvals[1].terminal);
	cr_assert_null(back->approvals[1].suggestions);
	cr_assert_eq(back->nturns, 1);
	cr_assert_eq(back->turns[0].after, 42);
	cr_assert_str_eq(back->turns[0].text, "💬 widgets-1\n\nHello\\n");
	/* And written again, the same text. */
	a = state_to_json(st);
	b = state_to_json(back);
	cr_assert_str_eq(a, b);
	free(a);
	free(b);
	state_destroy(st);
	state_destroy(back);
}

Test(tg_state, a_save_replaces_the_file_whole)
{
	struct state *st = sample(), *back;
	struct cause c = {{0}};

	testdir_write(path, "{\"junk\": 1}");
	cr_assert_eq(state_save(st, path, &c), 0, "%s", c.msg);
	st->offset = 5;
	cr_assert_eq(state_save(st, path, &c), 0, "%s", c.msg);
	back = load(0, NULL);
	cr_assert_eq(back->offset, 5);
	state_destroy(st);
	state_destroy(back);
}

Test(tg_state, keys_are_short_unique_and_go_on_after_a_reload)
{
	struct state *st = state_create(), *back;
	struct cause c = {{0}};
	char seen[64][STATE_KEY_MAX + 1];

	cr_assert_not_null(st);
	for (int i = 0; i < 40; i++) {
		struct state_approval *a =
		    state_approval_add(st, 1, "widgets-1", "r", "Bash", false, "t", NULL);

		cr_assert_not_null(a);
		cr_assert_leq(strlen(a->key), STATE_KEY_MAX);
		/* With the action, callback_data stays far below Telegram's 64 bytes. */
		cr_assert_leq(strlen(a->key) + 2, 64);
		snprintf(seen[i], sizeof(seen[i]), "%s", a->key);
		for (int j = 0; j < i; j++)
			cr_assert_str_neq(seen[i], seen[j]);
	}
	cr_assert_eq(state_save(st, path, &c), 0, "%s", c.msg);
	back = load(0, NULL);
	{
		struct state_approval *a =
		    state_approval_add(back, 1, "widgets-1", "r", "Bash", false, "t", NULL);

		for (int j = 0; j < 40; j++)
			cr_assert_str_neq(a->key, seen[j], "a reloaded state hands out new keys");
	}
	cr_assert_not_null(state_approval_by_key(back, seen[3]));
	state_destroy(st);
	state_destroy(back);
}

Test(tg_state, a_wrapped_counter_skips_live_keys)
{
	struct state *st = state_create();
	struct state_approval *a, *b;

	cr_assert_not_null(st);
	a = state_approval_add(st, 1, "widgets-1", "r", "Bash", false, "t", NULL);
	st->next_key = 0; /* as if it wrapped around */
	b = state_approval_add(st, 1, "widgets-1", "r2", "Bash", false, "t", NULL);
	cr_assert_str_neq(a->key, b->key);
	state_destroy(st);
}

Test(tg_state, full_tables_drop_the_oldest)
{
	struct state *st = state_create();
	char first[STATE_KEY_MAX + 1];

	cr_assert_not_null(st);
	for (int i = 0; i < STATE_APPROVALS_MAX + 3; i++) {
		struct state_approval *a =
		    state_approval_add(st, 1, "widgets-1", "r", "Bash", false, "t", NULL);

		if (i == 0)
			snprintf(first, sizeof(first), "%s", a->key);
	}
	cr_assert_eq(st->napprovals, STATE_APPROVALS_MAX);
	cr_assert_null(state_approval_by_key(st, first), "the oldest's buttons no longer work");
	for (int i = 0; i < STATE_FOLLOW_MAX + 2; i++) {
		char id[32];

		snprintf(id, sizeof(id), "widgets-%d", i + 1);
		state_follow(state_chat(st, 1, true), id);
	}
	cr_assert_eq(state_chat(st, 1, false)->nfollows, STATE_FOLLOW_MAX);
	cr_assert(!state_follows(state_chat(st, 1, false), "widgets-1"));
	cr_assert(state_follows(state_chat(st, 1, false), "widgets-18"));
	state_destroy(st);
}

Test(tg_state, unfollowing_a_session_clears_it_everywhere)
{
	struct state *st = sample();

	state_follow(state_chat(st, -100200300, false), "widgets-1");
	state_unfollow_all(st, "widgets-1");
	cr_assert(!state_follows(&st->chats[0], "widgets-1"));
	cr_assert(!state_follows(&st->chats[1], "widgets-1"));
	cr_assert_str_eq(st->chats[0].current, "");
	cr_assert(state_follows(&st->chats[0], "gadgets-2"));
	state_destroy(st);
}

Test(tg_state, refusals_are_counted_once)
{
	struct state *st = state_create();

	cr_assert(state_refuse(st, 9));
	cr_assert(!state_refuse(st, 9));
	cr_assert(state_refused(st, 9));
	cr_assert(!state_refused(st, 10));
	state_destroy(st);
}

Test(tg_state, what_is_not_a_state_file_is_refused)
{
	static const struct {
		const char *text;
		const char *why;
	} bad[] = {
	    {"", "not JSON"},
	    {"[]", "not a JSON object"},
	    {"{\"version\":2,\"offset\":0}", "version"},
	    {"{\"version\":1}", "offset"},
	    {"{\"version\":1,\"offset\":-1,\"eventsId\":0,\"nextKey\":0,\"refused\":[],\"chats\":[]"
	     ","
	     "\"approvals\":[],\"turns\":[]}",
	     "offset"},
	    {"{\"version\":1,\"offset\":0,\"eventsId\":0,\"nextKey\":0,\"refused\":[],\"chats\":[{"
	     "\"chat\":1,\"current\":\"../../etc\",\"follows\":[]}],\"approvals\":[],\"turns\":[]}",
	     "current"},
	    {"{\"version\":1,\"offset\":0,\"eventsId\":0,\"nextKey\":0,\"refused\":[],\"chats\":[],"
	     "\"approvals\":[{\"key\":\"x1\",\"chat\":1,\"message\":1,\"session\":\"a-1\","
	     "\"requestId\":\"r\",\"tool\":\"Bash\",\"terminal\":false,\"text\":\"t\"}],\"turns\":["
	     "]}",
	     "key"},
	    {"{\"version\":1,\"offset\":0,\"eventsId\":0,\"nextKey\":0,\"refused\":[],\"chats\":[],"
	     "\"approvals\":[{\"key\":\"k1\",\"chat\":1,\"message\":1,\"session\":\"a-1\","
	     "\"requestId\":\"r/../x\",\"tool\":\"Bash\",\"terminal\":false,\"text\":\"t\"}],"
	     "\"turns\":[]}",
	     "requestId"},
	    {"{\"version\":1,\"offset\":0,\"offset\":1}", "not JSON"}, /* a key twice */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct state *st;

		testdir_write(path, bad[i].text);
		st = load(-EINVAL, "not a state file");
		cr_assert_null(st, "case %zu", i);
	}
}

Test(tg_state, a_file_over_the_limit_is_refused)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, STATE_FILE_MAX + 1), 0);
	close(fd);
	cr_assert_null(load(-EFBIG, "larger"));
}
