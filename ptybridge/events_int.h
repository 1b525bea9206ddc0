/*
 * The /events service's inside, shared by its two files: events.c (session objects, the log,
 * the records watch, open and close) and evclients.c (the clients: SSE or WebSocket, snapshot,
 * replay, catching up from the log). Not a contract for anyone else: the service's is events.h.
 */
#ifndef AGENTD_BRIDGE_EVENTS_INT_H
#define AGENTD_BRIDGE_EVENTS_INT_H

#include "events.h"

#include "conn.h"
#include "evlog.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>
#include <uv.h>

#define EVENTS_PATH      "/events"
#define EVENTS_JSON_OUT  (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
#define EVENTS_ERROR_MAX 512 /* the `error` event that ends a stream */
#define EVENTS_RECORD    ".json"

struct evclient;
LIST_HEAD(evclient_list, evclient);

struct events {
	struct bridge *b;
	struct evlog log; /* events.log, appended to */
	struct evlog old; /* events.log.1 (fd -1: none), read back only */
	unsigned gen;     /* rotations since open: a client's position names its file by it */
	uint64_t first;   /* the first id of log (0: none yet) */
	uint64_t old_first;
	char path[CONFIG_PATH_MAX], old_path[CONFIG_PATH_MAX];
	json_object *known;         /* session id -> the last session object seen (API form) */
	events_record_fn on_record; /* the hub's view of the records (events_open) */
	void *on_record_ctx;
	struct evclient_list clients;
	uv_fs_event_t watch;
	uv_timer_t rescan;
	int handles; /* open handles: the memory goes with the last */
	bool watching;
};

/* A client of GET /events: SSE while the core's phase is CONN_SERVICE, then a WebSocket. */
struct evclient {
	struct conn c;
	struct events *ev;
	LIST_ENTRY(evclient) link;
	bool linked;
	bool streaming; /* the SSE head (or the 101) went out */
	bool live;      /* sent each event as published; else catching up from (gen, offset) */
	bool pumping;
	unsigned gen;
	off_t offset;
	uint64_t after; /* the last id sent */
	uint64_t sent;
};

/* The helpers both halves use (each is described where it is defined). */
bool evclient_behind(const struct evclient *cl);
void evclient_pump(struct evclient *cl);
void evclient_send_line(struct evclient *cl, const char *line, size_t len);
const struct evlog *events_file(const struct events *ev, unsigned gen);

#endif
