/*
 * roster: record accounting against a real store in a temp dir, with the writes running in
 * libuv's thread pool. The record's clients and running ⇄ attached follow attach and detach;
 * bursts coalesce to the final count; creating/failed/stopping are left alone; lastActivity is
 * written; a record deleted meanwhile is not recreated; roster_reset clears what a killed bridge
 * left. The loop closes with no handle left.
 */
#include "roster.h"

#include "testdir.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char rundir[64];
static struct store st;
static uv_loop_t loop;
static struct roster *roster;

static void setup(void)
{
	struct cause c = {{0}};

	testdir_make(rundir, sizeof(rundir), "/tmp/agentd-roster-XXXXXX");
	cr_assert_eq(store_init(&st, rundir, rundir, &c), 0, "store_init: %s", c.msg);
	cr_assert_eq(uv_loop_init(&loop), 0);
	roster = roster_create(&loop, &st);
	cr_assert_not_null(roster);
}

static void teardown(void)
{
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_not(roster_busy(roster));
	roster_destroy(roster);
	cr_assert_eq(uv_loop_close(&loop), 0);
	testdir_remove(rundir);
}

TestSuite(roster, .init = setup, .fini = teardown);

static void put(const char *name, long issue, enum session_state state, int clients)
{
	struct cause c = {{0}};
	struct session s;

	cr_assert_eq(session_init(&s, "/code", "octo", name, issue), 0);
	s.state = state;
	s.clients = clients;
	s.last_activity = 1000;
	cr_assert_eq(store_write(&st, &s, &c), 0, "%s", c.msg);
}

static struct session get(const char *id)
{
	struct cause c = {{0}};
	struct session s;

	cr_assert_eq(store_read(&st, id, &s, &c), 0, "%s", c.msg);
	return s;
}

/* Runs the loop until every queued write finished. */
static void settle(void)
{
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_not(roster_busy(roster));
}

Test(roster, attach_and_detach_follow_the_count)
{
	struct roster_entry *a, *b;
	struct session s;

	put("widgets", 1, SESSION_RUNNING, 0);
	a = roster_attach(roster, "widgets-1");
	cr_assert_not_null(a);
	settle();
	s = get("widgets-1");
	cr_assert_eq(s.clients, 1);
	cr_assert_eq(s.state, SESSION_ATTACHED);
	b = roster_attach(roster, "widgets-1");
	settle();
	cr_assert_eq(get("widgets-1").clients, 2);
	cr_assert_eq(roster_clients(roster, "widgets-1"), 2);
	roster_detach(a);
	settle();
	s = get("widgets-1");
	cr_assert_eq(s.clients, 1);
	cr_assert_eq(s.state, SESSION_ATTACHED);
	roster_detach(b);
	settle();
	s = get("widgets-1");
	cr_assert_eq(s.clients, 0);
	cr_assert_eq(s.state, SESSION_RUNNING);
	cr_assert_eq(roster_clients(roster, "widgets-1"), 0);
}

Test(roster, bursts_coalesce_to_the_final_count)
{
	struct roster_entry *e[50];
	struct session s;

	put("widgets", 2, SESSION_RUNNING, 0);
	for (int i = 0; i < 50; i++)
		e[i] = roster_attach(roster, "widgets-2");
	for (int i = 0; i < 49; i++)
		roster_detach(e[i]);
	settle();
	s = get("widgets-2");
	cr_assert_eq(s.clients, 1);
	cr_assert_eq(s.state, SESSION_ATTACHED);
	roster_detach(e[49]);
	settle();
	s = get("widgets-2");
	cr_assert_eq(s.clients, 0);
	cr_assert_eq(s.state, SESSION_RUNNING);
}

Test(roster, other_states_are_left_alone)
{
	static const enum session_state states[] = {SESSION_CREATING, SESSION_FAILED,
						    SESSION_STOPPING};
	char id[32];

	for (int i = 0; i < 3; i++) {
		struct roster_entry *e;

		put("widgets", 10 + i, states[i], 0);
		snprintf(id, sizeof(id), "widgets-%d", 10 + i);
		e = roster_attach(roster, id);
		settle();
		cr_assert_eq(get(id).state, states[i]);
		cr_assert_eq(get(id).clients, 1);
		roster_detach(e);
		settle();
		cr_assert_eq(get(id).state, states[i]);
		cr_assert_eq(get(id).clients, 0);
	}
}

Test(roster, activity_is_written)
{
	struct roster_entry *e;
	int64_t now = (int64_t)time(NULL);

	put("widgets", 3, SESSION_RUNNING, 0);
	e = roster_attach(roster, "widgets-3");
	settle();
	roster_activity(e, now);
	settle();
	cr_assert_eq(get("widgets-3").last_activity, now);
	/* Within the interval nothing more is written... */
	roster_activity(e, now + 1);
	settle();
	cr_assert_eq(get("widgets-3").last_activity, now);
	/* ...but the next count change carries the latest time. */
	roster_detach(e);
	settle();
	cr_assert_eq(get("widgets-3").last_activity, now + 1);
}

Test(roster, deleted_record_is_not_recreated)
{
	struct roster_entry *e;

	put("widgets", 4, SESSION_RUNNING, 0);
	e = roster_attach(roster, "widgets-4");
	settle();
	cr_assert_eq(store_remove(&st, "widgets-4"), 0);
	roster_detach(e);
	settle();
	{
		struct cause c = {{0}};
		struct session s;

		cr_assert_eq(store_read(&st, "widgets-4", &s, &c), -ENOENT);
	}
}

Test(roster, reset_clears_what_a_dead_bridge_left)
{
	put("widgets", 5, SESSION_ATTACHED, 2);
	put("widgets", 6, SESSION_RUNNING, 0);
	put("widgets", 7, SESSION_CREATING, 1);
	cr_assert_eq(roster_reset(&st), 0);
	cr_assert_eq(get("widgets-5").clients, 0);
	cr_assert_eq(get("widgets-5").state, SESSION_RUNNING);
	cr_assert_eq(get("widgets-6").state, SESSION_RUNNING);
	cr_assert_eq(get("widgets-7").clients, 0);
	cr_assert_eq(get("widgets-7").state, SESSION_CREATING);
}
