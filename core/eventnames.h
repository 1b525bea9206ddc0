/*
 * The names of the events agent-daemon's streams carry, and the fields each one's data has: one
 * table for every C side that sends or reads them (the bridge's /events and attention hub,
 * agentd-host's per-session stream, agentd-telegram, agentctl). API.md ("Events" and "Structured
 * mode") is the prose of the same contract; the web UI reads these names from
 * nginx/html/assets/js/events.js, which tests/integration/test_house.sh checks against this file.
 */
#ifndef AGENTD_EVENTNAMES_H
#define AGENTD_EVENTNAMES_H

/* ---- GET /events ---------------------------------------------------------------------------- */

/* {"change": "created"|"updated"|"deleted", "session": <the session object>} */
#define EV_SESSION "session"
/* {"snapshot": true, "sessions": [<session objects>]}: the whole state, first on a new stream */
#define EV_SNAPSHOT "snapshot"
/* {"session", "requestId", "toolName", "input", "toolUseId"?, "description"?, "suggestions"?,
 *  "blockedPath"?, "mode"?}: a tool use waits for a person */
#define EV_PERMISSION "permission"
/* {"session", "requestId", "behavior"?: "allow"|"deny"|"withdrawn", "by", "message"?}: answered
 * or withdrawn; the first answer wins */
#define EV_PERMISSION_RESOLVED "permission_resolved"
/* {"session", "subtype", "is_error", "num_turns", "duration_ms", "usage", "total_cost_usd",
 *  "queued_turn_count", "result", "truncated"?}: a structured turn ended */
#define EV_RESULT "result"
/* {"session", "by"}: the host took a prompt */
#define EV_PROMPT "prompt"
/* {"session", "position", "by"} (and "prompt" on the session's own stream): a prompt waits
 * behind the running turn */
#define EV_QUEUED "queued"
/* {"session", "pr": {"number", "url", "state", "checks"}}: a session's pull request changed
 * (opened, merged, closed, its checks) */
#define EV_PR "pr"
/* {"error", "code"} without id: the stream ends (lagged, log_error, host_exited, stream_ended,
 * agent_exited, session_lost) */
#define EV_ERROR "error"

/* ---- a structured session's own stream (agentd-host), besides claude's own lines ---------- */

/* {"status"?, "signal"?}: the agent host's claude ended */
#define EV_EXIT "exit"
/* the bytes of a line claude wrote that is not JSON */
#define EV_RAW "raw"

/* Every name /events publishes, for its counters (GET /metrics: agentd_bridge_events_total). */
#define EV_PUBLISHED                                                                               \
	EV_SESSION, EV_PERMISSION, EV_PERMISSION_RESOLVED, EV_RESULT, EV_PROMPT, EV_QUEUED, EV_PR

#endif
