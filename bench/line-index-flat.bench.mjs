// A flat session (no compaction, so the context is the whole file) opened read-only through its
// line index, beside the floor: reading the file and JSON.parse-ing every line. Each side runs in
// a fresh child process (so peak RSS is its own); rounds alternate; CPU time is the verdict.
//
//   npm run build && node bench/line-index-flat.bench.mjs
//   BENCH_ENTRIES=200000 ...   a smaller session (default 10^6, about 200 MB)
//   node bench/line-index-flat.bench.mjs generate out.jsonl   writes the session alone, for profiling
//
// Goals (issue 27): open + buildSessionContext within 2x of the floor's CPU time, peak RSS under
// 2x the file's size.

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const quiet = { error() {} };
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const mib = (n) => `${(n / 2 ** 20).toFixed(0)} MiB`;

/** A seeded generator (mulberry32), so every run writes the same session. */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = "read the file again then run tests and fix the failing import before the next build of this module".split(" ");

/** Writes a chain of `count` small messages (user, assistant with provider and model, and a tool result now and then). */
function writeFlatSession(file, count) {
  const next = random(27);
  const words = (n) => Array.from({ length: n }, () => WORDS[Math.floor(next() * WORDS.length)]).join(" ");
  const id = (i) => i.toString(16).padStart(8, "0");
  const fd = fs.openSync(file, "w", 0o600);
  const start = Date.UTC(2026, 0, 1);
  fs.writeSync(fd, JSON.stringify({ type: "session", version: 5, id: "flat", timestamp: new Date(start).toISOString(), cwd: "/bench" }) + "\n");
  let pending = "";
  for (let i = 0; i < count; i++) {
    const timestamp = start + i * 1000;
    const role = i % 3 === 0 ? "user" : i % 3 === 1 ? "assistant" : "toolResult";
    const text = words(4 + Math.floor(next() * 12));
    const message =
      role === "user"
        ? { role, content: [{ type: "text", text }], timestamp }
        : role === "assistant"
          ? { role, provider: "p", model: "m", content: [{ type: "text", text }], timestamp }
          : { role, toolCallId: `call-${id(i)}`, toolName: "read", content: [{ type: "text", text }], isError: false, timestamp };
    const record = { type: "message", id: id(i), parentId: i === 0 ? null : id(i - 1), timestamp: new Date(timestamp).toISOString(), message };
    pending += JSON.stringify(record) + "\n";
    if (pending.length > 4 << 20) {
      fs.writeSync(fd, pending);
      pending = "";
    }
  }
  fs.writeSync(fd, pending);
  fs.closeSync(fd);
}

/** Reads the file in 16 MiB chunks and JSON.parse-s each line (keeping nothing): the floor. */
function floor(file) {
  const fd = fs.openSync(file, "r");
  const buffer = Buffer.allocUnsafe(16 << 20);
  let carry = "";
  let parsed = 0;
  for (let n, position = 0; (n = fs.readSync(fd, buffer, 0, buffer.length, position)) > 0; position += n) {
    const lines = (carry + buffer.toString("utf8", 0, n)).split("\n");
    carry = lines.pop();
    for (const line of lines) if (line.length > 0 && JSON.parse(line) !== null) parsed += 1;
  }
  if (carry.length > 0 && JSON.parse(carry) !== null) parsed += 1;
  fs.closeSync(fd);
  return parsed;
}

async function manager() {
  return (await import(new URL("../dist/index.js", import.meta.url).href)).SessionManager;
}

if (process.argv[2] === "generate") {
  writeFlatSession(process.argv[3], ENTRIES);
  process.exit(0);
}

if (process.argv[2] === "--child") {
  const [, , , side, file] = process.argv;
  const SessionManager = await manager();
  const before = cpuMs();
  let count;
  if (side === "floor") count = floor(file);
  else {
    const opened = await SessionManager.open(file, path.dirname(file), undefined, undefined, undefined, { readOnly: true, terminalId: null, logger: quiet });
    count = opened.buildSessionContext().messages.length;
  }
  const cpu = cpuMs() - before;
  process.stdout.write(JSON.stringify({ cpu, peak: process.resourceUsage().maxRSS * 1024, count }));
  process.exit(0);
}

function child(side, file) {
  const run = spawnSync(process.execPath, [fileURLToPath(import.meta.url), "--child", side, file], { encoding: "utf8", maxBuffer: 1 << 20 });
  if (run.status !== 0) throw new Error(`${side} child failed: ${run.stderr}`);
  return JSON.parse(run.stdout);
}

const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "gjc-bench-flat-")));
fs.chmodSync(tmp, 0o700);
try {
  const file = path.join(tmp, "flat.jsonl");
  writeFlatSession(file, ENTRIES);
  const size = fs.statSync(file).size;
  const SessionManager = await manager();
  // A writer's open and close writes the index.
  await (await SessionManager.open(file, tmp, undefined, undefined, undefined, { terminalId: null, logger: quiet })).close();
  const sides = { floor: [], indexed: [] };
  for (let r = 0; r < ROUNDS; r++) for (const side of r % 2 === 0 ? ["floor", "indexed"] : ["indexed", "floor"]) sides[side].push(child(side, file));
  const cpu = (side) => median(sides[side].map((run) => run.cpu));
  const peak = (side) => median(sides[side].map((run) => run.peak));
  const ratio = cpu("indexed") / cpu("floor");
  const rssRatio = peak("indexed") / size;
  console.log(`Flat session: ${ENTRIES} entries, ${(size / 1e6).toFixed(0)} MB, ${ROUNDS} alternating rounds, load average ${os.loadavg()[0].toFixed(1)}`);
  console.log(
    `read-only open + context, index present   cpu ${cpu("indexed").toFixed(0).padStart(6)} ms   floor ${cpu("floor").toFixed(0).padStart(6)} ms   x${ratio.toFixed(2)}   ` +
      (ratio <= 2 ? "ok (within 2x)" : "OVER (goal within 2x)"),
  );
  console.log(
    `peak RSS of that open                     ${mib(peak("indexed"))} (x${rssRatio.toFixed(2)} the file)   floor ${mib(peak("floor"))}   ` +
      (rssRatio < 2 ? "ok (< 2x the file)" : "OVER (goal < 2x the file)"),
  );
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
