/* The bridge's route tables: what each pattern takes, and the paths no service has (404). */
#include "relay.h"
#include "route.h"
#include "terminal.h"

#include <criterion/criterion.h>

static const struct bridge_route *const tables[] = {terminal_routes, relay_routes};

static const struct bridge_route *find(const char *path)
{
	return route_find(tables, sizeof(tables) / sizeof(tables[0]), path);
}

Test(route, star_is_one_non_empty_segment)
{
	cr_assert(route_match("/sessions/*/terminal", "/sessions/a/terminal"));
	cr_assert(!route_match("/sessions/*/terminal", "/sessions//terminal"));
	cr_assert(!route_match("/sessions/*/terminal", "/sessions/a/b/terminal"));
	cr_assert(!route_match("/sessions/*/terminal", "/sessions/a/terminal/"));
	cr_assert(!route_match("/sessions/*/terminal", "/sessions/a/terminalx"));
	cr_assert(!route_match("/sessions/*/terminal", "/sessions/a"));
	cr_assert(route_match("/a/*/b/*", "/a/x/b/y"));
	cr_assert(!route_match("/a/*/b/*", "/a/x/b/"));
	cr_assert(!route_match("/a/*/b/*", "/a/x/b/y/z"));
}

Test(route, every_service_path_finds_its_service)
{
	cr_assert(find("/sessions/s1/terminal")->service == &terminal_service);
	cr_assert(find("/sessions/s1/prompt")->route == RELAY_PROMPT);
	cr_assert(find("/sessions/s1/events")->route == RELAY_EVENTS);
	cr_assert(find("/sessions/s1/interrupt")->route == RELAY_INTERRUPT);
	cr_assert(find("/sessions/s1/stream")->route == RELAY_STREAM);
	cr_assert(find("/sessions/s1/permissions/r-1")->route == RELAY_PERMISSION);
	cr_assert(find("/sessions/s1/permissions/r-1")->service == &relay_service);
}

Test(route, the_table_agrees_with_relay_route)
{
	static const char *const paths[] = {
	    "/sessions/s1/prompt",
	    "/sessions/s1/permissions/x",
	    "/sessions/s1/permissions/",
	    "/sessions//prompt",
	    "/sessions/s1/permissions/x/y",
	    "/sessions/s1/other",
	    "/sessions/s1/events/",
	    "/sessions/s1",
	    "/x/s1/prompt",
	    "/sessions/a/b/stream",
	};

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		const struct bridge_route *r = find(paths[i]);
		enum relay_kind kind;
		int claimed = relay_route(paths[i], &kind);

		cr_assert((r != NULL && r->service == &relay_service) == (claimed == 1), "%s",
			  paths[i]);
		if (claimed == 1)
			cr_assert(r->route == (int)kind, "%s", paths[i]);
	}
}

Test(route, unknown_paths_find_nothing)
{
	cr_assert_null(find("/"));
	cr_assert_null(find("/sessions"));
	cr_assert_null(find("/sessions/"));
	cr_assert_null(find("/sessions//terminal"));
	cr_assert_null(find("/sessions/a/b/terminal"));
	cr_assert_null(find("/terminal"));
	cr_assert_null(find(""));
}
