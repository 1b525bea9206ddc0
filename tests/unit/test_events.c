/* What GET /events calls a change of a session (ptybridge/events.h): every member but the two
 * that move while a terminal shows output. */
#include "events.h"

#include <criterion/criterion.h>

static json_object *obj(const char *text)
{
	json_object *o = json_tokener_parse(text);

	cr_assert_not_null(o, "%s", text);
	return o;
}

static bool changed(const char *a, const char *b)
{
	json_object *x = obj(a), *y = obj(b);
	bool r = events_session_changed(x, y);

	json_object_put(x);
	json_object_put(y);
	return r;
}

Test(events, the_same_object_is_no_change)
{
	cr_assert_not(changed("{\"id\":\"a-1\",\"state\":\"running\",\"clients\":0}",
			      "{\"clients\":0,\"id\":\"a-1\",\"state\":\"running\"}"));
}

Test(events, updated_at_and_last_activity_are_ignored)
{
	cr_assert_not(changed("{\"id\":\"a-1\",\"updatedAt\":\"2026-01-01T00:00:00Z\","
			      "\"lastActivity\":\"2026-01-01T00:00:00Z\"}",
			      "{\"id\":\"a-1\",\"updatedAt\":\"2026-01-01T00:00:05Z\","
			      "\"lastActivity\":\"2026-01-01T00:00:05Z\"}"));
	cr_assert_not(changed("{\"id\":\"a-1\"}", "{\"id\":\"a-1\",\"lastActivity\":\"x\"}"),
		      "an ignored member that appears is no change either");
}

Test(events, any_other_member_is_a_change)
{
	cr_assert(changed("{\"id\":\"a-1\",\"state\":\"running\"}",
			  "{\"id\":\"a-1\",\"state\":\"attached\"}"));
	cr_assert(changed("{\"id\":\"a-1\",\"clients\":0}", "{\"id\":\"a-1\",\"clients\":1}"));
	cr_assert(changed("{\"id\":\"a-1\"}", "{\"id\":\"a-1\",\"activity\":\"working\"}"),
		  "a member that appears");
	cr_assert(changed("{\"id\":\"a-1\",\"error\":\"x\"}", "{\"id\":\"a-1\"}"),
		  "a member that goes");
	cr_assert(changed("{\"repo\":{\"owner\":\"a\",\"name\":\"b\"}}",
			  "{\"repo\":{\"owner\":\"a\",\"name\":\"c\"}}"),
		  "inside a nested object");
	cr_assert(changed("{\"pending\":[{\"requestId\":\"r1\"}]}", "{\"pending\":[]}"));
}

Test(events, no_previous_object_is_a_change)
{
	json_object *o = obj("{\"id\":\"a-1\"}");

	cr_assert(events_session_changed(NULL, o));
	cr_assert(events_session_changed(o, NULL));
	json_object_put(o);
}
