/*
 * ratelimit (agentd-telegram): one call at a time per chat, calls to a chat at least
 * RATELIMIT_CHAT_GAP_MS apart and edits RATELIMIT_EDIT_GAP_MS apart, counted from the end of the
 * previous call; at most RATELIMIT_GLOBAL_MAX calls in flight or answered within a second; a
 * 429's retry_after holds back the chat, or everyone.
 */
#include "ratelimit.h"

#include <criterion/criterion.h>

static struct ratelimit *rl;

static void setup(void)
{
	rl = ratelimit_create();
	cr_assert_not_null(rl);
}

static void teardown(void)
{
	ratelimit_destroy(rl);
}

TestSuite(tg_ratelimit, .init = setup, .fini = teardown);

/* A call of kind to chat from start to end (asserting it may start). */
static void call(int64_t chat, enum ratelimit_kind kind, int64_t start, int64_t end)
{
	cr_assert_eq(ratelimit_wait(rl, chat, kind, start), 0, "a call to %lld may start at %lld",
		     (long long)chat, (long long)start);
	ratelimit_begin(rl, chat, kind, start);
	ratelimit_end(rl, chat, kind, end);
}

Test(tg_ratelimit, a_new_chat_may_go_at_once)
{
	cr_assert_eq(ratelimit_wait(rl, 7, RATELIMIT_SEND, 1000), 0);
	cr_assert_eq(ratelimit_wait(rl, 7, RATELIMIT_EDIT, 1000), 0);
}

Test(tg_ratelimit, one_call_at_a_time_per_chat)
{
	ratelimit_begin(rl, 7, RATELIMIT_SEND, 1000);
	cr_assert_gt(ratelimit_wait(rl, 7, RATELIMIT_SEND, 5000), 0, "busy while in flight");
	cr_assert_eq(ratelimit_wait(rl, 8, RATELIMIT_SEND, 1000), 0, "another chat is not");
}

Test(tg_ratelimit, the_chat_gap_counts_from_the_answer)
{
	call(7, RATELIMIT_SEND, 1000, 1400); /* answered 400 ms later */
	cr_assert_eq(ratelimit_wait(rl, 7, RATELIMIT_SEND, 1400), RATELIMIT_CHAT_GAP_MS);
	cr_assert_eq(ratelimit_wait(rl, 7, RATELIMIT_SEND, 1400 + RATELIMIT_CHAT_GAP_MS - 1), 1);
	cr_assert_eq(ratelimit_wait(rl, 7, RATELIMIT_SEND, 1400 + RATELIMIT_CHAT_GAP_MS), 0);
}

Test(tg_ratelimit, edits_keep_their_own_longer_gap)
{
	call(7, RATELIMIT_EDIT, 1000, 1100);
	cr_assert_eq(ratelimit_wait(rl, 7, RATELIMIT_EDIT, 1100 + RATELIMIT_CHAT_GAP_MS),
		     RATELIMIT_EDIT_GAP_MS - RATELIMIT_CHAT_GAP_MS);
	cr_assert_eq(ratelimit_wait(rl, 7, RATELIMIT_SEND, 1100 + RATELIMIT_CHAT_GAP_MS), 0,
		     "a send only waits for the chat's gap");
	cr_assert_eq(ratelimit_wait(rl, 7, RATELIMIT_EDIT, 1100 + RATELIMIT_EDIT_GAP_MS), 0);
}

Test(tg_ratelimit, never_more_than_one_edit_per_gap_over_a_long_run)
{
	int64_t now = 0, last_start = -100000;
	int edits = 0;

	/* A chat that always wants to edit, ticked every 10 ms with 0..90 ms answers. */
	for (int i = 0; i < 20000; i++, now += 10) {
		if (ratelimit_wait(rl, 3, RATELIMIT_EDIT, now) != 0)
			continue;
		cr_assert_geq(now - last_start, RATELIMIT_EDIT_GAP_MS, "edit %d at %lld", edits,
			      (long long)now);
		ratelimit_begin(rl, 3, RATELIMIT_EDIT, now);
		ratelimit_end(rl, 3, RATELIMIT_EDIT, now + (i % 10) * 10);
		last_start = now;
		edits++;
	}
	cr_assert_gt(edits, 100);
}

Test(tg_ratelimit, the_overall_limit_counts_calls_in_flight_and_answered_within_a_second)
{
	int64_t t = 10000;
	int chat;

	for (chat = 1; chat <= RATELIMIT_GLOBAL_MAX - 5; chat++)
		call(chat, RATELIMIT_SEND, t, t + 10);
	for (; chat <= RATELIMIT_GLOBAL_MAX; chat++) {
		cr_assert_eq(ratelimit_wait(rl, chat, RATELIMIT_SEND, t + 20), 0);
		ratelimit_begin(rl, chat, RATELIMIT_SEND, t + 20); /* still in flight */
	}
	cr_assert_gt(ratelimit_wait(rl, 999, RATELIMIT_SEND, t + 20), 0, "the next must wait");
	cr_assert_gt(ratelimit_wait(rl, 0, RATELIMIT_GLOBAL, t + 20), 0, "answers too");
	/* A second after the answered ones, they no longer count; the five in flight do. */
	cr_assert_eq(ratelimit_wait(rl, 999, RATELIMIT_SEND, t + 10 + RATELIMIT_WINDOW_MS + 1), 0);
}

Test(tg_ratelimit, never_more_than_the_overall_limit_in_any_second)
{
	static int64_t starts[200000];
	int64_t now = 0;
	size_t n = 0;

	/* 100 chats that always want to send, answers after 0..200 ms. */
	for (int i = 0; i < 20000; i++, now += 5) {
		for (int64_t chat = 1; chat <= 100; chat++) {
			if (ratelimit_wait(rl, chat, RATELIMIT_SEND, now) != 0)
				continue;
			ratelimit_begin(rl, chat, RATELIMIT_SEND, now);
			ratelimit_end(rl, chat, RATELIMIT_SEND, now + (chat * 7 % 40) * 5);
			starts[n++] = now;
			cr_assert_lt(n, sizeof(starts) / sizeof(starts[0]));
		}
	}
	/* Any window of a second holds at most the limit of starts (answers come later still). */
	for (size_t i = 0, j = 0; i < n; i++) {
		while (starts[i] - starts[j] >= RATELIMIT_WINDOW_MS)
			j++;
		cr_assert_leq(i - j + 1, RATELIMIT_GLOBAL_MAX, "%zu starts within a second at %lld",
			      i - j + 1, (long long)starts[i]);
	}
	cr_assert_gt(n, 1000);
}

Test(tg_ratelimit, retry_after_holds_the_chat_or_everyone)
{
	call(7, RATELIMIT_SEND, 0, 10);
	ratelimit_pause(rl, 7, 5000);
	cr_assert_eq(ratelimit_wait(rl, 7, RATELIMIT_SEND, 2000), 3000);
	cr_assert_eq(ratelimit_wait(rl, 8, RATELIMIT_SEND, 2000), 0, "other chats go on");
	ratelimit_pause(rl, 0, 9000);
	cr_assert_eq(ratelimit_wait(rl, 8, RATELIMIT_SEND, 2000), 7000);
	cr_assert_eq(ratelimit_wait(rl, 0, RATELIMIT_GLOBAL, 2000), 7000);
	cr_assert_eq(ratelimit_wait(rl, 7, RATELIMIT_SEND, 9000), 0);
}

Test(tg_ratelimit, a_paused_chat_not_seen_before_is_remembered)
{
	ratelimit_pause(rl, 42, 3000);
	cr_assert_eq(ratelimit_wait(rl, 42, RATELIMIT_SEND, 1000), 2000);
}

Test(tg_ratelimit, more_chats_than_slots_reuse_idle_ones_and_keep_paced_ones)
{
	int64_t t = 0;
	int64_t chat;

	/* Twenty chats at a time (under the overall limit), more chats than the table holds. */
	for (chat = 1; chat <= RATELIMIT_CHATS_MAX + 50; chat++) {
		t = (chat / 20) * 1500;
		call(chat, RATELIMIT_SEND, t, t + 10);
	}
	chat--;
	cr_assert_gt(ratelimit_wait(rl, chat, RATELIMIT_SEND, t + 20), 0,
		     "the last chat is still paced");
	cr_assert_eq(ratelimit_wait(rl, 1, RATELIMIT_SEND, t + 20), 0,
		     "the first, long idle, may go (its slot was reused)");
}
