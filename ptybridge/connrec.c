/*
 * The part of conn.h about a connection's session record: the lookup that turns its state into
 * an answer (ready, wait for `creating`, or the refusal), and the watch of the records
 * directory that ends such a wait (inotify, with a rescan as the fallback).
 */
#include "conn.h"

#include "log.h"
#include "store.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

enum conn_record conn_lookup(const struct store *st, const char *id, struct session *s,
			     struct conn_refusal *why)
{
	struct cause cause = {{0}};
	int r;

	r = store_read(st, id, s, &cause);
	if (r == -ENOENT) {
		why->status = 404;
		why->code = "not_found";
		snprintf(why->message, sizeof(why->message), "no such session");
		return CONN_RECORD_MISSING;
	}
	if (r < 0) {
		log_error("session %s: %s", id, cause.msg);
		why->status = 500;
		why->code = "store_error";
		snprintf(why->message, sizeof(why->message), "cannot read the session record");
		return CONN_RECORD_MISSING;
	}
	switch (s->state) {
	case SESSION_RUNNING:
	case SESSION_ATTACHED:
		return CONN_RECORD_READY;
	case SESSION_CREATING:
		return CONN_RECORD_CREATING;
	case SESSION_FAILED:
	case SESSION_STOPPING:
	case SESSION_EXITED:
	case SESSION_LOST:
		break;
	}
	why->status = 409;
	why->code = session_unavailable(s, why->message, sizeof(why->message));
	return CONN_RECORD_UNAVAILABLE;
}

/* ---- the record watch ------------------------------------------------------------------ */

static void conn_on_record(uv_fs_event_t *handle, const char *filename, int events, int status)
{
	struct conn *c = CONN_OF(handle, record);
	size_t n = strlen(c->id);

	/* Records are written as <id>.json (store.h), replaced by a rename in the same directory.
	 */
	if (status < 0 || filename == NULL || c->phase == CONN_DEAD || n == 0 ||
	    strncmp(filename, c->id, n) != 0 || strcmp(filename + n, ".json") != 0)
		return;
	if (c->ops->record_changed != NULL)
		c->ops->record_changed(c);
}

int conn_watch_record(struct conn *c, const char *dir, uint64_t now)
{
	int r;

	if (c->watching)
		return 0;
	c->watch_failed = false;
	r = uv_fs_event_start(&c->record, conn_on_record, dir, 0);
	if (r < 0) {
		c->watch_failed = true;
		c->next_check = now + BRIDGE_CREATING_POLL_MS;
		return r;
	}
	c->watching = true;
	c->next_check = now + CONN_RECORD_FALLBACK_MS;
	return 0;
}

void conn_unwatch_record(struct conn *c)
{
	if (c->watching)
		uv_fs_event_stop(&c->record);
	c->watching = false;
	c->watch_failed = false;
}

bool conn_record_due(struct conn *c, uint64_t now)
{
	if ((!c->watching && !c->watch_failed) || now < c->next_check)
		return false;
	c->next_check = now + (c->watch_failed ? BRIDGE_CREATING_POLL_MS : CONN_RECORD_FALLBACK_MS);
	return true;
}
