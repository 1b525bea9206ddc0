#include "host.h"
#include "reap.h"

#include "eventnames.h"
#include "jsontext.h"

#include "fsutil.h"
#include "hostproto.h"
#include "linecheck.h"
#include "log.h"
#include "requests.h"
#include "transcript.h"

#include <errno.h>
#include <locale.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int64_t host_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the event path: number → log → subscribers ------------------------------------------- */

/* Writes the current batch to the log with one write, then sends it to subscribers: a
 * subscriber is only ever sent what the log holds, so it can always catch up from there. */
static void host_flush(struct host *h)
{
	struct evlog_batch *b = h->batch;
	int r;

	h->batch = NULL;
	if (b != NULL && b->n > 0) {
		r = evlog_batch_write(&h->log, b);
		if (r < 0)
			log_error("cannot append to %s: %s", h->log_path, strerror(-r));
		else
			subs_publish(h, b);
	}
	evlog_batch_unref(b);
	transcript_flush(&h->transcript);
}

uint64_t host_emit(struct host *h, const char *name, const char *data, size_t len, char **line,
		   size_t *line_len)
{
	int64_t id;

	if (h->batch == NULL && (h->batch = evlog_batch_new()) == NULL) {
		log_error("no memory for an event");
		return 0;
	}
	id = evlog_batch_add(&h->log, h->batch, name, data, len);
	if (id < 0) {
		log_error("cannot add an event to the batch: %s", strerror((int)-id));
		return 0;
	}
	if (line != NULL) {
		const struct evlog_entry *e = &h->batch->ev[h->batch->n - 1];

		*line = malloc(e->len);
		*line_len = *line != NULL ? e->len : 0;
		if (*line != NULL)
			memcpy(*line, h->batch->data + e->off, e->len);
	}
	if (!h->batching)
		host_flush(h);
	return (uint64_t)id;
}

void host_emit_json(struct host *h, const char *name, json_object *data)
{
	const char *text = json_object_to_json_string_ext(data, JSON_C_TO_STRING_PLAIN);

	host_emit(h, name, text, strlen(text), NULL, NULL);
	json_object_put(data);
}

void host_batch_begin(struct host *h)
{
	h->batching = true;
}

void host_batch_end(struct host *h)
{
	h->batching = false;
	host_flush(h);
}

static json_object *host_get(json_object *o, const char *key)
{
	json_object *v = NULL;

	json_object_object_get_ex(o, key, &v);
	return v;
}

bool host_turn_running(const struct host *h)
{
	return h->prompts_done < h->prompts;
}

/*
 * A turn ended with the result event id (obj: claude's line, or NULL). Its result says how many
 * prompts still wait (queued_turn_count; claude may fold a queued prompt into the running turn,
 * so one result can end more than one prompt); without it, one prompt ended. The streams of the
 * prompts that ended end with it; the next queued prompt's turn begins.
 */
static void host_turn_ended(struct host *h, uint64_t id, json_object *obj)
{
	json_object *q = host_get(obj, "queued_turn_count");
	uint64_t done = h->prompts_done < h->prompts ? h->prompts_done + 1 : h->prompts;

	if (json_object_is_type(q, json_type_int) && json_object_get_int64(q) >= 0 &&
	    (uint64_t)json_object_get_int64(q) <= h->prompts &&
	    h->prompts - (uint64_t)json_object_get_int64(q) >= h->prompts_done)
		done = h->prompts - (uint64_t)json_object_get_int64(q);
	h->prompts_done = done;
	h->interrupting = false;
	if (host_turn_running(h))
		h->turn_started_ms = host_now_ms();
	if (id != 0)
		subs_turn_ended(h, id, done);
}

/* A line linecheck found to be a plain object: what only needs its type is done without json-c
 * (json-c parses it only when the transcript prints it). False: the line needs its object. */
static bool host_claude_plain(struct host *h, const struct linecheck *lc, const char *line,
			      size_t len)
{
	char type[HOSTPROTO_NAME_MAX + 1], name[HOSTPROTO_NAME_MAX];
	size_t n = lc->type_len < HOSTPROTO_NAME_MAX ? lc->type_len : HOSTPROTO_NAME_MAX;
	json_object *obj;

	/* A type of HOSTPROTO_NAME_MAX bytes or more names "unknown" cut there as it does whole. */
	if (lc->type != NULL) {
		memcpy(type, lc->type, n);
		type[n] = '\0';
	}
	hostproto_event_name(lc->type != NULL ? type : NULL, name);
	if (strcmp(name, "control_request") == 0 || strcmp(name, "control_cancel_request") == 0 ||
	    strcmp(name, EV_RESULT) == 0)
		return false; /* permissions, a turn's end: the whole object */
	host_emit(h, name, line, len, NULL, NULL);
	if (transcript_wants(&h->transcript, name)) {
		obj = claudeproc_parse(h, line, len);
		if (obj != NULL)
			transcript_print(&h->transcript, name, obj);
		json_object_put(obj);
	}
	return true;
}

void host_claude_line(struct host *h, const char *line, size_t len)
{
	/* Clients get the line as it is (an SSE data line, a WebSocket text frame): only when it
	 * is one JSON object in valid UTF-8. */
	bool utf8 = jsontext_utf8_valid(line, len);
	struct linecheck lc;
	json_object *obj, *type, *sub;
	char name[HOSTPROTO_NAME_MAX];

	if (utf8 && linecheck_object(line, len, &lc) && host_claude_plain(h, &lc, line, len))
		return;
	obj = utf8 ? claudeproc_parse(h, line, len) : NULL;
	if (obj == NULL) {
		/* Not that: still numbered, as a string (invalid bytes as U+FFFD), so nothing
		 * claude says is lost. */
		char *text = utf8 ? NULL : jsontext_utf8_scrub(line, len);

		host_emit_json(h, EV_RAW,
			       text != NULL ? json_object_new_string(text)
					    : json_object_new_string_len(line, (int)len));
		free(text);
		return;
	}
	type = host_get(obj, "type");
	/* Event names come from claude's "type", kept to [a-z_] so SSE framing stays intact. */
	hostproto_event_name(
	    json_object_is_type(type, json_type_string) ? json_object_get_string(type) : NULL,
	    name);
	sub = host_get(host_get(obj, "request"), "subtype");
	if (strcmp(name, "control_request") == 0 && sub != NULL &&
	    strcmp(json_object_get_string(sub), "can_use_tool") == 0) {
		perms_request(h, obj);
	} else {
		uint64_t id;

		if (strcmp(name, "control_cancel_request") == 0)
			perms_cancel(h, json_object_get_string(host_get(obj, "request_id")));
		id = host_emit(h, name, line, len, NULL, NULL);
		if (strcmp(name, EV_RESULT) == 0)
			host_turn_ended(h, id, obj);
	}
	transcript_event(&h->transcript, name, obj);
	json_object_put(obj);
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

void host_claude_exited(struct host *h, int64_t status, int term_signal)
{
	json_object *ev = json_object_new_object();

	h->exit_code = term_signal ? 128 + term_signal : (int)status;
	json_object_object_add(ev, "code", json_object_new_int64(status));
	json_object_object_add(ev, "signal", json_object_new_int(term_signal));
	host_emit_json(h, EV_EXIT, ev);
	transcript_note(&h->transcript, "-- %s exited (status %lld, signal %d)",
			h->acp.on ? h->acp.name : "claude", (long long)status, term_signal);
	/* What it started out of its process group ends with it. */
	reap_leftovers();
	transcript_close(&h->transcript); /* everything written: the pane shows the end */
	subs_drain(h);
	perms_close_all(h);
	if (h->acp.on)
		acpagent_close(h);
	for (size_t i = 0; i < HOST_SIGNALS; i++)
		uv_close((uv_handle_t *)&h->sig[i], NULL);
	uv_close((uv_handle_t *)&h->chld, NULL);
	claudeproc_close(h);
}

static void host_signal(uv_signal_t *sig, int signum)
{
	claudeproc_stop(sig->data);
}

static void host_sigchld(uv_signal_t *sig, int signum)
{
	struct host *h = sig->data;

	reap_orphans(h->claude.running ? h->claude.proc.pid : 0);
}

int host_run(const struct config *cfg, const char *id, const struct acpagent_opts *acp,
	     const char *first_prompt, char *const claude_argv[])
{
	static const int signals[HOST_SIGNALS] = {SIGTERM, SIGHUP, SIGINT};
	struct host *h = calloc(1, sizeof(*h));
	locale_t host_locale;
	char dir[CONFIG_PATH_MAX], state[CONFIG_PATH_MAX], old_log[CONFIG_PATH_MAX];
	int r, code = 1;

	if (h == NULL)
		return 1;
	h->loop = uv_default_loop();
	transcript_init(&h->transcript, h->loop, id);
	h->acp.on = acp->name != NULL;
	h->acp.name = acp->name;
	h->acp.resume = acp->resume;
	h->acp.resume_made_ms = acp->resume_made_ms;
	h->transcript.agent = acp->name;
	h->cfg = cfg;
	h->id = id;
	h->log.fd = -1;
	signal(SIGPIPE, SIG_IGN);
	/* json-c 0.16 switches to the "C" numeric locale around every parse (duplocale, newlocale,
	 * uselocale, freelocale: two allocations and three locks a line of claude's). When this
	 * thread already uses glibc's own "C" locale object, each of those returns at once. The
	 * parse is the same: the host never calls setlocale, so its locale was "C" already. */
	host_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	if (host_locale != (locale_t)0)
		uselocale(host_locale);
	if (hostproto_path(cfg, id, "", dir, sizeof(dir)) < 0 ||
	    hostproto_state_path(cfg, id, "", state, sizeof(state)) < 0 ||
	    hostproto_state_path(cfg, id, HOSTPROTO_LOG_NAME, h->log_path, sizeof(h->log_path)) <
		0 ||
	    hostproto_path(cfg, id, HOSTPROTO_LOG_NAME, old_log, sizeof(old_log)) < 0) {
		log_error("session paths are too long");
		goto out;
	}
	if (mkdir(dir, 0750) < 0 && errno != EEXIST) {
		log_error("cannot create %s: %s", dir, strerror(errno));
		goto out;
	}
	/* The log outlives a reboot in the state dir; one that an older host kept in the runtime
	 * dir moves there once, so the numbering goes on. */
	if (mkdir(state, 0750) < 0 && errno != EEXIST) {
		log_error("cannot create %s: %s", state, strerror(errno));
		goto out;
	}
	if (access(h->log_path, F_OK) < 0 && access(old_log, F_OK) == 0 &&
	    (r = fsutil_move(old_log, h->log_path)) < 0)
		log_warn("cannot move %s to %s: %s", old_log, h->log_path, strerror(-r));
	if ((r = evlog_open(&h->log, h->log_path)) < 0) {
		log_error("cannot open %s: %s", h->log_path, strerror(errno));
		goto out;
	}
	if ((r = subs_listen(h, dir)) < 0) {
		log_error("cannot listen on %s/host.sock: %s", dir, uv_strerror(r));
		subs_close(h);
		uv_run(h->loop, UV_RUN_DEFAULT);
		goto out;
	}
	for (size_t i = 0; i < HOST_SIGNALS; i++) {
		uv_signal_init(h->loop, &h->sig[i]);
		h->sig[i].data = h;
		uv_signal_start(&h->sig[i], host_signal, signals[i]);
	}
	if ((r = reap_init()) < 0)
		log_warn("cannot adopt what the agent leaves behind: %s", strerror(-r));
	uv_signal_init(h->loop, &h->chld);
	h->chld.data = h;
	uv_signal_start(&h->chld, host_sigchld, SIGCHLD);
	if ((r = claudeproc_start(h, claude_argv)) < 0) {
		log_error("cannot start %s: %s", claude_argv[0], uv_strerror(r));
		host_claude_exited(h, 127, 0);
	} else {
		transcript_note(&h->transcript, "-- agentd-host: session %s, %s pid %d%s", id,
				h->acp.on ? h->acp.name : "claude", h->claude.proc.pid,
				h->acp.on ? " (ACP)" : "");
		transcript_flush(&h->transcript);
		if (h->acp.on)
			acpagent_start(h);
		if (first_prompt != NULL && first_prompt[0] != '\0') {
			json_object *p = json_object_new_string(first_prompt);

			claudeproc_prompt(h, p);
			json_object_put(p);
		}
	}
	uv_run(h->loop, UV_RUN_DEFAULT);
	/* The drain timer, if subscribers took everything before it fired. */
	subs_close(h);
	uv_run(h->loop, UV_RUN_DEFAULT);
	code = h->exit_code;
	if (hostproto_path(cfg, id, "host.sock", dir, sizeof(dir)) == 0)
		unlink(dir);
out:
	transcript_close(&h->transcript);
	uv_run(h->loop, UV_RUN_DEFAULT);
	transcript_free(&h->transcript);
	evlog_close(&h->log);
	evlog_batch_unref(h->batch);
	claudeproc_free(h);
	acpagent_free(h);
	uv_loop_close(h->loop);
	free(h);
	if (host_locale != (locale_t)0) {
		uselocale(LC_GLOBAL_LOCALE);
		freelocale(host_locale);
	}
	return code;
}
