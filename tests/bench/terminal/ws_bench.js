#!/usr/bin/env node
// WebSocket side of the terminal benchmark (npm `ws`, see tests/package.json).
//
//   node ws_bench.js throughput URL COMMAND MARK   types COMMAND + CR, measures until MARK
//       arrives; prints "bytes <received> seconds <elapsed> frames <messages>"
//   node ws_bench.js rtt URL N WARMUP              WARMUP untimed keystrokes, then N keystrokes,
//       each timed until its echo; prints the round trips in microseconds, one per line
//   node ws_bench.js hold URL                      reads commands from stdin, one a line:
//       "open K" opens K more clients, one after the other, and prints "ready <total>" once
//       each got its first output; EOF closes them all (close handshake) and exits
"use strict";

const path = require("path");
const WebSocket = require(path.join(__dirname, "..", "..", "node_modules", "ws"));

// The harness's token (AGENTD_TEST_TOKEN, tests/integration/lib.sh): the access door
// refuses an upgrade without credentials.
const headers = {};
if (process.env.AGENTD_TEST_TOKEN) headers.Authorization = "Bearer " + process.env.AGENTD_TEST_TOKEN;

function open(url) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 1 << 30, headers });
    ws.binaryType = "nodebuffer";
    ws.once("open", () => resolve(ws));
    ws.once("error", reject);
    ws.once("unexpected-response", (req, res) => reject(new Error("HTTP " + res.statusCode)));
  });
}

// Resolves after the stream has been quiet for ms (the attach redraw is over).
function quiet(ws, ms) {
  return new Promise((resolve) => {
    let timer = setTimeout(done, ms);
    function on() {
      clearTimeout(timer);
      timer = setTimeout(done, ms);
    }
    function done() {
      ws.off("message", on);
      resolve();
    }
    ws.on("message", on);
  });
}

// Fails the run when the server closes the socket in the middle of a measurement.
function watchClose(ws, reject) {
  ws.once("close", (code, reason) => reject(new Error("closed " + code + " " + reason)));
}

async function throughput(url, command, mark) {
  const ws = await open(url);
  await quiet(ws, 500);
  const needle = Buffer.from(mark);
  let bytes = 0;
  let frames = 0;
  let tail = Buffer.alloc(0);
  const start = process.hrtime.bigint();
  await new Promise((resolve, reject) => {
    watchClose(ws, reject);
    setTimeout(() => reject(new Error("no end marker within 120 s")), 120000).unref();
    ws.on("message", (data) => {
      bytes += data.length;
      frames++;
      const hay = Buffer.concat([tail, data]);
      if (hay.indexOf(needle) >= 0) return resolve();
      tail = hay.subarray(Math.max(0, hay.length - needle.length));
    });
    ws.send(Buffer.from(command + "\r"));
  });
  const secs = Number(process.hrtime.bigint() - start) / 1e9;
  process.stdout.write("bytes " + bytes + " seconds " + secs.toFixed(4) + " frames " + frames + "\n");
  ws.close();
}

// Letters that never end an escape sequence tmux writes (not c d h l m q r t), so a match is
// the echo itself.
const KEYS = "abefgijknopsuvwxyz";

async function rtt(url, n, warmup) {
  const ws = await open(url);
  watchClose(ws, (e) => {
    process.stderr.write(String(e) + "\n");
    process.exit(1);
  });
  await quiet(ws, 500);
  const out = [];
  for (let i = 0; i < warmup + n; i++) {
    if (i % 40 === 39) {
      ws.send(Buffer.from("\x15")); // Ctrl-U: keep the line short
      await quiet(ws, 50);
    }
    const ch = KEYS[i % KEYS.length];
    const t0 = process.hrtime.bigint();
    await new Promise((resolve) => {
      const on = (data) => {
        if (data.indexOf(ch) >= 0) {
          ws.off("message", on);
          resolve();
        }
      };
      ws.on("message", on);
      ws.send(Buffer.from(ch));
    });
    if (i >= warmup) out.push(Number(process.hrtime.bigint() - t0) / 1000);
    await quiet(ws, 10);
  }
  ws.send(Buffer.from("\x15"));
  await quiet(ws, 50);
  process.stdout.write(out.map((v) => v.toFixed(1)).join("\n") + "\n");
  ws.removeAllListeners("close");
  ws.close();
}

async function hold(url) {
  const clients = [];
  let closed = 0;
  const lines = require("readline").createInterface({ input: process.stdin });
  let busy = Promise.resolve();
  lines.on("line", (line) => {
    const m = /^open (\d+)$/.exec(line.trim());
    if (!m) return;
    busy = busy.then(async () => {
      for (let i = 0; i < parseInt(m[1], 10); i++) {
        const ws = await open(url);
        await new Promise((resolve) => ws.once("message", resolve));
        ws.on("message", () => {});
        ws.once("close", () => closed++);
        clients.push(ws);
      }
      process.stdout.write("ready " + clients.length + "\n");
    });
    busy.catch((e) => {
      process.stderr.write(String(e) + "\n");
      process.exit(1);
    });
  });
  lines.on("close", async () => {
    await busy;
    if (closed > 0) process.stdout.write("closed early " + closed + "\n");
    for (const ws of clients) ws.close();
    const t = setTimeout(() => process.exit(0), 5000);
    await Promise.all(clients.map((ws) => ws.readyState === WebSocket.CLOSED ? null :
      new Promise((resolve) => ws.once("close", resolve))));
    clearTimeout(t);
    process.exit(0);
  });
}

const [mode, url, a, b] = process.argv.slice(2);
const run =
  mode === "throughput"
    ? throughput(url, a, b)
    : mode === "rtt"
    ? rtt(url, parseInt(a, 10), parseInt(b || "0", 10))
    : mode === "hold"
    ? hold(url)
    : Promise.reject(new Error("usage: ws_bench.js throughput|rtt|hold URL ..."));
run.catch((e) => {
  process.stderr.write(String(e) + "\n");
  process.exit(1);
});
