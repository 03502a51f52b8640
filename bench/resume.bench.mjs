// Resume as a user meets it: a fresh process opens a session it has never seen (index present,
// written by the last writer) and builds the context, beside the floor of a fresh process reading
// and JSON.parse-ing the lines of that context (the header and every line from the last
// compaction's first kept entry on). Sessions of 1k, 10k and 100k entries of chat-sized lines
// with a compaction every 1,000 entries, so the context is about the same size at every length and
// what grows is only what an open must skip. Each side runs in its own child; rounds alternate;
// the child's CPU time for its own work is the verdict (the library's import is reported apart).
//
//   npm run build && node bench/resume.bench.mjs
//   BENCH_SIZES=1000,10000 ...   other session lengths
//
// Goal (issue 32): open + context within 3x of the floor at each length.

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const SIZES = (process.env.BENCH_SIZES ?? "1000,10000,100000").split(",").map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const COMPACT_EVERY = 1000;
const quiet = { error() {} };
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const idOf = (i) => i.toString(16).padStart(8, "0");
const WORDS = "read the failing test then open the parser module and check the import that the last build dropped".split(" ");

/** Writes a chain of `count` entries with a compaction every COMPACT_EVERY; returns the byte offset where the context's lines start. */
function writeSession(file, count) {
  const lines = [JSON.stringify({ type: "session", version: 5, id: path.basename(file), timestamp: new Date(1_700_000_000_000).toISOString(), cwd: "/bench" })];
  let offset = lines[0].length + 1;
  let contextStart = offset;
  const lastCompaction = Math.floor((count - 1) / COMPACT_EVERY) * COMPACT_EVERY;
  const firstKept = lastCompaction > 0 ? lastCompaction - 10 : 0;
  for (let i = 0; i < count; i++) {
    const base = { id: idOf(i), parentId: i === 0 ? null : idOf(i - 1), timestamp: new Date(1_700_000_000_000 + i * 1000).toISOString() };
    const text = Array.from({ length: 12 + (i % 17) }, (_, k) => WORDS[(i * 7 + k) % WORDS.length]).join(" ");
    const record =
      i > 0 && i % COMPACT_EVERY === 0
        ? { type: "compaction", ...base, summary: `Summary of the work so far: ${text}`, firstKeptEntryId: idOf(i - 10), tokensBefore: 50_000 }
        : {
            type: "message",
            ...base,
            message:
              i % 2 === 0
                ? { role: "user", content: [{ type: "text", text }], timestamp: i }
                : { role: "assistant", provider: "p", model: "m", content: [{ type: "text", text }], timestamp: i, stopReason: "stop" },
          };
    const line = JSON.stringify(record);
    if (i === firstKept) contextStart = offset;
    lines.push(line);
    offset += Buffer.byteLength(line) + 1;
  }
  fs.writeFileSync(file, lines.join("\n") + "\n", { mode: 0o600 });
  return contextStart;
}

/** The floor: the header line and the lines from `from` on, read and JSON.parse-d. */
function floor(file, from) {
  const fd = fs.openSync(file, "r");
  try {
    const size = fs.fstatSync(fd).size;
    const head = Buffer.allocUnsafe(4096);
    const headBytes = fs.readSync(fd, head, 0, head.length, 0);
    JSON.parse(head.toString("utf8", 0, headBytes).split("\n")[0]);
    const tail = Buffer.allocUnsafe(size - from);
    fs.readSync(fd, tail, 0, tail.length, from);
    let parsed = 1;
    for (const line of tail.toString("utf8").split("\n")) if (line.length > 0 && JSON.parse(line) !== null) parsed += 1;
    return parsed;
  } finally {
    fs.closeSync(fd);
  }
}

if (process.argv[2] === "--child") {
  const [, , , side, file, from] = process.argv;
  const importStart = cpuMs();
  const { SessionManager } = side === "ours" ? await import(new URL("../dist/index.js", import.meta.url).href) : {};
  const importCpu = cpuMs() - importStart;
  const start = cpuMs();
  const startWall = performance.now();
  let count;
  if (side === "floor") count = floor(file, Number(from));
  else {
    const manager = await SessionManager.open(file, path.dirname(file), undefined, undefined, undefined, { readOnly: true, terminalId: null, logger: quiet });
    count = manager.buildSessionContext().messages.length;
    if (manager.getLoadReport().lineIndex !== "used") throw new Error(`index not used: ${manager.getLoadReport().lineIndex}`);
  }
  process.stdout.write(JSON.stringify({ cpu: cpuMs() - start, wall: performance.now() - startWall, importCpu, count }));
  process.exit(0);
}

function child(side, file, from) {
  const run = spawnSync(process.execPath, [fileURLToPath(import.meta.url), "--child", side, file, String(from)], { encoding: "utf8" });
  if (run.status !== 0) throw new Error(`${side} child failed: ${run.stderr}`);
  return JSON.parse(run.stdout);
}

const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "gjc-bench-resume-")));
fs.chmodSync(tmp, 0o700);
try {
  const { SessionManager } = await import(new URL("../dist/index.js", import.meta.url).href);
  console.log(`Resume in a fresh process, index present (${ROUNDS} alternating rounds, load average ${os.loadavg()[0].toFixed(1)})`);
  for (const size of SIZES) {
    const file = path.join(tmp, `s${size}.jsonl`);
    const from = writeSession(file, size);
    // The last writer's close leaves the index.
    await (await SessionManager.open(file, tmp, undefined, undefined, undefined, { terminalId: null, logger: quiet })).close();
    const runs = { ours: [], floor: [] };
    for (let r = 0; r < ROUNDS; r++) for (const side of r % 2 === 0 ? ["floor", "ours"] : ["ours", "floor"]) runs[side].push(child(side, file, from));
    const ours = median(runs.ours.map((run) => run.cpu));
    const base = median(runs.floor.map((run) => run.cpu));
    const ratio = ours / base;
    const wall = (side) => median(runs[side].map((run) => run.wall)).toFixed(1);
    const mb = (fs.statSync(file).size / 1e6).toFixed(1);
    console.log(
      `${String(size / 1000).padStart(4)}k entries (${mb.padStart(5)} MB), ${runs.ours[0].count} messages: open + context ${ours.toFixed(1).padStart(6)} ms cpu` +
        `   floor ${base.toFixed(1).padStart(5)} ms   x${ratio.toFixed(1)}   ${ratio <= 3 ? "ok (within 3x)" : "OVER (goal within 3x)"}` +
        `   (wall ${wall("ours")} vs ${wall("floor")} ms; importing the library ${median(runs.ours.map((run) => run.importCpu)).toFixed(0)} ms cpu more)`,
    );
  }
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
