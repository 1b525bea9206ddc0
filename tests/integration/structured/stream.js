#!/usr/bin/env node
// A scriptable /stream client for the structured-mode tests (npm `ws`, see tests/package.json).
//
//   node stream.js URL --out FILE [--origin O] [--header "Name: value"]...
//       Opens the WebSocket and prints "open", or "status <code> <body>" for a refusal. Every
//       text message received is appended to FILE as one line (binary ones as "binary <n>"),
//       then commands are read from stdin, one a line:
//         send <text>     a text frame with exactly the rest of the line
//         bytes <hex>     a binary frame with these bytes
//         close [code]    close handshake; EOF on stdin also closes
//         kill            drop the connection without a close frame
//       "closed <code> <reason>" is printed when the connection ends, then it exits 0.
"use strict";

const fs = require("fs");
const path = require("path");
const readline = require("readline");
const WebSocket = require(path.join(__dirname, "..", "..", "node_modules", "ws"));

const args = process.argv.slice(2);
const opt = { perMessageDeflate: false, maxPayload: 64 * 1024 * 1024, headers: {} };
let out = null;
let url = null;
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--out") out = args[++i];
  else if (args[i] === "--origin") opt.origin = args[++i];
  else if (args[i] === "--header") {
    const h = args[++i];
    const c = h.indexOf(":");
    opt.headers[h.slice(0, c).trim()] = h.slice(c + 1).trim();
  } else url = args[i];
}
// The harness's token (lib.sh) unless the caller names Authorization itself (an empty value
// sends none).
{
  const named = Object.keys(opt.headers).find((k) => k.toLowerCase() === "authorization");
  if (named === undefined && process.env.AGENTD_TEST_TOKEN)
    opt.headers.Authorization = "Bearer " + process.env.AGENTD_TEST_TOKEN;
  else if (named !== undefined && opt.headers[named] === "") delete opt.headers[named];
}
const fd = fs.openSync(out, "a");
const ws = new WebSocket(url, opt);
let done = false;
const finish = (line) => {
  if (done) return;
  done = true;
  process.stdout.write(line + "\n");
  fs.closeSync(fd);
  process.exit(0);
};
ws.on("unexpected-response", (req, res) => {
  let body = "";
  res.on("data", (d) => (body += d));
  res.on("end", () => finish("status " + res.statusCode + " " + body.trim()));
});
ws.on("error", (e) => finish("error " + e.message));
ws.on("open", () => process.stdout.write("open\n"));
ws.on("message", (data, isBinary) => {
  fs.writeSync(fd, isBinary ? "binary " + data.length + "\n" : data.toString("utf8") + "\n");
});
ws.on("close", (code, reason) => finish("closed " + code + " " + reason.toString()));
const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const sp = line.indexOf(" ");
  const cmd = sp < 0 ? line : line.slice(0, sp);
  const rest = sp < 0 ? "" : line.slice(sp + 1);
  if (ws.readyState !== WebSocket.OPEN && cmd !== "kill") return;
  if (cmd === "send") ws.send(rest, { binary: false });
  else if (cmd === "bytes") ws.send(Buffer.from(rest, "hex"), { binary: true });
  else if (cmd === "close") ws.close(rest ? parseInt(rest, 10) : 1000);
  else if (cmd === "kill") ws.terminate();
});
rl.on("close", () => {
  if (ws.readyState === WebSocket.OPEN) ws.close(1000);
  else if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
});
