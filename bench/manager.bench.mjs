// SessionManager benchmark: each figure printed beside its floor, measured in the same
// process with rounds interleaved so both sides see the same machine load.
//
//   npm run bench:sessions   builds dist/, runs bench/sessions.bench.mjs, then this file
//   GJC_BENCH_2GIB=1 node --expose-gc --max-old-space-size=8192 bench/manager.bench.mjs
//     the large append session is 2 GiB (issue 19); its chain has no compaction, so the open
//     reads every entry: over a minute and about 3 GB of heap
//
// Figures (targets from issue 4):
//   open + buildSessionContext of a 100k-entry session
//     vs Buffer read + split on \n + JSON.parse per line            target: ratio <= 1.3
//   peak RSS of that open (a fresh child per side), over the file size  target: < 3x
//   appends/s through the manager into a 1 MB and a 500 MB session   no growth with size
//     (each file is opened through the manager, so the 500 MB figure includes a real load;
//     the temporary directory is owner-only, so both keep their line index up as they append)

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const { SessionManager } = await import(new URL("../dist/index.js", import.meta.url).href);

const ROUNDS = 3;
const OPEN_ENTRIES = 100_000;
/** Short rounds, many of them, alternating sessions: a load spike spoils a round of each alike. */
const APPENDS = 256;
const APPEND_ROUNDS = 40;
const quiet = { error() {} };
const LARGE_BYTES = process.env.GJC_BENCH_2GIB === "1" ? 2 * 2 ** 30 : 500 << 20;

const text = "The quick brown fox jumps over the lazy dog while the agent reads the file again. ".repeat(11);
const idOf = (i) => i.toString(16).padStart(8, "0");
const header = (id) => JSON.stringify({ type: "session", version: 5, id, timestamp: new Date(1_700_000_000_000).toISOString(), cwd: "/bench" });
/**
 * An assistant message as agents write it, with its provider and model: without them the next
 * open would read back through the whole file looking for the last model, which real sessions
 * never make it do.
 */
const assistantMessage = (timestamp) => ({ role: "assistant", provider: "p", model: "m", content: [{ type: "text", text }], timestamp });
/** A ~1 KB message line in a linear chain. */
const line = (i) =>
  JSON.stringify({
    type: "message",
    id: idOf(i),
    parentId: i === 0 ? null : idOf(i - 1),
    timestamp: new Date(1_700_000_000_000 + i * 1000).toISOString(),
    message: i % 2 === 0 ? { role: "user", content: [{ type: "text", text }], timestamp: i } : assistantMessage(i),
  });

// A child that opens one file once, through the manager or the floor, and prints its peak RSS.
if (process.argv[2] === "--rss-child") {
  const [, , , side, file] = process.argv;
  const baseline = process.memoryUsage().rss;
  let kept;
  if (side === "floor") {
    kept = fs
      .readFileSync(file)
      .toString("utf8")
      .split("\n")
      .filter((text) => text.length > 0)
      .map((text) => JSON.parse(text));
  } else {
    const manager = await SessionManager.open(file, path.dirname(file), undefined, undefined, undefined, { readOnly: true, terminalId: null, logger: quiet });
    kept = manager.buildSessionContext();
  }
  process.stdout.write(JSON.stringify({ peak: process.resourceUsage().maxRSS * 1024, baseline, kept: kept !== undefined }));
  process.exit(0);
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "gjc-bench-manager-"));
fs.chmodSync(tmp, 0o700);

const now = () => Number(process.hrtime.bigint()) / 1e6;
/** CPU time of this process (user + system), ms. */
const cpuNow = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Writes a session of `count` chained entries (or of about `bytes` bytes); returns its path. */
function writeSession(name, { count, bytes }) {
  const file = path.join(tmp, name);
  const fd = fs.openSync(file, "w", 0o600);
  fs.writeSync(fd, header(name) + "\n");
  let written = 0;
  let pending = "";
  for (let i = 0; count !== undefined ? i < count : written < bytes; i++) {
    const next = line(i) + "\n";
    pending += next;
    written += next.length;
    if (pending.length > 4 << 20) {
      fs.writeSync(fd, pending);
      pending = "";
    }
  }
  fs.writeSync(fd, pending);
  fs.closeSync(fd);
  return file;
}

function report(label, ours, floor, target) {
  const ratio = ours / floor;
  const verdict = ratio <= target ? `ok (<= ${target})` : `OVER (target ${target})`;
  console.log(`${label.padEnd(48)} ${ours.toFixed(0).padStart(7)} ms   floor ${floor.toFixed(0).padStart(7)} ms   x${ratio.toFixed(2)}  ${verdict}`);
}

async function openBench() {
  const file = writeSession("open.jsonl", { count: OPEN_ENTRIES });
  const ours = [];
  const floor = [];
  let check = 0;
  for (let r = 0; r < ROUNDS; r++) {
    for (const side of r % 2 === 0 ? ["floor", "ours"] : ["ours", "floor"]) {
      globalThis.gc?.();
      const start = now();
      if (side === "floor") {
        const lines = fs.readFileSync(file).toString("utf8").split("\n");
        let n = 0;
        for (const text of lines) if (text.length > 0) n += JSON.parse(text) === null ? 0 : 1;
        floor.push(now() - start);
        check += n;
      } else {
        const manager = await SessionManager.open(file, tmp, undefined, undefined, undefined, { readOnly: true, terminalId: null, logger: quiet });
        const context = manager.buildSessionContext();
        ours.push(now() - start);
        check += context.messages.length;
      }
    }
  }
  if (check === 0) throw new Error("nothing was read");
  const size = (fs.statSync(file).size / 1e6).toFixed(0);
  report(`open + context, ${OPEN_ENTRIES / 1000}k entries (${size} MB)`, median(ours), median(floor), 1.3);
  const bytes = fs.statSync(file).size;
  const rss = {};
  for (const side of ["floor", "ours"]) {
    const child = spawnSync(process.execPath, ["--expose-gc", fileURLToPath(import.meta.url), "--rss-child", side, file], {
      encoding: "utf8",
      maxBuffer: 1 << 20,
    });
    if (child.status !== 0) throw new Error(`rss child failed: ${child.stderr}`);
    rss[side] = JSON.parse(child.stdout);
  }
  const mib = (n) => `${(n / 2 ** 20).toFixed(0)} MiB`;
  const over = (rss.ours.peak - rss.ours.baseline) / bytes;
  console.log(
    `peak RSS of that open: ${mib(rss.ours.peak)} (${mib(rss.ours.baseline)} at start; ${over.toFixed(2)}x the file over the start, ` +
      `${(rss.ours.peak / bytes).toFixed(2)}x in all) ${over < 3 ? "ok (< 3x)" : "OVER (target < 3x)"}; floor ${mib(rss.floor.peak)}`,
  );
  fs.rmSync(file);
}

/** Opens a session through the manager (a writable open: lock, full load). */
async function openTimed(file) {
  const start = now();
  const manager = await SessionManager.open(file, tmp, undefined, undefined, undefined, { terminalId: null, logger: quiet });
  return { manager, openMs: now() - start, size: fs.statSync(file).size };
}

/**
 * Both sessions are open at once and their rounds interleave, so the machine load and the
 * heap are the same for both; only the file size differs.
 */
async function appendBench() {
  const sessions = [];
  for (const [name, bytes] of [
    ["small.jsonl", 1 << 20],
    ["large.jsonl", LARGE_BYTES],
  ]) {
    sessions.push({ file: writeSession(name, { bytes }), rates: [], cpu: [] });
  }
  for (const session of sessions) Object.assign(session, await openTimed(session.file));
  for (let r = 0; r < APPEND_ROUNDS; r++) {
    for (const session of r % 4 === 0 || r % 4 === 3 ? sessions : [...sessions].reverse()) {
      const start = now();
      const startCpu = cpuNow();
      for (let i = 0; i < APPENDS; i++) {
        session.manager.appendMessage(assistantMessage(i));
      }
      session.cpu.push(((cpuNow() - startCpu) * 1000) / APPENDS);
      session.rates.push((APPENDS / (now() - start)) * 1000);
      await session.manager.flush();
    }
  }
  for (const session of sessions) {
    await session.manager.close();
    fs.rmSync(session.file);
    console.log(
      `appends/s through the manager at ${(session.size / 1e6).toFixed(0).padStart(4)} MB   ${median(session.rates).toFixed(0).padStart(8)}/s   ` +
        `cpu ${median(session.cpu).toFixed(1)} us per append   (open took ${session.openMs.toFixed(0)} ms)`,
    );
  }
  const wallRatio = median(sessions[0].rates) / median(sessions[1].rates);
  const ratio = median(sessions[1].cpu) / median(sessions[0].cpu);
  const large = `${(sessions[1].size / 1e6).toFixed(0)} MB`;
  // The verdict reads CPU time: on a shared machine wall time also counts the waits for a core.
  console.log(
    `append cost ${large} vs 1 MB${" ".repeat(Math.max(1, 38 - large.length))}cpu x${ratio.toFixed(2)}, wall x${wallRatio.toFixed(2)}  ` +
      `${ratio <= 1.25 ? "ok (no growth, <= 1.25)" : "OVER (grows with size)"}`,
  );
}

try {
  console.log("SessionManager");
  await openBench();
  await appendBench();
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
