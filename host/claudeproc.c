#include "claudeproc.h"

#include "host.h"
#include "log.h"
#include "proc.h"
#include "transcript.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct claudeproc_write {
	uv_write_t req;
	char data[];
};

static void claudeproc_write_done(uv_write_t *w, int status)
{
	free(w);
}

void claudeproc_write(struct host *h, const char *data, size_t len)
{
	struct claudeproc_write *w = malloc(sizeof(*w) + len);
	uv_buf_t b;

	if (w != NULL && h->claude.running) {
		memcpy(w->data, data, len);
		b = uv_buf_init(w->data, (unsigned)len);
		if (uv_write(&w->req, (uv_stream_t *)&h->claude.in, &b, 1, claudeproc_write_done) ==
		    0)
			w = NULL;
		else
			log_warn("cannot write to the agent's stdin");
	}
	free(w);
}

void claudeproc_send(struct host *h, json_object *msg)
{
	const char *text = json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN);
	size_t len = strlen(text);
	char *line = malloc(len + 1);

	if (line != NULL) {
		memcpy(line, text, len);
		line[len] = '\n';
		claudeproc_write(h, line, len + 1);
	}
	free(line);
	json_object_put(msg);
}

uint64_t claudeproc_prompt(struct host *h, json_object *prompt)
{
	json_object *msg = json_object_new_object(), *m = json_object_new_object();
	uint64_t ahead = h->prompts - h->prompts_done;
	char who[64];

	if (h->acp.on) {
		json_object_put(msg);
		json_object_put(m);
		return acpagent_prompt(h, prompt);
	}
	json_object_object_add(m, "role", json_object_new_string("user"));
	json_object_object_add(m, "content", json_object_get(prompt));
	json_object_object_add(msg, "type", json_object_new_string("user"));
	json_object_object_add(msg, "message", m);
	if (ahead == 0)
		h->turn_started_ms = host_now_ms();
	h->prompts++;
	if (ahead == 0)
		snprintf(who, sizeof(who), "user");
	else
		snprintf(who, sizeof(who), "user (queued, %llu ahead)", (unsigned long long)ahead);
	transcript_said(&h->transcript, who, json_object_get_string(prompt));
	transcript_flush(&h->transcript);
	/* claude reads its stdin while a turn runs and queues a user message for after it. */
	claudeproc_send(h, msg);
	return ahead;
}

void claudeproc_interrupt(struct host *h)
{
	json_object *msg = json_object_new_object(), *r = json_object_new_object();
	char id[64];

	if (host_turn_running(h))
		h->interrupting = true;
	if (h->acp.on) {
		json_object_put(msg);
		json_object_put(r);
		acpagent_interrupt(h);
		return;
	}
	snprintf(id, sizeof(id), "agentd-%lu", ++h->claude.next_request);
	json_object_object_add(r, "subtype", json_object_new_string("interrupt"));
	json_object_object_add(msg, "type", json_object_new_string("control_request"));
	json_object_object_add(msg, "request_id", json_object_new_string(id));
	json_object_object_add(msg, "request", r);
	claudeproc_send(h, msg);
}

json_object *claudeproc_parse(struct host *h, const char *line, size_t len)
{
	json_object *obj;

	size_t end;

	json_tokener_reset(h->claude.tok);
	obj = json_tokener_parse_ex(h->claude.tok, line, (int)len);
	/* The line is the event's data as it is: it must be that object and nothing more (bytes
	 * after it would reach clients as data that is not JSON). */
	end = obj != NULL ? json_tokener_get_parse_end(h->claude.tok) : 0;
	while (end < len && (line[end] == ' ' || line[end] == '\t' || line[end] == '\r'))
		end++;
	if (obj != NULL && (!json_object_is_type(obj, json_type_object) || end != len)) {
		json_object_put(obj);
		obj = NULL;
	}
	return obj;
}

static int claudeproc_line(void *arg, const char *line, size_t len)
{
	struct host *h = arg;

	if (line == NULL)
		log_warn("the agent wrote a line over %d bytes; dropped", HOSTPROTO_LINE_MAX);
	else if (len > 0 && h->acp.on)
		acpagent_line(h, line, len);
	else if (len > 0)
		host_claude_line(h, line, len);
	return 0;
}

static void claudeproc_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
	struct host *h = handle->data;

	buf->base = h->claude.chunk;
	buf->len = h->claude.chunk != NULL ? CLAUDEPROC_READ_CHUNK : 0;
}

/* Everything one read brought is one batch: one write to the log, one flush of the pane. */
static void claudeproc_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct host *h = stream->data;

	if (nread > 0) {
		host_batch_begin(h);
		if (hostproto_reader_feed(&h->claude.lines, buf->base, (size_t)nread,
					  claudeproc_line, h) < 0)
			log_warn("no memory for a line of claude's; dropped");
		host_batch_end(h);
	} else if (nread < 0) {
		uv_read_stop(stream);
	}
}

static void claudeproc_exited(uv_process_t *proc, int64_t status, int term_signal)
{
	struct host *h = proc->data;

	h->claude.running = false;
	host_claude_exited(h, status, term_signal);
}

static void claudeproc_kill_late(uv_timer_t *t)
{
	struct host *h = t->data;

	if (h->claude.running)
		kill(-h->claude.proc.pid, SIGKILL);
}

/* The bit of signal sig in a /proc status mask line ("SigCgt:\t0000000000004000"). */
static bool claudeproc_mask_has(const char *status, const char *field, int sig)
{
	const char *line = strstr(status, field);

	return line != NULL &&
	       (strtoull(line + strlen(field), NULL, 16) >> (unsigned)(sig - 1) & 1) != 0;
}

/* Whether pid's SIGTERM is back to its default action (neither caught nor ignored): the
 * agent has taken the stop and a SIGTERM now ends it. False when that cannot be read. */
static bool claudeproc_term_default(pid_t pid)
{
	char path[64], status[4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, status, sizeof(status) - 1);
	close(fd);
	if (n <= 0)
		return false;
	status[n] = '\0';
	return strstr(status, "SigCgt:") != NULL &&
	       !claudeproc_mask_has(status, "SigCgt:", SIGTERM) &&
	       !claudeproc_mask_has(status, "SigIgn:", SIGTERM);
}

/*
 * While the agent stops: an agent that handled the SIGTERM by giving the signal back to its
 * default action has started its exit (opencode 1.18 does, then waits for its background
 * dependency install, tens of seconds, before its process ends); a second SIGTERM ends it
 * as it chose, now. An agent that keeps its handler (claude writing its transcript) gets the
 * whole grace.
 */
static void claudeproc_term_check(uv_timer_t *t)
{
	struct host *h = t->data;

	if (!h->claude.running || !claudeproc_term_default(h->claude.proc.pid))
		return;
	uv_timer_stop(t);
	kill(-h->claude.proc.pid, SIGTERM);
}

void claudeproc_stop(struct host *h)
{
	uint64_t grace_ms = (uint64_t)h->cfg->stop_grace * 1000;

	if (h->claude.stopping || !h->claude.running)
		return;
	h->claude.stopping = true;
	/* claude runs in its own process group (UV_PROCESS_DETACHED): end all of it. */
	kill(-h->claude.proc.pid, SIGTERM);
	uv_timer_start(
	    &h->claude.kill_timer, claudeproc_kill_late,
	    grace_ms > CLAUDEPROC_KILL_AHEAD_MS ? grace_ms - CLAUDEPROC_KILL_AHEAD_MS : 0, 0);
	uv_timer_start(&h->claude.term_timer, claudeproc_term_check, CLAUDEPROC_TERM_CHECK_MS,
		       CLAUDEPROC_TERM_CHECK_MS);
}

/*
 * claude's environment: the pane's, which agentd-api made exactly the agent's (claude.h, tmux.h),
 * without CLAUDECODE (claude refuses to start nested) and with CLAUDE_CODE_ENTRYPOINT=sdk-ts,
 * which marks an SDK-style host as the official SDKs do (notes §1.3), unless it is set. The
 * array points into environ; the caller frees only the array.
 */
static char **claudeproc_env(void)
{
	extern char **environ;
	static const char *const drop[] = {"CLAUDECODE="};

	return proc_env_edit(environ, drop, 1, "CLAUDE_CODE_ENTRYPOINT=sdk-ts");
}

int claudeproc_start(struct host *h, char *const argv[])
{
	struct claudeproc *c = &h->claude;
	uv_process_options_t o;
	uv_stdio_container_t stdio[3];
	uv_file out[2] = {-1, -1};
	char **env;
	int r;

	hostproto_reader_init(&c->lines, HOSTPROTO_LINE_MAX);
	uv_timer_init(h->loop, &c->kill_timer);
	c->kill_timer.data = h;
	uv_timer_init(h->loop, &c->term_timer);
	c->term_timer.data = h;
	uv_pipe_init(h->loop, &c->in, 0);
	uv_pipe_init(h->loop, &c->out, 0);
	c->out.data = h;
	c->proc.data = h;
	c->tok = json_tokener_new();
	c->chunk = malloc(CLAUDEPROC_READ_CHUNK);
	env = claudeproc_env();
	if (env == NULL || c->tok == NULL || c->chunk == NULL) {
		free(env);
		return UV_ENOMEM;
	}
	/* claude's stdout is a pipe, not the socket pair libuv makes for UV_CREATE_PIPE: its
	 * many small writes (one per line) then fill pages the host takes in one copy, instead of
	 * one socket buffer each that the host frees one by one. */
	r = uv_pipe(out, 0, 0);
	if (r == 0 && (r = uv_pipe_open(&c->out, out[0])) < 0)
		close(out[0]);
	if (r < 0) {
		if (out[1] >= 0)
			close(out[1]);
		free(env);
		return r;
	}
	memset(&o, 0, sizeof(o));
	stdio[0].flags = UV_CREATE_PIPE | UV_READABLE_PIPE;
	stdio[0].data.stream = (uv_stream_t *)&c->in;
	stdio[1].flags = UV_INHERIT_FD;
	stdio[1].data.fd = out[1];
	stdio[2].flags = UV_INHERIT_FD;
	stdio[2].data.fd = 2;
	o.file = argv[0];
	o.args = (char **)argv;
	o.env = env;
	o.stdio = stdio;
	o.stdio_count = 3;
	o.flags = UV_PROCESS_DETACHED;
	o.exit_cb = claudeproc_exited;
	c->proc_init = true; /* uv_spawn initializes the handle even when it fails */
	r = uv_spawn(h->loop, &c->proc, &o);
	close(out[1]); /* claude's own copy is the only writer: its exit is the host's EOF */
	free(env);
	if (r < 0)
		return r;
	c->running = true;
	uv_read_start((uv_stream_t *)&c->out, claudeproc_alloc, claudeproc_read);
	return 0;
}

void claudeproc_close(struct host *h)
{
	uv_close((uv_handle_t *)&h->claude.kill_timer, NULL);
	uv_close((uv_handle_t *)&h->claude.term_timer, NULL);
	uv_close((uv_handle_t *)&h->claude.in, NULL);
	uv_close((uv_handle_t *)&h->claude.out, NULL);
	if (h->claude.proc_init)
		uv_close((uv_handle_t *)&h->claude.proc, NULL);
}

void claudeproc_free(struct host *h)
{
	hostproto_reader_free(&h->claude.lines);
	if (h->claude.tok != NULL)
		json_tokener_free(h->claude.tok);
	free(h->claude.chunk);
}
