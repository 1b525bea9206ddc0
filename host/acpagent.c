#include "acpagent.h"

#include "eventnames.h"
#include "host.h"
#include "hostproto.h"
#include "jsontext.h"
#include "log.h"
#include "perms.h"
#include "subs.h"
#include "transcript.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Sends line (len bytes, freed here). Callers build the line first: len is set by the builder,
 * so it cannot be an argument of the same call. */
static void acpagent_send(struct host *h, char *line, size_t len)
{
	if (line == NULL) {
		log_warn("cannot build a message for the agent: %s", strerror(errno));
		return;
	}
	claudeproc_write(h, line, len);
	free(line);
}

static uint64_t acpagent_request(struct host *h, const char *method, json_object *params)
{
	uint64_t id = ++h->acp.next_id;
	size_t len = 0;
	char *line = acp_request(id, method, params, &len);

	acpagent_send(h, line, len);
	return id;
}

/* ---- the session this host remembers ------------------------------------------------------ */

/* Reads acp.json: the agent's session id and when it was made. False when there is none. */
static bool acpagent_recall(struct host *h)
{
	struct acpagent *a = &h->acp;
	json_object *o = json_object_from_file(a->state_path), *v;
	const char *sid = jsontext_str(o, "sessionId");
	bool ok = sid != NULL && sid[0] != '\0' && strlen(sid) <= ACPAGENT_SESSION_ID_MAX;

	if (ok) {
		snprintf(a->session_id, sizeof(a->session_id), "%s", sid);
		a->session_created_ms =
		    json_object_object_get_ex(o, "createdAt", &v) ? json_object_get_int64(v) : 0;
	}
	json_object_put(o);
	return ok;
}

/* Writes acp.json (a temp file renamed over it: a crash leaves the old one or the new). */
static void acpagent_remember(struct host *h)
{
	struct acpagent *a = &h->acp;
	json_object *o = json_object_new_object();
	char tmp[CONFIG_PATH_MAX + 8];

	json_object_object_add(o, "agent", json_object_new_string(a->name));
	json_object_object_add(o, "sessionId", json_object_new_string(a->session_id));
	json_object_object_add(o, "createdAt", json_object_new_int64(a->session_created_ms));
	snprintf(tmp, sizeof(tmp), "%s.tmp", a->state_path);
	if (json_object_to_file_ext(tmp, o, JSON_C_TO_STRING_PLAIN) < 0 ||
	    rename(tmp, a->state_path) < 0)
		log_warn("cannot write %s: a restart starts a new conversation", a->state_path);
	json_object_put(o);
}

bool acpagent_same_minute(int64_t created_ms, int64_t now_ms, uint64_t *wait_ms)
{
	int64_t next = (created_ms / 60000 + 1) * 60000;

	if (created_ms <= 0 || now_ms >= next) {
		*wait_ms = 0;
		return false;
	}
	*wait_ms = (uint64_t)(next - now_ms) + ACPAGENT_MINUTE_SLACK_MS;
	return true;
}

static void acpagent_new(struct host *h)
{
	h->acp.state = ACPAGENT_CREATING;
	h->acp.session_req = acpagent_request(h, "session/new", acp_session_new_params(h->acp.cwd));
}

static void acpagent_load(struct host *h)
{
	h->acp.state = ACPAGENT_LOADING;
	transcript_note(&h->transcript, "-- resuming %s session %s", h->acp.name,
			h->acp.session_id);
	transcript_flush(&h->transcript);
	h->acp.session_req = acpagent_request(
	    h, "session/load", acp_session_load_params(h->acp.session_id, h->acp.cwd));
}

static void acpagent_next(struct host *h);
static void acpagent_minute_over(uv_timer_t *t);

/* Loads a->session_id, made at a->session_created_ms: for gemini, not in the minute it was
 * made. */
static void acpagent_load_when_safe(struct host *h)
{
	struct acpagent *a = &h->acp;
	uint64_t wait;

	if (strcmp(a->name, "gemini") == 0 &&
	    acpagent_same_minute(a->session_created_ms, host_now_ms(), &wait)) {
		transcript_note(&h->transcript,
				"-- waiting %llu ms for the next minute: gemini "
				"cannot load a session in the minute it was made",
				(unsigned long long)wait);
		a->state = ACPAGENT_WAITING;
		uv_timer_start(&a->minute, acpagent_minute_over, wait, 0);
		return;
	}
	acpagent_load(h);
}

/* The session --resume names, when acp.json named none: the terminal mode's conversation. */
static void acpagent_resume(struct host *h)
{
	struct acpagent *a = &h->acp;

	if (strcmp(a->resume, ACP_RESUME_NEWEST) == 0) {
		if (!a->can_list) {
			transcript_note(&h->transcript,
					"-- %s cannot list its sessions: a new one starts",
					a->name);
			acpagent_new(h);
			return;
		}
		a->state = ACPAGENT_LISTING;
		a->session_req =
		    acpagent_request(h, "session/list", acp_session_list_params(a->cwd));
		return;
	}
	snprintf(a->session_id, sizeof(a->session_id), "%s", a->resume);
	a->session_created_ms = a->resume_made_ms;
	acpagent_load_when_safe(h);
}

static void acpagent_minute_over(uv_timer_t *t)
{
	struct host *h = t->data;

	if (h->acp.state == ACPAGENT_WAITING && h->claude.running)
		acpagent_load(h);
	else if (h->acp.state == ACPAGENT_SETTLING) {
		h->acp.state = ACPAGENT_READY;
		transcript_note(&h->transcript, "-- %s session %s ready", h->acp.name,
				h->acp.session_id);
		transcript_flush(&h->transcript);
		acpagent_next(h);
	}
}

/* ---- turns -------------------------------------------------------------------------------- */

static void acpagent_emit(void *arg, const char *name, json_object *data)
{
	struct host *h = arg;
	const char *text = json_object_to_json_string_ext(data, JSON_C_TO_STRING_PLAIN);
	uint64_t id = host_emit(h, name, text, strlen(text), NULL, NULL);

	if (strcmp(name, EV_RESULT) == 0)
		h->acp.last_result = id;
	transcript_event(&h->transcript, name, data);
	json_object_put(data);
}

/* The oldest waiting prompt (caller frees), or NULL. */
static char *acpagent_dequeue(struct acpagent *a)
{
	char *p;

	if (a->qlen == 0)
		return NULL;
	p = a->queue[a->qhead];
	a->queue[a->qhead] = NULL;
	a->qhead = (a->qhead + 1) % ACPAGENT_QUEUE_MAX;
	a->qlen--;
	return p;
}

/* A turn ended with its result event: the prompt's stream ends there; the next one begins. */
static void acpagent_turn_ended(struct host *h)
{
	if (h->prompts_done < h->prompts)
		h->prompts_done++;
	h->interrupting = false;
	if (host_turn_running(h))
		h->turn_started_ms = host_now_ms();
	if (h->acp.last_result != 0)
		subs_turn_ended(h, h->acp.last_result, h->prompts_done);
}

/* A prompt that cannot run (no session): its turn is only a failed result. */
static void acpagent_fail_turn(struct host *h, const char *prompt, const char *why)
{
	struct acp_turn *t = &h->acp.turn;

	acp_turn_begin(t, h->acp.name, h->acp.session_id, h->acp.model, prompt, host_now_ms(),
		       acpagent_emit, h);
	acp_turn_end(t, NULL, NULL, why, h->acp.qlen, host_now_ms(), acpagent_emit, h);
	acpagent_turn_ended(h);
}

/* Starts the next waiting prompt's turn, when the session is ready and none runs. */
static void acpagent_next(struct host *h)
{
	struct acpagent *a = &h->acp;
	char *prompt;

	while (!a->in_turn && (a->state == ACPAGENT_READY || a->state == ACPAGENT_FAILED) &&
	       (prompt = acpagent_dequeue(a)) != NULL) {
		if (a->state == ACPAGENT_FAILED) {
			acpagent_fail_turn(h, prompt, "the agent has no session (see the pane)");
			free(prompt);
			continue;
		}
		h->turn_started_ms = host_now_ms();
		acp_turn_begin(&a->turn, a->name, a->session_id, a->model, prompt,
			       h->turn_started_ms, acpagent_emit, h);
		a->in_turn = true;
		a->prompt_req =
		    acpagent_request(h, "session/prompt", acp_prompt_params(a->session_id, prompt));
		free(prompt);
	}
}

uint64_t acpagent_prompt(struct host *h, json_object *prompt)
{
	struct acpagent *a = &h->acp;
	uint64_t ahead = h->prompts - h->prompts_done;
	char who[64];
	char *text = strdup(json_object_get_string(prompt));

	if (text == NULL || a->qlen == ACPAGENT_QUEUE_MAX) {
		/* requests.c refuses prompts past HOST_QUEUED_MAX: this is no memory. */
		log_error("cannot keep a prompt for the agent");
		free(text);
		return ahead;
	}
	a->queue[(a->qhead + a->qlen) % ACPAGENT_QUEUE_MAX] = text;
	a->qlen++;
	if (ahead == 0)
		h->turn_started_ms = host_now_ms();
	h->prompts++;
	if (ahead == 0)
		snprintf(who, sizeof(who), "user");
	else
		snprintf(who, sizeof(who), "user (queued, %llu ahead)", (unsigned long long)ahead);
	transcript_said(&h->transcript, who, text);
	transcript_flush(&h->transcript);
	acpagent_next(h);
	return ahead;
}

void acpagent_interrupt(struct host *h)
{
	size_t len = 0;
	char *line;

	if (!h->acp.in_turn) {
		h->interrupting = false;
		return;
	}
	line = acp_notification("session/cancel", acp_cancel_params(h->acp.session_id), &len);
	acpagent_send(h, line, len);
	perms_cancel_acp(h);
}

void acpagent_answer(struct host *h, json_object *rpc_id, json_object *params, bool allow)
{
	const char *option = acp_permission_option(params, allow);
	size_t len = 0;
	char *line;

	/* No option says deny: "cancelled" is the answer that runs nothing. An allow with no
	 * allow option cannot be given: the agent gets that too, and says so. */
	line = acp_response(rpc_id, acp_permission_result(option), &len);
	acpagent_send(h, line, len);
}

/* ---- what the agent says ------------------------------------------------------------------ */

static void acpagent_response(struct host *h, const struct acp_msg *m)
{
	struct acpagent *a = &h->acp;
	uint64_t id = json_object_is_type(m->id, json_type_int) ? json_object_get_uint64(m->id) : 0;
	const char *sid, *model;

	if (id == 0)
		return;
	if (id == a->init_id && a->state == ACPAGENT_INITIALIZING) {
		if (m->error != NULL) {
			transcript_said(&h->transcript, "-- the agent refused initialize",
					acp_error_message(m));
			a->state = ACPAGENT_FAILED;
			acpagent_next(h);
			return;
		}
		a->can_load = acp_can_load(m->result);
		a->can_list = acp_can_list(m->result);
		if (a->can_load && acpagent_recall(h))
			acpagent_load_when_safe(h);
		else if (a->can_load && a->resume != NULL)
			acpagent_resume(h);
		else
			acpagent_new(h);
		return;
	}
	if (id == a->session_req && a->state == ACPAGENT_LISTING) {
		sid = m->error == NULL ? acp_session_list_newest(m->result, a->cwd) : NULL;
		if (sid == NULL || strlen(sid) > ACPAGENT_SESSION_ID_MAX) {
			transcript_note(&h->transcript,
					"-- %s lists no session here: a new one starts", a->name);
			acpagent_new(h);
			return;
		}
		snprintf(a->session_id, sizeof(a->session_id), "%s", sid);
		a->session_created_ms = 0;
		acpagent_load(h);
		return;
	}
	if (id == a->session_req &&
	    (a->state == ACPAGENT_LOADING || a->state == ACPAGENT_CREATING)) {
		if (m->error != NULL && a->state == ACPAGENT_LOADING) {
			/* The event log keeps the conversation; the agent starts a new one. */
			transcript_said(&h->transcript,
					"-- the agent could not load its session; a new one starts",
					acp_error_message(m));
			log_warn("%s could not load session %s: %s", a->name, a->session_id,
				 acp_error_message(m));
			acpagent_new(h);
			return;
		}
		if (m->error != NULL) {
			transcript_said(&h->transcript, "-- the agent refused session/new",
					acp_error_message(m));
			a->state = ACPAGENT_FAILED;
			acpagent_next(h);
			return;
		}
		if (a->state == ACPAGENT_CREATING) {
			sid = acp_session_id(m->result);
			if (sid == NULL || strlen(sid) > ACPAGENT_SESSION_ID_MAX) {
				transcript_note(&h->transcript,
						"-- %s answered session/new without a session id",
						a->name);
				a->state = ACPAGENT_FAILED;
				acpagent_next(h);
				return;
			}
			snprintf(a->session_id, sizeof(a->session_id), "%s", sid);
			a->session_created_ms = host_now_ms();
			acpagent_remember(h);
		}
		model = acp_session_model(m->result);
		free(a->model);
		a->model = model != NULL ? strdup(model) : NULL;
		if (a->state == ACPAGENT_LOADING) {
			/* Loaded: the one to load again, and the one a terminal launch resumes,
			 * also when --resume named it. */
			acpagent_remember(h);
			a->state = ACPAGENT_SETTLING;
			uv_timer_start(&a->minute, acpagent_minute_over, ACPAGENT_SETTLE_MS, 0);
			return;
		}
		transcript_note(&h->transcript, "-- %s session %s ready", a->name, a->session_id);
		transcript_flush(&h->transcript);
		a->state = ACPAGENT_READY;
		acpagent_next(h);
		return;
	}
	if (id == a->prompt_req && a->in_turn) {
		json_object *reason = NULL, *usage = NULL;

		if (m->result != NULL) {
			json_object_object_get_ex(m->result, "stopReason", &reason);
			json_object_object_get_ex(m->result, "usage", &usage);
		}
		a->in_turn = false;
		acp_turn_end(&a->turn,
			     json_object_is_type(reason, json_type_string)
				 ? json_object_get_string(reason)
			     : m->error == NULL ? "end_turn"
						: NULL,
			     usage, m->error != NULL ? acp_error_message(m) : NULL, a->qlen,
			     host_now_ms(), acpagent_emit, h);
		acpagent_turn_ended(h);
		acpagent_next(h);
	}
}

static void acpagent_request_in(struct host *h, const struct acp_msg *m)
{
	json_object *call = NULL;
	const char *title;
	char rid[64], *line;
	size_t len = 0;

	if (strcmp(m->method, "session/request_permission") == 0) {
		/* The host's start in the id: one of an earlier run, still answered by a
		 * client that saw it, never names a request of this run. */
		snprintf(rid, sizeof(rid), "acp-%lld-%llu", (long long)h->acp.started_ms,
			 (unsigned long long)++h->acp.next_permission);
		if (h->acp.in_turn)
			acp_turn_permission(&h->acp.turn, m->params, acpagent_emit, h);
		perms_request_acp(h, rid, m->id, m->params);
		json_object_object_get_ex(m->params, "toolCall", &call);
		title = jsontext_str(call, "title");
		transcript_said(&h->transcript, "-- permission requested (answer it from the API)",
				title != NULL ? title : "a tool");
		return;
	}
	/* Files and terminals were not advertised: the agent uses its own tools. */
	line = acp_error_response(m->id, ACP_METHOD_NOT_FOUND, "method not found", &len);
	acpagent_send(h, line, len);
}

void acpagent_line(struct host *h, const char *line, size_t len)
{
	struct acp_msg m;
	json_object *update;
	enum acp_update_kind kind;

	if (acp_parse(line, len, &m) < 0) {
		/* ACP leaves stdout to the protocol; anything else is kept, as claude's would be.
		 */
		char *text = jsontext_utf8_scrub(line, len);

		host_emit_json(h, EV_RAW,
			       text != NULL ? json_object_new_string(text)
					    : json_object_new_string(""));
		free(text);
		return;
	}
	switch (m.type) {
	case ACP_RESPONSE:
		acpagent_response(h, &m);
		break;
	case ACP_REQUEST:
		acpagent_request_in(h, &m);
		break;
	case ACP_NOTIFICATION:
		if (strcmp(m.method, "session/update") != 0)
			break;
		kind = acp_update_kind(m.params, &update);
		if (h->acp.state == ACPAGENT_SETTLING)
			uv_timer_start(&h->acp.minute, acpagent_minute_over, ACPAGENT_SETTLE_MS, 0);
		/* A load replays the conversation the event log holds already. */
		if (h->acp.in_turn && update != NULL)
			acp_turn_update(&h->acp.turn, kind, update, acpagent_emit, h);
		break;
	}
	acp_msg_release(&m);
}

void acpagent_start(struct host *h)
{
	struct acpagent *a = &h->acp;

	if (getcwd(a->cwd, sizeof(a->cwd)) == NULL)
		snprintf(a->cwd, sizeof(a->cwd), "/");
	if (hostproto_state_path(h->cfg, h->id, ACPAGENT_STATE_NAME, a->state_path,
				 sizeof(a->state_path)) < 0)
		a->state_path[0] = '\0';
	uv_timer_init(h->loop, &a->minute);
	a->minute.data = h;
	a->timer_init = true;
	a->started_ms = host_now_ms();
	a->state = ACPAGENT_INITIALIZING;
	a->init_id = acpagent_request(h, "initialize", acp_initialize_params("agentd", "1"));
}

void acpagent_close(struct host *h)
{
	struct acpagent *a = &h->acp;

	if (a->timer_init) {
		uv_timer_stop(&a->minute);
		uv_close((uv_handle_t *)&a->minute, NULL);
		a->timer_init = false;
	}
	acp_turn_free(&a->turn);
	a->in_turn = false;
}

void acpagent_free(struct host *h)
{
	struct acpagent *a = &h->acp;
	char *p;

	acp_turn_free(&a->turn);
	while ((p = acpagent_dequeue(a)) != NULL)
		free(p);
	free(a->model);
	a->model = NULL;
}
