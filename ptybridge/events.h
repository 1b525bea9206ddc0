/*
 * GET /events: one stream of what happens to every session (API.md "Events"), and its durable
 * log. The bridge is the only writer of the log: attention.c publishes `permission`,
 * `permission_resolved` and `result`; this module publishes `session` itself, from the records
 * (an inotify watch of the records directory: created, changed, deleted — compared with the last
 * session object it published, so only real changes make an event).
 *
 * The log is <state_dir>/events.log (it outlives a reboot), one event per line in the bridge↔host
 * event form
 * ({"id":N,"event":"<name>","data":<JSON>}, core/hostproto.h's codec), rotated to events.log.1
 * when it passes EVENTS_LOG_MAX bytes (two files: the bounded history a Last-Event-ID can
 * replay). Ids are monotonic across restarts of every daemon: the next id continues from the
 * last one either file holds. A client is served as SSE (`id:` / `event:` / `data:`) or, with
 * `Upgrade: websocket` on the same path, one JSON text frame per event (the log line). With a
 * Last-Event-ID (header, or ?after=N) the log holds, it gets every later event, without gap or
 * duplicate, then live ones; without one, or with one the log no longer (or never) held, it
 * first gets a `snapshot` event ({"snapshot":true,"sessions":[every session object]}, id the
 * last id).
 *
 * A `session` event's data is {"change":"created"|"updated"|"deleted","session":<API object>}
 * (deleted: the last object published). Changes of only `updatedAt` and `lastActivity` (they move
 * every few seconds while a terminal shows output), and the `rev` that comes with them, are no
 * change. The last object of each session
 * is kept in memory (the snapshot is made from it) and rebuilt at start from the log's `session`
 * events, then compared with the records: what changed while no bridge ran is published then. A
 * session whose every event was rotated away is announced `created` again at start. Every record
 * read (a notification, the rescan) is also passed to attention_session_changed: this watch is
 * the attention hub's view of the records.
 *
 * A client never costs more than about EVENTS_QUEUE_HIGH bytes: while that much waits for it, it
 * is sent nothing live and catches up from the log (from its position) as its queue empties, like
 * agentd-host's subscribers (host/subs.h). One whose position was rotated away gets an `error`
 * event (code `lagged`) and its stream ends: it reconnects with its Last-Event-ID (and gets the
 * snapshot).
 */
#ifndef AGENTD_BRIDGE_EVENTS_H
#define AGENTD_BRIDGE_EVENTS_H

#include "bridge.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#define EVENTS_LOG_NAME     "events.log"
#define EVENTS_LOG_OLD_NAME "events.log.1"
#define EVENTS_LOG_MAX      (4 * 1024 * 1024) /* bytes of events.log before it is rotated */
#define EVENTS_QUEUE_HIGH   (256 * 1024)      /* bytes waiting for a client: it catches up */
#define EVENTS_FRAMES_HIGH  256               /* ... or WebSocket frames */
#define EVENTS_REPLAY_CHUNK (64 * 1024)       /* read from the log at a time */
#define EVENTS_SSE_PING_MS  (15 * 1000)       /* ": ping" after this long without output */
#define EVENTS_RESCAN_MS    (5 * 1000)    /* every record re-read: inotify may have dropped some */
#define EVENTS_DATA_MAX     (1024 * 1024) /* the longest data events_publish takes */

struct events;

/* The /events service and its route (GET /events). */
extern const struct bridge_service events_service;
extern const struct bridge_route events_routes[];

/* Told each record the watch reads (rec: as it is now) or loses (rec NULL: deleted), seen again
 * or not: the attention hub's view of the records, handed in by whoever opens both so that
 * this module does not depend on the hub. */
typedef void (*events_record_fn)(void *ctx, const char *id, const struct session *rec);

/* Opens the log (finding the last id; rotated at b->opt.events_log_max bytes), publishes what
 * changed in the records while no bridge watched them, and starts watching; on_record (NULL:
 * none) is told every record seen, from this first pass on. Returns 0 (b->events set) or -errno
 * with cause. */
int events_open(struct bridge *b, events_record_fn on_record, void *ctx, struct cause *cause);

/* Stops watching and closes the log (after the last /events client is gone); b->events is NULL
 * after, the memory goes when the handles are closed (uv_run). */
void events_close(struct bridge *b);

/*
 * Appends one event (name: hostproto_event_name_valid; data: a JSON object, consumed) to the
 * log and sends it to every /events client. Callable from anywhere on the loop between
 * events_open and events_close, with or without clients. Returns its id (> 0), or -errno (the
 * event is lost: logged; -EINVAL bad name or data, -EMSGSIZE data over EVENTS_DATA_MAX).
 */
int64_t events_publish(struct events *ev, const char *name, json_object *data);

/* True when session objects a and b (API form) differ in more than updatedAt, lastActivity, rev;
 * a NULL one differs from any object. */
bool events_session_changed(json_object *a, json_object *b);

#endif
