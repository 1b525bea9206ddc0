/* What session.c and sessionjson.c (the record's codec) share beyond session.h: not a contract
 * for anyone else. */
#ifndef AGENTD_SESSION_INT_H
#define AGENTD_SESSION_INT_H

#include "session.h"

#include <json-c/json.h>
#include <stdbool.h>

#define SESSION_ACTIVITIES   (SESSION_WAITING + 1)
#define SESSION_EXIT_REASONS (SESSION_EXIT_TIMEOUT + 1)

/* The records' names of the activities and of the exit reasons (API.md). */
extern const char *const session_activity_names[SESSION_ACTIVITIES];
extern const char *const session_exit_reason_names[SESSION_EXIT_REASONS];

/* u is a UUID in its 8-4-4-4-12 hexadecimal form. */
bool session_uuid_valid(const char *u);

/* o's member key when it is a string, else NULL. */
const char *session_get_str(json_object *o, const char *key);

#endif
