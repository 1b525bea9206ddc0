/*
 * GET /events: one stream of what happens to every session (API.md "Events"), and its durable
 * log. The bridge is the only writer of the log: attention.c publishes `permission`,
 * `permission_resolved` and `result`; this module publishes `session` itself, from the records
 * (an inotify watch of the records directory: created, changed, deleted — compared with the last
 * session object it published, so only real changes make an event).
 *
 * The log is <runtime_dir>/events.log, one event per line in the bridge↔host event form
 * ({"id":N,"event":"<name>","data":<JSON>}, core/hostproto.h's codec), rotated to events.log.1
 * when it passes EVENTS_LOG_MAX bytes (two files: the bounded history a Last-Event-ID can
 * replay). Ids are monotonic across restarts of every daemon: the next id continues from the
 * last one either file holds. A client is served as SSE (`id:` / `event:` / `data:`) or, with
 * `Upgrade: websocket` on the same path, one JSON text frame per event (the log line). With a
 * Last-Event-ID (header, or ?after=N) the log holds, it gets every later event, without gap or
 * duplicate, then live ones; without one, or with one the log no longer (or never) held, it
 * first gets a `snapshot` event ({"snapshot":true,"sessions":[every session object]}, id the
 * last id).
 */
#ifndef AGENTD_BRIDGE_EVENTS_H
#define AGENTD_BRIDGE_EVENTS_H

#include "bridge.h"

#include <json-c/json.h>
#include <stdint.h>

struct events;

/* The /events service and its route (GET /events). */
extern const struct bridge_service events_service;
extern const struct bridge_route events_routes[];

/* Opens the log (finding the last id), publishes what changed in the records while no bridge
 * watched them, and starts watching. Returns 0 (b->events set) or -errno with cause. */
int events_open(struct bridge *b, struct cause *cause);

/* Stops watching and closes the log (after the last /events client is gone). */
void events_close(struct bridge *b);

/*
 * Appends one event (name: hostproto_event_name_valid; data: a JSON object, consumed) to the
 * log and sends it to every /events client. Returns its id (> 0), or -errno (the event is lost:
 * logged).
 */
int64_t events_publish(struct events *ev, const char *name, json_object *data);

#endif
