#!/usr/bin/env node
// Terminal load of the soak (tests/bench/soak): WebSocket clients of /sessions/<id>/terminal
// through nginx (npm `ws`, `cd tests && npm ci`), all in one process so that the load costs the
// shared machine little.
//
//   node terminals.js BASE_WS_URL [--cycle ID]... [--flood ID] [--dwell MIN,MAX] [--gap MIN,MAX]
//
// Each --cycle session gets one client at a time, again and again: it attaches, waits for the
// first output, stays DWELL seconds (default 1-4) typing a line the fake claude echoes, then
// detaches: a close handshake, or every fourth time a dropped TCP connection with no close
// frame (what a phone that loses its network does), then waits GAP seconds (default 1-3).
// The --flood session's client stays attached and reads whatever comes (its pane runs `yes`);
// if its socket ends it attaches again (counted). On SIGTERM no new client starts, every client
// detaches, and one JSON line of counts is printed:
//   {"attaches", "detaches", "abrupt", "echoes", "failures", "errors": [first few],
//    "flood_bytes", "flood_attaches"}
// An attach is counted when its first output arrived; a failure is a refused upgrade, an error,
// a socket that ended by itself, or no output within 10 s.
// The harness's token (AGENTD_TEST_TOKEN, tests/integration/lib.sh) is sent on every upgrade.
"use strict";

const path = require("path");
const WebSocket = require(path.join(__dirname, "..", "..", "node_modules", "ws"));

const FIRST_OUTPUT_MS = 10000;
const ERRORS_KEPT = 10;

function range(s) {
  const [a, b] = s.split(",").map(Number);
  return [a, b === undefined ? a : b];
}

const args = process.argv.slice(2);
const base = args.shift();
const cycle = [];
let flood = null;
let dwell = [1, 4];
let gap = [1, 3];
while (args.length) {
  const a = args.shift();
  if (a === "--cycle") cycle.push(args.shift());
  else if (a === "--flood") flood = args.shift();
  else if (a === "--dwell") dwell = range(args.shift());
  else if (a === "--gap") gap = range(args.shift());
  else {
    process.stderr.write("terminals.js: unknown argument " + a + "\n");
    process.exit(2);
  }
}

const headers = {};
if (process.env.AGENTD_TEST_TOKEN) headers.Authorization = "Bearer " + process.env.AGENTD_TEST_TOKEN;

const counts = {
  attaches: 0,
  detaches: 0,
  abrupt: 0,
  echoes: 0,
  failures: 0,
  errors: [],
  flood_bytes: 0,
  flood_attaches: 0,
};
let stopping = false;
const live = new Set(); // open or opening sockets
const timers = new Set();

function later(ms, fn) {
  const t = setTimeout(() => {
    timers.delete(t);
    fn();
  }, ms);
  timers.add(t);
}

function between([a, b]) {
  return (a + Math.random() * (b - a)) * 1000;
}

function failure(id, why) {
  counts.failures++;
  if (counts.errors.length < ERRORS_KEPT) counts.errors.push(id + ": " + why);
}

function open(id) {
  const ws = new WebSocket(base + "/sessions/" + id + "/terminal?cols=120&rows=40", {
    perMessageDeflate: false,
    maxPayload: 64 * 1024 * 1024,
    headers,
  });
  live.add(ws);
  ws.on("close", () => live.delete(ws));
  return ws;
}

// One attach/detach cycle of session `id`, then the next after a gap.
function cycleOnce(id, n) {
  if (stopping) return;
  const ws = open(id);
  const word = "soak" + n;
  let attached = false;
  let leaving = false;
  let text = "";
  const next = () => later(between(gap), () => cycleOnce(id, n + 1));
  const firstOutput = setTimeout(() => {
    failure(id, "no output within " + FIRST_OUTPUT_MS + " ms");
    leaving = true;
    ws.terminate();
  }, FIRST_OUTPUT_MS);
  ws.on("unexpected-response", (req, res) => {
    clearTimeout(firstOutput);
    failure(id, "upgrade answered " + res.statusCode);
    leaving = true;
    ws.terminate();
  });
  ws.on("error", (e) => {
    // stop() ends a socket still connecting with terminate(): that error is ours, not a failure.
    if (!leaving && !stopping) failure(id, "error " + e.message);
    leaving = true;
  });
  ws.on("message", (data) => {
    if (!attached) {
      attached = true;
      clearTimeout(firstOutput);
      counts.attaches++;
      // The fake claude echoes a typed line; its text is looked for in the output, with
      // escape sequences in between tolerated by looking at the letters only.
      ws.send(Buffer.from(word + "\r"), { binary: true });
      later(between(dwell), () => {
        leaving = true;
        if (n % 4 === 3) {
          counts.abrupt++;
          ws.terminate();
        } else {
          ws.close(1000);
        }
      });
    }
    if (text !== null) {
      text = (text + data.toString("latin1").replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "")).slice(-4096);
      if (text.includes("got: " + word)) {
        counts.echoes++;
        text = null;
      }
    }
  });
  ws.on("close", (code) => {
    clearTimeout(firstOutput);
    if (attached && (leaving || stopping)) counts.detaches++;
    else if (!leaving && !stopping) failure(id, "socket ended by itself (" + code + ")");
    next();
  });
}

function holdFlood(id) {
  if (stopping) return;
  const ws = open(id);
  let attached = false;
  let leaving = false;
  ws.on("unexpected-response", (req, res) => {
    failure(id, "flood upgrade answered " + res.statusCode);
    leaving = true;
    ws.terminate();
  });
  ws.on("error", (e) => {
    if (!leaving && !stopping) failure(id, "flood error " + e.message);
  });
  ws.on("message", (data) => {
    if (!attached) {
      attached = true;
      counts.flood_attaches++;
    }
    counts.flood_bytes += data.length;
  });
  ws.on("close", (code) => {
    if (!stopping && !leaving) failure(id, "flood socket ended by itself (" + code + ")");
    later(1000, () => holdFlood(id));
  });
}

function stop() {
  if (stopping) return;
  stopping = true;
  for (const t of timers) clearTimeout(t);
  timers.clear();
  for (const ws of live) {
    if (ws.readyState === WebSocket.OPEN) ws.close(1000);
    else ws.terminate();
  }
  const deadline = Date.now() + 10000;
  const done = () => {
    if (live.size === 0 || Date.now() > deadline) {
      if (live.size) failure("-", live.size + " sockets did not close within 10 s");
      process.stdout.write(JSON.stringify(counts) + "\n");
      process.exit(0);
    }
    setTimeout(done, 50);
  };
  done();
}

process.on("SIGTERM", stop);
process.on("SIGINT", stop);
cycle.forEach((id, i) => later(i * 300, () => cycleOnce(id, 0)));
if (flood) holdFlood(flood);
