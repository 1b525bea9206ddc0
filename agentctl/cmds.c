#include "cmds.h"

#include "agentc.h"
#include "eventnames.h"
#include "isotime.h"
#include "sigfd.h"
#include "xfer.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CTL_PATH_MAX 512
#define CTL_ROUND_MS 200 /* a round of the loop: how soon a quiet period or a signal is noticed */

struct ctl {
	struct xfer_loop *loop;
	struct agentc *c;
	int sigfd;
	bool interrupted;
};

/* A request's answer, kept past its callback. */
struct ctl_call {
	bool done;
	struct agentc_answer a;
	json_object *body; /* a reference of our own, or NULL */
};

/* A stream being printed. */
struct ctl_stream {
	struct ctl *ctl;
	const struct ctl_args *args;
	struct agentc_stream *s;
	bool ended;
	long status;   /* the stream's answer (0: none) */
	int rc;        /* what the command exits with, once ended */
	bool result;   /* prompt: the turn's result came */
	bool snapshot; /* events: the snapshot came */
	int64_t last_ms;
	char err[AGENTC_ERROR_MAX + 80]; /* the sentence and its code */
};

int ctl_exit_for_status(long status)
{
	if (status >= 200 && status < 300)
		return CTL_EXIT_OK;
	if (status == 404)
		return CTL_EXIT_NOT_FOUND;
	if (status == 401 || status == 403)
		return CTL_EXIT_DENIED;
	return CTL_EXIT_FAILURE;
}

static int64_t ctl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One round of the loop; a signal marks the end. */
static int ctl_round(struct ctl *ctl)
{
	bool sig = false;
	int r = xfer_loop_run_once(ctl->loop, CTL_ROUND_MS, ctl->sigfd, &sig);

	while (sig && sigfd_next(ctl->sigfd) > 0)
		ctl->interrupted = true;
	agentc_dispatch(ctl->c);
	return r;
}

static void ctl_call_done(void *arg, const struct agentc_answer *a)
{
	struct ctl_call *call = arg;

	call->done = true;
	call->a = *a;
	call->a.body = NULL;
	call->body = a->body != NULL ? json_object_get(a->body) : NULL;
}

static void ctl_call_finish(struct ctl_call *call)
{
	json_object_put(call->body);
	call->body = NULL;
}

/* Makes a request and waits for its answer. Returns 0 or -EIO / -EINTR / -ENOMEM (printed). */
static int ctl_call(struct ctl *ctl, const char *method, const char *path, json_object *body,
		    struct ctl_call *call)
{
	memset(call, 0, sizeof(*call));
	if (agentc_request(ctl->c, method, path, body, 0, ctl_call_done, call) == NULL) {
		fprintf(stderr, "agentctl: %s\n", strerror(errno));
		return -ENOMEM;
	}
	while (!call->done) {
		/* Ending the loop (not cancelling x) calls back, which frees the request. */
		if (ctl_round(ctl) < 0) {
			fprintf(stderr, "agentctl: the network loop failed\n");
			xfer_loop_finish(ctl->loop);
			ctl_call_finish(call);
			return -EIO;
		}
		if (ctl->interrupted && !call->done) {
			xfer_loop_finish(ctl->loop);
			ctl_call_finish(call);
			return -EINTR;
		}
	}
	return 0;
}

/* Reports a failed answer on stderr and returns its exit code (CTL_EXIT_OK for a 2xx). */
static int ctl_report(const struct ctl_call *call, const char *what)
{
	int rc = ctl_exit_for_status(call->a.status);

	if (rc != CTL_EXIT_OK)
		fprintf(stderr, "agentctl: %s: %s%s%s%s\n", what, call->a.err,
			call->a.code[0] ? " (" : "", call->a.code, call->a.code[0] ? ")" : "");
	return rc;
}

static const char *ctl_str(json_object *o, const char *key, const char *dflt)
{
	json_object *v;

	if (o != NULL && json_object_object_get_ex(o, key, &v) &&
	    json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return dflt;
}

static void ctl_print_json(json_object *o, FILE *f)
{
	fprintf(f, "%s\n",
		json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
						      JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* ---- ls ------------------------------------------------------------------------------------ */

void ctl_age(long long secs, char *out, size_t size)
{
	if (secs < 0)
		secs = 0;
	if (secs < 60)
		snprintf(out, size, "%llds", secs);
	else if (secs < 3600)
		snprintf(out, size, "%lldm", secs / 60);
	else if (secs < 86400)
		snprintf(out, size, "%lldh", secs / 3600);
	else
		snprintf(out, size, "%lldd", secs / 86400);
}

static int ctl_ls_group(json_object *s)
{
	const char *act = ctl_str(s, "activity", "");

	if (strcmp(act, "waiting") == 0)
		return 0;
	if (strcmp(act, "working") == 0)
		return 1;
	if (strcmp(act, "idle") == 0)
		return 2;
	return 3;
}

static bool ctl_ls_live(json_object *s)
{
	const char *st = ctl_str(s, "state", "");

	return strcmp(st, "creating") == 0 || strcmp(st, "running") == 0 ||
	       strcmp(st, "attached") == 0;
}

json_object *ctl_ls_order(json_object *sessions, bool all)
{
	json_object *out = json_object_new_array();
	size_t n =
	    json_object_is_type(sessions, json_type_array) ? json_object_array_length(sessions) : 0;

	if (out == NULL)
		return NULL;
	for (int g = 0; g < 4; g++)
		for (size_t i = 0; i < n; i++) {
			json_object *s = json_object_array_get_idx(sessions, i);

			if (!json_object_is_type(s, json_type_object) || ctl_ls_group(s) != g ||
			    (!all && !ctl_ls_live(s)))
				continue;
			json_object_array_add(out, json_object_get(s));
		}
	return out;
}

/* The cost of a session when it is known (cost.usd once a turn was counted): cents, or a
 * ten-thousandth below a cent, so a cheap session does not read as free. */
static void ctl_ls_cost(json_object *s, char *out, size_t size)
{
	json_object *c, *v, *turns;
	double usd;

	if (!json_object_object_get_ex(s, "cost", &c) || !json_object_object_get_ex(c, "usd", &v) ||
	    !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)) ||
	    ((usd = json_object_get_double(v)) == 0 &&
	     !(json_object_object_get_ex(c, "turns", &turns) &&
	       json_object_get_int64(turns) > 0))) {
		snprintf(out, size, "-");
		return;
	}
	snprintf(out, size, usd > 0 && usd < 0.01 ? "$%.4f" : "$%.2f", usd);
}

static int ctl_ls(struct ctl *ctl, const struct ctl_args *args)
{
	struct ctl_call call;
	json_object *list = NULL;
	int64_t now = (int64_t)time(NULL);
	int rc;

	if (ctl_call(ctl, "GET", "/sessions", NULL, &call) < 0)
		return CTL_EXIT_FAILURE;
	if ((rc = ctl_report(&call, "GET /sessions")) != CTL_EXIT_OK)
		goto out;
	list = ctl_ls_order(call.body, args->all);
	if (list == NULL) {
		rc = CTL_EXIT_FAILURE;
		goto out;
	}
	if (args->json) {
		ctl_print_json(list, stdout);
		goto out;
	}
	printf("%-32s %-9s %-8s %-8s %-10s %5s %7s %7s %8s\n", "ID", "STATE", "ACTIVITY", "AGENT",
	       "MODE", "AGE", "PENDING", "COST", "RESTARTS");
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		json_object *s = json_object_array_get_idx(list, i), *pending;
		char age[16] = "-", cost[32];
		int64_t t;
		size_t np = 0;

		if (isotime_parse(ctl_str(s, "createdAt", ""), &t) == 0)
			ctl_age((long long)(now - t), age, sizeof(age));
		if (json_object_object_get_ex(s, "pending", &pending) &&
		    json_object_is_type(pending, json_type_array))
			np = json_object_array_length(pending);
		ctl_ls_cost(s, cost, sizeof(cost));
		json_object *restarts = NULL;

		/* The restart policy's count (absent in a session made before policies). */
		json_object_object_get_ex(s, "restarts", &restarts);
		printf("%-32s %-9s %-8s %-8s %-10s %5s %7zu %7s %8" PRId64 "\n",
		       ctl_str(s, "id", "?"), ctl_str(s, "state", "?"), ctl_str(s, "activity", "-"),
		       ctl_str(s, "agent", "claude"), ctl_str(s, "mode", "?"), age, np, cost,
		       restarts != NULL ? json_object_get_int64(restarts) : (int64_t)0);
	}
out:
	json_object_put(list);
	ctl_call_finish(&call);
	return rc;
}

/* ---- new, mode, rm, whoami ------------------------------------------------------------------ */

static int ctl_new(struct ctl *ctl, const struct ctl_args *args)
{
	json_object *body = json_object_new_object(), *repo = json_object_new_object();
	struct ctl_call call;
	int rc;

	if (body == NULL || repo == NULL) {
		json_object_put(body);
		json_object_put(repo);
		return CTL_EXIT_FAILURE;
	}
	json_object_object_add(repo, "owner", json_object_new_string(args->owner));
	json_object_object_add(repo, "name", json_object_new_string(args->name));
	json_object_object_add(body, "repo", repo);
	json_object_object_add(body, "issue", json_object_new_int64(args->issue));
	if (args->structured)
		json_object_object_add(body, "mode", json_object_new_string("structured"));
	if (args->prompt != NULL)
		json_object_object_add(body, "prompt", json_object_new_string(args->prompt));
	if (args->agent != NULL)
		json_object_object_add(body, "agent", json_object_new_string(args->agent));
	if (ctl_call(ctl, "POST", "/sessions", body, &call) < 0)
		return CTL_EXIT_FAILURE;
	if ((rc = ctl_report(&call, "new")) == CTL_EXIT_OK) {
		printf("%s\n", ctl_str(call.body, "id", "?"));
		fprintf(stderr, "agentctl: %s %s (%s, %s, %s mode)\n",
			ctl_str(call.body, "id", "?"), call.a.status == 201 ? "created" : "exists",
			ctl_str(call.body, "state", "?"), ctl_str(call.body, "agent", "claude"),
			ctl_str(call.body, "mode", "?"));
	}
	ctl_call_finish(&call);
	return rc;
}

static int ctl_mode(struct ctl *ctl, const struct ctl_args *args)
{
	json_object *body = json_object_new_object();
	char path[CTL_PATH_MAX];
	struct ctl_call call;
	int rc;

	if (body == NULL)
		return CTL_EXIT_FAILURE;
	json_object_object_add(body, "mode", json_object_new_string(args->mode));
	snprintf(path, sizeof(path), "/sessions/%s/mode", args->id);
	if (ctl_call(ctl, "POST", path, body, &call) < 0)
		return CTL_EXIT_FAILURE;
	if ((rc = ctl_report(&call, args->id)) == CTL_EXIT_OK)
		printf("%s: %s mode\n", args->id, ctl_str(call.body, "mode", args->mode));
	ctl_call_finish(&call);
	return rc;
}

static int ctl_rm(struct ctl *ctl, const struct ctl_args *args)
{
	char path[CTL_PATH_MAX];
	struct ctl_call call;
	const char *wt;
	int rc;

	snprintf(path, sizeof(path), "/sessions/%s%s", args->id, args->force ? "?force=true" : "");
	if (ctl_call(ctl, "DELETE", path, NULL, &call) < 0)
		return CTL_EXIT_FAILURE;
	if ((rc = ctl_report(&call, args->id)) == CTL_EXIT_OK) {
		wt = ctl_str(call.body, "worktree", "?");
		printf("%s: %s; worktree %s", args->id, ctl_str(call.body, "status", "stopped"),
		       wt);
		if (strcmp(wt, "kept") == 0)
			printf(" (%s; --force removes it)", ctl_str(call.body, "reason", "?"));
		if (ctl_str(call.body, "keptRef", NULL) != NULL)
			printf(" (commits kept under %s)", ctl_str(call.body, "keptRef", ""));
		printf("\n");
	}
	ctl_call_finish(&call);
	return rc;
}

static int ctl_whoami(struct ctl *ctl)
{
	struct ctl_call call;
	int rc;

	if (ctl_call(ctl, "GET", "/whoami", NULL, &call) < 0)
		return CTL_EXIT_FAILURE;
	if ((rc = ctl_report(&call, "whoami")) == CTL_EXIT_OK)
		printf("%s (%s)\n", ctl_str(call.body, "identity", "?"),
		       ctl_str(call.body, "role", "?"));
	ctl_call_finish(&call);
	return rc;
}

/* ---- approve, deny ------------------------------------------------------------------------- */

static int ctl_answer(struct ctl *ctl, const struct ctl_args *args)
{
	bool allow = args->cmd == CTL_CMD_APPROVE;
	char path[CTL_PATH_MAX], rid[256];
	json_object *body, *pending;
	struct ctl_call call;
	int rc;

	if (args->rid != NULL) {
		snprintf(rid, sizeof(rid), "%s", args->rid);
	} else {
		size_t n;

		snprintf(path, sizeof(path), "/sessions/%s", args->id);
		if (ctl_call(ctl, "GET", path, NULL, &call) < 0)
			return CTL_EXIT_FAILURE;
		if ((rc = ctl_report(&call, args->id)) != CTL_EXIT_OK)
			goto out;
		n = json_object_object_get_ex(call.body, "pending", &pending) &&
			    json_object_is_type(pending, json_type_array)
			? json_object_array_length(pending)
			: 0;
		if (n != 1) {
			fprintf(stderr, "agentctl: %s has %s pending permission requests%s\n",
				args->id, n == 0 ? "no" : "several", n == 0 ? "" : ": name one");
			for (size_t i = 0; i < n; i++) {
				json_object *p = json_object_array_get_idx(pending, i);

				fprintf(stderr, "  %s  %s: %s\n", ctl_str(p, "requestId", "?"),
					ctl_str(p, "toolName", "?"), ctl_str(p, "description", ""));
			}
			rc = n == 0 ? CTL_EXIT_NOT_FOUND : CTL_EXIT_USAGE;
			goto out;
		}
		snprintf(rid, sizeof(rid), "%s",
			 ctl_str(json_object_array_get_idx(pending, 0), "requestId", ""));
		ctl_call_finish(&call);
	}
	body = json_object_new_object();
	if (body == NULL)
		return CTL_EXIT_FAILURE;
	json_object_object_add(body, "behavior", json_object_new_string(allow ? "allow" : "deny"));
	if (!allow && args->message != NULL)
		json_object_object_add(body, "message", json_object_new_string(args->message));
	snprintf(path, sizeof(path), "/sessions/%s/permissions/%s", args->id, rid);
	if (ctl_call(ctl, "POST", path, body, &call) < 0)
		return CTL_EXIT_FAILURE;
	if ((rc = ctl_report(&call, rid)) == CTL_EXIT_OK)
		printf("%s: %s %s\n", args->id, allow ? "allowed" : "denied", rid);
out:
	ctl_call_finish(&call);
	return rc;
}

/* ---- streams: prompt, logs, events ---------------------------------------------------------- */

/* Prints an event as one JSON line: {"id","event","data"}. */
static void ctl_print_event(const struct sseread_event *ev, json_object *data)
{
	json_object *o = json_object_new_object();

	if (o == NULL)
		return;
	if (ev->has_id)
		json_object_object_add(o, "id", json_object_new_uint64(ev->id));
	json_object_object_add(o, "event", json_object_new_string(ev->name));
	json_object_object_add(
	    o, "data", data != NULL ? json_object_get(data) : json_object_new_string(ev->data));
	ctl_print_json(o, stdout);
	fflush(stdout);
	json_object_put(o);
}

/* The text and tools of an assistant message. */
static void ctl_print_assistant(json_object *data)
{
	json_object *msg, *content;

	if (!json_object_object_get_ex(data, "message", &msg) ||
	    !json_object_object_get_ex(msg, "content", &content) ||
	    !json_object_is_type(content, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(content); i++) {
		json_object *b = json_object_array_get_idx(content, i), *input;
		const char *type = ctl_str(b, "type", "");

		if (strcmp(type, "text") == 0) {
			const char *t = ctl_str(b, "text", "");

			fputs(t, stdout);
			if (*t != '\0' && t[strlen(t) - 1] != '\n')
				fputc('\n', stdout);
		} else if (strcmp(type, "tool_use") == 0) {
			fflush(stdout);
			fprintf(stderr, "[%s", ctl_str(b, "name", "tool"));
			if (json_object_object_get_ex(b, "input", &input))
				fprintf(stderr, " %s",
					json_object_to_json_string_ext(
					    input, JSON_C_TO_STRING_PLAIN |
						       JSON_C_TO_STRING_NOSLASHESCAPE));
			fprintf(stderr, "]\n");
		}
	}
	fflush(stdout);
}

static void ctl_prompt_event(struct ctl_stream *st, const struct sseread_event *ev,
			     json_object *data)
{
	const char *id = st->args->id;
	json_object *v;

	if (strcmp(ev->name, "assistant") == 0) {
		ctl_print_assistant(data);
	} else if (strcmp(ev->name, EV_PERMISSION) == 0) {
		fprintf(stderr, "[permission %s: %s %s] agentctl approve|deny %s %s\n",
			ctl_str(data, "requestId", "?"), ctl_str(data, "toolName", "?"),
			ctl_str(data, "description", ""), id, ctl_str(data, "requestId", "?"));
	} else if (strcmp(ev->name, EV_PERMISSION_RESOLVED) == 0) {
		fprintf(stderr, "[permission %s: %s by %s]\n", ctl_str(data, "requestId", "?"),
			ctl_str(data, "behavior", "?"), ctl_str(data, "by", "?"));
	} else if (strcmp(ev->name, EV_QUEUED) == 0) {
		json_object_object_get_ex(data, "position", &v);
		fprintf(stderr, "[queued: %d turns ahead]\n", json_object_get_int(v));
	} else if (strcmp(ev->name, EV_RESULT) == 0) {
		bool err =
		    json_object_object_get_ex(data, "is_error", &v) && json_object_get_boolean(v);

		st->result = true;
		st->rc = err ? CTL_EXIT_FAILURE : CTL_EXIT_OK;
		fprintf(stderr, "[%s", ctl_str(data, "subtype", "done"));
		if (json_object_object_get_ex(data, "num_turns", &v))
			fprintf(stderr, ", %d turns", json_object_get_int(v));
		if (json_object_object_get_ex(data, "total_cost_usd", &v))
			fprintf(stderr, ", $%.4f", json_object_get_double(v));
		fprintf(stderr, "]\n");
	} else if (strcmp(ev->name, EV_ERROR) == 0) {
		fprintf(stderr, "agentctl: %s: %s (%s)\n", id, ctl_str(data, "error", "?"),
			ctl_str(data, "code", "?"));
		st->rc = CTL_EXIT_FAILURE;
	}
}

static void ctl_stream_event(void *arg, const struct sseread_event *ev, json_object *data)
{
	struct ctl_stream *st = arg;

	st->last_ms = ctl_now_ms();
	if (st->args->cmd == CTL_CMD_PROMPT) {
		ctl_prompt_event(st, ev, data);
		return;
	}
	ctl_print_event(ev, data);
	if (strcmp(ev->name, EV_SNAPSHOT) == 0)
		st->snapshot = true;
	if (strcmp(ev->name, EV_ERROR) == 0) {
		const char *code = ctl_str(data, "code", "");

		/* The end of a session's history is the normal end of its log. */
		st->rc = strcmp(code, "agent_exited") == 0 || strcmp(code, "session_lost") == 0
			     ? CTL_EXIT_OK
			     : CTL_EXIT_FAILURE;
		if (st->rc != CTL_EXIT_OK)
			fprintf(stderr, "agentctl: %s (%s)\n", ctl_str(data, "error", "?"), code);
	}
}

static void ctl_stream_end(void *arg, const struct agentc_answer *a)
{
	struct ctl_stream *st = arg;

	st->ended = true;
	st->s = NULL;
	st->status = a->status;
	snprintf(st->err, sizeof(st->err), "%s%s%s%s", a->err, a->code[0] ? " (" : "", a->code,
		 a->code[0] ? ")" : "");
}

static int ctl_stream(struct ctl *ctl, const struct ctl_args *args)
{
	struct ctl_stream st = {.ctl = ctl, .args = args, .rc = CTL_EXIT_OK};
	char path[CTL_PATH_MAX];
	json_object *body = NULL;
	const char *method = "GET";

	if (args->cmd == CTL_CMD_PROMPT) {
		method = "POST";
		snprintf(path, sizeof(path), "/sessions/%s/prompt", args->id);
		if ((body = json_object_new_object()) == NULL)
			return CTL_EXIT_FAILURE;
		json_object_object_add(body, "prompt", json_object_new_string(args->text));
	} else if (args->cmd == CTL_CMD_LOGS) {
		snprintf(path, sizeof(path), "/sessions/%s/events", args->id);
	} else {
		snprintf(path, sizeof(path), "/events");
	}
	st.last_ms = ctl_now_ms();
	st.s = agentc_stream_open(ctl->c, method, path, body, 0, 0, ctl_stream_event,
				  ctl_stream_end, &st);
	if (st.s == NULL) {
		fprintf(stderr, "agentctl: %s\n", strerror(errno));
		return CTL_EXIT_FAILURE;
	}
	while (!st.ended) {
		if (ctl_round(ctl) < 0) {
			fprintf(stderr, "agentctl: the network loop failed\n");
			st.rc = CTL_EXIT_FAILURE;
			break;
		}
		if (st.ended)
			break;
		if (ctl->interrupted) {
			/* Following until interrupted is how -f ends; a turn cut short is not done.
			 */
			if (args->cmd == CTL_CMD_PROMPT)
				st.rc = CTL_EXIT_FAILURE;
			break;
		}
		if (!args->follow && args->cmd == CTL_CMD_EVENTS && st.snapshot)
			break;
		if (!args->follow && args->cmd == CTL_CMD_LOGS &&
		    ctl_now_ms() - st.last_ms >= CTL_LOGS_QUIET_MS)
			break;
	}
	agentc_stream_close(st.s);
	if (st.ended && st.status != 200) {
		fprintf(stderr, "agentctl: %s: %s\n", args->id != NULL ? args->id : "events",
			st.err);
		return ctl_exit_for_status(st.status);
	}
	if (args->cmd == CTL_CMD_PROMPT && !st.result && st.rc == CTL_EXIT_OK) {
		fprintf(stderr, "agentctl: %s: the stream ended before the turn's result\n",
			args->id);
		return CTL_EXIT_FAILURE;
	}
	return st.rc;
}

int ctl_run(const struct ctl_args *args, const struct ctl_conf *conf)
{
	struct ctl ctl = {.sigfd = -1};
	static const int ctl_stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
	int rc = CTL_EXIT_FAILURE;

	if ((ctl.sigfd = sigfd_open(ctl_stop_signals, 3, NULL)) < 0) {
		fprintf(stderr, "agentctl: cannot set up signals: %s\n", strerror(-ctl.sigfd));
		return CTL_EXIT_FAILURE;
	}
	ctl.loop = xfer_loop_create();
	ctl.c = ctl.loop != NULL ? agentc_create(ctl.loop, conf->url, conf->token) : NULL;
	if (ctl.c == NULL) {
		fprintf(stderr, "agentctl: libcurl cannot start\n");
		goto out;
	}
	switch (args->cmd) {
	case CTL_CMD_LS:
		rc = ctl_ls(&ctl, args);
		break;
	case CTL_CMD_NEW:
		rc = ctl_new(&ctl, args);
		break;
	case CTL_CMD_PROMPT:
	case CTL_CMD_LOGS:
	case CTL_CMD_EVENTS:
		rc = ctl_stream(&ctl, args);
		break;
	case CTL_CMD_APPROVE:
	case CTL_CMD_DENY:
		rc = ctl_answer(&ctl, args);
		break;
	case CTL_CMD_MODE:
		rc = ctl_mode(&ctl, args);
		break;
	case CTL_CMD_RM:
		rc = ctl_rm(&ctl, args);
		break;
	case CTL_CMD_WHOAMI:
		rc = ctl_whoami(&ctl);
		break;
	default:
		rc = CTL_EXIT_USAGE;
		break;
	}
out:
	agentc_destroy(ctl.c);
	xfer_loop_destroy(ctl.loop);
	close(ctl.sigfd);
	return rc;
}
