// Session discovery benchmark: listing 10k session files (~2.4 GB) against the floor of the
// same directory walk with one 4 KiB read per file, and peak RSS for 10k large vs 10k small
// files (memory must not follow file sizes).
//
//   npm run bench:discovery          builds, generates the corpus once in the temp dir (reused
//                                    by later runs), measures, removes it
//   KEEP=1 npm run bench:discovery   keeps the corpus for the next run
//   BENCH_FILES=2000 ...             fewer files (each half of the large corpus gets half)
//
// The large corpus holds two kinds of v5 files of ~240 KB, half each:
//   early-title/  the auto title patch sits just past the 4 KiB prefix, nothing later: the
//                 backward scan must read every chunk down to the prefix to be sure no later
//                 rename exists (the worst case for a v4/v5 file);
//   renamed/      a rename patch (title + cwd) is the last line: one 64 KiB tail read.
// The small corpus holds 10k files of ~2.4 KB of the same shape (prefix read only).
//
// Every measurement runs in a fresh child process: timings alternate floor and library (best
// of several rounds, page cache warm), and peak RSS is taken in one child per side.
//
// The persistent listing index (`.gjc-listing-index.v3.json` per session directory) is measured
// on its own: the first listing in a fresh process without an index (which reads what it
// must and writes the index), then listings in a fresh process with the index present (each
// round with no in-process cache, so every round reads the index and stats every file: what
// a new process pays; issue 18 holds it within 2x of the floor, or the index goes), the very
// first such call of the process (cold code on both sides), and the index's size per session. The other figures are taken with
// the index off, so they show the cost of reading the files themselves.

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const SELF = fileURLToPath(import.meta.url);
const LIBRARY = new URL("../dist/manager/discovery.js", import.meta.url);
const FILES = Number(process.env.BENCH_FILES ?? 10_000);
const LARGE_BYTES = 240_000;
const SMALL_BYTES = 2_400;
const ROUNDS = 3;
const TARGET_RATIO = 1.5;
// Issue 18: a fresh process listing with the persistent index stays within 2x of the floor.
const INDEX_TARGET_RATIO = 2;
const CORPUS = path.join(os.tmpdir(), "gjc-discovery-bench");
const PREFIX = 4096;
const INDEX_NAME = ".gjc-listing-index.v3.json";
const NO_INDEX = { cache: false, persistentIndex: false };

// ---------------------------------------------------------------------------------------------
// Corpus

function line(record) {
  return `${JSON.stringify(record)}\n`;
}

let entry = 0;
function message(role, text) {
  entry += 1;
  return line({
    type: "message",
    id: entry.toString(16).padStart(8, "0"),
    parentId: entry === 1 ? null : (entry - 1).toString(16).padStart(8, "0"),
    timestamp: "2026-01-01T00:00:00.000Z",
    message: { role, content: [{ type: "text", text }] },
  });
}

/** The shared body of one kind of file: everything after the header line. */
function body(kind, bytes) {
  const words = "the session tree append branch leaf compaction summary tool result read edit file".split(" ");
  const text = (n) => Array.from({ length: n }, (_, i) => words[(i * 7) % words.length]).join(" ");
  let out = message("user", `please look at this: ${text(bytes > 10_000 ? 700 : 40)}`);
  out += line({ type: "header_patch", patch: { title: "auto title", titleSource: "auto" } });
  const tail = kind === "renamed" ? line({ type: "header_patch", patch: { title: "renamed by user", titleSource: "user", cwd: "/work/moved" } }) : "";
  const wordsPerMessage = bytes > 10_000 ? 250 : 20;
  while (Buffer.byteLength(out) + Buffer.byteLength(tail) < bytes) out += message(entry % 2 ? "assistant" : "user", text(wordsPerMessage));
  return out + tail;
}

function header(id) {
  return line({ type: "session", version: 5, id, timestamp: "2026-01-01T00:00:00.000Z", cwd: "/work/project" });
}

function generate(dir, kind, count, bytes) {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const shared = Buffer.from(body(kind, bytes));
  for (let i = 0; i < count; i++) {
    const id = `0190a000-0000-7000-8000-${String(i).padStart(12, "0")}`;
    const fd = fs.openSync(path.join(dir, `2026-01-01T00-00-00-000Z_${id}.jsonl`), "w", 0o600);
    fs.writeSync(fd, header(id));
    fs.writeSync(fd, shared);
    fs.closeSync(fd);
  }
}

function ensureCorpus() {
  const marker = path.join(CORPUS, "complete.json");
  const wanted = JSON.stringify({ FILES, LARGE_BYTES, SMALL_BYTES, version: 2 });
  if (fs.existsSync(marker) && fs.readFileSync(marker, "utf8") === wanted) {
    console.log(`corpus: reusing ${CORPUS}`);
    return;
  }
  fs.rmSync(CORPUS, { recursive: true, force: true });
  const started = performance.now();
  const half = Math.floor(FILES / 2);
  generate(path.join(CORPUS, "large", "early-title"), "early", half, LARGE_BYTES);
  generate(path.join(CORPUS, "large", "renamed"), "renamed", FILES - half, LARGE_BYTES);
  generate(path.join(CORPUS, "small", "scope"), "early", FILES, SMALL_BYTES);
  fs.writeFileSync(marker, wanted);
  console.log(`corpus: generated in ${((performance.now() - started) / 1000).toFixed(1)} s at ${CORPUS}`);
}

function diskUsage(dir) {
  let bytes = 0;
  let files = 0;
  for (const scope of fs.readdirSync(dir)) {
    for (const name of fs.readdirSync(path.join(dir, scope))) {
      bytes += fs.statSync(path.join(dir, scope, name)).size;
      files += 1;
    }
  }
  return { bytes, files };
}

// ---------------------------------------------------------------------------------------------
// Child side: one measurement per process

/** The floor: readdir of the root and each scope, and one 4 KiB read per session file. */
function floor(root, scopes) {
  const buffer = Buffer.allocUnsafe(PREFIX);
  let read = 0;
  for (const scope of scopes ?? fs.readdirSync(root)) {
    const dir = path.join(root, scope);
    for (const name of fs.readdirSync(dir)) {
      if (!name.endsWith(".jsonl")) continue;
      const fd = fs.openSync(path.join(dir, name), "r");
      read += fs.readSync(fd, buffer, 0, PREFIX, 0);
      fs.closeSync(fd);
    }
  }
  return read;
}

/** The same floor with asynchronous reads, `inFlight` files at a time (what an async API pays). */
async function asyncFloor(root, inFlight) {
  const files = [];
  for (const scope of fs.readdirSync(root)) {
    for (const name of fs.readdirSync(path.join(root, scope))) if (name.endsWith(".jsonl")) files.push(path.join(root, scope, name));
  }
  let next = 0;
  let read = 0;
  const worker = async () => {
    const buffer = Buffer.allocUnsafe(PREFIX);
    while (next < files.length) {
      const handle = await fs.promises.open(files[next++], "r");
      read += (await handle.read(buffer, 0, PREFIX, 0)).bytesRead;
      await handle.close();
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return read;
}

async function child(mode, root) {
  const { listAll, listSessions, getRecentSessions, SessionInfoCache } = await import(LIBRARY);
  if (mode === "rss-library") {
    const listing = await listAll(root, NO_INDEX);
    return { rssKiB: process.resourceUsage().maxRSS, sessions: listing.sessions.length, skipped: listing.skipped.length };
  }
  if (mode === "rss-index") {
    const listing = await listAll(root, { cache: false });
    return { rssKiB: process.resourceUsage().maxRSS, sessions: listing.sessions.length };
  }
  if (mode === "build-index") {
    // The first listing a fresh process makes of a corpus it has never indexed: it reads
    // every file as the spec requires and writes each directory's index.
    const started = performance.now();
    const listing = await listAll(root, { cache: false });
    return { ms: performance.now() - started, sessions: listing.sessions.length };
  }
  if (mode === "time-index") {
    const reference = await listAll(root, NO_INDEX);
    // The very first call of this process, before anything is warm: what a CLI start pays.
    const firstStarted = performance.now();
    const first = await listAll(root, { cache: false });
    const firstMs = performance.now() - firstStarted;
    const firstFloorStarted = performance.now();
    floor(root);
    const firstFloorMs = performance.now() - firstFloorStarted;
    const rounds = { floor: Infinity, library: Infinity };
    for (let i = 0; i < ROUNDS * 2; i++) {
      let started = performance.now();
      floor(root);
      rounds.floor = Math.min(rounds.floor, performance.now() - started);
      started = performance.now();
      await listAll(root, { cache: false });
      rounds.library = Math.min(rounds.library, performance.now() - started);
    }
    const same = JSON.stringify(first) === JSON.stringify(reference);
    return { ...rounds, firstMs, firstFloorMs, same, sessions: first.sessions.length };
  }
  if (mode === "rss-floor") {
    floor(root);
    return { rssKiB: process.resourceUsage().maxRSS };
  }
  const time = async (fn) => {
    const started = performance.now();
    await fn();
    return performance.now() - started;
  };
  const best = async (fn) => {
    let min = Infinity;
    for (let i = 0; i < ROUNDS; i++) min = Math.min(min, await time(fn));
    return min;
  };
  // Warm the page cache and the JIT on both sides first.
  floor(root);
  const check = await listAll(root, NO_INDEX);
  const out = { sessions: check.sessions.length, skipped: check.skipped.length, scopes: {} };
  const rounds = { floor: Infinity, library: Infinity };
  for (let i = 0; i < ROUNDS; i++) {
    rounds.floor = Math.min(rounds.floor, await time(() => floor(root)));
    rounds.library = Math.min(rounds.library, await time(() => listAll(root, NO_INDEX)));
  }
  out.all = rounds;
  out.all.asyncFloor = await best(() => asyncFloor(root, 16));
  const cache = new SessionInfoCache(FILES * 2);
  await listAll(root, { cache, persistentIndex: false });
  out.all.cached = await best(() => listAll(root, { cache, persistentIndex: false }));
  for (const scope of fs.readdirSync(root)) {
    const dir = path.join(root, scope);
    out.scopes[scope] = {
      floor: await best(() => floor(root, [scope])),
      library: await best(() => listSessions(dir, NO_INDEX)),
      recent20: await best(() => getRecentSessions(dir, 20, undefined, NO_INDEX)),
    };
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Parent side

/** Other builds may replace the addon while this runs; wait for it rather than fail a child. */
function waitForAddon() {
  const addon = new URL("../build/Release/gjc_session_store.node", import.meta.url);
  const prebuilds = new URL("../prebuilds/", import.meta.url);
  for (let waited = 0; waited < 120 && !fs.existsSync(addon) && !fs.existsSync(prebuilds); waited++) {
    spawnSync("sleep", ["1"]);
  }
}

function runChild(mode, root) {
  waitForAddon();
  const result = spawnSync(process.execPath, ["--expose-gc", SELF, "child", mode, root], { encoding: "utf8", maxBuffer: 1 << 24 });
  if (result.status !== 0) throw new Error(`child ${mode} failed: ${result.stderr}`);
  return JSON.parse(result.stdout.trim().split("\n").pop());
}

/** Removes every listing index in the corpus, so "no index" means none. */
function removeIndexes(root) {
  for (const scope of fs.readdirSync(root)) fs.rmSync(path.join(root, scope, INDEX_NAME), { force: true });
}

/** Total bytes of the listing indexes under `root`. */
function indexBytes(root) {
  let bytes = 0;
  for (const scope of fs.readdirSync(root)) {
    const file = path.join(root, scope, INDEX_NAME);
    if (fs.existsSync(file)) bytes += fs.statSync(file).size;
  }
  return bytes;
}

function ms(value) {
  return `${value.toFixed(0).padStart(6)} ms`;
}

function ratio(library, floorMs) {
  return `${(library / floorMs).toFixed(2)}x`;
}

function report(name, figures, target) {
  const verdict = target === undefined ? "" : figures.library / figures.floor <= target ? `  (target <= ${target}x: met)` : `  (target <= ${target}x: NOT met)`;
  console.log(`  ${name.padEnd(52)} ${ms(figures.library)}   floor ${ms(figures.floor)}   ${ratio(figures.library, figures.floor)}${verdict}`);
}

async function main() {
  const df = spawnSync("df", ["-h", os.tmpdir()], { encoding: "utf8" }).stdout.trim().split("\n").pop();
  console.log(`disk: ${df}`);
  console.log(
    `load average: ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(" ")} on ${os.cpus().length} cores`,
  );
  const free = spawnSync("df", ["-Pk", os.tmpdir()], { encoding: "utf8" }).stdout.trim().split("\n").pop().split(/\s+/)[3];
  if (!fs.existsSync(path.join(CORPUS, "complete.json")) && Number(free) * 1024 < FILES * (LARGE_BYTES + SMALL_BYTES) * 1.2 + 20e9) {
    console.error("not enough free disk for the corpus plus 20 GB of headroom; set BENCH_FILES lower");
    process.exit(1);
  }
  ensureCorpus();
  const large = path.join(CORPUS, "large");
  const small = path.join(CORPUS, "small");
  removeIndexes(large);
  removeIndexes(small);
  const usage = diskUsage(large);
  console.log(`large corpus: ${usage.files} files, ${(usage.bytes / 1e9).toFixed(2)} GB; small corpus: ${diskUsage(small).files} files`);

  const timing = runChild("time", large);
  const built = runChild("build-index", large);
  const indexed = runChild("time-index", large);
  console.log(`\nlisting (page cache warm, best of ${ROUNDS}; listed ${timing.sessions}, skipped ${timing.skipped})`);
  report(`listAll, ${usage.files} files, no index, no cache`, timing.all);
  report(`  first listing, fresh process, no index (writes it)`, { library: built.ms, floor: timing.all.floor });
  report(`  fresh process, index present`, indexed, INDEX_TARGET_RATIO);
  report(`  fresh process, index present, first call`, { library: indexed.firstMs, floor: indexed.firstFloorMs });
  report(`  in-process cache warm (index off)`, { library: timing.all.cached, floor: timing.all.floor }, TARGET_RATIO);
  const bytes = indexBytes(large);
  console.log(
    `  index: ${(bytes / 1024).toFixed(0)} KiB for ${built.sessions} sessions (${(bytes / built.sessions).toFixed(0)} bytes per session); listing with it equals listing without: ${indexed.same}`,
  );
  report(`(async floor: same reads, 16 in flight)`, { library: timing.all.asyncFloor, floor: timing.all.floor });
  for (const [scope, figures] of Object.entries(timing.scopes)) {
    report(`listSessions ${scope}/`, figures);
    report(`getRecentSessions(20) ${scope}/`, { library: figures.recent20, floor: figures.floor });
  }
  const smallTiming = runChild("time", small);
  report(`listAll, ${FILES} small files, no index, no cache`, smallTiming.all);
  runChild("build-index", small);
  report(`  fresh process, index present`, runChild("time-index", small), INDEX_TARGET_RATIO);
  report(`(async floor, small files)`, { library: smallTiming.all.asyncFloor, floor: smallTiming.all.floor });

  const rssLarge = runChild("rss-library", large);
  const rssSmall = runChild("rss-library", small);
  const rssFloor = runChild("rss-floor", large);
  const rssIndex = runChild("rss-index", large);
  console.log("\npeak RSS (one child each)");
  console.log(`  library, ${usage.files} files of ~240 KB   ${(rssLarge.rssKiB / 1024).toFixed(0).padStart(5)} MiB`);
  console.log(
    `  library, ${FILES} files of ~2.4 KB    ${(rssSmall.rssKiB / 1024).toFixed(0).padStart(5)} MiB   (large/small ${(rssLarge.rssKiB / rssSmall.rssKiB).toFixed(2)}x, target <= 1.25x)`,
  );
  console.log(`  floor,   ${usage.files} files of ~240 KB   ${(rssFloor.rssKiB / 1024).toFixed(0).padStart(5)} MiB`);
  console.log(`  library, ${usage.files} files, index present   ${(rssIndex.rssKiB / 1024).toFixed(0).padStart(5)} MiB`);

  removeIndexes(large);
  removeIndexes(small);
  if (process.env.KEEP === "1") console.log(`\ncorpus kept at ${CORPUS}`);
  else fs.rmSync(CORPUS, { recursive: true, force: true });
}

if (process.argv[2] === "child") {
  const result = await child(process.argv[3], process.argv[4]);
  process.stdout.write(`${JSON.stringify(result)}\n`);
} else {
  await main();
}
