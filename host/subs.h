/*
 * Connections on host.sock (core/hostproto.h). Each starts with one request line (read with the
 * codec's reader, at most HOSTPROTO_REQUEST_MAX bytes; requests.c acts on it). A subscriber is
 * then sent events in one of two ways:
 *   replay  lines read back from the event log, from its offset, while less than
 *           SUBS_QUEUE_HIGH bytes wait to be written to it; at the log's end it goes live (the
 *           first time, pending permission requests are sent again);
 *   live    each batch of new events, as it is written to the log, without a copy.
 * A live subscriber with more than SUBS_QUEUE_HIGH bytes waiting goes back to replay from where
 * it is: the log is the durable copy, so a slow reader costs the host no memory and is never
 * dropped. A prompt's stream ends after its turn's result; a queued prompt's stream has its
 * `queued` event, then nothing until its turn begins. When claude exits every subscriber
 * is finished once it has everything (or after SUBS_DRAIN_MS).
 */
#ifndef AGENTD_HOST_SUBS_H
#define AGENTD_HOST_SUBS_H

#include "evlog.h"
#include "hostproto.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#define SUBS_QUEUE_HIGH   (256 * 1024) /* bytes waiting to a subscriber: read from the log */
#define SUBS_REPLAY_CHUNK (256 * 1024) /* read from the log at a time */
#define SUBS_DRAIN_MS     5000         /* after claude exited, for subscribers to take the rest */
#define SUBS_BACKLOG      16
#define SUBS_READ_CHUNK   4096
/* The "by" of a request from a peer that is no daemon (an agent of the same user). */
#define SUBS_UNVOUCHED "unvouched"

struct host;

enum sub_state { SUB_REQUEST, SUB_REPLAY, SUB_LIVE, SUB_DONE };

struct sub {
	uv_pipe_t pipe;
	struct host *host;
	struct sub *next;
	enum sub_state state;
	struct hostproto_reader req;
	uint64_t after;     /* events with ids up to this are not sent */
	off_t offset;       /* the log's next line this subscriber has not been sent */
	bool replayed;      /* its first replay is over */
	uint64_t prompt_no; /* a prompt's stream: its prompt's number (0: not one) */
	uint64_t end_id;    /* a prompt's stream: the result that ended its turn (0: not yet) */
	bool draining;      /* claude exited: finish once everything is sent */
	bool closing;
	bool vouched; /* the peer is a daemon (SO_PEERCRED): its "by" is taken */
};

struct subs {
	uv_pipe_t server;
	uv_timer_t drain_timer;
	struct sub *head;
	uid_t daemons_uid; /* besides root: the runtime directory's owner */
};

/* Listens on <dir>/host.sock. Returns 0 or a libuv error. */
int subs_listen(struct host *h, const char *dir);

/* A batch of new events, just written to the log at b->at: to every live subscriber. */
void subs_publish(struct host *h, struct evlog_batch *b);

/* A turn ended with result event id; the prompts numbered up to done are over: their streams
 * end with that event, and the next prompt's stream goes on from it. Called while the batch
 * holding id is not sent yet (claude's lines are read in batches). */
void subs_turn_ended(struct host *h, uint64_t id, uint64_t done);

/* claude exited: no new connections; each subscriber finishes when it has every event. */
void subs_drain(struct host *h);

/* Closes every handle of this module. */
void subs_close(struct host *h);

/* The answers requests.c gives s. */
void sub_subscribe(struct sub *s, uint64_t after); /* replay from the start, then live */
/* "accepted" (with queued: the turns ahead of it), then the events after id after until the
 * result that ends prompt number no (subs_turn_ended). */
void sub_prompt(struct sub *s, uint64_t after, uint64_t no, uint64_t queued);
/* A queued prompt's stream sends nothing more until its turn begins (subs_turn_ended). */
void sub_hold(struct sub *s);
void sub_ok(struct sub *s); /* "ok", then the end */
void sub_error(struct sub *s, int status, const char *code, const char *msg); /* then the end */

#endif
