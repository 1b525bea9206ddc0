/*
 * render (agentd-telegram): a turn's events become readable text (the assistant's text as
 * paragraphs, tool uses in one short line, failed tools, the result with turns, cost and time,
 * nothing for the events a reader does not need); a permission message names the session, the
 * tool and what it runs, with a link for a terminal session; the decision line says who decided
 * and how; /sessions lists those waiting first.
 */
#include "render.h"
#include "split.h"

#include <criterion/criterion.h>

#include <string.h>

static json_object *J(const char *text)
{
	json_object *o = json_tokener_parse(text);

	cr_assert_not_null(o, "test JSON: %s", text);
	return o;
}

static void add(struct buf *b, const char *name, const char *data)
{
	json_object *o = J(data);

	cr_assert_eq(render_turn_event(b, name, o), 0);
	json_object_put(o);
}

Test(tg_render, a_turn_reads_as_text)
{
	struct buf b;

	buf_init(&b, 0);
	add(&b, "system", "{\"type\":\"system\",\"subtype\":\"init\"}");
	add(&b, "assistant",
	    "{\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"I will run it.\\n\"},"
	    "{\"type\":\"tool_use\",\"name\":\"Bash\",\"input\":{\"command\":\"touch a\\nrm b\","
	    "\"description\":\"make a\"}}]}}");
	add(&b, "permission", "{\"toolName\":\"Bash\",\"requestId\":\"r1\"}");
	add(&b, "user",
	    "{\"message\":{\"content\":[{\"type\":\"tool_result\",\"is_error\":true,"
	    "\"content\":\"permission denied\\nmore\"}]}}");
	add(&b, "user",
	    "{\"message\":{\"content\":[{\"type\":\"tool_result\",\"content\":\"ok\"}]}}");
	add(&b, "stream_event", "{\"event\":{}}");
	add(&b, "assistant",
	    "{\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"Done.\"}]}}");
	add(&b, "result",
	    "{\"subtype\":\"success\",\"is_error\":false,\"num_turns\":2,"
	    "\"total_cost_usd\":0.01234,\"duration_ms\":4200,\"result\":\"Done.\"}");
	cr_assert_str_eq(buf_str(&b), "I will run it.\n"
				      "🔧 Bash: touch a…\n"
				      "⏸ Bash waits for approval\n"
				      "⚠️ permission denied…\n"
				      "\n"
				      "Done.\n"
				      "\n"
				      "✅ done · 2 turns · $0.0123 · 4.2 s");
	cr_assert(render_turn_ends("result"));
	cr_assert(render_turn_ends("error"));
	cr_assert(!render_turn_ends("assistant"));
	buf_free(&b);
}

Test(tg_render, a_failed_turn_says_why)
{
	struct buf b;

	buf_init(&b, 0);
	add(&b, "result",
	    "{\"subtype\":\"error_during_execution\",\"is_error\":true,\"num_turns\":1,"
	    "\"errors\":[\"boom\"]}");
	cr_assert_str_eq(buf_str(&b), "❌ error_during_execution · 1 turn\nboom");
	buf_reset(&b);
	add(&b, "error", "{\"error\":\"the agent host exited\",\"code\":\"host_exited\"}");
	cr_assert_str_eq(buf_str(&b), "⚠️ the agent host exited");
	buf_free(&b);
}

Test(tg_render, a_long_tool_line_is_cut)
{
	char out[1024], cmd[2000];
	json_object *in;

	memset(cmd, 'x', sizeof(cmd) - 1);
	cmd[sizeof(cmd) - 1] = '\0';
	in = json_object_new_object();
	json_object_object_add(in, "command", json_object_new_string(cmd));
	render_tool(out, sizeof(out), "Bash", in);
	cr_assert_leq(split_units(out, strlen(out)), RENDER_TOOL_MAX);
	cr_assert_str_eq(out + strlen(out) - strlen("…"), "…");
	json_object_put(in);
	render_tool(out, sizeof(out), "TodoWrite", NULL);
	cr_assert_str_eq(out, "TodoWrite");
}

Test(tg_render, permission_messages)
{
	struct buf b;
	json_object *d = J("{\"requestId\":\"r1\",\"toolName\":\"Bash\",\"input\":{\"command\":"
			   "\"touch f\"},\"description\":\"make f\"}");

	buf_init(&b, 0);
	cr_assert_eq(render_permission(&b, "widgets-1", d, NULL), 0);
	cr_assert_str_eq(buf_str(&b), "🔐 widgets-1 asks to use Bash\ntouch f\n(make f)");
	buf_reset(&b);
	cr_assert_eq(render_permission(&b, "widgets-1", d, "https://box:8443"), 0);
	cr_assert_str_eq(buf_str(&b), "🔐 widgets-1 asks to use Bash\ntouch f\n(make f)\n"
				      "In the terminal: https://box:8443/#/s/widgets-1");
	json_object_put(d);
	buf_free(&b);
}

/* The common shape of another agent (API.md, "Events of every agent"): the tool is named by the
 * call's title, often the command itself, and the input is the agent's raw one, whose command may
 * be a list of words. */
Test(tg_render, another_agents_tool_reads_once)
{
	struct buf b;
	char out[1024];
	json_object *d = J("{\"requestId\":\"acp-1-1\",\"toolName\":\"touch f\",\"description\":"
			   "\"touch f\",\"input\":{\"command\":[\"/bin/bash\",\"-lc\",\"touch f\"],"
			   "\"cwd\":\"/w\"},\"suggestions\":null}");
	json_object *argv = J("{\"command\":[\"ls\",\"-la\",\"x y\"]}");

	buf_init(&b, 0);
	cr_assert_eq(render_permission(&b, "widgets-1", d, NULL), 0);
	cr_assert_str_eq(buf_str(&b), "🔐 widgets-1 asks to run a command\ntouch f");
	buf_reset(&b);
	json_object_object_add(d, "toolName", json_object_new_string("Shell"));
	cr_assert_eq(render_permission(&b, "widgets-1", d, NULL), 0);
	cr_assert_str_eq(buf_str(&b), "🔐 widgets-1 asks to use Shell\ntouch f");
	buf_reset(&b);
	json_object_object_add(d, "input", json_object_get(argv));
	cr_assert_eq(render_permission(&b, "widgets-1", d, NULL), 0);
	cr_assert_str_eq(buf_str(&b), "🔐 widgets-1 asks to use Shell\nls -la x y\n(touch f)");
	{
		json_object *sh = J("{\"command\":[\"sh\",\"-c\",\"touch f\"]}");

		render_tool(out, sizeof(out), "touch f", sh);
		cr_assert_str_eq(out, "touch f");
		json_object_put(sh);
	}
	render_tool(out, sizeof(out), "Shell", argv);
	cr_assert_str_eq(out, "Shell: ls -la x y");
	json_object_put(argv);
	json_object_put(d);
	buf_free(&b);
}

/* An ACP agent's request says its kind: worded by it, the title (its own text) said once. */
Test(tg_render, another_agents_request_worded_by_its_kind)
{
	struct buf b;
	json_object *d = J("{\"requestId\":\"acp-1-1\",\"toolName\":\"touch /x\",\"kind\":"
			   "\"execute\",\"description\":\"touch /x\",\"input\":{}}");

	buf_init(&b, 0);
	cr_assert_eq(render_permission(&b, "widgets-1", d, NULL), 0);
	cr_assert_str_eq(buf_str(&b), "🔐 widgets-1 asks to run: touch /x");
	buf_reset(&b);
	json_object_object_add(d, "kind", json_object_new_string("edit"));
	json_object_object_add(d, "toolName", json_object_new_string("WriteFile notes.md"));
	json_object_object_add(d, "description", json_object_new_string("WriteFile notes.md"));
	cr_assert_eq(render_permission(&b, "widgets-1", d, NULL), 0);
	cr_assert_str_eq(buf_str(&b), "🔐 widgets-1 asks to edit: WriteFile notes.md");
	buf_reset(&b);
	/* A kind that says nothing: as before. */
	json_object_object_add(d, "kind", json_object_new_string("other"));
	cr_assert_eq(render_permission(&b, "widgets-1", d, NULL), 0);
	cr_assert_str_eq(buf_str(&b), "🔐 widgets-1 asks to use WriteFile notes.md");
	json_object_put(d);
	buf_free(&b);
}

/* Whether s is head, then only "€" and spaces, then "…". */
static bool whole_euros(const char *s, const char *head)
{
	size_t n = strlen(s), h = strlen(head), e = strlen("…");

	if (n < h + e || strncmp(s, head, h) != 0 || strcmp(s + n - e, "…") != 0)
		return false;
	for (size_t i = h; i < n - e;) {
		if (s[i] == ' ')
			i++;
		else if (strncmp(s + i, "€", strlen("€")) == 0)
			i += strlen("€");
		else
			return false;
	}
	return true;
}

Test(tg_render, a_long_argv_is_cut_between_characters)
{
	char out[1024], word[3000] = "";
	json_object *in = J("{\"command\":[\"echo\"]}"), *cmd;
	struct buf b;

	/* Three bytes a character, past the permission's buffer (4 bytes a UTF-16 unit). */
	for (size_t i = 0; i + 3 < sizeof(word); i += 3)
		strcat(word, "€");
	json_object_object_get_ex(in, "command", &cmd);
	json_object_array_add(cmd, json_object_new_string(word));
	json_object_array_add(cmd, json_object_new_string(word));
	render_tool(out, sizeof(out), "Shell", in);
	cr_assert(split_units(out, strlen(out)) <= RENDER_TOOL_MAX);
	buf_init(&b, 0);
	{
		json_object *d = json_object_new_object();

		json_object_object_add(d, "toolName", json_object_new_string("Shell"));
		json_object_object_add(d, "input", json_object_get(in));
		cr_assert_eq(render_permission(&b, "w-1", d, NULL), 0);
		json_object_put(d);
	}
	/* Whole characters only (Telegram refuses a text that is not UTF-8). */
	cr_assert(whole_euros(out, "Shell: echo "), "%s", out);
	cr_assert(whole_euros(buf_str(&b), "🔐 w-1 asks to use Shell\necho "), "%s", buf_str(&b));
	buf_free(&b);
	json_object_put(in);
}

Test(tg_render, decisions)
{
	char out[RENDER_DECISION_MAX];

	render_decision(out, sizeof(out), "allow", NULL, "Alice", false);
	cr_assert_str_eq(out, "✅ Allowed by Alice");
	render_decision(out, sizeof(out), "allow", NULL, "Alice", true);
	cr_assert_str_eq(out, "✅ Allowed for this session by Alice");
	render_decision(out, sizeof(out), "deny", NULL, "Bob", false);
	cr_assert_str_eq(out, "⛔ Denied by Bob");
	render_decision(out, sizeof(out), "allow", "client", NULL, false);
	cr_assert_str_eq(out, "✅ Allowed by another client");
	render_decision(out, sizeof(out), "deny", "telegram:1001", NULL, false);
	cr_assert_str_eq(out, "⛔ Denied by Telegram user 1001");
	render_decision(out, sizeof(out), "deny", "timeout", NULL, false);
	cr_assert_str_eq(out, "⌛ Denied: nobody answered in time");
	render_decision(out, sizeof(out), NULL, "terminal", NULL, false);
	cr_assert_str_eq(out, "⌨️ Answered in the terminal");
	render_decision(out, sizeof(out), "withdrawn", "exit", NULL, false);
	cr_assert_str_eq(out, "↩️ Withdrawn (exit)");
}

Test(tg_render, sessions_waiting_first)
{
	struct buf b;
	json_object *list = J("[{\"id\":\"a-1\",\"activity\":\"idle\",\"mode\":\"structured\","
			      "\"state\":\"running\"},"
			      "{\"id\":\"b-2\",\"activity\":\"waiting\",\"mode\":\"terminal\","
			      "\"state\":\"attached\",\"pending\":[{\"requestId\":\"r\","
			      "\"toolName\":\"Bash\",\"description\":\"rm -rf build\"}]},"
			      "{\"id\":\"c-3\",\"activity\":\"exited\",\"mode\":\"terminal\","
			      "\"state\":\"failed\"}]");

	buf_init(&b, 0);
	cr_assert_eq(render_sessions(&b, list, "a-1"), 0);
	cr_assert_str_eq(buf_str(&b), "⏳ b-2 · waiting · terminal\n"
				      "    waits for Bash: rm -rf build\n"
				      "▶ 💤 a-1 · idle · structured\n"
				      "⏹ c-3 · exited · terminal (failed)\n");
	json_object_put(list);
	list = J("[]");
	buf_reset(&b);
	cr_assert_eq(render_sessions(&b, list, NULL), 0);
	cr_assert_not_null(strstr(buf_str(&b), "No sessions"));
	json_object_put(list);
	buf_free(&b);
}

Test(tg_render, sessions_say_their_agent)
{
	struct buf b;
	json_object *list =
	    J("[{\"id\":\"a-1\",\"activity\":\"waiting\",\"mode\":\"structured\","
	      "\"agent\":\"codex\",\"state\":\"running\",\"pending\":[{\"requestId\":"
	      "\"acp-1-1\",\"toolName\":\"touch f\",\"description\":\"touch f\"}]},"
	      "{\"id\":\"b-2\",\"activity\":\"idle\",\"mode\":\"terminal\","
	      "\"agent\":\"claude\",\"state\":\"running\"}]");

	buf_init(&b, 0);
	cr_assert_eq(render_sessions(&b, list, NULL), 0);
	cr_assert_str_eq(buf_str(&b), "⏳ a-1 · waiting · structured · codex\n"
				      "    waits for touch f\n"
				      "💤 b-2 · idle · terminal · claude\n");
	json_object_put(list);
	buf_free(&b);
}

Test(tg_render, sessions_say_their_cost_and_budget)
{
	struct buf b;
	json_object *list =
	    J("[{\"id\":\"a-1\",\"activity\":\"idle\",\"mode\":\"structured\","
	      "\"state\":\"running\",\"cost\":{\"usd\":0.42},\"budgetUsd\":1},"
	      "{\"id\":\"b-2\",\"activity\":\"idle\",\"mode\":\"structured\","
	      "\"state\":\"running\",\"cost\":{\"usd\":0.0002},\"budgetUsd\":0.00015,"
	      "\"overBudget\":true},"
	      "{\"id\":\"c-3\",\"activity\":\"idle\",\"mode\":\"terminal\","
	      "\"state\":\"running\",\"cost\":{\"usd\":3.5}},"
	      "{\"id\":\"d-4\",\"activity\":\"idle\",\"mode\":\"terminal\","
	      "\"state\":\"running\",\"budgetUsd\":2.5},"
	      "{\"id\":\"e-5\",\"activity\":\"idle\",\"mode\":\"terminal\","
	      "\"state\":\"running\",\"budgetUsd\":0.00005}]");

	buf_init(&b, 0);
	cr_assert_eq(render_sessions(&b, list, NULL), 0);
	cr_assert_str_eq(buf_str(&b), "💤 a-1 · idle · structured · $0.42 / $1.00\n"
				      "💤 b-2 · idle · structured · <$0.01 / $0.00015 over budget\n"
				      "💤 c-3 · idle · terminal · $3.50\n"
				      "💤 d-4 · idle · terminal · $0 / $2.50\n"
				      "💤 e-5 · idle · terminal · $0 / $0.000050\n");
	json_object_put(list);
	buf_free(&b);
}

Test(tg_render, pr_events)
{
	char out[512];
	json_object *o;

	o = J("{\"session\":\"widgets-7\",\"repo\":{\"owner\":\"acme\",\"name\":\"widgets\"},"
	      "\"pr\":{\"number\":12,\"url\":\"https://github.com/acme/widgets/pull/12\","
	      "\"state\":\"open\",\"checks\":{\"state\":\"none\",\"failing\":[]}}}");
	cr_assert(render_pr_event(out, sizeof(out), o));
	cr_assert_str_eq(out, "Pull request acme/widgets#12 opened for widgets-7: "
			      "https://github.com/acme/widgets/pull/12");
	json_object_put(o);

	o = J("{\"session\":\"widgets-7\",\"repo\":{\"owner\":\"acme\",\"name\":\"widgets\"},"
	      "\"pr\":{\"number\":12,\"url\":\"u\",\"state\":\"open\","
	      "\"checks\":{\"state\":\"failure\",\"failing\":[\"build\",\"lint\"]}},"
	      "\"previous\":{\"number\":12,\"url\":\"u\",\"state\":\"open\","
	      "\"checks\":{\"state\":\"pending\",\"failing\":[]}}}");
	cr_assert(render_pr_event(out, sizeof(out), o));
	cr_assert_str_eq(out, "CI failed on acme/widgets#12 (widgets-7): build, lint\nu");
	json_object_put(o);

	o = J("{\"session\":\"widgets-7\",\"repo\":{\"owner\":\"acme\",\"name\":\"widgets\"},"
	      "\"pr\":{\"number\":12,\"url\":\"u\",\"state\":\"open\","
	      "\"checks\":{\"state\":\"pending\",\"failing\":[]}},"
	      "\"previous\":{\"number\":12,\"url\":\"u\",\"state\":\"open\","
	      "\"checks\":{\"state\":\"none\",\"failing\":[]}}}");
	cr_assert(!render_pr_event(out, sizeof(out), o), "checks that start running: no message");
	json_object_put(o);

	o = J("{\"session\":\"widgets-7\",\"repo\":{\"owner\":\"acme\",\"name\":\"widgets\"},"
	      "\"pr\":{\"number\":12,\"url\":\"u\",\"state\":\"open\","
	      "\"checks\":{\"state\":\"success\",\"failing\":[]}},"
	      "\"previous\":{\"number\":12,\"url\":\"u\",\"state\":\"open\","
	      "\"checks\":{\"state\":\"pending\",\"failing\":[]}}}");
	cr_assert(render_pr_event(out, sizeof(out), o));
	cr_assert_str_eq(out, "CI passed on acme/widgets#12 (widgets-7).\nu");
	json_object_put(o);

	o = J("{\"session\":\"widgets-7\",\"repo\":{\"owner\":\"acme\",\"name\":\"widgets\"},"
	      "\"pr\":{\"number\":12,\"url\":\"u\",\"state\":\"merged\","
	      "\"checks\":{\"state\":\"success\",\"failing\":[]}},"
	      "\"previous\":{\"number\":12,\"url\":\"u\",\"state\":\"open\","
	      "\"checks\":{\"state\":\"success\",\"failing\":[]}}}");
	cr_assert(render_pr_event(out, sizeof(out), o));
	cr_assert_str_eq(out, "acme/widgets#12 was merged: widgets-7 is finished.\nu");
	json_object_put(o);

	o = J("{\"session\":\"widgets-7\"}");
	cr_assert(!render_pr_event(out, sizeof(out), o), "no pr: no message");
	json_object_put(o);
}
