// The names of the events agent-daemon's streams carry (GET /events and a structured session's
// own stream, besides claude's own lines): the same table as core/eventnames.h, which
// tests/integration/test_house.sh checks this file against. What each one's data holds is
// written there and in docs/API.md.
export const EV = Object.freeze({
  SESSION: "session",
  SNAPSHOT: "snapshot",
  PERMISSION: "permission",
  PERMISSION_RESOLVED: "permission_resolved",
  RESULT: "result",
  PROMPT: "prompt",
  QUEUED: "queued",
  PR: "pr",
  ERROR: "error",
  EXIT: "exit",
  RAW: "raw",
});
