/*
 * The roster: the bridge's writer of records. It mirrors which sessions have terminal clients of
 * this bridge, and the attention hub's facts (activity, pending requests: attention.h), into
 * their records.
 * The bridge knows its own client count per session; the record's `clients`, its running ⇄
 * attached state and `lastActivity` follow that count. Records are written under the session lock
 * (flock, held only for the read-modify-write), in libuv's thread pool so a slow lock or fsync
 * never stalls the loop; at most one write per session is in flight and each writes the latest
 * count, so writes cannot overtake one another and bursts of attach/detach coalesce.
 */
#ifndef AGENTD_BRIDGE_ROSTER_H
#define AGENTD_BRIDGE_ROSTER_H

#include "store.h"

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#define ROSTER_ACTIVITY_INTERVAL 5 /* seconds between lastActivity writes while output flows */

struct roster;
struct roster_entry;

/* st is borrowed and must outlive the roster. Returns NULL with errno ENOMEM. */
struct roster *roster_create(uv_loop_t *loop, const struct store *st);

/* Frees the roster; every entry must have been detached and roster_busy must be false. */
void roster_destroy(struct roster *r);

/* True while a record write is queued or running. */
bool roster_busy(const struct roster *r);

/* One more client of session id (session_id_valid). Returns the entry to pass to roster_detach
 * and roster_activity, or NULL with errno ENOMEM. */
struct roster_entry *roster_attach(struct roster *r, const char *id);

/* One client fewer. The entry must not be used afterwards by this client. */
void roster_detach(struct roster_entry *e);

/* Terminal output was seen at unix time now; lastActivity is written at most every
 * ROSTER_ACTIVITY_INTERVAL seconds. */
void roster_activity(struct roster_entry *e, int64_t now);

/* The attention hub's facts of one session, as its record keeps them. */
struct roster_attention {
	enum session_activity activity;
	int64_t activity_at; /* unix milliseconds */
	unsigned n_pending;
	struct session_pending pending[SESSION_PENDING_MAX];
	uint32_t pending_launch; /* the record's launch those requests were asked under */
	uint64_t host_event;
	struct session_cost cost; /* summed with host_event: one result counts once */
};

/* Writes a into session id's record (coalesced as the counts are: the latest one wins). Returns
 * 0 or -ENOMEM. */
int roster_set_attention(struct roster *r, const char *id, const struct roster_attention *a);

/* Clients of this bridge of session id right now (0 if none). */
int roster_clients(const struct roster *r, const char *id);

/*
 * At bridge start, before serving: a previous bridge that died left counts behind, but its tmux
 * clients died with its PTYs. Sets every record's clients to 0 and attached to running, under
 * each record's lock (blocking). Returns 0 or -errno from listing the store.
 */
int roster_reset(const struct store *st);

#endif
