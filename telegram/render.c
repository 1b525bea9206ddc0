#include "render.h"

#include "eventnames.h"
#include "jsontext.h"
#include "session.h"
#include "split.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RENDER_LINE_MAX          1024
#define RENDER_COST_DECIMALS_MAX 9 /* a budget's digits after the point, for the smallest */

/* Copies the first line of s, cut to max UTF-16 units with an ellipsis when cut. */
static void render_cut(char *out, size_t outlen, const char *s, size_t max)
{
	size_t len = strcspn(s, "\r\n"), keep;
	bool cut = s[len] != '\0' && s[len + strspn(s + len, "\r\n")] != '\0';

	if (split_units(s, len) > max) {
		len = split_prefix(s, len, max > 1 ? max - 1 : max);
		cut = true;
	}
	keep = len < outlen - 4 ? len : outlen - 4;
	/* outlen - 4 may cut inside a character: back off to its start. */
	while (keep > 0 && keep < len && ((unsigned char)s[keep] & 0xc0) == 0x80)
		keep--;
	memcpy(out, s, keep);
	if (cut || keep < len)
		memcpy(out + keep, "…", sizeof("…"));
	else
		out[keep] = '\0';
}

/* A paragraph: separated from what comes before by a blank line. */
static int render_para(struct buf *out, const char *text, size_t len)
{
	int r = 0;

	if (out->len > 0 && out->p[out->len - 1] != '\n')
		r = buf_adds(out, "\n\n");
	else if (out->len > 1 && out->p[out->len - 2] != '\n')
		r = buf_adds(out, "\n");
	return r < 0 ? r : buf_add(out, text, len);
}

/* A line of its own (tool uses, notes). */
static int render_line(struct buf *out, const char *line)
{
	int r = 0;

	if (out->len > 0 && out->p[out->len - 1] != '\n')
		r = buf_adds(out, "\n");
	if (r == 0)
		r = buf_adds(out, line);
	return r < 0 ? r : buf_adds(out, "\n");
}

/* Whether word is a shell that runs its -c argument: sh, bash, dash or zsh, by any path. */
static bool render_is_shell(const char *word)
{
	static const char *const shells[] = {"sh", "bash", "dash", "zsh"};
	const char *slash = strrchr(word, '/'), *base = slash != NULL ? slash + 1 : word;

	for (size_t i = 0; i < sizeof(shells) / sizeof(shells[0]); i++)
		if (strcmp(base, shells[i]) == 0)
			return true;
	return false;
}

/* Whether word is a shell's options ending in c: "-c", "-lc". */
static bool render_is_c_flag(const char *word)
{
	size_t n = strlen(word);

	if (n < 2 || word[0] != '-' || word[n - 1] != 'c')
		return false;
	for (size_t i = 1; i < n; i++)
		if (word[i] < 'a' || word[i] > 'z')
			return false;
	return true;
}

/*
 * The "command" of a tool's input: a string as it is; a list of words (the raw input of an ACP
 * agent's shell tool: codex's ["/bin/bash", "-lc", "<script>"]) as the script a shell's -c runs,
 * else the words joined by spaces into buf (cut at a character's start to fit). NULL when there
 * is none.
 */
static const char *render_command(json_object *input, char *buf, size_t buflen)
{
	json_object *c;
	size_t n, len = 0;

	if (input == NULL || !json_object_object_get_ex(input, "command", &c))
		return NULL;
	if (json_object_is_type(c, json_type_string))
		return json_object_get_string(c);
	if (!json_object_is_type(c, json_type_array) || (n = json_object_array_length(c)) == 0)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!json_object_is_type(json_object_array_get_idx(c, i), json_type_string))
			return NULL;
	if (n == 3 && render_is_shell(json_object_get_string(json_object_array_get_idx(c, 0))) &&
	    render_is_c_flag(json_object_get_string(json_object_array_get_idx(c, 1))))
		return json_object_get_string(json_object_array_get_idx(c, 2));
	buf[0] = '\0';
	for (size_t i = 0; i < n && len + 1 < buflen; i++) {
		const char *w = json_object_get_string(json_object_array_get_idx(c, i));
		int k = snprintf(buf + len, buflen - len, "%s%s", i > 0 ? " " : "", w);

		if (k < 0)
			return NULL;
		if ((size_t)k >= buflen - len) {
			/* Cut: back off to the start of the character the end fell in. */
			len = buflen - 1;
			while (len > 0 && ((unsigned char)buf[len] & 0xc0) == 0x80)
				len--;
			buf[len] = '\0';
			break;
		}
		len += (size_t)k;
	}
	return buf;
}

void render_tool(char *out, size_t outlen, const char *tool, json_object *input)
{
	static const char *const keys[] = {"file_path", "notebook_path", "path",        "pattern",
					   "url",       "query",         "description", "prompt"};
	char cmd[RENDER_LINE_MAX], cut[RENDER_LINE_MAX];
	const char *arg = render_command(input, cmd, sizeof(cmd));

	for (size_t i = 0; arg == NULL && i < sizeof(keys) / sizeof(keys[0]); i++)
		arg = jsontext_str(input, keys[i]);
	if (tool == NULL || *tool == '\0')
		tool = "a tool";
	/* Another agent's tool is named by the call's title, often the command itself. */
	if (arg == NULL || *arg == '\0' || strcmp(arg, tool) == 0) {
		render_cut(out, outlen, tool, RENDER_TOOL_MAX);
		return;
	}
	snprintf(cut, sizeof(cut), "%s: %s", tool, arg);
	render_cut(out, outlen, cut, RENDER_TOOL_MAX);
}

/* The content blocks of an assistant or user event (its message.content array), or NULL. */
static json_object *render_content(json_object *data)
{
	json_object *msg, *content;

	if (!json_object_object_get_ex(data, "message", &msg) ||
	    !json_object_object_get_ex(msg, "content", &content) ||
	    !json_object_is_type(content, json_type_array))
		return NULL;
	return content;
}

static int render_assistant(struct buf *out, json_object *data)
{
	json_object *content = render_content(data);
	int r = 0;

	if (content == NULL)
		return 0;
	for (size_t i = 0; r == 0 && i < json_object_array_length(content); i++) {
		json_object *b = json_object_array_get_idx(content, i), *input = NULL;
		const char *type = jsontext_str(b, "type"), *text;
		char line[RENDER_LINE_MAX + 64];

		if (type == NULL)
			continue;
		if (strcmp(type, "text") == 0 && (text = jsontext_str(b, "text")) != NULL) {
			size_t len = strlen(text);

			while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
				len--;
			if (len > 0)
				r = render_para(out, text, len);
		} else if (strcmp(type, "tool_use") == 0) {
			char tool[RENDER_LINE_MAX];

			json_object_object_get_ex(b, "input", &input);
			render_tool(tool, sizeof(tool), jsontext_str(b, "name"), input);
			snprintf(line, sizeof(line), "🔧 %s", tool);
			r = render_line(out, line);
		}
	}
	return r;
}

/* The text of a tool_result's content: a string, or the first text block. */
static const char *render_result_text(json_object *b)
{
	json_object *c;

	if (!json_object_object_get_ex(b, "content", &c))
		return NULL;
	if (json_object_is_type(c, json_type_string))
		return json_object_get_string(c);
	if (json_object_is_type(c, json_type_array))
		for (size_t i = 0; i < json_object_array_length(c); i++) {
			const char *t = jsontext_str(json_object_array_get_idx(c, i), "text");

			if (t != NULL)
				return t;
		}
	return NULL;
}

static int render_user(struct buf *out, json_object *data)
{
	json_object *content = render_content(data), *err;
	int r = 0;

	if (content == NULL)
		return 0;
	for (size_t i = 0; r == 0 && i < json_object_array_length(content); i++) {
		json_object *b = json_object_array_get_idx(content, i);
		const char *type = jsontext_str(b, "type"), *text;
		char cut[RENDER_LINE_MAX], line[RENDER_LINE_MAX + 16];

		if (type == NULL)
			continue;
		if (strcmp(type, "tool_result") == 0 &&
		    json_object_object_get_ex(b, "is_error", &err) &&
		    json_object_get_boolean(err)) {
			text = render_result_text(b);
			render_cut(cut, sizeof(cut), text != NULL ? text : "the tool failed",
				   RENDER_ERROR_MAX);
			snprintf(line, sizeof(line), "⚠️ %s", cut);
			r = render_line(out, line);
		} else if (strcmp(type, "text") == 0 && (text = jsontext_str(b, "text")) != NULL &&
			   strncmp(text, "[Request interrupted", 20) == 0) {
			r = render_line(out, "⏹ interrupted");
		}
	}
	return r;
}

static int render_result(struct buf *out, json_object *data)
{
	json_object *v, *errors;
	const char *subtype = jsontext_str(data, "subtype");
	bool is_error =
	    json_object_object_get_ex(data, "is_error", &v) && json_object_get_boolean(v);
	char line[RENDER_LINE_MAX + 64], part[128], cut[RENDER_LINE_MAX];
	int64_t turns = -1;

	if (json_object_object_get_ex(data, "num_turns", &v) &&
	    json_object_is_type(v, json_type_int))
		turns = json_object_get_int64(v);
	snprintf(line, sizeof(line), "%s %s", is_error ? "❌" : "✅",
		 is_error ? (subtype != NULL ? subtype : "failed") : "done");
	if (turns >= 0) {
		snprintf(part, sizeof(part), " · %lld turn%s", (long long)turns,
			 turns == 1 ? "" : "s");
		strncat(line, part, sizeof(line) - strlen(line) - 1);
	}
	if (json_object_object_get_ex(data, "total_cost_usd", &v) &&
	    (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int))) {
		snprintf(part, sizeof(part), " · $%.4f", json_object_get_double(v));
		strncat(line, part, sizeof(line) - strlen(line) - 1);
	}
	if (json_object_object_get_ex(data, "duration_ms", &v) &&
	    json_object_is_type(v, json_type_int)) {
		snprintf(part, sizeof(part), " · %.1f s",
			 (double)json_object_get_int64(v) / 1000.0);
		strncat(line, part, sizeof(line) - strlen(line) - 1);
	}
	if (is_error && json_object_object_get_ex(data, "errors", &errors) &&
	    json_object_is_type(errors, json_type_array) && json_object_array_length(errors) > 0 &&
	    json_object_is_type(json_object_array_get_idx(errors, 0), json_type_string)) {
		render_cut(cut, sizeof(cut),
			   json_object_get_string(json_object_array_get_idx(errors, 0)),
			   RENDER_ERROR_MAX);
		strncat(line, "\n", sizeof(line) - strlen(line) - 1);
		strncat(line, cut, sizeof(line) - strlen(line) - 1);
	}
	return render_para(out, line, strlen(line));
}

int render_turn_event(struct buf *out, const char *name, json_object *data)
{
	char line[RENDER_LINE_MAX + 64], cut[RENDER_LINE_MAX];
	const char *s;

	if (strcmp(name, "assistant") == 0)
		return render_assistant(out, data);
	if (strcmp(name, "user") == 0)
		return render_user(out, data);
	if (strcmp(name, EV_RESULT) == 0)
		return render_result(out, data);
	if (strcmp(name, EV_PERMISSION) == 0) {
		s = jsontext_str(data, "toolName");
		render_cut(cut, sizeof(cut), s != NULL ? s : "a tool", RENDER_TOOL_MAX);
		snprintf(line, sizeof(line), "⏸ %s waits for approval", cut);
		return render_line(out, line);
	}
	if (strcmp(name, EV_ERROR) == 0) {
		s = jsontext_str(data, "error");
		render_cut(cut, sizeof(cut), s != NULL ? s : "the stream ended", RENDER_ERROR_MAX);
		snprintf(line, sizeof(line), "⚠️ %s", cut);
		return render_para(out, line, strlen(line));
	}
	return 0;
}

bool render_turn_ends(const char *name)
{
	return strcmp(name, EV_RESULT) == 0 || strcmp(name, EV_ERROR) == 0;
}

/* The verb of an Agent Client Protocol tool kind ("execute": "run"), or NULL for one that says
 * nothing a person can act on (think, other, none). */
static const char *render_kind_verb(const char *kind)
{
	static const char *const verbs[][2] = {
	    {"execute", "run"}, {"edit", "edit"},     {"delete", "delete"}, {"move", "move"},
	    {"read", "read"},   {"search", "search"}, {"fetch", "fetch"},
	};

	for (size_t i = 0; kind != NULL && i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(kind, verbs[i][0]) == 0)
			return verbs[i][1];
	return NULL;
}

int render_permission(struct buf *out, const char *session, json_object *data, const char *web_url)
{
	static const char *const keys[] = {"file_path", "notebook_path", "path",
					   "pattern",   "url",           "query"};
	json_object *input = NULL;
	const char *tool = jsontext_str(data, "toolName"),
		   *desc = jsontext_str(data, "description");
	const char *arg, *verb;
	char cmd[RENDER_PERM_MAX * 4 + 1], cut[RENDER_LINE_MAX];
	int r;

	json_object_object_get_ex(data, "input", &input);
	arg = render_command(input, cmd, sizeof(cmd));
	verb = render_kind_verb(jsontext_str(data, "kind"));
	if (tool == NULL || *tool == '\0')
		tool = "a tool";
	if (verb != NULL && arg == NULL) {
		/* Another agent's request without a command in its input, whose title is its
		 * own text ("touch /x"): what it does, then that text. */
		render_cut(cut, sizeof(cut), tool, RENDER_TOOL_MAX);
		r = buf_addf(out, "🔐 %s asks to %s: %s", session, verb, cut);
		arg = "";
	} else if (arg != NULL && strcmp(arg, tool) == 0) {
		/* Another agent's tool named by the call's title, here the command itself: said
		 * once. */
		r = buf_addf(out, "🔐 %s asks to run a command", session);
	} else {
		render_cut(cut, sizeof(cut), tool, RENDER_TOOL_MAX);
		r = buf_addf(out, "🔐 %s asks to use %s", session, cut);
	}
	for (size_t i = 0; arg == NULL && i < sizeof(keys) / sizeof(keys[0]); i++)
		if ((arg = jsontext_str(input, keys[i])) != NULL && strcmp(arg, tool) == 0)
			arg = ""; /* the title again: said already */
	/* The command itself may span lines: it is shown whole up to the limit. */
	if (r == 0 && arg != NULL && *arg != '\0') {
		size_t len = strlen(arg);

		if (split_units(arg, len) > RENDER_PERM_MAX)
			len = split_prefix(arg, len, RENDER_PERM_MAX);
		r = buf_adds(out, "\n");
		if (r == 0)
			r = buf_add(out, arg, len);
		if (r == 0 && len < strlen(arg))
			r = buf_adds(out, "…");
	}
	if (r == 0 && desc != NULL && *desc != '\0' && (arg == NULL || strcmp(desc, arg) != 0) &&
	    strcmp(desc, tool) != 0) {
		render_cut(cut, sizeof(cut), desc, RENDER_PERM_MAX);
		r = buf_addf(out, "\n(%s)", cut);
	}
	if (r == 0 && web_url != NULL)
		r = buf_addf(out, "\nIn the terminal: %s/#/s/%s", web_url, session);
	return r;
}

void render_decision(char *out, size_t outlen, const char *behavior, const char *by,
		     const char *who, bool for_session)
{
	char elsewhere[RENDER_DECISION_MAX];

	if (who != NULL) {
		if (behavior != NULL && strcmp(behavior, "deny") == 0)
			snprintf(out, outlen, "⛔ Denied by %s", who);
		else
			snprintf(out, outlen, "✅ Allowed%s by %s",
				 for_session ? " for this session" : "", who);
		return;
	}
	if (by == NULL || *by == '\0')
		snprintf(elsewhere, sizeof(elsewhere), "another client");
	else if (strncmp(by, "telegram:", 9) == 0)
		snprintf(elsewhere, sizeof(elsewhere), "Telegram user %.64s", by + 9);
	else if (strcmp(by, "client") == 0)
		snprintf(elsewhere, sizeof(elsewhere), "another client");
	else
		snprintf(elsewhere, sizeof(elsewhere), "%.64s", by);
	if (by != NULL && strcmp(by, "timeout") == 0)
		snprintf(out, outlen, "⌛ Denied: nobody answered in time");
	else if (by != NULL && strcmp(by, "terminal") == 0)
		snprintf(out, outlen, "⌨️ Answered in the terminal");
	else if (behavior != NULL && strcmp(behavior, "allow") == 0)
		snprintf(out, outlen, "✅ Allowed by %s", elsewhere);
	else if (behavior != NULL && strcmp(behavior, "deny") == 0)
		snprintf(out, outlen, "⛔ Denied by %s", elsewhere);
	else if (behavior != NULL && strcmp(behavior, "withdrawn") == 0)
		snprintf(out, outlen, "↩️ Withdrawn (%s)", elsewhere);
	else
		snprintf(out, outlen, "Answered by %s", elsewhere);
}

/* Sort rank of an activity: waiting first. */
static int render_rank(const char *activity)
{
	static const char *const order[] = {"waiting", "working", "idle", "exited"};

	for (int i = 0; activity != NULL && i < 4; i++)
		if (strcmp(activity, order[i]) == 0)
			return i;
	return 4;
}

static const char *render_mark(int rank)
{
	static const char *const marks[] = {"⏳", "⚙️", "💤", "⏹", "•"};

	return marks[rank];
}

/* A session's cost as the web list says it: " · $0.42", " · $0.42 / $1.00", " · <$0.01 / $0.000050
 * over budget"; empty while it cost nothing and has no budget. */
static void render_cost(char *out, size_t len, json_object *s)
{
	json_object *cost, *v;
	double usd = 0, budget = 0;
	char spent[32] = "";
	int decimals = 2;

	if (json_object_object_get_ex(s, "cost", &cost) &&
	    json_object_object_get_ex(cost, "usd", &v) && json_object_is_type(v, json_type_double))
		usd = json_object_get_double(v);
	if (json_object_object_get_ex(s, "budgetUsd", &v) &&
	    (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
		budget = json_object_get_double(v);
	/* Under a cent rounds to "$0.00", which would read as free. */
	if (usd > 0)
		snprintf(spent, sizeof(spent), usd < 0.005 ? "<$0.01" : "$%.2f", usd);
	if (!(budget > 0)) {
		snprintf(out, len, "%s%s", spent[0] ? " · " : "", spent);
		return;
	}
	/* A budget under a cent keeps two significant digits: "$0.00" would read as none. */
	for (double x = budget * 100;
	     budget < 0.01 && x < 10 && decimals < RENDER_COST_DECIMALS_MAX; x *= 10)
		decimals++;
	snprintf(out, len, " · %s / $%.*f%s", spent[0] ? spent : "$0", decimals, budget,
		 json_object_object_get_ex(s, "overBudget", &v) && json_object_get_boolean(v)
		     ? " over budget"
		     : "");
}

int render_sessions(struct buf *out, json_object *sessions, const char *current)
{
	size_t n =
	    json_object_is_type(sessions, json_type_array) ? json_object_array_length(sessions) : 0;
	int r = 0;

	if (n == 0)
		return buf_adds(out,
				"No sessions. Start one with /new owner/name issue [structured].");
	for (int rank = 0; r == 0 && rank <= 4; rank++) {
		for (size_t i = 0; r == 0 && i < n; i++) {
			json_object *s = json_object_array_get_idx(sessions, i), *pending, *p0;
			const char *id = jsontext_str(s, "id"), *act = jsontext_str(s, "activity");
			const char *mode = jsontext_str(s, "mode"),
				   *state = jsontext_str(s, "state"),
				   *agent = jsontext_str(s, "agent");
			bool plain_state = state == NULL || strcmp(state, "running") == 0 ||
					   strcmp(state, "attached") == 0;
			char cost[96];

			if (id == NULL || render_rank(act) != rank)
				continue;
			render_cost(cost, sizeof(cost), s);
			/* The agent as the session says it (a record of before agents has none). */
			r = buf_addf(out, "%s%s %s · %s%s%s%s%s%s%s%s%s\n",
				     current != NULL && strcmp(current, id) == 0 ? "▶ " : "",
				     render_mark(rank), id, act != NULL ? act : "?",
				     mode != NULL ? " · " : "", mode != NULL ? mode : "",
				     agent != NULL ? " · " : "", agent != NULL ? agent : "",
				     plain_state ? "" : " (", plain_state ? "" : state,
				     plain_state ? "" : ")", cost);
			if (r == 0 && json_object_object_get_ex(s, "pending", &pending) &&
			    json_object_is_type(pending, json_type_array) &&
			    json_object_array_length(pending) > 0) {
				char tool[RENDER_LINE_MAX], what[RENDER_LINE_MAX];
				const char *name, *desc;

				p0 = json_object_array_get_idx(pending, 0);
				name = jsontext_str(p0, "toolName");
				desc = jsontext_str(p0, "description");
				/* Another agent's description is its tool's title: said once. */
				if (desc != NULL && name != NULL && strcmp(desc, name) == 0)
					desc = NULL;
				snprintf(tool, sizeof(tool), "%s%s%s",
					 name != NULL ? name : "a tool",
					 desc != NULL && *desc != '\0' ? ": " : "",
					 desc != NULL ? desc : "");
				render_cut(what, sizeof(what), tool, RENDER_TOOL_MAX);
				r = buf_addf(out, "    waits for %s\n", what);
			}
		}
	}
	return r;
}

void render_user_name(char *out, size_t outlen, const char *first_name, long long id)
{
	char tmp[RENDER_NAME_MAX + 8];

	if (first_name == NULL || *first_name == '\0') {
		snprintf(out, outlen, "user %lld", id);
		return;
	}
	render_cut(tmp, sizeof(tmp), first_name, RENDER_NAME_MAX / 2);
	snprintf(out, outlen, "%s", tmp);
}

/* "a, b, c" of the failing check names into out. */
static void render_failing(char *out, size_t outlen, json_object *checks)
{
	json_object *failing = NULL;
	size_t used = 0;

	out[0] = '\0';
	if (!json_object_object_get_ex(checks, "failing", &failing) ||
	    !json_object_is_type(failing, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(failing) && used < outlen; i++)
		used +=
		    (size_t)snprintf(out + used, outlen - used, "%s%s", i > 0 ? ", " : "",
				     json_object_get_string(json_object_array_get_idx(failing, i)));
}

bool render_pr_event(char *out, size_t outlen, json_object *data)
{
	json_object *repo = NULL, *pr = NULL, *prev = NULL, *checks = NULL, *prev_checks = NULL, *n;
	const char *session = jsontext_str(data, "session"), *state, *was = NULL, *cs, *pcs = NULL;
	const char *url;
	char ref[256], names[512];

	if (!json_object_object_get_ex(data, "pr", &pr) ||
	    !json_object_object_get_ex(data, "repo", &repo) ||
	    !json_object_object_get_ex(pr, "number", &n) || session == NULL)
		return false;
	snprintf(ref, sizeof(ref), "%s/%s#%" PRId64,
		 jsontext_str(repo, "owner") ? jsontext_str(repo, "owner") : "?",
		 jsontext_str(repo, "name") ? jsontext_str(repo, "name") : "?",
		 json_object_get_int64(n));
	state = jsontext_str(pr, "state");
	url = jsontext_str(pr, "url") ? jsontext_str(pr, "url") : "";
	json_object_object_get_ex(pr, "checks", &checks);
	cs = jsontext_str(checks, "state");
	if (json_object_object_get_ex(data, "previous", &prev)) {
		was = jsontext_str(prev, "state");
		json_object_object_get_ex(prev, "checks", &prev_checks);
		pcs = jsontext_str(prev_checks, "state");
	}
	if (state == NULL || cs == NULL)
		return false;
	if (prev == NULL) {
		snprintf(out, outlen, "Pull request %s opened for %s: %s", ref, session, url);
	} else if (was != NULL && strcmp(state, was) != 0 && strcmp(state, "merged") == 0) {
		snprintf(out, outlen, "%s was merged: %s is finished.\n%s", ref, session, url);
	} else if (was != NULL && strcmp(state, was) != 0 && strcmp(state, "closed") == 0) {
		snprintf(out, outlen, "%s was closed without merging (%s).\n%s", ref, session, url);
	} else if (strcmp(cs, "failure") == 0) {
		render_failing(names, sizeof(names), checks);
		snprintf(out, outlen, "CI failed on %s (%s)%s%s\n%s", ref, session,
			 names[0] != '\0' ? ": " : "", names, url);
	} else if (strcmp(cs, "success") == 0 && (pcs == NULL || strcmp(pcs, "success") != 0)) {
		snprintf(out, outlen, "CI passed on %s (%s).\n%s", ref, session, url);
	} else {
		return false;
	}
	return true;
}
