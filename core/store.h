/*
 * The record store: one JSON file per session in <state_dir>/sessions/<id>.json (records outlive a
 * reboot: they are what brings the sessions back), written only as
 * temp file + fsync + rename so a reader never sees half a record. Every read-modify-write holds
 * the session's lock (flock on <id>.lock); readers never lock. Creation also takes the store-wide
 * lock so the session count and the new record are decided together. The lock file lives as long
 * as the record: a request about an unknown id, or a refused create, leaves no file behind.
 *
 * Every change also updates <runtime_dir>/sessions.json, the JSON array GET /sessions answers
 * (derived, so it lives in the runtime dir, where nginx reads it; rebuilt when missing)
 * (API form, sorted by id), under its own lock and after the record's rename: the entry of the
 * changed id is made again from its record, and every other entry is kept as the view has it, so
 * a write reads the view and its own record, never the other records. Whoever patches last sees
 * every change of its id. store_rebuild_view makes the whole view from the records (recovery runs
 * it on every pass, which also repairs a view a crash left behind). nginx serves GET /sessions
 * from that file directly: the list that clients poll costs no process hop.
 */
#ifndef AGENTD_STORE_H
#define AGENTD_STORE_H

#include "cause.h"
#include "session.h"

#include <stddef.h>

#define STORE_MAX_RECORDS 4096
#define STORE_LOCK_TRIES  64 /* lock files removed under a waiter before store_lock gives up */
/* The largest view store_write patches; a larger one is rebuilt from the records. */
#define STORE_VIEW_MAX ((size_t)STORE_MAX_RECORDS * SESSION_RECORD_MAX)
/* The view carries every bootstrap prompt, "by" and pending tool description, in a runtime dir
 * anyone may pass through: its owner and group (nginx's workers, through the setgid dir) only. */
#define STORE_VIEW_MODE 0640

struct store {
	char dir[SESSION_PATH_MAX];  /* <state_dir>/sessions: records, their locks, .gone/ */
	char view[SESSION_PATH_MAX]; /* <runtime_dir>/sessions.json */
};

/*
 * Creates the state dir, the runtime dir (one level each) and <state_dir>/sessions (mode 0750)
 * if needed. Records that an older version kept in <runtime_dir>/sessions/ are moved into the
 * state dir once (under the store-wide lock; a record the state dir has already is left where it
 * is, with a log line): nothing is lost. Returns 0 or -errno with cause.
 */
int store_init(struct store *st, const char *state_dir, const char *runtime_dir,
	       struct cause *cause);

/*
 * Takes the exclusive lock of session id (blocking). Returns the lock fd (>= 0) to pass to
 * store_unlock, -ENOENT when id has no record (and then creates no file), or -errno. id must be
 * session_id_valid.
 */
int store_lock(const struct store *st, const char *id);

/*
 * As store_lock, also for an id without a record: for the one who may create it. Release it with
 * store_unlock_session, which removes the lock file again when no record was written.
 */
int store_lock_create(const struct store *st, const char *id);

/* Releases the lock fd of id, first removing the lock file if id has no record. */
void store_unlock_session(const struct store *st, const char *id, int fd);

/* As store_lock, for the store-wide creation lock. */
int store_lock_all(const struct store *st);

/* Releases a lock taken by store_lock / store_lock_all. NULL-safe for fd < 0. */
void store_unlock(int fd);

/*
 * The record's codec: s as its JSON text (malloc'd; NULL when out of memory), and that text
 * back into a session, with every check store_read makes (-EINVAL with cause).
 */
char *store_encode(const struct session *s);
int store_decode(const char *text, size_t len, struct session *out, struct cause *cause);

/* Reads the record of id. Returns 0, -ENOENT, or -EINVAL (corrupt record, cause says why). */
int store_read(const struct store *st, const char *id, struct session *out, struct cause *cause);

/* Writes s atomically (updated_at set to now) and patches its entry of the view. Returns 0 or
 * -errno with cause (a failed view update is not an error: the next rebuild repairs it). */
int store_write(const struct store *st, struct session *s, struct cause *cause);

/* The records of deleted sessions, one per id (store_remove). */
#define STORE_GONE_DIR ".gone"

/*
 * Removes the record of id and its lock file. The caller holds the lock of id and releases it
 * right after, without touching the record again. Returns 0 or -ENOENT. The record is not
 * unlinked but renamed to <dir>/.gone/<id>.json (one rename: readers see it whole or not at
 * all), which tells the bridge's /events who deleted the session (its "by") after the fact; the
 * next delete of the same id replaces it.
 */
int store_remove(const struct store *st, const char *id);

/* Reads the last record of a deleted session (.gone/<id>.json). Returns 0, -ENOENT, -EINVAL. */
int store_read_gone(const struct store *st, const char *id, struct session *out,
		    struct cause *cause);

/* The bridge has published the deletion of id: its .gone record is removed (absent is fine). */
void store_forget_gone(const struct store *st, const char *id);

/* Calls fn(ctx, id) for each id with a .gone record (ids that are not valid are skipped). */
void store_gone_each(const struct store *st, void (*fn)(void *ctx, const char *id), void *ctx);

/*
 * Reads every record, sorted by id. *out is allocated (caller frees) and *n set. Corrupt records
 * are skipped with a log line. Returns 0 or -errno (-E2BIG over STORE_MAX_RECORDS).
 */
int store_list(const struct store *st, struct session **out, size_t *n);

/* Rebuilds the view <runtime_dir>/sessions.json from every record. Returns 0 or -errno. */
int store_rebuild_view(const struct store *st);

/* Writes the per-session path "<dir>/<id><suffix>" into out. Returns 0 or -ENAMETOOLONG. */
int store_path(const struct store *st, const char *id, const char *suffix, char *out,
	       size_t outlen);

#endif
