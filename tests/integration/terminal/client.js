#!/usr/bin/env node
// A scriptable terminal client for the integration tests (npm `ws`, see tests/package.json).
//
//   node client.js ws URL [--origin O] [--out FILE] [--no-pong] [--no-read]
//       Opens the WebSocket. Prints one line "open" or "status <code> <body>" (the refusal),
//       appends every received byte to FILE, then obeys commands read from stdin, one a line:
//         send <JSON string>      a binary frame with the string's UTF-8 bytes
//         text <JSON string>      the same as a text frame
//         bytes <hex>             a binary frame with exactly these bytes
//         big <N>                 a binary frame of N bytes of 'x'
//         ping                    a ping (the answer is printed as "pong")
//         pause / resume          stop / restart reading the socket (a client that never reads)
//         close [code]            close handshake; EOF on stdin also closes
//         kill                    drop the TCP connection without a close frame
//       and prints "closed <code> <reason>" when the connection ends, then exits 0.
//   node client.js cycles URL N [--abrupt]
//       N times in a row: open, wait for the first output, close (every second one is dropped
//       without a close frame with --abrupt). Prints "cycles <done> <failures>".
//   node client.js raw HOST PORT HEXBYTES [--wait MS] [--unix PATH]
//       Sends raw bytes on a TCP (or unix socket) connection, prints what comes back within MS
//       (printable ASCII as is, other bytes as \xHH).
//   node client.js halfopen SOCKETPATH N HEXBYTES [--wait MS]
//       Opens N unix socket connections at once, sends HEXBYTES on each and never more. Prints
//       "halfopen <closed by the server> <n> <slowest close in ms>" when all are closed or MS passed.
// Options of ws and cycles: --header "Name: value" (repeatable).
"use strict";

const fs = require("fs");
const net = require("net");
const readline = require("readline");
const path = require("path");
const WebSocket = require(path.join(__dirname, "..", "..", "node_modules", "ws"));

function arg(args, name, dflt) {
  const i = args.indexOf(name);
  if (i < 0) return dflt;
  const v = args[i + 1];
  args.splice(i, 2);
  return v;
}

function flag(args, name) {
  const i = args.indexOf(name);
  if (i < 0) return false;
  args.splice(i, 1);
  return true;
}

// The harness's token (lib.sh) unless the caller names Authorization itself ("--header
// Authorization:" with nothing after it sends none).
function withToken(h) {
  const named = Object.keys(h).find((k) => k.toLowerCase() === "authorization");
  if (named === undefined && process.env.AGENTD_TEST_TOKEN)
    h.Authorization = "Bearer " + process.env.AGENTD_TEST_TOKEN;
  else if (named !== undefined && h[named] === "") delete h[named];
  return h;
}

function headers(args) {
  const h = {};
  for (let v = arg(args, "--header"); v !== undefined; v = arg(args, "--header")) {
    const i = v.indexOf(":");
    h[v.slice(0, i).trim()] = v.slice(i + 1).trim();
  }
  return withToken(h);
}

function runWs(args) {
  const extra = headers(args);
  const origin = arg(args, "--origin", undefined);
  const out = arg(args, "--out", undefined);
  const noPong = flag(args, "--no-pong");
  const noRead = flag(args, "--no-read");
  const url = args[0];
  const opts = {
    perMessageDeflate: false,
    maxPayload: 256 * 1024 * 1024,
    autoPong: !noPong,
    headers: extra,
  };
  if (origin) opts.origin = origin;
  const ws = new WebSocket(url, opts);
  const fd = out ? fs.openSync(out, "a") : null;
  let done = false;
  const finish = (line) => {
    if (done) return;
    done = true;
    process.stdout.write(line + "\n");
    if (fd !== null) fs.closeSync(fd);
    process.exit(0);
  };
  ws.on("unexpected-response", (req, res) => {
    let body = "";
    res.on("data", (d) => (body += d));
    res.on("end", () => finish("status " + res.statusCode + " " + body.trim()));
  });
  ws.on("error", (e) => finish("error " + e.message));
  ws.on("open", () => {
    process.stdout.write("open\n");
    if (noRead) ws._socket.pause();
  });
  ws.on("message", (data) => {
    if (fd !== null) fs.writeSync(fd, data);
  });
  ws.on("pong", () => process.stdout.write("pong\n"));
  ws.on("close", (code, reason) => finish("closed " + code + " " + reason.toString()));
  const rl = readline.createInterface({ input: process.stdin });
  rl.on("line", (line) => {
    const sp = line.indexOf(" ");
    const cmd = sp < 0 ? line : line.slice(0, sp);
    const rest = sp < 0 ? "" : line.slice(sp + 1);
    if (ws.readyState !== WebSocket.OPEN && cmd !== "kill") return;
    switch (cmd) {
      case "send":
        ws.send(Buffer.from(JSON.parse(rest), "utf8"), { binary: true });
        break;
      case "text":
        ws.send(JSON.parse(rest), { binary: false });
        break;
      case "bytes":
        ws.send(Buffer.from(rest, "hex"), { binary: true });
        break;
      case "big":
        ws.send(Buffer.alloc(parseInt(rest, 10), "x"), { binary: true });
        break;
      case "ping":
        ws.ping();
        break;
      case "pause":
        ws._socket.pause();
        break;
      case "resume":
        ws._socket.resume();
        break;
      case "close":
        ws.close(rest ? parseInt(rest, 10) : 1000);
        break;
      case "kill":
        ws.terminate();
        break;
    }
  });
  rl.on("close", () => {
    if (ws.readyState === WebSocket.OPEN) ws.close(1000);
    else if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
  });
}

function runCycles(args) {
  const extra = headers(args);
  const abrupt = flag(args, "--abrupt");
  const [url, count] = [args[0], parseInt(args[1], 10)];
  let done = 0;
  let failures = 0;
  const one = () => {
    if (done === count) {
      process.stdout.write("cycles " + done + " " + failures + "\n");
      process.exit(0);
    }
    const ws = new WebSocket(url, { perMessageDeflate: false, headers: extra });
    let settled = false;
    const next = (ok) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (!ok) failures++;
      done++;
      setImmediate(one);
    };
    const timer = setTimeout(() => {
      ws.terminate();
      next(false);
    }, 10000);
    ws.on("error", () => next(false));
    ws.on("unexpected-response", () => next(false));
    ws.once("message", () => {
      if (abrupt && done % 2 === 1) {
        ws.terminate();
        next(true);
      } else {
        ws.close(1000);
      }
    });
    ws.on("close", () => next(true));
  };
  one();
}

function runRaw(args) {
  const wait = parseInt(arg(args, "--wait", "1000"), 10);
  const unixPath = arg(args, "--unix", undefined);
  const [host, port, hex] = unixPath ? [null, null, args[0]] : args;
  const sock = unixPath ? net.connect({ path: unixPath }) : net.connect({ host, port: parseInt(port, 10) });
  let got = Buffer.alloc(0);
  sock.on("connect", () => sock.write(Buffer.from(hex, "hex")));
  sock.on("data", (d) => (got = Buffer.concat([got, d])));
  // Printable ASCII as is, every other byte as \xHH, in one line.
  const end = () => {
    const text = got
      .toString("latin1")
      .replace(/[^\x20-\x7e]|\\/g, (c) => "\\x" + c.charCodeAt(0).toString(16).padStart(2, "0"));
    process.stdout.write(text + "\n");
    process.exit(0);
  };
  sock.on("error", end);
  sock.on("close", end);
  setTimeout(() => {
    sock.destroy();
    end();
  }, wait);
}

function runHalfOpen(args) {
  const wait = parseInt(arg(args, "--wait", "15000"), 10);
  const [sockPath, count, hex] = [args[0], parseInt(args[1], 10), args[2]];
  const start = Date.now();
  let closed = 0;
  let slowest = 0;
  const report = () => {
    process.stdout.write("halfopen " + closed + " " + count + " " + slowest + "\n");
    process.exit(0);
  };
  for (let i = 0; i < count; i++) {
    const sock = net.connect({ path: sockPath });
    sock.on("connect", () => sock.write(Buffer.from(hex, "hex")));
    sock.on("data", () => {});
    sock.on("error", () => {});
    sock.on("close", () => {
      closed++;
      slowest = Math.max(slowest, Date.now() - start);
      if (closed === count) report();
    });
  }
  setTimeout(report, wait);
}

const argv = process.argv.slice(2);
const mode = argv.shift();
if (mode === "ws") runWs(argv);
else if (mode === "raw") runRaw(argv);
else if (mode === "cycles") runCycles(argv);
else if (mode === "halfopen") runHalfOpen(argv);
else {
  process.stderr.write("usage: client.js ws URL ... | raw HOST PORT HEX\n");
  process.exit(2);
}
