/*
 * The /sessions resource (create, list, get, delete), and what POST /sessions/<id>/mode
 * (api_mode.c) shares with it: a session's record read under its lock.
 */
#ifndef AGENTD_API_SESSIONS_H
#define AGENTD_API_SESSIONS_H

#include "app.h"
#include "request.h"
#include "session.h"

/*
 * Takes the lock of session id (store_lock; id is session_id_valid) and reads its record into a
 * new *s. Returns the lock fd (>= 0), the caller then store_unlocks it and frees *s; or -1 after
 * answering req (404 not_found: no such session; 500 store_error: no memory, no lock, a record it
 * cannot read), with nothing held and *s NULL.
 */
int api_session_lock(const struct app *app, struct request *req, const char *id,
		     struct session **s);

#endif
