/*
 * session: the validators (exactly API.md's rules), naming, prompt rendering, UUIDs, and the JSON
 * record (round trip, strict decoding, the API form).
 */
#include "session.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BIG (10 * 1024 * 1024)

/* A heap string of n copies of c (caller frees). */
static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);

	cr_assert_not_null(s);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

/* ---- owner ---- */

Test(session, owner_valid)
{
	const char *ok[] = {"a", "Z", "0", "cardano-foundation", "a-", "a--b", "A1-b2-C3", "9-9"};
	char *max = repeat('o', SESSION_OWNER_MAX);

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		cr_assert(session_owner_valid(ok[i]), "owner '%s' should be valid", ok[i]);
	cr_assert(session_owner_valid(max), "39 characters is the maximum");
	max[0] = '-';
	cr_assert_not(session_owner_valid(max));
	free(max);
}

Test(session, owner_invalid)
{
	const char *bad[] = {"",    "-a",  "a_b", "a.b", "a/b",   "../x",     "a;b",
			     "a b", " a",  "a ",  "a\n", "a\xff", "\xc3\xa9", "a'b",
			     "a\"", "a$b", "a:b", "é",   "a\x1f", "a\\b"};
	char *over = repeat('o', SESSION_OWNER_MAX + 1);
	char *huge = repeat('a', BIG);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_not(session_owner_valid(bad[i]), "owner '%s' should be invalid", bad[i]);
	cr_assert_not(session_owner_valid(NULL));
	cr_assert_not(session_owner_valid(over), "40 characters is too long");
	cr_assert_not(session_owner_valid(huge));
	free(over);
	free(huge);
}

/* ---- name ---- */

Test(session, name_valid)
{
	const char *ok[] = {"a",          "socket.io", "cardano-utxo-csmt",
			    "_",          "-",         "...",
			    ".a",         "a.",        "a..b",
			    "git",        "a.gi",      "a.git.x",
			    ".gitignore", "x-3",       "A_b.C-d"};
	char *max = repeat('n', SESSION_NAME_MAX);

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		cr_assert(session_name_valid(ok[i]), "name '%s' should be valid", ok[i]);
	cr_assert(session_name_valid(max), "100 characters is the maximum");
	free(max);
}

Test(session, name_invalid)
{
	const char *bad[] = {"",    ".",     "..",   ".git", "a.git", "foo.git",  "a/b", "../etc",
			     "a b", "a;b",   "a\n",  "a\t",  "a\xff", "\xc3\xa9", "a:b", "a'b",
			     "a\"", "$HOME", "a\\b", "a*",   "a\x1f", "~a",       "a@b"};
	char *over = repeat('n', SESSION_NAME_MAX + 1);
	char *huge = repeat('n', BIG);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_not(session_name_valid(bad[i]), "name '%s' should be invalid", bad[i]);
	cr_assert_not(session_name_valid(NULL));
	cr_assert_not(session_name_valid(over), "101 characters is too long");
	cr_assert_not(session_name_valid(huge));
	/* 100 characters that end in ".git" are still refused. */
	memcpy(over + SESSION_NAME_MAX - 4, ".git", 5);
	cr_assert_not(session_name_valid(over));
	free(over);
	free(huge);
}

/* ---- issue ---- */

Test(session, issue_range)
{
	cr_assert(session_issue_valid(1));
	cr_assert(session_issue_valid(42));
	cr_assert(session_issue_valid(2147483647));
	cr_assert_not(session_issue_valid(0));
	cr_assert_not(session_issue_valid(-1));
	cr_assert_not(session_issue_valid(2147483648LL));
	cr_assert_not(session_issue_valid(INT64_MAX));
	cr_assert_not(session_issue_valid(INT64_MIN));
	cr_assert_not(session_issue_valid(4294967297LL), "no 32-bit wrap to 1");
}

/* ---- id ---- */

Test(session, id_valid)
{
	const char *ok[] = {"socket.io-3",  "a-1",   "cardano-utxo-csmt-42",
			    "x-2147483647", "a-b-3", "x--3",
			    "_-9",          "...-1"};
	char id[SESSION_ID_MAX + 2];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		cr_assert(session_id_valid(ok[i]), "id '%s' should be valid", ok[i]);
	/* The longest: a 100-character name and a 10-digit issue. */
	memset(id, 'n', SESSION_NAME_MAX);
	snprintf(id + SESSION_NAME_MAX, sizeof(id) - SESSION_NAME_MAX, "-2147483647");
	cr_assert_eq(strlen(id), SESSION_ID_MAX);
	cr_assert(session_id_valid(id));
}

Test(session, id_invalid)
{
	const char *bad[] = {
	    "x-0",           "x-01",  "-3",        "x-",         "a/b-3",  "x-2147483648",
	    "x-99999999999", "x-+3",  "x- 3",      "x-3 ",       " x-3",   "x-3\n",
	    ".-3",           "..-3",  "foo.git-3", "3",          "",       "x",
	    "x-1-",          "x-3;",  "x-3\xff",   "x-\xd9\xa3", "../x-3", "x/../y-3",
	    "x y-3",         "x-1e3", "x-0x1",     "x-3a",       "x;y-3",  "x-00",
	    "x-4294967297"};
	char id[SESSION_ID_MAX + 8];
	char *huge = repeat('a', BIG);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_not(session_id_valid(bad[i]), "id '%s' should be invalid", bad[i]);
	cr_assert_not(session_id_valid(NULL));
	/* A 101-character name. */
	memset(id, 'n', SESSION_NAME_MAX + 1);
	snprintf(id + SESSION_NAME_MAX + 1, sizeof(id) - SESSION_NAME_MAX - 1, "-1");
	cr_assert_not(session_id_valid(id));
	/* 10 MB with a valid-looking tail. */
	memcpy(huge + BIG - 2, "-1", 2);
	cr_assert_not(session_id_valid(huge));
	free(huge);
}

Test(session, id_matches_what_init_produces)
{
	const char *names[] = {"a", "socket.io", "x-", "...", "A_b.C-d", "git"};
	const long issues[] = {1, 9, 10, 2147483647};
	struct session s;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		for (size_t j = 0; j < sizeof(issues) / sizeof(issues[0]); j++) {
			cr_assert_eq(session_init(&s, "/code", "o", names[i], issues[j]), 0);
			cr_assert(session_id_valid(s.id), "id '%s' from init must validate", s.id);
		}
}

/* ---- naming ---- */

Test(session, init_derives_names)
{
	struct session s;
	time_t before = time(NULL);

	memset(&s, 0x5a, sizeof(s));
	cr_assert_eq(session_init(&s, "/code", "cardano-foundation", "cardano-utxo-csmt", 42), 0);
	cr_assert_str_eq(s.id, "cardano-utxo-csmt-42");
	cr_assert_str_eq(s.owner, "cardano-foundation");
	cr_assert_str_eq(s.name, "cardano-utxo-csmt");
	cr_assert_eq(s.issue, 42);
	cr_assert_str_eq(s.worktree, "/code/cardano-utxo-csmt-issue-42");
	cr_assert_str_eq(s.branch, "feat/issue-42");
	cr_assert_str_eq(s.tmux_name, "cardano-utxo-csmt-42");
	cr_assert_eq(s.state, SESSION_CREATING);
	cr_assert_eq(s.mode, SESSION_TERMINAL);
	cr_assert_eq(s.clients, 0);
	cr_assert_not(s.launched);
	cr_assert_str_eq(s.prompt, "");
	cr_assert_str_eq(s.error, "");
	cr_assert(s.created_at >= before && s.created_at <= time(NULL));
	cr_assert_eq(s.updated_at, s.created_at);
	cr_assert_eq(s.last_activity, s.created_at);
	cr_assert_eq(strlen(s.agent_session_id), SESSION_UUID_LEN);
}

Test(session, tmux_name_replaces_dot_and_colon)
{
	struct session s;
	char out[64];

	cr_assert_eq(session_init(&s, "/code", "socketio", "socket.io", 3), 0);
	cr_assert_str_eq(s.id, "socket.io-3");
	cr_assert_str_eq(s.tmux_name, "socket_io-3");
	cr_assert_str_eq(s.worktree, "/code/socket.io-issue-3");

	session_tmux_name("a.b:c..d::", out, sizeof(out));
	cr_assert_str_eq(out, "a_b_c__d__");
	session_tmux_name("", out, sizeof(out));
	cr_assert_str_eq(out, "");
	/* A short buffer is filled and terminated, never overrun. */
	memset(out, '#', sizeof(out));
	session_tmux_name("a.b.c.d", out, 4);
	cr_assert_str_eq(out, "a_b");
	cr_assert_eq(out[4], '#');
	memset(out, '#', sizeof(out));
	session_tmux_name("abc", out, 0);
	cr_assert_eq(out[0], '#', "outlen 0 writes nothing");
}

Test(session, init_rejects_invalid_input)
{
	struct session s;

	cr_assert_eq(session_init(&s, "/code", "-bad", "n", 1), -EINVAL);
	cr_assert_eq(session_init(&s, "/code", "o", "..", 1), -EINVAL);
	cr_assert_eq(session_init(&s, "/code", "o", "x.git", 1), -EINVAL);
	cr_assert_eq(session_init(&s, "/code", "o", "a/b", 1), -EINVAL);
	cr_assert_eq(session_init(&s, "/code", "o", "n", 0), -EINVAL);
	cr_assert_eq(session_init(&s, "/code", "o", "n", 2147483648L), -EINVAL);
	cr_assert_eq(session_init(&s, "/code", NULL, "n", 1), -EINVAL);
	cr_assert_eq(session_init(&s, "/code", "o", NULL, 1), -EINVAL);
}

Test(session, init_long_base_dir)
{
	struct session s;
	char *base = repeat('b', SESSION_PATH_MAX);

	base[0] = '/';
	cr_assert_eq(session_init(&s, base, "o", "n", 1), -ENAMETOOLONG);
	free(base);
}

Test(session, worktree_path)
{
	char out[64];

	cr_assert_eq(session_worktree_path("/srv/wt", "socket.io", 7, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/srv/wt/socket.io-issue-7");
	/* "/b/n-issue-1" is 12 characters: 13 bytes fit, 12 do not. */
	cr_assert_eq(session_worktree_path("/b", "n", 1, out, 13), 0);
	cr_assert_str_eq(out, "/b/n-issue-1");
	cr_assert_eq(session_worktree_path("/b", "n", 1, out, 12), -ENAMETOOLONG);
}

/* ---- prompt ---- */

Test(session, render_default_prompt)
{
	char out[SESSION_PROMPT_MAX + 1];

	cr_assert_eq(session_render_prompt("Work on {owner}/{name}#{issue}. Start by running: gh "
					   "issue view {issue} -R {owner}/{name}",
					   "cardano-foundation", "cardano-utxo-csmt", 42, out,
					   sizeof(out)),
		     0);
	cr_assert_str_eq(out,
			 "Work on cardano-foundation/cardano-utxo-csmt#42. Start by running: gh "
			 "issue view 42 -R cardano-foundation/cardano-utxo-csmt");
}

Test(session, render_edge_cases)
{
	char out[256];

	cr_assert_eq(session_render_prompt("", "o", "n", 1, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "");
	cr_assert_eq(
	    session_render_prompt("{issue}{issue}{name}", "o", "n", 2147483647, out, sizeof(out)),
	    0);
	cr_assert_str_eq(out, "21474836472147483647n");
	cr_assert_eq(session_render_prompt("{foo} {owner {Owner} {{owner}} {}", "o", "n", 1, out,
					   sizeof(out)),
		     0);
	cr_assert_str_eq(out, "{foo} {owner {Owner} {o} {}");
	cr_assert_eq(
	    session_render_prompt("\xff\xfe;'\"$HOME\n{name}", "o", "n", 1, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "\xff\xfe;'\"$HOME\nn");
}

Test(session, render_too_long)
{
	char out[SESSION_PROMPT_MAX + 1];
	char small[8];
	char *tmpl = repeat('t', SESSION_PROMPT_MAX + 1);

	cr_assert_eq(session_render_prompt(tmpl, "o", "n", 1, out, sizeof(out)), -ENAMETOOLONG);
	tmpl[SESSION_PROMPT_MAX] = '\0'; /* exactly the maximum fits */
	cr_assert_eq(session_render_prompt(tmpl, "o", "n", 1, out, sizeof(out)), 0);
	cr_assert_eq(strlen(out), SESSION_PROMPT_MAX);
	/* Growth by substitution: a short template that expands past the buffer. */
	free(tmpl);
	tmpl = malloc(SESSION_PROMPT_MAX);
	cr_assert_not_null(tmpl);
	tmpl[0] = '\0';
	for (int i = 0; i < 1000; i++) /* 7000 bytes that grow to 10000 */
		strcat(tmpl, "{issue}");
	cr_assert_eq(session_render_prompt(tmpl, "o", "n", 2147483647, out, sizeof(out)),
		     -ENAMETOOLONG);
	/* "abcdefg" is 7 characters: 8 bytes fit, fewer do not, 0 is refused. */
	cr_assert_eq(session_render_prompt("abcdefg", "o", "n", 1, small, 8), 0);
	cr_assert_str_eq(small, "abcdefg");
	cr_assert_eq(session_render_prompt("abcdefg", "o", "n", 1, small, 7), -ENAMETOOLONG);
	cr_assert_eq(session_render_prompt("{name}", "o", "nnnnnnnn", 1, small, 8), -ENAMETOOLONG);
	cr_assert_eq(session_render_prompt("", "o", "n", 1, small, 0), -ENAMETOOLONG);
	free(tmpl);
}

/* ---- uuid ---- */

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static void assert_uuid_v4(const char *u)
{
	cr_assert_eq(strlen(u), SESSION_UUID_LEN, "'%s'", u);
	for (size_t i = 0; i < SESSION_UUID_LEN; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23)
			cr_assert_eq(u[i], '-', "'%s' position %zu", u, i);
		else
			cr_assert(is_hex(u[i]), "'%s' position %zu is not lowercase hex", u, i);
	}
	cr_assert_eq(u[14], '4', "version nibble of '%s'", u);
	cr_assert(strchr("89ab", u[19]) != NULL, "variant nibble of '%s'", u);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

Test(session, uuid_v4_and_unique)
{
	enum { N = 2000 };
	char(*u)[SESSION_UUID_LEN + 1] = calloc(N, sizeof(*u));
	unsigned seen_variant[4] = {0};

	cr_assert_not_null(u);
	for (size_t i = 0; i < N; i++) {
		memset(u[i], 'Z', sizeof(u[i]));
		cr_assert_eq(session_uuid(u[i]), 0);
		assert_uuid_v4(u[i]);
		seen_variant[strchr("89ab", u[i][19]) - "89ab"]++;
	}
	qsort(u, N, sizeof(*u), cmp_str);
	for (size_t i = 1; i < N; i++)
		cr_assert_str_neq(u[i - 1], u[i], "duplicate uuid");
	/* Random variant bits: all four values show up in 2000 draws. */
	for (int v = 0; v < 4; v++)
		cr_assert_gt(seen_variant[v], 0);
	free(u);
}

/* ---- names of enums, time format ---- */

Test(session, state_and_mode_names_round_trip)
{
	enum session_state st;
	enum session_mode m;
	const char *states[] = {"creating", "running", "attached", "stopping",
				"failed",   "exited",  "lost"};

	for (int i = SESSION_CREATING; i <= SESSION_LOST; i++) {
		cr_assert_str_eq(session_state_name((enum session_state)i), states[i]);
		cr_assert_eq(session_state_parse(states[i], &st), 0);
		cr_assert_eq((int)st, i);
	}
	cr_assert_eq(session_state_parse("RUNNING", &st), -EINVAL);
	cr_assert_eq(session_state_parse("running ", &st), -EINVAL);
	cr_assert_eq(session_state_parse("", &st), -EINVAL);
	cr_assert_eq(session_state_parse("gone", &st), -EINVAL);

	cr_assert_str_eq(session_mode_name(SESSION_TERMINAL), "terminal");
	cr_assert_str_eq(session_mode_name(SESSION_STRUCTURED), "structured");
	cr_assert_eq(session_mode_parse("structured", &m), 0);
	cr_assert_eq(m, SESSION_STRUCTURED);
	cr_assert_eq(session_mode_parse("terminal", &m), 0);
	cr_assert_eq(m, SESSION_TERMINAL);
	cr_assert_eq(session_mode_parse("Terminal", &m), -EINVAL);
	cr_assert_eq(session_mode_parse("", &m), -EINVAL);
}

/* ---- JSON ---- */

/* A session with every field set to something other than its default. */
static void full_session(struct session *s)
{
	cr_assert_eq(session_init(s, "/srv/code", "cardano-foundation", "socket.io", 2147483647),
		     0);
	s->state = SESSION_FAILED;
	s->mode = SESSION_STRUCTURED;
	s->clients = 3;
	s->launched = true;
	snprintf(s->prompt, sizeof(s->prompt), "%s",
		 "line1\nline2\t\"quoted\" 'single' \\ back\x1f unit-sep \x01 ; end; \xc3\xa9 "
		 "\xe2\x82\xac");
	snprintf(s->error, sizeof(s->error), "%s", "clone failed: \"repository not found\"");
	s->created_at = 1773397800;
	s->updated_at = 1773397801;
	s->last_activity = 1773397872;
	s->activity = SESSION_WAITING;
	s->activity_at = 1773397872123;
	s->n_pending = 2;
	snprintf(s->pending[0].request_id, sizeof(s->pending[0].request_id), "%s",
		 "2f0c7d1e-0b5c-4f7e-9a51-0f6b3e1b2c3d");
	snprintf(s->pending[0].tool_name, sizeof(s->pending[0].tool_name), "Bash");
	snprintf(s->pending[0].description, sizeof(s->pending[0].description), "%s",
		 "rm -rf \"build\" \xc3\xa9");
	snprintf(s->pending[1].request_id, sizeof(s->pending[1].request_id), "h:1");
	snprintf(s->pending[1].tool_name, sizeof(s->pending[1].tool_name), "Write");
	s->host_event = 4242;
	s->launch = 4000000000u; /* above INT32_MAX: kept whole */
	s->pending_launch = 3;
	s->limits =
	    (struct cgroup_limits){.memory_max = 2ULL << 30, .cpu_milli = 1500, .tasks_max = 1024};
	s->port_first = 65526;
	s->port_last = 65535;
	s->pr.number = 12;
	snprintf(s->pr.url, sizeof(s->pr.url),
		 "https://github.com/cardano-foundation/socket.io/pull/12");
	s->pr.state = SESSION_PR_MERGED;
	s->pr.checks = SESSION_CHECKS_FAILURE;
	s->pr.n_failing = 2;
	snprintf(s->pr.failing[0], sizeof(s->pr.failing[0]), "build (ubuntu)");
	snprintf(s->pr.failing[1], sizeof(s->pr.failing[1]), "lint \xc3\xa9");
	s->cost = (struct session_cost){.usd_micros = 12345678,
					.input_tokens = 5000000000ULL,
					.output_tokens = 7,
					.cache_read_tokens = 9,
					.turns = 3};
}

static void assert_same_session(const struct session *a, const struct session *b)
{
	cr_assert_str_eq(a->id, b->id);
	cr_assert_str_eq(a->owner, b->owner);
	cr_assert_str_eq(a->name, b->name);
	cr_assert_eq(a->issue, b->issue);
	cr_assert_str_eq(a->worktree, b->worktree);
	cr_assert_str_eq(a->branch, b->branch);
	cr_assert_str_eq(a->tmux_name, b->tmux_name);
	cr_assert_eq(a->state, b->state);
	cr_assert_eq(a->mode, b->mode);
	cr_assert_str_eq(a->agent_session_id, b->agent_session_id);
	cr_assert_eq(a->clients, b->clients);
	cr_assert_eq(a->launched, b->launched);
	cr_assert_str_eq(a->prompt, b->prompt);
	cr_assert_str_eq(a->error, b->error);
	cr_assert_eq(a->created_at, b->created_at);
	cr_assert_eq(a->updated_at, b->updated_at);
	cr_assert_eq(a->last_activity, b->last_activity);
	cr_assert_eq(a->activity, b->activity);
	cr_assert_eq(a->activity_at, b->activity_at);
	cr_assert_eq(a->n_pending, b->n_pending);
	for (unsigned i = 0; i < a->n_pending; i++) {
		cr_assert_str_eq(a->pending[i].request_id, b->pending[i].request_id);
		cr_assert_str_eq(a->pending[i].tool_name, b->pending[i].tool_name);
		cr_assert_str_eq(a->pending[i].description, b->pending[i].description);
	}
	cr_assert_eq(a->host_event, b->host_event);
	cr_assert_eq(a->launch, b->launch);
	cr_assert_eq(a->pending_launch, b->pending_launch);
	cr_assert_eq(a->limits.memory_max, b->limits.memory_max);
	cr_assert_eq(a->limits.cpu_milli, b->limits.cpu_milli);
	cr_assert_eq(a->limits.tasks_max, b->limits.tasks_max);
	cr_assert_eq(a->port_first, b->port_first);
	cr_assert_eq(a->port_last, b->port_last);
	cr_assert_eq(a->pr.number, b->pr.number);
	cr_assert_str_eq(a->pr.url, b->pr.url);
	cr_assert_eq(a->pr.state, b->pr.state);
	cr_assert_eq(a->pr.checks, b->pr.checks);
	cr_assert_eq(a->pr.n_failing, b->pr.n_failing);
	cr_assert_eq(a->cost.usd_micros, b->cost.usd_micros);
	cr_assert_eq(a->cost.input_tokens, b->cost.input_tokens);
	cr_assert_eq(a->cost.output_tokens, b->cost.output_tokens);
	cr_assert_eq(a->cost.cache_read_tokens, b->cost.cache_read_tokens);
	cr_assert_eq(a->cost.turns, b->cost.turns);
	for (unsigned i = 0; i < a->pr.n_failing; i++)
		cr_assert_str_eq(a->pr.failing[i], b->pr.failing[i]);
	cr_assert_eq(a->state == SESSION_EXITED ? a->exit_reason : 0,
		     b->state == SESSION_EXITED ? b->exit_reason : 0);
	cr_assert_eq(a->state == SESSION_EXITED ? a->exit_status : 0,
		     b->state == SESSION_EXITED ? b->exit_status : 0);
	cr_assert_str_eq(a->state == SESSION_EXITED ? a->exit_signal : "",
			 b->state == SESSION_EXITED ? b->exit_signal : "");
	cr_assert_eq(a->state == SESSION_EXITED ? a->exited_at : 0,
		     b->state == SESSION_EXITED ? b->exited_at : 0);
}

/* Serialises and parses again, as the store does on disk. */
static json_object *reparse(json_object *o)
{
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	json_object *back = json_tokener_parse(text);

	cr_assert_not_null(back, "re-parse of %s", text);
	return back;
}

Test(session, json_round_trip_every_field)
{
	struct session a, b;
	struct cause c = {{0}};
	json_object *o, *back;

	full_session(&a);
	o = session_to_json(&a, true);
	cr_assert_not_null(o);
	back = reparse(o);
	cr_assert_eq(session_from_json(&b, back, &c), 0, "cause: %s", c.msg);
	assert_same_session(&a, &b);

	/* And the defaults of a fresh session (not failed, not launched, empty prompt). */
	json_object_put(o);
	json_object_put(back);
	cr_assert_eq(session_init(&a, "/code", "o", "n", 1), 0);
	o = session_to_json(&a, true);
	back = reparse(o);
	cr_assert_eq(session_from_json(&b, back, &c), 0, "cause: %s", c.msg);
	assert_same_session(&a, &b);
	json_object_put(o);
	json_object_put(back);
}

Test(session, ports_in_the_api_form_and_refused_when_malformed)
{
	struct session a, b;
	struct cause c = {{0}};
	json_object *o, *p, *v;

	cr_assert_eq(session_init(&a, "/code", "o", "n", 1), 0);
	o = session_to_json(&a, false);
	cr_assert(!json_object_object_get_ex(o, "ports", &p), "no ports when none are given");
	json_object_put(o);
	a.port_first = 41010;
	a.port_last = 41019;
	o = session_to_json(&a, false);
	cr_assert(json_object_object_get_ex(o, "ports", &p));
	cr_assert(json_object_object_get_ex(p, "first", &v) && json_object_get_int(v) == 41010);
	cr_assert(json_object_object_get_ex(p, "last", &v) && json_object_get_int(v) == 41019);
	json_object_put(o);
	o = session_to_json(&a, true);
	json_object_object_get_ex(o, "ports", &p);
	json_object_object_add(p, "last", json_object_new_int(41000)); /* before first */
	cr_assert_eq(session_from_json(&b, o, &c), -EINVAL);
	cr_assert(strstr(c.msg, "ports") != NULL, "%s", c.msg);
	json_object_object_add(p, "last", json_object_new_int(70000));
	cr_assert_eq(session_from_json(&b, o, NULL), -EINVAL);
	json_object_put(o);
}

Test(session, pr_in_the_api_form_finished_when_merged_and_checked)
{
	struct session a, b;
	struct cause c = {{0}};
	json_object *o, *p, *v;

	cr_assert_eq(session_init(&a, "/code", "o", "n", 1), 0);
	o = session_to_json(&a, false);
	cr_assert(!json_object_object_get_ex(o, "pr", &p), "no pr before one is opened");
	cr_assert(json_object_object_get_ex(o, "finished", &v) && !json_object_get_boolean(v));
	json_object_put(o);
	a.pr.number = 7;
	snprintf(a.pr.url, sizeof(a.pr.url), "https://github.com/o/n/pull/7");
	a.pr.state = SESSION_PR_OPEN;
	a.pr.checks = SESSION_CHECKS_PENDING;
	o = session_to_json(&a, false);
	cr_assert(json_object_object_get_ex(o, "finished", &v) && !json_object_get_boolean(v),
		  "an open pull request does not finish the session");
	cr_assert(json_object_object_get_ex(o, "pr", &p));
	cr_assert(json_object_object_get_ex(p, "state", &v));
	cr_assert_str_eq(json_object_get_string(v), "open");
	cr_assert(json_object_object_get_ex(p, "checks", &v));
	cr_assert_str_eq(json_object_get_string(json_object_object_get(v, "state")), "pending");
	json_object_put(o);
	a.pr.state = SESSION_PR_MERGED;
	o = session_to_json(&a, false);
	cr_assert(json_object_object_get_ex(o, "finished", &v) && json_object_get_boolean(v),
		  "a merged pull request finishes the session");
	json_object_put(o);
	a.pr.state = SESSION_PR_CLOSED;
	o = session_to_json(&a, false);
	cr_assert(json_object_object_get_ex(o, "finished", &v) && !json_object_get_boolean(v),
		  "a pull request closed unmerged does not");
	json_object_put(o);

	o = session_to_json(&a, true);
	json_object_object_get_ex(o, "pr", &p);
	json_object_object_add(p, "state", json_object_new_string("approved"));
	cr_assert_eq(session_from_json(&b, o, &c), -EINVAL);
	cr_assert(strstr(c.msg, "pr") != NULL, "%s", c.msg);
	json_object_object_add(p, "state", json_object_new_string("open"));
	json_object_object_add(p, "number", json_object_new_int(0));
	cr_assert_eq(session_from_json(&b, o, NULL), -EINVAL, "number 0 is no pull request");
	json_object_object_add(p, "number", json_object_new_int(7));
	json_object_object_get_ex(p, "checks", &v);
	json_object_object_add(v, "failing", json_object_new_string("build"));
	cr_assert_eq(session_from_json(&b, o, NULL), -EINVAL, "failing is a list");
	json_object_object_add(v, "failing", json_object_new_array());
	cr_assert_eq(session_from_json(&b, o, &c), 0, "%s", c.msg);
	json_object_put(o);
}

Test(session, cost_sums_results_exactly)
{
	struct session_cost c = {0};
	json_object *r = json_tokener_parse(
	    "{\"total_cost_usd\":0.0001,\"usage\":{\"input_tokens\":10,\"output_tokens\":5,"
	    "\"cache_read_input_tokens\":100}}");
	json_object *bad = json_tokener_parse(
	    "{\"total_cost_usd\":\"1\",\"usage\":{\"input_tokens\":-3,\"output_tokens\":\"x\"}}");
	json_object *o, *v;

	for (int i = 0; i < 3; i++)
		session_cost_add(&c, r);
	session_cost_add(&c, bad);
	cr_assert_eq(c.usd_micros, 300, "three times 0.0001 is exactly 0.0003");
	cr_assert_eq(c.input_tokens, 30);
	cr_assert_eq(c.output_tokens, 15);
	cr_assert_eq(c.cache_read_tokens, 300);
	cr_assert_eq(c.turns, 4, "a result without usable figures is still a turn");
	struct session s;
	cr_assert_eq(session_init(&s, "/code", "o", "n", 1), 0);
	s.cost = c;
	o = session_to_json(&s, false);
	cr_assert(json_object_object_get_ex(o, "cost", &v));
	cr_assert_str_eq(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN),
			 "{\"usd\":0.0003,\"inputTokens\":30,\"outputTokens\":15,"
			 "\"cacheReadTokens\":300,\"turns\":4}");
	json_object_put(o);
	json_object_put(r);
	json_object_put(bad);
}

Test(session, json_round_trip_every_state_and_mode)
{
	struct session a, b;
	struct cause c = {{0}};

	for (int st = SESSION_CREATING; st <= SESSION_LOST; st++)
		for (int m = SESSION_TERMINAL; m <= SESSION_STRUCTURED; m++) {
			json_object *o, *back;

			full_session(&a);
			if (st == SESSION_EXITED)
				session_set_exited(&a, 0, 9, 1773397900);
			a.state = (enum session_state)st;
			a.mode = (enum session_mode)m;
			if (st != SESSION_FAILED && st != SESSION_LOST)
				a.error[0] = '\0';
			o = session_to_json(&a, true);
			back = reparse(o);
			cr_assert_eq(session_from_json(&b, back, &c), 0, "cause: %s", c.msg);
			assert_same_session(&a, &b);
			json_object_put(o);
			json_object_put(back);
		}
}

Test(session, json_round_trip_largest_prompt)
{
	struct session *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct cause c = {{0}};
	json_object *o, *back;

	cr_assert(a != NULL && b != NULL);
	full_session(a);
	/* Control characters escape to six bytes each: the worst case for record size. */
	memset(a->prompt, '\x01', SESSION_PROMPT_MAX);
	a->prompt[SESSION_PROMPT_MAX] = '\0';
	o = session_to_json(a, true);
	cr_assert_lt(strlen(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)),
		     SESSION_RECORD_MAX, "the largest record fits SESSION_RECORD_MAX");
	back = reparse(o);
	cr_assert_eq(session_from_json(b, back, &c), 0, "cause: %s", c.msg);
	assert_same_session(a, b);
	json_object_put(o);
	json_object_put(back);
	free(a);
	free(b);
}

Test(session, largest_record_with_a_full_cost_fits)
{
	struct session *a = calloc(1, sizeof(*a));
	struct session_cost big = {UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX};
	json_object *o;

	cr_assert(a != NULL);
	full_session(a);
	memset(a->prompt, '\x01', SESSION_PROMPT_MAX);
	a->prompt[SESSION_PROMPT_MAX] = '\0';
	a->cost = big;
	a->transcript.cost = big;
	a->transcript.offset = UINT32_MAX;
	for (int i = 0; i < COST_SEEN_MAX; i++) {
		memset(a->transcript.seen[i].id, 'm', COST_MSG_ID_MAX);
		a->transcript.seen[i].input = a->transcript.seen[i].output = UINT32_MAX;
		a->transcript.seen[i].cache_read = a->transcript.seen[i].cache_write = UINT32_MAX;
	}
	for (int i = 0; i < COST_DAYS_MAX; i++)
		cost_days_add(&a->days, 86400LL * (20000 + i), &big);
	a->budget_micros = COST_BUDGET_MAX_MICROS;
	o = session_to_json(a, true);
	cr_assert_lt(strlen(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)),
		     SESSION_RECORD_MAX, "the largest record, its cost kept whole, fits");
	json_object_put(o);
	free(a);
}

static void collect_keys(json_object *o, char *out, size_t outlen)
{
	out[0] = '\0';
	json_object_object_foreach(o, key, val)
	{
		(void)val;
		strncat(out, key, outlen - strlen(out) - 2);
		strcat(out, ",");
	}
}

Test(session, api_form_fields_and_types)
{
	struct session s;
	json_object *o, *v, *repo;
	char keys[512];

	full_session(&s);
	s.state = SESSION_RUNNING;
	o = session_to_json(&s, false);
	cr_assert_not_null(o);
	collect_keys(o, keys, sizeof(keys));
	cr_assert_str_eq(
	    keys,
	    "id,repo,issue,worktree,branch,tmuxName,state,mode,agent,activitySource,agentSessionId,"
	    "clients,prompt,createdAt,updatedAt,rev,lastActivity,activity,activityAt,pending,"
	    "limits,ports,pr,finished,cost,overBudget,");
	cr_assert(json_object_object_get_ex(o, "issue", &v));
	cr_assert(json_object_is_type(v, json_type_int));
	cr_assert_eq(json_object_get_int64(v), 2147483647);
	cr_assert(json_object_object_get_ex(o, "clients", &v));
	cr_assert(json_object_is_type(v, json_type_int));
	cr_assert_eq(json_object_get_int(v), 3);
	cr_assert(json_object_object_get_ex(o, "repo", &repo));
	collect_keys(repo, keys, sizeof(keys));
	cr_assert_str_eq(keys, "owner,name,");
	cr_assert(json_object_object_get_ex(repo, "owner", &v));
	cr_assert_str_eq(json_object_get_string(v), "cardano-foundation");
	cr_assert(json_object_object_get_ex(o, "tmuxName", &v));
	cr_assert_str_eq(json_object_get_string(v), "socket_io-2147483647");
	cr_assert(json_object_object_get_ex(o, "state", &v));
	cr_assert_str_eq(json_object_get_string(v), "running");
	cr_assert(json_object_object_get_ex(o, "mode", &v));
	cr_assert_str_eq(json_object_get_string(v), "structured");
	cr_assert(json_object_object_get_ex(o, "createdAt", &v));
	cr_assert_str_eq(json_object_get_string(v), "2026-03-13T10:30:00Z");
	cr_assert(json_object_object_get_ex(o, "lastActivity", &v));
	cr_assert_str_eq(json_object_get_string(v), "2026-03-13T10:31:12Z");
	cr_assert(json_object_object_get_ex(o, "prompt", &v));
	cr_assert_str_eq(json_object_get_string(v), s.prompt);
	json_object_put(o);
}

Test(session, api_form_omits_launched_and_error_unless_failed)
{
	struct session s;
	json_object *o, *v;

	full_session(&s); /* launched = true, error text set */
	for (int st = SESSION_CREATING; st <= SESSION_LOST; st++) {
		bool has_error = st == SESSION_FAILED || st == SESSION_LOST;

		s.state = (enum session_state)st;
		o = session_to_json(&s, false);
		cr_assert_not(json_object_object_get_ex(o, "launched", NULL),
			      "the API form never has launched");
		cr_assert_eq(json_object_object_get_ex(o, "exitStatus", NULL),
			     st == SESSION_EXITED);
		cr_assert_eq(json_object_object_get_ex(o, "exitedAt", NULL), st == SESSION_EXITED);
		if (has_error) {
			cr_assert(json_object_object_get_ex(o, "error", &v));
			cr_assert_str_eq(json_object_get_string(v), s.error);
		} else {
			cr_assert_not(json_object_object_get_ex(o, "error", NULL),
				      "error only when failed (state %d)", st);
		}
		json_object_put(o);

		o = session_to_json(&s, true);
		cr_assert(json_object_object_get_ex(o, "launched", &v), "the disk form has it");
		cr_assert(json_object_is_type(v, json_type_boolean));
		cr_assert(json_object_get_boolean(v));
		cr_assert_eq(json_object_object_get_ex(o, "error", NULL), has_error);
		json_object_put(o);
	}
}

/* A valid disk record (caller puts it). */
static json_object *base_record(void)
{
	struct session s;

	full_session(&s);
	return session_to_json(&s, true);
}

static void expect_rejected(json_object *o, const char *what, const char *in_cause)
{
	struct session s;
	struct cause c = {{0}};
	int r = session_from_json(&s, o, &c);

	cr_assert_eq(r, -EINVAL, "%s: got %d, want -EINVAL", what, r);
	cr_assert_neq(c.msg[0], '\0', "%s: cause is empty", what);
	if (in_cause != NULL)
		cr_assert_not_null(strstr(c.msg, in_cause), "%s: cause '%s' lacks '%s'", what,
				   c.msg, in_cause);
	/* A NULL cause is allowed and gives the same answer. */
	cr_assert_eq(session_from_json(&s, o, NULL), -EINVAL, "%s with NULL cause", what);
}

Test(session, from_json_missing_fields)
{
	const char *top[] = {"id",        "repo",      "issue",       "worktree",       "branch",
			     "tmuxName",  "state",     "mode",        "agentSessionId", "prompt",
			     "createdAt", "updatedAt", "lastActivity"};
	const char *inner[] = {"owner", "name"};

	for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++) {
		json_object *o = base_record();

		json_object_object_del(o, top[i]);
		expect_rejected(o, top[i], top[i]);
		json_object_put(o);
	}
	for (size_t i = 0; i < sizeof(inner) / sizeof(inner[0]); i++) {
		json_object *o = base_record(), *repo;

		cr_assert(json_object_object_get_ex(o, "repo", &repo));
		json_object_object_del(repo, inner[i]);
		expect_rejected(o, inner[i], inner[i]);
		json_object_put(o);
	}
}

Test(session, from_json_wrong_types)
{
	const char *strings[] = {"id",        "worktree",  "branch",         "tmuxName",
				 "state",     "mode",      "agentSessionId", "prompt",
				 "createdAt", "updatedAt", "lastActivity"};
	json_object *o, *repo;

	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		o = base_record();
		json_object_object_add(o, strings[i], json_object_new_int(5));
		expect_rejected(o, strings[i], strings[i]);
		json_object_put(o);
		o = base_record();
		json_object_object_add(o, strings[i], NULL); /* JSON null */
		expect_rejected(o, strings[i], strings[i]);
		json_object_put(o);
	}
	/* issue: a string, a double, a boolean, null, an array. */
	o = base_record();
	json_object_object_add(o, "issue", json_object_new_string("2147483647"));
	expect_rejected(o, "issue as string", "issue");
	json_object_object_add(o, "issue", json_object_new_double(2147483647.0));
	expect_rejected(o, "issue as double", "issue");
	json_object_object_add(o, "issue", json_object_new_boolean(1));
	expect_rejected(o, "issue as boolean", "issue");
	json_object_object_add(o, "issue", NULL);
	expect_rejected(o, "issue as null", "issue");
	json_object_object_add(o, "issue", json_object_new_array());
	expect_rejected(o, "issue as array", "issue");
	json_object_put(o);
	/* repo: a string; owner and name: numbers. */
	o = base_record();
	json_object_object_add(o, "repo", json_object_new_string("cardano-foundation/socket.io"));
	expect_rejected(o, "repo as string", "repo");
	json_object_put(o);
	o = base_record();
	cr_assert(json_object_object_get_ex(o, "repo", &repo));
	json_object_object_add(repo, "owner", json_object_new_int(1));
	expect_rejected(o, "owner as int", "owner");
	json_object_put(o);
	/* The record itself: not an object. */
	o = json_object_new_array();
	expect_rejected(o, "array record", NULL);
	json_object_put(o);
	o = json_object_new_string("{}");
	expect_rejected(o, "string record", NULL);
	json_object_put(o);
	expect_rejected(NULL, "NULL record", NULL);
}

Test(session, from_json_optional_fields_wrong_types)
{
	json_object *o;

	/* "launched": "false" must not silently become true (that would --resume a session whose
	 * first launch never happened); wrong types are rejected like those of required fields. */
	o = base_record();
	json_object_object_add(o, "launched", json_object_new_string("false"));
	expect_rejected(o, "launched as string", "launched");
	json_object_put(o);
	o = base_record();
	json_object_object_add(o, "clients", json_object_new_string("3"));
	expect_rejected(o, "clients as string", "clients");
	json_object_put(o);
	o = base_record();
	json_object_object_add(o, "clients", json_object_new_double(3.0));
	expect_rejected(o, "clients as double", "clients");
	json_object_put(o);
	o = base_record();
	json_object_object_add(o, "clients", json_object_new_int64(1LL << 40));
	expect_rejected(o, "clients beyond int", "clients");
	json_object_put(o);
	o = base_record();
	json_object_object_add(o, "launched", json_object_new_int(1));
	expect_rejected(o, "launched as int", "launched");
	json_object_put(o);
	o = base_record();
	json_object_object_add(o, "error", json_object_new_int(5));
	expect_rejected(o, "error as int", "error");
	json_object_put(o);
	o = base_record();
	{
		char *long_error = repeat('e', SESSION_ERROR_MAX);

		json_object_object_add(o, "error", json_object_new_string(long_error));
		expect_rejected(o, "error too long", "error");
		free(long_error);
	}
	json_object_put(o);
}

Test(session, from_json_bad_values)
{
	struct {
		const char *key, *value, *in_cause;
	} cases[] = {
	    {"id", "x-0", "id"},
	    {"id", "x-01", "id"},
	    {"id", "-3", "id"},
	    {"id", "a/b-3", "id"},
	    {"id", "../../etc/passwd-1", "id"},
	    {"id", "", "id"},
	    {"state", "bogus", "state"},
	    {"state", "Running", "state"},
	    {"mode", "tui", "mode"},
	    {"createdAt", "yesterday", "createdAt"},
	    {"createdAt", "2026-03-13T10:30:00Zjunk", "createdAt"},
	    {"createdAt", "2026-03-13 10:30:00Z", "createdAt"},
	    {"updatedAt", "2026-13-13T10:30:00Z", "updatedAt"},
	    /* Found by fuzz_session: year 1 formats as "1-…", a record that could not be read back.
	     */
	    {"updatedAt", "0001-11-25T10:00:00Z", "updatedAt"},
	    {"createdAt", "1969-12-31T23:59:59Z", "createdAt"},
	    {"activityAt", "0001-11-25T10:00:00.000Z", "activityAt"},
	    {"lastActivity", "", "lastActivity"},
	};
	json_object *o, *repo;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		o = base_record();
		json_object_object_add(o, cases[i].key, json_object_new_string(cases[i].value));
		/* Keep tmuxName consistent with a changed id, so only the id itself is wrong. */
		if (strcmp(cases[i].key, "id") == 0)
			json_object_object_add(o, "tmuxName",
					       json_object_new_string(cases[i].value));
		expect_rejected(o, cases[i].value, cases[i].in_cause);
		json_object_put(o);
	}
	/* Out-of-range issues. */
	const int64_t issues[] = {0, -1, 2147483648LL, INT64_MAX};
	for (size_t i = 0; i < sizeof(issues) / sizeof(issues[0]); i++) {
		o = base_record();
		json_object_object_add(o, "issue", json_object_new_int64(issues[i]));
		expect_rejected(o, "issue out of range", "issue");
		json_object_put(o);
	}
	/* Invalid owner and name. */
	o = base_record();
	cr_assert(json_object_object_get_ex(o, "repo", &repo));
	json_object_object_add(repo, "owner", json_object_new_string("-evil"));
	expect_rejected(o, "owner -evil", "owner");
	json_object_put(o);
	o = base_record();
	cr_assert(json_object_object_get_ex(o, "repo", &repo));
	json_object_object_add(repo, "name", json_object_new_string(".."));
	expect_rejected(o, "name ..", "name");
	json_object_put(o);
}

Test(session, from_json_oversize_fields)
{
	struct {
		const char *key;
		size_t len;
	} cases[] = {{"prompt", SESSION_PROMPT_MAX + 1},
		     {"worktree", SESSION_PATH_MAX},
		     {"branch", 32},
		     {"agentSessionId", SESSION_UUID_LEN + 1},
		     {"tmuxName", SESSION_ID_MAX + 1},
		     {"id", BIG}};
	json_object *o;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *v = repeat('x', cases[i].len);

		o = base_record();
		json_object_object_add(o, cases[i].key, json_object_new_string(v));
		expect_rejected(o, cases[i].key, cases[i].key);
		json_object_put(o);
		free(v);
	}
}

Test(session, from_json_tmux_name_mismatch)
{
	json_object *o = base_record();

	/* id socket.io-2147483647 must have tmuxName socket_io-2147483647. */
	json_object_object_add(o, "tmuxName", json_object_new_string("socket.io-2147483647"));
	expect_rejected(o, "tmuxName with a dot", "tmuxName");
	json_object_object_add(o, "tmuxName", json_object_new_string("other-1"));
	expect_rejected(o, "tmuxName of another id", "tmuxName");
	json_object_object_add(o, "tmuxName", json_object_new_string(""));
	expect_rejected(o, "empty tmuxName", "tmuxName");
	json_object_put(o);
}

Test(session, from_json_id_must_match_name_and_issue)
{
	/* id is derived from (name, issue): a record claiming another id is corrupt. */
	json_object *o = base_record();

	json_object_object_add(o, "id", json_object_new_string("other-7"));
	json_object_object_add(o, "tmuxName", json_object_new_string("other-7"));
	expect_rejected(o, "id of another name and issue", "id");
	json_object_put(o);
}

Test(session, from_json_agent_session_id_must_be_uuid)
{
	/* It becomes --session-id=/--resume= of claude: only a UUID is acceptable. */
	const char *bad[] = {"", "not-a-uuid", "--dangerously-skip-permissions",
			     "0B7C2F4E-8A55-4A43-9A6B-2D0F4F0D9C12x"};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_object *o = base_record();

		json_object_object_add(o, "agentSessionId", json_object_new_string(bad[i]));
		expect_rejected(o, bad[i], "agentSessionId");
		json_object_put(o);
	}
}

Test(session, from_json_lenient_where_documented)
{
	struct session s;
	struct cause c = {{0}};
	json_object *o = base_record();

	/* clients and launched are optional; a negative count is clamped; an error text is read
	 * whatever the state. */
	json_object_object_del(o, "launched");
	json_object_object_del(o, "clients");
	cr_assert_eq(session_from_json(&s, o, &c), 0, "cause: %s", c.msg);
	cr_assert_not(s.launched);
	cr_assert_eq(s.clients, 0);
	json_object_object_add(o, "clients", json_object_new_int(-5));
	cr_assert_eq(session_from_json(&s, o, &c), 0, "cause: %s", c.msg);
	cr_assert_eq(s.clients, 0);
	json_object_object_add(o, "unknownField", json_object_new_string("ignored"));
	cr_assert_eq(session_from_json(&s, o, &c), 0, "unknown fields are ignored: %s", c.msg);
	json_object_put(o);
}

Test(session, from_json_parses_hostile_text)
{
	/* Records come from disk: feed raw JSON text, including broken and hostile documents. */
	const char *docs[] = {
	    "{}",
	    "[]",
	    "null",
	    "{\"repo\":{\"owner\":\"o\",\"name\":\"n\"},\"id\":\"n-1\"}",
	    "{\"id\":\"n-1\",\"id\":\"m-1\"}",
	};

	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		json_object *o = json_tokener_parse(docs[i]);
		struct session s;
		struct cause c = {{0}};

		cr_assert_eq(session_from_json(&s, o, &c), -EINVAL, "doc %s", docs[i]);
		json_object_put(o);
	}
}

/* "a.b" and "a_b" are two repositories, so two ids, so two tmux sessions. */
Test(session, tmux_name_is_injective)
{
	static const char alphabet[] = "a._-";
	char ids[1024][16], names[1024][16];
	size_t n = 0;
	struct session s1, s2;

	cr_assert_eq(session_init(&s1, "/code", "acme", "a.b", 1), 0);
	cr_assert_eq(session_init(&s2, "/code", "acme", "a_b", 1), 0);
	cr_assert_str_eq(s1.tmux_name, "a_b-1", "tmux's own rule for '.' is kept");
	cr_assert_str_eq(s2.tmux_name, "a+b-1");
	/* Every name of up to 4 characters over a . _ - that is valid: no two share a tmux name,
	 * and no tmux name holds a character tmux refuses. */
	for (size_t len = 1; len <= 4; len++) {
		size_t combos = 1;

		for (size_t i = 0; i < len; i++)
			combos *= 4;
		for (size_t k = 0; k < combos; k++) {
			char name[8];
			size_t v = k;

			for (size_t i = 0; i < len; i++, v /= 4)
				name[i] = alphabet[v % 4];
			name[len] = '\0';
			if (!session_name_valid(name))
				continue;
			snprintf(ids[n], sizeof(ids[n]), "%s-1", name);
			session_tmux_name(ids[n], names[n], sizeof(names[n]));
			cr_assert_null(strpbrk(names[n], ".:"), "%s -> %s", ids[n], names[n]);
			for (size_t j = 0; j < n; j++)
				cr_assert_str_neq(names[j], names[n], "%s and %s share %s", ids[j],
						  ids[n], names[n]);
			n++;
		}
	}
	cr_assert_gt(n, 200);
}

Test(session, tmux_name_valid_accepts_the_name_before_issue_8)
{
	cr_assert(session_tmux_name_valid("a_b-1", "a+b-1"));
	cr_assert(session_tmux_name_valid("a_b-1", "a_b-1"), "a record or session made before");
	cr_assert(session_tmux_name_valid("a.b-1", "a_b-1"));
	cr_assert_not(session_tmux_name_valid("a.b-1", "a+b-1"), "another id's name");
	cr_assert_not(session_tmux_name_valid("a.b-1", "a.b-1"));
	cr_assert_not(session_tmux_name_valid("a_b-1", "a_b-2"));
	cr_assert_not(session_tmux_name_valid("a_b-1", ""));
}

Test(session, from_json_reads_both_tmux_names_of_an_id)
{
	struct session s;
	struct cause c = {{0}};
	json_object *o;

	cr_assert_eq(session_init(&s, "/code", "acme", "my_repo", 3), 0);
	o = session_to_json(&s, true);
	cr_assert_eq(session_from_json(&s, o, &c), 0, "%s", c.msg);
	cr_assert_str_eq(s.tmux_name, "my+repo-3");
	json_object_object_add(o, "tmuxName", json_object_new_string("my_repo-3"));
	cr_assert_eq(session_from_json(&s, o, &c), 0, "%s", c.msg);
	cr_assert_str_eq(s.tmux_name, "my_repo-3", "kept as the record says");
	json_object_object_add(o, "tmuxName", json_object_new_string("my+repo+3"));
	expect_rejected(o, "neither name", "tmuxName");
	json_object_put(o);
}

/* ---- exited and lost ---- */

Test(session, set_exited_from_status_or_signal)
{
	struct session s;

	full_session(&s);
	session_set_exited(&s, 3, 0, 1773397900);
	cr_assert_eq(s.state, SESSION_EXITED);
	cr_assert_eq(s.exit_status, 3);
	cr_assert_str_eq(s.exit_signal, "");
	cr_assert_eq(s.exited_at, 1773397900);
	cr_assert_str_eq(s.error, "", "an exited session carries no error");

	session_set_exited(&s, 0, 9, 1773397901);
	cr_assert_eq(s.exit_status, 137, "a signal reads as 128 + N, as in a shell");
	cr_assert_str_eq(s.exit_signal, "SIGKILL");
	session_set_exited(&s, 7, 15, 1);
	cr_assert_eq(s.exit_status, 143, "the status is ignored when a signal ended it");
	cr_assert_str_eq(s.exit_signal, "SIGTERM");
	session_set_exited(&s, 0, 0, 1);
	cr_assert_eq(s.exit_status, 0);
	cr_assert_str_eq(s.exit_signal, "", "a clean exit after a signal forgets the signal");
	session_set_exited(&s, 300, 0, 1);
	cr_assert_eq(s.exit_status, SESSION_EXIT_MAX, "out of range is clamped");
	session_set_exited(&s, 0, 500, 1);
	cr_assert_eq(s.exit_status, SESSION_EXIT_MAX);
}

Test(session, exited_api_form)
{
	struct session s;
	json_object *o, *v;

	full_session(&s);
	session_set_exited(&s, 0, 9, 1773397900);
	o = session_to_json(&s, false);
	cr_assert(json_object_object_get_ex(o, "state", &v));
	cr_assert_str_eq(json_object_get_string(v), "exited");
	cr_assert(json_object_object_get_ex(o, "exitStatus", &v));
	cr_assert(json_object_is_type(v, json_type_int));
	cr_assert_eq(json_object_get_int(v), 137);
	cr_assert(json_object_object_get_ex(o, "exitSignal", &v));
	cr_assert_str_eq(json_object_get_string(v), "SIGKILL");
	cr_assert(json_object_object_get_ex(o, "exitedAt", &v));
	cr_assert_str_eq(json_object_get_string(v), "2026-03-13T10:31:40Z");
	cr_assert_not(json_object_object_get_ex(o, "error", NULL));
	json_object_put(o);

	session_set_exited(&s, 2, 0, 1773397900);
	o = session_to_json(&s, false);
	cr_assert(json_object_object_get_ex(o, "exitStatus", &v));
	cr_assert_eq(json_object_get_int(v), 2);
	cr_assert_not(json_object_object_get_ex(o, "exitSignal", NULL),
		      "exitSignal only when a signal ended the agent");
	json_object_put(o);
}

/* An exited disk record (caller puts it). */
static json_object *exited_record(void)
{
	struct session s;

	full_session(&s);
	session_set_exited(&s, 0, 9, 1773397900);
	return session_to_json(&s, true);
}

Test(session, from_json_exited_requires_its_fields)
{
	const char *required[] = {"exitStatus", "exitedAt"};

	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		json_object *o = exited_record();

		json_object_object_del(o, required[i]);
		expect_rejected(o, required[i], required[i]);
		json_object_put(o);
	}
	{
		/* exitSignal is optional: an agent that exited by itself has none. */
		json_object *o = exited_record();
		struct session s;
		struct cause c = {{0}};

		json_object_object_del(o, "exitSignal");
		cr_assert_eq(session_from_json(&s, o, &c), 0, "%s", c.msg);
		cr_assert_eq(s.state, SESSION_EXITED);
		cr_assert_eq(s.exit_status, 137);
		cr_assert_str_eq(s.exit_signal, "");
		json_object_put(o);
	}
}

Test(session, from_json_exit_fields_bad_values)
{
	json_object *values_status[] = {
	    json_object_new_int(-1),       json_object_new_int(256),
	    json_object_new_string("3"),   json_object_new_double(3.5),
	    json_object_new_boolean(true), json_object_new_int64(4294967296LL),
	};
	json_object *values_signal[] = {
	    json_object_new_string("KILL"),  json_object_new_string("SIGkill"),
	    json_object_new_string("SIG"),   json_object_new_string("SIGKILLKILLKILLX"),
	    json_object_new_int(9),          json_object_new_string("SIG KILL"),
	    json_object_new_string("SIG\n"), json_object_new_string(""),
	};
	json_object *values_time[] = {
	    json_object_new_string("yesterday"),
	    json_object_new_int(1773397900),
	    json_object_new_string("2026-03-13T10:31:40"),
	};

	for (size_t i = 0; i < sizeof(values_status) / sizeof(values_status[0]); i++) {
		json_object *o = exited_record();

		json_object_object_add(o, "exitStatus", values_status[i]);
		expect_rejected(o, "exitStatus", "exitStatus");
		json_object_put(o);
	}
	for (size_t i = 0; i < sizeof(values_signal) / sizeof(values_signal[0]); i++) {
		json_object *o = exited_record();

		json_object_object_add(o, "exitSignal", values_signal[i]);
		expect_rejected(o, "exitSignal", "exitSignal");
		json_object_put(o);
	}
	for (size_t i = 0; i < sizeof(values_time) / sizeof(values_time[0]); i++) {
		json_object *o = exited_record();

		json_object_object_add(o, "exitedAt", values_time[i]);
		expect_rejected(o, "exitedAt", "exitedAt");
		json_object_put(o);
	}
	{
		/* Checked in any state, not only when exited. */
		json_object *o = base_record();

		json_object_object_add(o, "exitStatus", json_object_new_int(999));
		expect_rejected(o, "exitStatus on a failed record", "exitStatus");
		json_object_put(o);
	}
}

Test(session, lost_keeps_its_reason)
{
	struct session a, b;
	struct cause c = {{0}};
	json_object *o, *back, *v;

	full_session(&a);
	a.state = SESSION_LOST;
	snprintf(a.error, sizeof(a.error), "tmux session x is gone");
	o = session_to_json(&a, false);
	cr_assert(json_object_object_get_ex(o, "error", &v));
	cr_assert_str_eq(json_object_get_string(v), "tmux session x is gone");
	json_object_put(o);
	o = session_to_json(&a, true);
	back = reparse(o);
	cr_assert_eq(session_from_json(&b, back, &c), 0, "%s", c.msg);
	assert_same_session(&a, &b);
	json_object_put(o);
	json_object_put(back);
}

Test(session, holds_slot)
{
	for (int st = SESSION_CREATING; st <= SESSION_LOST; st++)
		cr_assert_eq(session_holds_slot((enum session_state)st),
			     st != SESSION_FAILED && st != SESSION_LOST, "state %d", st);
}

Test(session, unavailable_says_why)
{
	struct session s;
	char msg[SESSION_ERROR_MAX + 128];

	full_session(&s);
	for (int st = SESSION_CREATING; st <= SESSION_ATTACHED; st++) {
		s.state = (enum session_state)st;
		cr_assert_null(session_unavailable(&s, msg, sizeof(msg)), "state %d", st);
	}
	s.state = SESSION_STOPPING;
	cr_assert_str_eq(session_unavailable(&s, msg, sizeof(msg)), "not_running");
	s.state = SESSION_FAILED;
	cr_assert_str_eq(session_unavailable(&s, msg, sizeof(msg)), "not_running");
	cr_assert_not_null(strstr(msg, s.error));
	session_set_exited(&s, 0, 9, 1773397900);
	cr_assert_str_eq(session_unavailable(&s, msg, sizeof(msg)), "agent_exited");
	cr_assert_not_null(strstr(msg, "status 137 by SIGKILL at 2026-03-13T10:31:40Z"), "%s", msg);
	s.state = SESSION_LOST;
	snprintf(s.error, sizeof(s.error), "tmux session x is gone");
	cr_assert_str_eq(session_unavailable(&s, msg, sizeof(msg)), "session_lost");
	cr_assert_not_null(strstr(msg, "tmux session x is gone"), "%s", msg);
}

Test(session, parse_create_body)
{
	struct session_create in;
	struct cause c = {{0}};
	json_object *ok =
	    json_tokener_parse("{\"repo\":{\"owner\":\"acme\",\"name\":\"a.b\"},"
			       "\"issue\":7,\"mode\":\"structured\",\"prompt\":\"go\"}");
	const char *bad[] = {
	    "[]",
	    "{\"repo\":{\"owner\":\"acme\",\"name\":\"w\"}}",
	    "{\"repo\":{\"owner\":\"-acme\",\"name\":\"w\"},\"issue\":1}",
	    "{\"repo\":{\"owner\":\"acme\",\"name\":\"w.git\"},\"issue\":1}",
	    "{\"repo\":{\"owner\":\"acme\",\"name\":\"w\"},\"issue\":0}",
	    "{\"repo\":{\"owner\":\"acme\",\"name\":\"w\"},\"issue\":\"1\"}",
	    "{\"repo\":{\"owner\":\"acme\",\"name\":\"w\"},\"issue\":1,\"mode\":\"tui\"}",
	    "{\"repo\":{\"owner\":\"acme\",\"name\":\"w\"},\"issue\":1,\"prompt\":\"a\\u0000b\"}",
	};

	cr_assert_eq(session_parse_create(ok, &in, &c), 0, "%s", c.msg);
	cr_assert_str_eq(in.owner, "acme");
	cr_assert_str_eq(in.name, "a.b");
	cr_assert_eq(in.issue, 7);
	cr_assert_eq(in.mode, SESSION_STRUCTURED);
	cr_assert_str_eq(in.prompt, "go");
	json_object_put(ok);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_object *o = json_tokener_parse(bad[i]);

		c.msg[0] = '\0';
		cr_assert_eq(session_parse_create(o, &in, &c), -EINVAL, "accepted %s", bad[i]);
		cr_assert(c.msg[0] != '\0');
		json_object_put(o);
	}
}

/* ---- activity and pending (the attention hub's fields) ---- */

static json_object *api_form(struct session *s)
{
	return session_to_json(s, false);
}

Test(session, activity_api_form_follows_the_state)
{
	struct session s;
	json_object *o, *v;

	memset(&s, 0, sizeof(s));
	cr_assert_eq(session_init(&s, "/code", "o", "r", 7), 0);
	s.state = SESSION_RUNNING;
	s.activity = SESSION_WAITING;
	s.activity_at = 1773397872005;
	s.n_pending = 1;
	snprintf(s.pending[0].request_id, sizeof(s.pending[0].request_id), "r1");
	snprintf(s.pending[0].tool_name, sizeof(s.pending[0].tool_name), "Bash");
	o = api_form(&s);
	cr_assert(json_object_object_get_ex(o, "activity", &v));
	cr_assert_str_eq(json_object_get_string(v), "waiting");
	cr_assert(json_object_object_get_ex(o, "activityAt", &v));
	cr_assert_str_eq(json_object_get_string(v), "2026-03-13T10:31:12.005Z");
	cr_assert(json_object_object_get_ex(o, "pending", &v));
	cr_assert_eq(json_object_array_length(v), 1);
	cr_assert(!json_object_object_get_ex(o, "hostEvent", NULL), "hostEvent is disk only");
	cr_assert(!json_object_object_get_ex(o, "launch", NULL), "launch is disk only");
	cr_assert(!json_object_object_get_ex(o, "pendingLaunch", NULL), "pendingLaunch too");
	json_object_put(o);
	/* No running agent: exited, and nothing listed (its requests went with it). */
	s.state = SESSION_EXITED;
	o = api_form(&s);
	cr_assert(json_object_object_get_ex(o, "activity", &v));
	cr_assert_str_eq(json_object_get_string(v), "exited");
	cr_assert(json_object_object_get_ex(o, "pending", &v));
	cr_assert_eq(json_object_array_length(v), 0);
	json_object_put(o);
	/* The disk form keeps the stored activity, and reads back. */
	o = session_to_json(&s, true);
	cr_assert(json_object_object_get_ex(o, "activity", &v));
	cr_assert_str_eq(json_object_get_string(v), "waiting");
	json_object_put(o);
}

Test(session, attention_fields_are_optional_and_checked)
{
	static const char *const bad[] = {
	    "\"activity\":\"exited\"",
	    "\"activity\":3",
	    "\"activityAt\":\"2026-03-13T10:31:12Z\"",
	    "\"activityAt\":\"2026-03-13T10:31:12.5Z\"",
	    "\"pending\":{}",
	    "\"pending\":[1]",
	    "\"pending\":[{\"requestId\":\"a b\",\"toolName\":\"x\",\"description\":\"\"}]",
	    "\"pending\":[{\"requestId\":\"a\",\"description\":\"\"}]",
	    "\"hostEvent\":-1",
	    "\"hostEvent\":\"1\"",
	    "\"pendingLaunch\":-1",
	    "\"pendingLaunch\":4294967296",
	    "\"pendingLaunch\":true",
	    "\"launch\":-1",
	    "\"launch\":4294967296",
	    "\"launch\":\"2\"",
	};
	struct session s, back;
	json_object *o;
	const char *text;
	char buf[8192];

	memset(&s, 0, sizeof(s));
	cr_assert_eq(session_init(&s, "/code", "o", "r", 7), 0);
	o = session_to_json(&s, true);
	json_object_object_del(o, "activity");
	json_object_object_del(o, "activityAt");
	json_object_object_del(o, "pending");
	json_object_object_del(o, "hostEvent");
	json_object_object_del(o, "launch");
	json_object_object_del(o, "pendingLaunch");
	cr_assert_eq(session_from_json(&back, o, NULL), 0, "a record from before the fields");
	cr_assert_eq(back.launch, 0);
	cr_assert_eq(back.pending_launch, 0);
	cr_assert_eq(back.activity, SESSION_IDLE);
	cr_assert_eq(back.activity_at, back.updated_at * 1000);
	cr_assert_eq(back.n_pending, 0);
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cause cause = {{0}};
		json_object *b;

		/* Insert the bad member after the opening brace. */
		snprintf(buf, sizeof(buf), "{%s,%s", bad[i], text + 1);
		b = json_tokener_parse(buf);
		cr_assert_not_null(b, "%s", buf);
		cr_assert_eq(session_from_json(&back, b, &cause), -EINVAL, "accepted %s", bad[i]);
		cr_assert_neq(cause.msg[0], '\0');
		json_object_put(b);
	}
	json_object_put(o);
}

Test(session, too_many_pending_is_refused)
{
	struct session s, back;
	json_object *o, *arr;

	memset(&s, 0, sizeof(s));
	cr_assert_eq(session_init(&s, "/code", "o", "r", 7), 0);
	o = session_to_json(&s, true);
	arr = json_object_new_array();
	for (int i = 0; i <= SESSION_PENDING_MAX; i++) {
		json_object *p = json_object_new_object();

		json_object_object_add(p, "requestId", json_object_new_string("r"));
		json_object_object_add(p, "toolName", json_object_new_string("Bash"));
		json_object_object_add(p, "description", json_object_new_string(""));
		json_object_array_add(arr, p);
	}
	json_object_object_add(o, "pending", arr);
	cr_assert_eq(session_from_json(&back, o, NULL), -EINVAL);
	json_object_put(o);
}

Test(session, copy_cut_never_splits_a_character)
{
	char out[6];

	session_copy_cut(out, sizeof(out), "abcd\xc3\xa9z"); /* é at bytes 4-5 */
	cr_assert_str_eq(out, "abcd");
	session_copy_cut(out, sizeof(out), "ab");
	cr_assert_str_eq(out, "ab");
	session_copy_cut(out, sizeof(out), "abcdefgh");
	cr_assert_str_eq(out, "abcde");
	session_copy_cut(out, 4, "\xe2\x82\xac!");
	cr_assert_str_eq(out, "\xe2\x82\xac");
}

Test(session, launch_counts_claude_starts)
{
	struct session s;

	memset(&s, 0, sizeof(s));
	session_launch(&s);
	cr_assert(s.launched, "a started claude resumes its conversation next time");
	cr_assert_eq(s.launch, 1);
	session_launch(&s);
	cr_assert_eq(s.launch, 2, "each start is another launch");
}

/* ---- limits (the session's share, core/cgroup.h) and exitReason ---- */

static const struct cgroup_limits test_max = {
    .memory_max = 4ULL << 30, .cpu_milli = 2000, .tasks_max = 4096};

Test(session, parse_limits_takes_each_up_to_the_maximum)
{
	struct cgroup_limits l;
	struct cause c = {{0}};
	json_object *o =
	    json_tokener_parse("{\"limits\":{\"memory\":\"2G\",\"cpus\":1.5,\"tasks\":1024}}");

	cr_assert_eq(session_parse_limits(o, &test_max, &l, &c), 0, "%s", c.msg);
	cr_assert_eq(l.memory_max, 2ULL << 30);
	cr_assert_eq(l.cpu_milli, 1500);
	cr_assert_eq(l.tasks_max, 1024);
	json_object_put(o);

	o = json_tokener_parse("{\"limits\":{\"memory\":268435456,\"cpus\":\"0.5\"}}");
	cr_assert_eq(session_parse_limits(o, &test_max, &l, &c), 0, "%s", c.msg);
	cr_assert_eq(l.memory_max, 256ULL << 20, "bytes as a number");
	cr_assert_eq(l.cpu_milli, 500, "cpus as a string");
	cr_assert_eq(l.tasks_max, 4096, "what is not given is the maximum");
	json_object_put(o);

	o = json_tokener_parse("{\"limits\":{\"cpus\":2}}");
	cr_assert_eq(session_parse_limits(o, &test_max, &l, &c), 0, "%s", c.msg);
	cr_assert_eq(l.cpu_milli, 2000, "an integer number of CPUs; the maximum itself");
	json_object_put(o);

	o = json_tokener_parse("{}");
	cr_assert_eq(session_parse_limits(o, &test_max, &l, &c), 0, "%s", c.msg);
	cr_assert_eq(l.memory_max, test_max.memory_max);
	cr_assert_eq(l.cpu_milli, test_max.cpu_milli);
	cr_assert_eq(l.tasks_max, test_max.tasks_max);
	json_object_put(o);
}

Test(session, parse_limits_refuses_bad_values_and_says_which)
{
	static const struct {
		const char *body, *word;
	} bad[] = {
	    {"{\"limits\":[]}", "limits"},
	    {"{\"limits\":{\"memory\":\"8G\"}}", "memory"},
	    {"{\"limits\":{\"memory\":\"lots\"}}", "memory"},
	    {"{\"limits\":{\"memory\":\"4096\"}}", "memory"},
	    {"{\"limits\":{\"memory\":-1}}", "memory"},
	    {"{\"limits\":{\"memory\":1.5}}", "memory"},
	    {"{\"limits\":{\"cpus\":3}}", "cpus"},
	    {"{\"limits\":{\"cpus\":0}}", "cpus"},
	    {"{\"limits\":{\"cpus\":-1}}", "cpus"},
	    {"{\"limits\":{\"cpus\":true}}", "cpus"},
	    {"{\"limits\":{\"cpus\":0.0001}}", "cpus"},
	    {"{\"limits\":{\"tasks\":4097}}", "tasks"},
	    {"{\"limits\":{\"tasks\":0}}", "tasks"},
	    {"{\"limits\":{\"tasks\":\"10\"}}", "tasks"},
	    {"{\"limits\":{\"disk\":\"1G\"}}", "disk"},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cgroup_limits l = {0};
		struct cause c = {{0}};
		json_object *o = json_tokener_parse(bad[i].body);

		cr_assert_not_null(o, "%s", bad[i].body);
		cr_assert_eq(session_parse_limits(o, &test_max, &l, &c), -EINVAL, "accepted %s",
			     bad[i].body);
		cr_assert(strstr(c.msg, bad[i].word) != NULL, "%s: %s", bad[i].body, c.msg);
		json_object_put(o);
	}
}

Test(session, limits_in_the_api_form)
{
	struct session s;
	json_object *o, *l, *v;

	full_session(&s);
	o = session_to_json(&s, false);
	cr_assert(json_object_object_get_ex(o, "limits", &l));
	cr_assert(json_object_object_get_ex(l, "memory", &v));
	cr_assert(json_object_is_type(v, json_type_int));
	cr_assert_eq(json_object_get_int64(v), 2LL << 30);
	cr_assert(json_object_object_get_ex(l, "cpus", &v));
	cr_assert(json_object_is_type(v, json_type_double) ||
		  json_object_is_type(v, json_type_int));
	cr_assert_float_eq(json_object_get_double(v), 1.5, 1e-9);
	cr_assert(json_object_object_get_ex(l, "tasks", &v));
	cr_assert_eq(json_object_get_int(v), 1024);
	json_object_put(o);

	/* A record written before limits existed has none to show. */
	s.limits = (struct cgroup_limits){0};
	o = session_to_json(&s, false);
	cr_assert_not(json_object_object_get_ex(o, "limits", NULL));
	json_object_put(o);
}

Test(session, limits_of_a_record_are_checked)
{
	static const char *bad[] = {"[]",
				    "{\"memory\":-5}",
				    "{\"memory\":\"2G\"}",
				    "{\"cpus\":-1}",
				    "{\"tasks\":-1}",
				    "{\"tasks\":5000000000}"};
	struct session s, b;
	struct cause c = {{0}};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_object *o;

		full_session(&s);
		o = session_to_json(&s, true);
		json_object_object_add(o, "limits", json_tokener_parse(bad[i]));
		cr_assert_eq(session_from_json(&b, o, &c), -EINVAL, "accepted limits %s", bad[i]);
		cr_assert(strstr(c.msg, "limits") != NULL, "%s", c.msg);
		json_object_put(o);
	}
}

Test(session, exit_reason_from_status_or_signal)
{
	struct session s;
	json_object *o, *v;

	full_session(&s);
	session_set_exited(&s, 3, 0, 1773397900);
	cr_assert_eq(s.exit_reason, SESSION_EXIT_EXIT);
	session_set_exited(&s, 0, 15, 1773397900);
	cr_assert_eq(s.exit_reason, SESSION_EXIT_SIGNAL);
	session_set_exited(&s, -1, 0, 1773397900);
	cr_assert_eq(s.exit_reason, SESSION_EXIT_UNKNOWN, "neither tmux nor the kernel could tell");
	session_set_exited(&s, 0, 9, 1773397900);
	s.exit_reason = SESSION_EXIT_OOM;
	o = session_to_json(&s, false);
	cr_assert(json_object_object_get_ex(o, "exitReason", &v));
	cr_assert_str_eq(json_object_get_string(v), "oom");
	cr_assert(json_object_object_get_ex(o, "exitSignal", &v), "the signal as today");
	cr_assert_str_eq(json_object_get_string(v), "SIGKILL");
	json_object_put(o);

	s.state = SESSION_RUNNING;
	o = session_to_json(&s, false);
	cr_assert_not(json_object_object_get_ex(o, "exitReason", NULL), "only when exited");
	json_object_put(o);
}

Test(session, exit_reason_of_a_record)
{
	struct session s, b;
	struct cause c = {{0}};
	json_object *o;

	/* Records from before exitReason: read from the status and signal they carry. */
	full_session(&s);
	session_set_exited(&s, 0, 9, 1773397900);
	o = session_to_json(&s, true);
	json_object_object_del(o, "exitReason");
	cr_assert_eq(session_from_json(&b, o, &c), 0, "%s", c.msg);
	cr_assert_eq(b.exit_reason, SESSION_EXIT_SIGNAL);
	json_object_object_add(o, "exitReason", json_object_new_string("cosmic ray"));
	cr_assert_eq(session_from_json(&b, o, &c), -EINVAL);
	cr_assert(strstr(c.msg, "exitReason") != NULL, "%s", c.msg);
	json_object_put(o);

	session_set_exited(&s, 2, 0, 1773397900);
	o = session_to_json(&s, true);
	json_object_object_del(o, "exitReason");
	cr_assert_eq(session_from_json(&b, o, &c), 0, "%s", c.msg);
	cr_assert_eq(b.exit_reason, SESSION_EXIT_EXIT);
	json_object_put(o);
}

Test(session, cpus_print_as_given)
{
	static const struct {
		uint32_t milli;
		const char *text;
	} cases[] = {{333, "0.333"}, {1500, "1.5"}, {2000, "2"}, {250, "0.25"}, {1001, "1.001"}};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct session s;
		json_object *o, *l, *v;

		full_session(&s);
		s.limits.cpu_milli = cases[i].milli;
		o = session_to_json(&s, false);
		cr_assert(json_object_object_get_ex(o, "limits", &l));
		cr_assert(json_object_object_get_ex(l, "cpus", &v));
		cr_assert_str_eq(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN),
				 cases[i].text, "%u thousandths", cases[i].milli);
		json_object_put(o);
	}
}

Test(session, uid_kept_in_the_record_shown_and_refused_when_malformed)
{
	struct session a, b;
	struct cause c = {{0}};
	json_object *o, *v;

	cr_assert_eq(session_init(&a, "/code", "o", "n", 1), 0);
	o = session_to_json(&a, false);
	cr_assert(!json_object_object_get_ex(o, "uid", &v), "no uid for an uncaged session");
	json_object_put(o);
	a.uid = 61190;
	o = session_to_json(&a, false);
	cr_assert(json_object_object_get_ex(o, "uid", &v) && json_object_get_int(v) == 61190);
	json_object_put(o);
	o = session_to_json(&a, true);
	cr_assert_eq(session_from_json(&b, o, &c), 0, "cause: %s", c.msg);
	cr_assert_eq(b.uid, 61190, "the record keeps it");
	json_object_object_add(o, "uid", json_object_new_int(70000)); /* past the 16-bit range */
	cr_assert_eq(session_from_json(&b, o, &c), -EINVAL);
	cr_assert(strstr(c.msg, "uid") != NULL, "%s", c.msg);
	json_object_object_add(o, "uid", json_object_new_string("61190"));
	cr_assert_eq(session_from_json(&b, o, NULL), -EINVAL);
	json_object_put(o);
}
