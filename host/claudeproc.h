/*
 * The claude process of agentd-host: spawned with pipes in its own process group, its stdout
 * always read and cut into lines (core/hostproto.h's reader; a line over HOSTPROTO_LINE_MAX is
 * dropped whole), each read handed to the host as one batch of events; only JSON the host built
 * goes to its stdin; on stop its whole group gets SIGTERM, then SIGKILL after AGENTD_STOP_GRACE
 * (agentd-api's --set word): the grace the daemon waits for a stop, so that claude has all of it
 * to write its transcript.
 */
#ifndef AGENTD_HOST_CLAUDEPROC_H
#define AGENTD_HOST_CLAUDEPROC_H

#include "hostproto.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#define CLAUDEPROC_READ_CHUNK (64 * 1024) /* a pipe's capacity: one read takes all of it */
/* How long before the grace ends the host kills claude: agentd-api SIGKILLs the host's group when
 * it ends, and claude's own group, which that does not reach, must be gone by then. */
#define CLAUDEPROC_KILL_AHEAD_MS 250
/* How often a stopping agent's SIGTERM disposition is read (claudeproc_stop): an agent that
 * handled the SIGTERM and set it back to its default action gets a second one, which ends it. */
#define CLAUDEPROC_TERM_CHECK_MS 100

struct host;

struct claudeproc {
	uv_process_t proc;
	uv_pipe_t in, out;
	uv_timer_t kill_timer, term_timer;
	bool proc_init, running, stopping;
	struct hostproto_reader lines;
	json_tokener *tok; /* one tokenizer for every line, reset each time */
	char *chunk;       /* the read buffer, reused */
	unsigned long next_request;
};

/* Starts claude (argv[0] is looked up in PATH) and reads its output. Returns 0 or a libuv
 * error. */
int claudeproc_start(struct host *h, char *const argv[]);

/* Parses one line of claude's with the reused tokenizer: the object, or NULL when the line is
 * not a JSON object. Caller puts it. */
json_object *claudeproc_parse(struct host *h, const char *line, size_t len);

/* Writes len bytes (whole lines) to the agent's stdin. */
void claudeproc_write(struct host *h, const char *data, size_t len);

/* Writes msg (consumed) to claude's stdin as one line. */
void claudeproc_send(struct host *h, json_object *msg);

/* prompt (a JSON string) as the next user message: a turn starts, or claude queues it behind
 * the running turn (h->prompts counts it). Returns how many prompts' turns are ahead of it. */
uint64_t claudeproc_prompt(struct host *h, json_object *prompt);

/* Asks claude to interrupt its turn (a control_request). */
void claudeproc_interrupt(struct host *h);

/* Ends claude's process group: SIGTERM now, again as soon as the agent has set SIGTERM back
 * to its default action (it took the stop but its process lingers), SIGKILL after the grace. */
void claudeproc_stop(struct host *h);

/* Closes the process's handles (after it exited, or when it never started). */
void claudeproc_close(struct host *h);

void claudeproc_free(struct host *h);

#endif
