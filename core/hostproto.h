/*
 * The protocol between agentd-bridge and agentd-host, and where its files live. Each structured
 * session has a directory <runtime_dir>/sessions/<id>/ holding:
 *   host.sock   the host's unix socket
 *   events.log  every event, one line each, as sent to subscribers
 *
 * On host.sock both sides speak newline-delimited JSON. A connection starts with one request line:
 *   {"type":"subscribe","after":N}
 *       replays every event with id > N, then every pending permission request (again, even if
 *       its id <= N), then streams live events until either side closes.
 *   {"type":"prompt","prompt":"text"}
 *       answers {"type":"accepted","after":N} and then streams the turn's events (ids > N) until
 *       the turn's "result" event, then closes; or {"type":"error",...} when a turn is running.
 *   {"type":"permission","requestId":"…","behavior":"allow"|"deny","message":"…",
 *    "updatedInput":{…},"interrupt":true,"updatedPermissions":[{…}]}
 *       (updatedPermissions only with allow: passed to claude in its control_response)
 *   {"type":"interrupt"}
 *       answer {"type":"ok"} or an error, then close.
 * Errors are {"type":"error","status":<HTTP status>,"code":"snake_case","error":"sentence"}.
 * Events are {"id":N,"event":"<name>","data":<JSON>}: for claude's own lines the name is the line's
 * "type" and data is the line exactly as claude wrote it; a tool-permission request is
 * "permission" with data {"requestId","toolName","input","toolUseId","description","suggestions",
 * "blockedPath"}.
 */
#ifndef AGENTD_HOSTPROTO_H
#define AGENTD_HOSTPROTO_H

#include "config.h"

#include <stddef.h>

#define HOSTPROTO_LINE_MAX    (16 * 1024 * 1024) /* longest claude line or event we carry */
#define HOSTPROTO_REQUEST_MAX (256 * 1024)       /* longest request line a client may send */

/* Writes <runtime_dir>/sessions/<id>/<leaf> (leaf "" gives the directory). Returns 0 or
 * -ENAMETOOLONG. */
int hostproto_path(const struct config *cfg, const char *id, const char *leaf, char *out,
		   size_t outlen);

#endif
