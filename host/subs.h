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
 * dropped. A prompt's stream ends after its turn's result. When claude exits every subscriber
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
	uint64_t after;    /* events with ids up to this are not sent */
	off_t offset;      /* the log's next line this subscriber has not been sent */
	bool replayed;     /* its first replay is over */
	bool until_result; /* a prompt's stream: ends after the turn's result */
	bool draining;     /* claude exited: finish once everything is sent */
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

/* claude exited: no new connections; each subscriber finishes when it has every event. */
void subs_drain(struct host *h);

/* Closes every handle of this module. */
void subs_close(struct host *h);

/* The answers requests.c gives s. */
void sub_subscribe(struct sub *s, uint64_t after); /* replay from the start, then live */
void sub_prompt(struct sub *s, uint64_t after);    /* "accepted", then the turn's events */
void sub_ok(struct sub *s);                        /* "ok", then the end */
void sub_error(struct sub *s, int status, const char *code, const char *msg); /* then the end */

#endif
