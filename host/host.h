/*
 * agentd-host: runs in a structured session's tmux pane. It starts claude with pipes, always
 * keeps reading its stdout, numbers every line into the event log, fans events out to subscribers
 * on host.sock (see core/hostproto.h), writes only JSON it built itself to claude's stdin, runs
 * one turn at a time (a prompt sent while one runs goes to claude, which queues it: numbered,
 * announced by a `queued` event, its stream its own turn's), tracks tool-permission requests
 * (answered once; withdrawn by control_cancel_request; denied after the permission timeout), prints
 * a readable transcript to the pane, and on SIGTERM/SIGHUP ends claude's whole process group
 * (SIGTERM, then SIGKILL).
 *
 * This header is the hub the host's modules share: struct host holds each module's state, and
 * the event path (host_emit: number → event log → subscribers) lives in host.c. The modules:
 *   claudeproc.c  the claude process: spawn, stdin, stdout cut into lines, exit, stop
 *   linecheck.c   a quick look at a line: surely a plain JSON object, and its type (no json-c)
 *   evlog.c       events.log: batches of numbered lines, one write each, read back from offsets
 *   subs.c        connections on host.sock: the request line, fan-out, replay and catch-up
 *   requests.c    what a request asks: subscribe, prompt, permission answer, interrupt
 *   perms.c       pending tool-permission requests: answer, withdraw, time out, replay
 *   transcript.c  the readable transcript in the pane
 */
#ifndef AGENTD_HOST_H
#define AGENTD_HOST_H

#include "acpagent.h"
#include "claudeproc.h"
#include "config.h"
#include "evlog.h"
#include "perms.h"
#include "subs.h"
#include "transcript.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <uv.h>

#define HOST_SIGNALS 3 /* SIGTERM, SIGHUP, SIGINT */
/* Prompts waiting behind the running turn: a client that sends more is told to wait (claude
 * keeps them in memory, and nobody reads answers that far ahead). */
#define HOST_QUEUED_MAX 16

struct host {
	uv_loop_t *loop;
	const struct config *cfg;
	const char *id;
	struct evlog log;
	char log_path[CONFIG_PATH_MAX];
	struct evlog_batch *batch; /* events numbered, not yet written and sent */
	bool batching; /* inside a read of claude's output: host_flush sends the batch */
	/* Prompts written to claude (numbered 1, 2, … in this run) and those whose turn ended:
	 * claude queues a prompt sent while a turn runs, and runs it next. */
	uint64_t prompts, prompts_done;
	int64_t turn_started_ms; /* when the running turn began (wall clock, ms) */
	bool interrupting;       /* an interrupt was asked; its turn's result has not come */
	int exit_code;
	struct claudeproc claude;
	struct acpagent acp; /* on: the agent speaks ACP, not claude's stream-json */
	struct subs subs;
	struct perms perms;
	struct transcript transcript;
	uv_signal_t sig[HOST_SIGNALS];
	uv_signal_t chld; /* an orphan the host adopted ended (reap.h) */
};

/* Runs the host for session id with claude_argv until claude exits; first_prompt (NULL: none)
 * starts the first turn. With acp (its name not NULL) the agent speaks ACP (acpagent.h), not
 * claude's stream-json. Returns the exit code. */
int host_run(const struct config *cfg, const char *id, const struct acpagent_opts *acp,
	     const char *first_prompt, char *const claude_argv[]);

/*
 * Numbers an event (name; data is JSON text) and adds it to the current batch; outside a batch
 * (host_batch_begin) it is written and sent at once. When line is not NULL a copy of the event's
 * line is returned there (caller frees). Returns the id, or 0 when the event could not be kept.
 */
uint64_t host_emit(struct host *h, const char *name, const char *data, size_t len, char **line,
		   size_t *line_len);

/* host_emit of a JSON object (consumed). */
void host_emit_json(struct host *h, const char *name, json_object *data);

/* Events emitted from here to host_batch_end go to the log with one write, then to every
 * subscriber, and the transcript is written once. */
void host_batch_begin(struct host *h);
void host_batch_end(struct host *h);

/* The wall clock in ms. */
int64_t host_now_ms(void);

/* Whether a turn runs (or prompts wait for one). */
bool host_turn_running(const struct host *h);

/* One line claude wrote (without its '\n'): an event, a permission request, the end of a turn. */
void host_claude_line(struct host *h, const char *line, size_t len);

/* claude exited: the last event, then subscribers drain and every handle closes. */
void host_claude_exited(struct host *h, int64_t status, int term_signal);

#endif
