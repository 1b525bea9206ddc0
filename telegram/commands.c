#include "commands.h"

#include "agents.h"
#include "approvals.h"
#include "jsontext.h"
#include "log.h"
#include "render.h"
#include "session.h"
#include "turns.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COMMANDS_WORD_MAX 32
#define COMMANDS_ARGS_MAX 4
#define COMMANDS_ARG_MAX  256
#define COMMANDS_MSG_MAX  2048
/* Files of a /diff summary listed in the chat: the rest are in the document. */
#define COMMANDS_DIFF_FILES_MAX 30
/* Bytes of diff text asked for (GET /sessions/<id>/diff?maxBytes=): JSON-escaped it stays under
 * AGENTC_ANSWER_MAX, and a phone opens the document at once. */
#define COMMANDS_DIFF_TEXT_MAX (384 * 1024)
/* Repositories /new lists: a phone's screen of them, the most recently active first. */
#define COMMANDS_REPOS_MAX 20

#define COMMANDS_HELP                                                                              \
	"/sessions: every session, those waiting for you first\n"                                  \
	"/new owner/name issue [agent] [structured]: create a session (agent: claude, codex, "     \
	"gemini, opencode or one of the server's; default the server's); it becomes this chat's "  \
	"(/new alone lists the repositories here)\n"                                               \
	"/use <id>: make a session this chat's (its permission requests come here)\n"              \
	"/mode terminal|structured: switch this chat's session\n"                                  \
	"/stop [<id>] [force]: delete a session (this chat's by default); force also removes a "   \
	"worktree it would keep\n"                                                                 \
	"/interrupt: end the running turn of this chat's session\n"                                \
	"/diff [<id>]: what the session changed since the default branch, and the diff as a "      \
	"file\n"                                                                                   \
	"/pr [<id>]: push the session's branch and open its pull request (or show it)\n"           \
	"Anything else is a prompt to this chat's session (structured mode)."

struct cmd_call;

/*
 * What a command makes of agent-daemon's answer a (never an aborted request): what it writes into
 * msg (msglen bytes, empty on entry) is said to the chat after it returns; it may also say things
 * itself, before that.
 */
typedef void cmd_answer_fn(struct cmd_call *c, const struct agentc_answer *a, char *msg,
			   size_t msglen);

/* What an answer of agent-daemon is about. */
struct cmd_call {
	struct bot *b;
	int64_t chat;
	int64_t user;
	char session[SESSION_ID_MAX + 1];
	char extra[COMMANDS_ARG_MAX];
	cmd_answer_fn *answer;
};

void commands_word(const char *text, char *out, size_t outlen)
{
	size_t n;

	out[0] = '\0';
	if (text[0] != '/')
		return;
	text++;
	n = strcspn(text, " \t\n@");
	if (n >= outlen)
		return;
	memcpy(out, text, n);
	out[n] = '\0';
}

/* Splits text's arguments (after the command word) on blanks into args. Returns their number,
 * or -1 when there are too many or one is too long. */
static int cmd_args(const char *text, char args[][COMMANDS_ARG_MAX], int max)
{
	const char *p = text + strcspn(text, " \t\n");
	int n = 0;

	for (;;) {
		size_t len;

		p += strspn(p, " \t\n");
		if (*p == '\0')
			return n;
		len = strcspn(p, " \t\n");
		if (n == max || len >= COMMANDS_ARG_MAX)
			return -1;
		memcpy(args[n], p, len);
		args[n][len] = '\0';
		n++;
		p += len;
	}
}

static struct cmd_call *cmd_call(struct bot *b, const struct botapi_update *u, const char *session)
{
	struct cmd_call *c = calloc(1, sizeof(*c));

	if (c == NULL) {
		bot_say(b, u->chat, "Out of memory; try again.");
		return NULL;
	}
	c->b = b;
	c->chat = u->chat;
	c->user = u->user;
	/* Ids are checked before they get here; one that does not fit names no session. */
	if (session != NULL &&
	    snprintf(c->session, sizeof(c->session), "%s", session) >= (int)sizeof(c->session))
		c->session[0] = '\0';
	return c;
}

/* Every command's agentc callback: c->answer's message said, then c freed. */
static void cmd_done(void *arg, const struct agentc_answer *a)
{
	struct cmd_call *c = arg;
	char msg[COMMANDS_MSG_MAX] = "";

	if (!a->aborted) {
		c->answer(c, a, msg, sizeof(msg));
		if (msg[0] != '\0')
			bot_say(c->b, c->chat, msg);
	}
	free(c);
}

/* Sends the request, whose answer goes to answer; on failure to start it says so and frees c. */
static void cmd_send(struct cmd_call *c, const char *method, const char *path, json_object *body,
		     bool for_user, cmd_answer_fn *answer)
{
	c->answer = answer;
	if (agentc_request(c->b->agentd, method, path, body, for_user ? c->user : 0, cmd_done, c) ==
	    NULL) {
		bot_say(c->b, c->chat, "The request could not be sent (out of memory).");
		free(c);
	}
}

/* The chat's session, or NULL after saying there is none. */
static const char *cmd_current(struct bot *b, const struct botapi_update *u)
{
	struct state_chat *c = state_chat(b->st, u->chat, false);

	if (c == NULL || c->current[0] == '\0') {
		bot_say(b, u->chat,
			"This chat has no session: /use <id> picks one, /new owner/name issue "
			"creates one, /sessions lists them.");
		return NULL;
	}
	return c->current;
}

/* The chat uses session from now on (and follows it). */
static void cmd_choose(struct bot *b, int64_t chat, const char *session)
{
	struct state_chat *c = state_chat(b->st, chat, true);

	state_follow(c, session);
	snprintf(c->current, sizeof(c->current), "%s", session);
	bot_changed(b);
}

/* ---- /sessions ---------------------------------------------------------------------------- */

static void cmd_sessions_answer(struct cmd_call *c, const struct agentc_answer *a, char *msg,
				size_t msglen)
{
	struct state_chat *chat = state_chat(c->b->st, c->chat, false);
	struct buf out;

	if (a->status != 200 || a->body == NULL) {
		snprintf(msg, msglen, "The sessions could not be listed: %s", a->err);
		return;
	}
	/* Longer than a msg can be: said here. */
	buf_init(&out, 0);
	if (render_sessions(&out, a->body, chat != NULL ? chat->current : NULL) == 0)
		bot_say(c->b, c->chat, buf_str(&out));
	buf_free(&out);
}

/* ---- /new ------------------------------------------------------------------------------------ */

static void cmd_new_answer(struct cmd_call *c, const struct agentc_answer *a, char *msg,
			   size_t msglen)
{
	const char *id = jsontext_str(a->body, "id"), *state = jsontext_str(a->body, "state");
	const char *mode = jsontext_str(a->body, "mode"), *agent = jsontext_str(a->body, "agent");

	if ((a->status == 201 || a->status == 200) && id != NULL && session_id_valid(id)) {
		cmd_choose(c->b, c->chat, id);
		snprintf(msg, msglen, "%s %s (%s, %s, %s mode). It is this chat's session now: %s",
			 id, a->status == 201 ? "is starting" : "exists already",
			 state ? state : "?", agent ? agent : "claude", mode ? mode : "?",
			 mode != NULL && strcmp(mode, "structured") == 0
			     ? "write to prompt it."
			     : "/mode structured lets you prompt it from here.");
		/* Requests it already waits for (an existing session). */
		approvals_pending(c->b, a->body, NULL, NULL);
	} else {
		snprintf(msg, msglen, "The session was not created: %s", a->err);
	}
}

/* /new alone: GET /repos as lines to copy, "/new owner/name " and the repository's sessions. */
static void cmd_repos_answer(struct cmd_call *c, const struct agentc_answer *a, char *msg,
			     size_t msglen)
{
	size_t n, shown;
	struct buf out;

	if (a->status != 200 || a->body == NULL || !json_object_is_type(a->body, json_type_array)) {
		snprintf(msg, msglen, "The repositories could not be listed: %s", a->err);
		return;
	}
	n = json_object_array_length(a->body);
	if (n == 0) {
		snprintf(msg, msglen,
			 "This server has no repository yet: /new owner/name issue clones one.");
		return;
	}
	buf_init(&out, 0);
	buf_adds(&out, "Repositories here, most recent first (/new owner/name issue):");
	shown = n < COMMANDS_REPOS_MAX ? n : COMMANDS_REPOS_MAX;
	for (size_t i = 0; i < shown; i++) {
		json_object *r = json_object_array_get_idx(a->body, i), *repo, *sessions;
		const char *owner, *name;
		size_t ns;

		if (!json_object_object_get_ex(r, "repo", &repo) ||
		    (owner = jsontext_str(repo, "owner")) == NULL ||
		    (name = jsontext_str(repo, "name")) == NULL)
			continue;
		buf_addf(&out, "\n/new %s/%s", owner, name);
		if (!json_object_object_get_ex(r, "sessions", &sessions) ||
		    (ns = json_object_array_length(sessions)) == 0)
			continue;
		buf_adds(&out, " —");
		for (size_t j = 0; j < ns; j++) {
			json_object *s = json_object_array_get_idx(sessions, j);
			const char *id = jsontext_str(s, "id"), *act = jsontext_str(s, "activity");

			buf_addf(&out, " %s (%s)", id ? id : "?", act ? act : "?");
		}
	}
	if (shown < n)
		buf_addf(&out, "\n… and %zu more", n - shown);
	bot_say(c->b, c->chat, buf_str(&out));
	buf_free(&out);
}

static void cmd_new(struct bot *b, const struct botapi_update *u)
{
	char args[COMMANDS_ARGS_MAX][COMMANDS_ARG_MAX], owner[COMMANDS_ARG_MAX];
	const char *slash, *mode = NULL, *agent = NULL;
	char *end;
	long long issue;
	int n = cmd_args(u->text, args, COMMANDS_ARGS_MAX);
	json_object *body, *repo;
	struct cmd_call *c;

	if (n == 0) {
		if ((c = cmd_call(b, u, NULL)) != NULL)
			cmd_send(c, "GET", "/repos", NULL, false, cmd_repos_answer);
		return;
	}
	if (n < 2 || (slash = strchr(args[0], '/')) == NULL) {
		bot_say(b, u->chat, "Usage: /new owner/name issue [agent] [structured|terminal]");
		return;
	}
	memcpy(owner, args[0], (size_t)(slash - args[0]));
	owner[slash - args[0]] = '\0';
	errno = 0;
	issue = strtoll(args[1], &end, 10);
	if (!session_owner_valid(owner) || !session_name_valid(slash + 1) || errno != 0 ||
	    *end != '\0' || end == args[1] || !session_issue_valid(issue)) {
		bot_say(b, u->chat,
			"That is not owner/name issue (a GitHub owner and repository, an issue "
			"number).");
		return;
	}
	/* After the issue, in any order: a mode, and an agent's name (the server says whether it
	 * knows it, and which it knows). */
	for (int i = 2; i < n; i++) {
		if (strcmp(args[i], "structured") == 0 || strcmp(args[i], "terminal") == 0) {
			if (mode != NULL) {
				bot_say(b, u->chat, "One mode: structured or terminal.");
				return;
			}
			mode = args[i];
		} else if (agent == NULL && agents_name_valid(args[i])) {
			agent = args[i];
		} else {
			bot_say(
			    b, u->chat,
			    "Usage: /new owner/name issue [agent] [structured|terminal]; the agent "
			    "is a name such as claude, codex, gemini or opencode.");
			return;
		}
	}
	if ((c = cmd_call(b, u, NULL)) == NULL)
		return;
	body = json_object_new_object();
	repo = json_object_new_object();
	json_object_object_add(repo, "owner", json_object_new_string(owner));
	json_object_object_add(repo, "name", json_object_new_string(slash + 1));
	json_object_object_add(body, "repo", repo);
	json_object_object_add(body, "issue", json_object_new_int64(issue));
	if (mode != NULL)
		json_object_object_add(body, "mode", json_object_new_string(mode));
	if (agent != NULL)
		json_object_object_add(body, "agent", json_object_new_string(agent));
	cmd_send(c, "POST", "/sessions", body, true, cmd_new_answer);
}

/* ---- /use ------------------------------------------------------------------------------------ */

static void cmd_use_answer(struct cmd_call *c, const struct agentc_answer *a, char *msg,
			   size_t msglen)
{
	if (a->status == 200) {
		const char *mode = jsontext_str(a->body, "mode"),
			   *act = jsontext_str(a->body, "activity");

		cmd_choose(c->b, c->chat, c->session);
		snprintf(msg, msglen, "This chat's session is %s (%s mode, %s).%s", c->session,
			 mode ? mode : "?", act ? act : "?",
			 mode != NULL && strcmp(mode, "structured") == 0
			     ? " Write to prompt it."
			     : " /mode structured lets you prompt it from here.");
		/* Said before the requests it waits for. */
		bot_say(c->b, c->chat, msg);
		msg[0] = '\0';
		approvals_pending(c->b, a->body, NULL, NULL);
	} else if (a->status == 404) {
		snprintf(msg, msglen, "There is no session %s. /sessions lists them.", c->session);
	} else {
		snprintf(msg, msglen, "%s: %s", c->session, a->err);
	}
}

static void cmd_use(struct bot *b, const struct botapi_update *u)
{
	char args[COMMANDS_ARGS_MAX][COMMANDS_ARG_MAX], path[COMMANDS_ARG_MAX + 64];
	struct cmd_call *c;

	if (cmd_args(u->text, args, 1) != 1 || !session_id_valid(args[0])) {
		bot_say(b, u->chat, "Usage: /use <id> (an id of /sessions, such as widgets-42)");
		return;
	}
	if ((c = cmd_call(b, u, args[0])) == NULL)
		return;
	snprintf(path, sizeof(path), "/sessions/%s", args[0]);
	cmd_send(c, "GET", path, NULL, false, cmd_use_answer);
}

/* ---- /mode ----------------------------------------------------------------------------------- */

static void cmd_mode_answer(struct cmd_call *c, const struct agentc_answer *a, char *msg,
			    size_t msglen)
{
	if (a->status == 200)
		snprintf(msg, msglen, "%s is in %s mode now.%s", c->session, c->extra,
			 strcmp(c->extra, "structured") == 0 ? " Write to prompt it." : "");
	else
		snprintf(msg, msglen, "%s stays as it is: %s", c->session, a->err);
}

static void cmd_mode(struct bot *b, const struct botapi_update *u)
{
	char args[COMMANDS_ARGS_MAX][COMMANDS_ARG_MAX], path[COMMANDS_ARG_MAX + 64];
	const char *session;
	struct cmd_call *c;
	json_object *body;

	if (cmd_args(u->text, args, 1) != 1 ||
	    (strcmp(args[0], "terminal") != 0 && strcmp(args[0], "structured") != 0)) {
		bot_say(b, u->chat, "Usage: /mode terminal|structured");
		return;
	}
	if ((session = cmd_current(b, u)) == NULL || (c = cmd_call(b, u, session)) == NULL)
		return;
	snprintf(c->extra, sizeof(c->extra), "%s", args[0]);
	body = json_object_new_object();
	json_object_object_add(body, "mode", json_object_new_string(args[0]));
	snprintf(path, sizeof(path), "/sessions/%s/mode", session);
	cmd_send(c, "POST", path, body, true, cmd_mode_answer);
}

/* ---- /stop ----------------------------------------------------------------------------------- */

static void cmd_stop_answer(struct cmd_call *c, const struct agentc_answer *a, char *msg,
			    size_t msglen)
{
	const char *wt = jsontext_str(a->body, "worktree"),
		   *reason = jsontext_str(a->body, "reason");
	const char *kept_ref = jsontext_str(a->body, "keptRef");
	json_object *v;

	if (a->status != 200) {
		snprintf(msg, msglen, "%s was not stopped: %s", c->session, a->err);
		return;
	}
	state_unfollow_all(c->b->st, c->session);
	bot_changed(c->b);
	if (wt != NULL && strcmp(wt, "kept") == 0)
		snprintf(msg, msglen,
			 "%s is stopped. Its worktree is kept: %s. /stop %s force removes it "
			 "anyway (its commits stay under refs/agentd/kept/).",
			 c->session, reason ? reason : "it would lose work", c->session);
	else if (wt != NULL && strcmp(wt, "removed") == 0)
		snprintf(msg, msglen, "%s is stopped and its worktree removed%s%s%s.", c->session,
			 json_object_object_get_ex(a->body, "ignoredRemoved", &v) &&
				 json_object_get_int64(v) > 0
			     ? " (with its ignored files)"
			     : "",
			 kept_ref != NULL ? "; its commits are kept as " : "",
			 kept_ref != NULL ? kept_ref : "");
	else
		snprintf(msg, msglen, "%s is stopped (it had no worktree).", c->session);
}

static void cmd_stop(struct bot *b, const struct botapi_update *u)
{
	char args[COMMANDS_ARGS_MAX][COMMANDS_ARG_MAX], path[COMMANDS_ARG_MAX + 64];
	const char *session = NULL;
	bool force = false;
	struct cmd_call *c;
	int n = cmd_args(u->text, args, 2);

	for (int i = 0; i < n; i++) {
		if (strcmp(args[i], "force") == 0 && !force)
			force = true;
		else if (session == NULL && session_id_valid(args[i]))
			session = args[i];
		else
			n = -1;
	}
	if (n < 0) {
		bot_say(b, u->chat, "Usage: /stop [<id>] [force]");
		return;
	}
	if (session == NULL && (session = cmd_current(b, u)) == NULL)
		return;
	if (snprintf(path, sizeof(path), "/sessions/%s%s", session, force ? "?force=true" : "") >=
	    (int)sizeof(path))
		return;
	if ((c = cmd_call(b, u, session)) == NULL)
		return;
	cmd_send(c, "DELETE", path, NULL, true, cmd_stop_answer);
}

/* ---- /interrupt ------------------------------------------------------------------------------ */

static void cmd_interrupt_answer(struct cmd_call *c, const struct agentc_answer *a, char *msg,
				 size_t msglen)
{
	if (a->status == 200)
		snprintf(msg, msglen, "%s: interrupted; its turn ends now.", c->session);
	else
		snprintf(msg, msglen, "%s: %s", c->session, a->err);
}

static void cmd_interrupt(struct bot *b, const struct botapi_update *u)
{
	char path[COMMANDS_ARG_MAX + 64];
	const char *session;
	struct cmd_call *c;

	if ((session = cmd_current(b, u)) == NULL || (c = cmd_call(b, u, session)) == NULL)
		return;
	snprintf(path, sizeof(path), "/sessions/%s/interrupt", session);
	cmd_send(c, "POST", path, NULL, true, cmd_interrupt_answer);
}

/* ---- /diff ------------------------------------------------------------------------------------
 */

/* The chat a document goes to, for the answer of sendDocument. */
struct cmd_doc {
	struct bot *b;
	int64_t chat;
	char session[SESSION_ID_MAX + 1];
};

static void cmd_diff_sent(void *arg, const struct botapi_answer *a)
{
	struct cmd_doc *d = arg;
	char msg[COMMANDS_MSG_MAX];

	if (!a->ok && !a->aborted) {
		snprintf(msg, sizeof(msg), "%s: the diff could not be sent as a file: %s",
			 d->session, a->description[0] != '\0' ? a->description : "no answer");
		bot_say(d->b, d->chat, msg);
	}
	free(d);
}

/* The summary of a GET /sessions/<id>/diff answer: totals, base, the first files, what was cut. */
static void cmd_diff_summary(struct buf *out, const char *session, json_object *d)
{
	json_object *totals = json_object_object_get(d, "totals"),
		    *files = json_object_object_get(d, "files"),
		    *trunc = json_object_object_get(d, "truncated"),
		    *base = json_object_object_get(d, "base");
	const char *ref = jsontext_str(base, "ref"), *commit = jsontext_str(base, "commit");
	int64_t nfiles = json_object_get_int64(json_object_object_get(totals, "files"));
	size_t listed = json_object_array_length(files);

	buf_addf(out,
		 "%s: %" PRId64 " file%s changed, +%" PRId64 " \u2212%" PRId64
		 " against %s%s%.7s%s",
		 session, nfiles, nfiles == 1 ? "" : "s",
		 json_object_get_int64(json_object_object_get(totals, "additions")),
		 json_object_get_int64(json_object_object_get(totals, "deletions")),
		 ref != NULL ? ref : "?", commit != NULL ? " (" : "", commit != NULL ? commit : "",
		 commit != NULL ? ")" : "");
	for (size_t i = 0; i < listed && i < COMMANDS_DIFF_FILES_MAX; i++) {
		json_object *f = json_object_array_get_idx(files, i);
		const char *status = jsontext_str(f, "status");

		buf_addf(out, "\n%c %s ", status != NULL ? (char)(status[0] - 'a' + 'A') : '?',
			 jsontext_str(f, "path") ? jsontext_str(f, "path") : "?");
		json_object *counted = json_object_object_get(f, "counted");

		if (counted != NULL && !json_object_get_boolean(counted))
			buf_adds(out, "(not read)");
		else if (json_object_get_boolean(json_object_object_get(f, "binary")))
			buf_adds(out, json_object_get_boolean(json_object_object_get(f, "tooLarge"))
					  ? "(too large)"
					  : "(binary)");
		else
			buf_addf(out, "+%" PRId64 " \u2212%" PRId64,
				 json_object_get_int64(json_object_object_get(f, "additions")),
				 json_object_get_int64(json_object_object_get(f, "deletions")));
	}
	if ((int64_t)listed > COMMANDS_DIFF_FILES_MAX)
		buf_addf(out, "\n\u2026 and %" PRId64 " more", nfiles - COMMANDS_DIFF_FILES_MAX);
	if (json_object_get_boolean(json_object_object_get(trunc, "diff")))
		buf_addf(out,
			 "\nThe file holds the first %d KiB of the diff: the web UI shows more.",
			 COMMANDS_DIFF_TEXT_MAX / 1024);
}

static void cmd_diff_answer(struct cmd_call *c, const struct agentc_answer *a, char *msg,
			    size_t msglen)
{
	const char *text = a->body != NULL ? jsontext_str(a->body, "diff") : NULL;
	char filename[SESSION_ID_MAX + 8], caption[SESSION_ID_MAX + 64];
	struct cmd_doc *d;
	struct buf out;

	if (a->status != 200 || a->body == NULL) {
		snprintf(msg, msglen, "%s: no diff: %s", c->session, a->err);
		return;
	}
	buf_init(&out, 0);
	cmd_diff_summary(&out, c->session, a->body);
	bot_say(c->b, c->chat, buf_str(&out));
	buf_free(&out);
	if (text == NULL || text[0] == '\0')
		return;
	if ((d = calloc(1, sizeof(*d))) == NULL) {
		snprintf(msg, msglen, "%s: the diff could not be sent (out of memory).",
			 c->session);
		return;
	}
	d->b = c->b;
	d->chat = c->chat;
	snprintf(d->session, sizeof(d->session), "%s", c->session);
	snprintf(filename, sizeof(filename), "%s.diff", c->session);
	snprintf(caption, sizeof(caption), "%s: the diff", c->session);
	if (botapi_send_document(c->b->api, c->chat, filename, text, strlen(text), caption,
				 cmd_diff_sent, d) == NULL) {
		free(d);
		snprintf(msg, msglen, "%s: the diff could not be sent (out of memory).",
			 c->session);
	}
}

static void cmd_diff(struct bot *b, const struct botapi_update *u)
{
	char args[COMMANDS_ARGS_MAX][COMMANDS_ARG_MAX], path[COMMANDS_ARG_MAX + 64];
	const char *session = NULL;
	struct cmd_call *c;
	int n = cmd_args(u->text, args, 1);

	if (n < 0 || (n == 1 && !session_id_valid(args[0]))) {
		bot_say(b, u->chat, "Usage: /diff [<id>]");
		return;
	}
	if (n == 1)
		session = args[0];
	else if ((session = cmd_current(b, u)) == NULL)
		return;
	if (snprintf(path, sizeof(path), "/sessions/%s/diff?maxBytes=%d", session,
		     COMMANDS_DIFF_TEXT_MAX) >= (int)sizeof(path) ||
	    (c = cmd_call(b, u, session)) == NULL)
		return;
	cmd_send(c, "GET", path, NULL, false, cmd_diff_answer);
}

/* ---- /pr ------------------------------------------------------------------------------------- */

static void cmd_pr_answer(struct cmd_call *c, const struct agentc_answer *a, char *msg,
			  size_t msglen)
{
	json_object *pr = NULL, *repo = NULL, *checks = NULL;
	const char *state, *cs;

	if ((a->status != 200 && a->status != 201) ||
	    !json_object_object_get_ex(a->body, "pr", &pr) ||
	    !json_object_object_get_ex(a->body, "repo", &repo)) {
		snprintf(msg, msglen, "%s: no pull request: %s", c->session, a->err);
		return;
	}
	json_object_object_get_ex(pr, "checks", &checks);
	state = jsontext_str(pr, "state");
	cs = jsontext_str(checks, "state");
	snprintf(msg, msglen, "%s: pull request %s/%s#%" PRId64 " %s (%s, checks %s)\n%s",
		 c->session, jsontext_str(repo, "owner"), jsontext_str(repo, "name"),
		 json_object_get_int64(json_object_object_get(pr, "number")),
		 a->status == 201 ? "opened" : "exists", state ? state : "?", cs ? cs : "?",
		 jsontext_str(pr, "url") ? jsontext_str(pr, "url") : "");
}

/* /pr [<id>]: pushes the session's branch and opens its pull request (or shows the one it has). */
static void cmd_pr(struct bot *b, const struct botapi_update *u)
{
	char args[COMMANDS_ARGS_MAX][COMMANDS_ARG_MAX], path[COMMANDS_ARG_MAX + 64];
	const char *session = NULL;
	struct cmd_call *c;
	int n = cmd_args(u->text, args, 1);

	if (n < 0 || (n == 1 && !session_id_valid(args[0]))) {
		bot_say(b, u->chat, "Usage: /pr [<id>]");
		return;
	}
	if (n == 1)
		session = args[0];
	else if ((session = cmd_current(b, u)) == NULL)
		return;
	if (snprintf(path, sizeof(path), "/sessions/%s/pr", session) >= (int)sizeof(path) ||
	    (c = cmd_call(b, u, session)) == NULL)
		return;
	cmd_send(c, "POST", path, NULL, true, cmd_pr_answer);
}

/* ---- dispatch -------------------------------------------------------------------------------- */

void commands_message(struct bot *b, const struct botapi_update *u)
{
	char word[COMMANDS_WORD_MAX];
	const char *session;

	commands_word(u->text, word, sizeof(word));
	if (u->text[0] != '/') {
		if (strlen(u->text) > COMMANDS_PROMPT_MAX) {
			bot_say(b, u->chat, "That prompt is too long for agent-daemon (8 KiB).");
			return;
		}
		if ((session = cmd_current(b, u)) != NULL)
			turns_prompt(b, u->chat, u->user, session, u->text);
		return;
	}
	if (strcmp(word, "sessions") == 0) {
		struct cmd_call *c = cmd_call(b, u, NULL);

		if (c != NULL)
			cmd_send(c, "GET", "/sessions", NULL, false, cmd_sessions_answer);
	} else if (strcmp(word, "new") == 0) {
		cmd_new(b, u);
	} else if (strcmp(word, "use") == 0) {
		cmd_use(b, u);
	} else if (strcmp(word, "mode") == 0) {
		cmd_mode(b, u);
	} else if (strcmp(word, "stop") == 0) {
		cmd_stop(b, u);
	} else if (strcmp(word, "interrupt") == 0) {
		cmd_interrupt(b, u);
	} else if (strcmp(word, "diff") == 0) {
		cmd_diff(b, u);
	} else if (strcmp(word, "pr") == 0) {
		cmd_pr(b, u);
	} else if (strcmp(word, "help") == 0 || strcmp(word, "start") == 0) {
		bot_say(b, u->chat, COMMANDS_HELP);
	} else {
		char msg[128];

		snprintf(msg, sizeof(msg), "Unknown command /%s. /help lists them.", word);
		bot_say(b, u->chat, msg);
	}
}
