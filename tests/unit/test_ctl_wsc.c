/* agentctl's attach pieces that need no network: AGENTD_URL taken apart for the WebSocket
 * (agentctl/wsc.c) and the bridge's resize frame (agentctl/attach.c); ls's order and ages
 * (agentctl/cmds.c). */
#include "attach.h"
#include "cmds.h"
#include "wsc.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

Test(ctl_wsc, url_split_plain_tls_ipv6_prefix)
{
	struct ctl_url u;
	struct cause c = {{0}};

	cr_assert_eq(ctl_url_split("http://127.0.0.1:8080", &u, &c), 0, "%s", c.msg);
	cr_assert_not(u.tls);
	cr_assert_str_eq(u.host, "127.0.0.1");
	cr_assert_str_eq(u.port, "8080");
	cr_assert_str_eq(u.hostport, "127.0.0.1:8080");
	cr_assert_str_eq(u.prefix, "");
	cr_assert_eq(ctl_url_split("https://box.tail1.ts.net/agentd/", &u, &c), 0, "%s", c.msg);
	cr_assert(u.tls);
	cr_assert_str_eq(u.host, "box.tail1.ts.net");
	cr_assert_str_eq(u.port, "443");
	cr_assert_str_eq(u.hostport, "box.tail1.ts.net");
	cr_assert_str_eq(u.prefix, "/agentd");
	cr_assert_eq(ctl_url_split("http://[::1]:9/", &u, &c), 0, "%s", c.msg);
	cr_assert_str_eq(u.host, "::1");
	cr_assert_str_eq(u.port, "9");
	cr_assert_str_eq(u.hostport, "[::1]:9");
}

Test(ctl_wsc, url_split_refuses)
{
	struct ctl_url u;
	struct cause c = {{0}};

	cr_assert_eq(ctl_url_split("ws://x", &u, &c), -EINVAL);
	cr_assert_eq(ctl_url_split("http://", &u, &c), -EINVAL);
	cr_assert_eq(ctl_url_split("http://x:", &u, &c), -EINVAL);
	cr_assert_eq(ctl_url_split("http://x:0", &u, &c), -EINVAL);
	cr_assert_eq(ctl_url_split("http://x:65536", &u, &c), -EINVAL);
	cr_assert_eq(ctl_url_split("http://x:8a", &u, &c), -EINVAL);
	cr_assert_eq(ctl_url_split("http://[::1", &u, &c), -EINVAL);
	cr_assert_eq(ctl_url_split("http://user:pw@x", &u, &c), -EINVAL);
	cr_assert(strstr(c.msg, "AGENTD_TOKEN") != NULL, "%s", c.msg);
}

Test(ctl_wsc, resize_frame_is_the_bridges)
{
	char f[32];

	cr_assert_eq(ctl_attach_resize_frame(f, sizeof(f), 90, 25), 6);
	cr_assert_eq(memcmp(f,
			    "\x01"
			    "90;25",
			    6),
		     0);
	cr_assert_eq(ctl_attach_resize_frame(f, sizeof(f), 0, 25), 0);
	cr_assert_eq(ctl_attach_resize_frame(f, sizeof(f), 1001, 25), 0);
	cr_assert_eq(ctl_attach_resize_frame(f, 4, 90, 25), 0);
}

Test(ctl_wsc, ls_waiting_first_live_only_without_all)
{
	json_object *all =
	    json_tokener_parse("[{\"id\":\"a-1\",\"state\":\"running\",\"activity\":\"idle\"},"
			       "{\"id\":\"b-1\",\"state\":\"exited\",\"activity\":\"exited\"},"
			       "{\"id\":\"c-1\",\"state\":\"attached\",\"activity\":\"waiting\"},"
			       "{\"id\":\"d-1\",\"state\":\"creating\",\"activity\":\"working\"},"
			       "{\"id\":\"e-1\",\"state\":\"running\",\"activity\":\"waiting\"}]");
	json_object *l = ctl_ls_order(all, false);
	const char *want[] = {"c-1", "e-1", "d-1", "a-1"};

	cr_assert_eq(json_object_array_length(l), 4);
	for (size_t i = 0; i < 4; i++)
		cr_assert_str_eq(json_object_get_string(
				     json_object_object_get(json_object_array_get_idx(l, i), "id")),
				 want[i]);
	json_object_put(l);
	l = ctl_ls_order(all, true);
	cr_assert_eq(json_object_array_length(l), 5);
	cr_assert_str_eq(
	    json_object_get_string(json_object_object_get(json_object_array_get_idx(l, 4), "id")),
	    "b-1");
	json_object_put(l);
	json_object_put(all);
}

Test(ctl_wsc, ages)
{
	char s[16];

	ctl_age(5, s, sizeof(s));
	cr_assert_str_eq(s, "5s");
	ctl_age(125, s, sizeof(s));
	cr_assert_str_eq(s, "2m");
	ctl_age(7200, s, sizeof(s));
	cr_assert_str_eq(s, "2h");
	ctl_age(3 * 86400 + 5, s, sizeof(s));
	cr_assert_str_eq(s, "3d");
	ctl_age(-4, s, sizeof(s));
	cr_assert_str_eq(s, "0s");
}
