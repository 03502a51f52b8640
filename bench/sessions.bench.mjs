// Session storage benchmark: each writer figure printed beside its floor (plain node:fs
// doing the same job on a held descriptor with no checks), measured in the same process,
// rounds interleaved so both sides see the same machine load; best of the rounds, as
// machine noise only ever adds time.
//
//   npm run bench:sessions   builds dist/, then measures in a temp dir and cleans up
//
// Figures (targets from issue 4):
//   10k appends of ~1 KB entries, no fsync, vs JSON.stringify + fs.writeSync on a held fd
//                                                          target: ratio <= 1.25
//   flush() after every append vs the same + fs.fsyncSync per entry   target: ratio <= 1.1
//   10 appends per flush (group commit) vs an fsync per entry          reported gain
//   appends/s into a 1 MB and a 500 MB file                            no growth with size
// (SessionManager open/list figures are added by the manager's owner.)

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const { FileSessionStorage, ManagedSessionStorage } = await import(new URL("../dist/index.js", import.meta.url).href);

const ENTRIES = 10_000;
const DURABLE_ENTRIES = 300;
const ROUNDS = 7;
const BIG_FILE_BYTES = 500 * 1024 * 1024;
const RATE_APPENDS = 5000;

const text = "The quick brown fox jumps over the lazy dog while the agent reads the file again. ".repeat(11);
/** ~1 KB assistant message entries, distinct objects so nothing is cached between calls. */
const entries = Array.from({ length: ENTRIES }, (_, i) => ({
  type: "message",
  id: i.toString(16).padStart(8, "0"),
  parentId: i === 0 ? null : (i - 1).toString(16).padStart(8, "0"),
  timestamp: new Date(1_700_000_000_000 + i * 1000).toISOString(),
  message: { role: "assistant", content: [{ type: "text", text }], stopReason: "stop" },
}));
const entryBytes = Buffer.byteLength(JSON.stringify(entries[0])) + 1;

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "gjc-bench-sessions-"));
let fileCounter = 0;
const fresh = (dir) => path.join(dir, `s${fileCounter++}.jsonl`);

function now() {
  return Number(process.hrtime.bigint()) / 1e6;
}

/**
 * Lets the machine settle before a measured run: write back dirty pages (an fsync waits
 * for unrelated writeback on most filesystems, so whichever side ran after a burst of
 * buffered writes would pay for it) and collect garbage.
 */
function settle() {
  execFileSync("sync");
  globalThis.gc?.();
}

/** Runs each side `rounds` times, interleaved and alternating who goes first; returns the best ms per side. */
async function compare(ours, floor, rounds = ROUNDS) {
  const a = [];
  const b = [];
  for (let r = 0; r < rounds; r++) {
    for (const side of r % 2 === 0 ? ["floor", "ours"] : ["ours", "floor"]) {
      settle();
      if (side === "floor") b.push(await floor());
      else a.push(await ours());
    }
  }
  return { ours: Math.min(...a), floor: Math.min(...b) };
}

function report(label, oursMs, floorMs, count, target) {
  const ratio = oursMs / floorMs;
  const per = (ms) => `${((ms * 1000) / count).toFixed(1)} us/op`;
  const verdict = target === undefined ? "" : ratio <= target ? `ok (<= ${target})` : `OVER (target ${target})`;
  console.log(`${label.padEnd(46)} ${per(oursMs).padStart(13)}   floor ${per(floorMs).padStart(13)}   x${ratio.toFixed(2)}  ${verdict}`);
}

// --- floors: plain node:fs on a held descriptor ---------------------------------------

function floorAppend(dir, count) {
  return () => {
    const file = fresh(dir);
    const fd = fs.openSync(file, "a", 0o600);
    const start = now();
    for (let i = 0; i < count; i++) fs.writeSync(fd, JSON.stringify(entries[i]) + "\n");
    const ms = now() - start;
    fs.closeSync(fd);
    fs.rmSync(file);
    return ms;
  };
}

function floorDurable(dir, count) {
  return () => {
    const file = fresh(dir);
    const fd = fs.openSync(file, "a", 0o600);
    const start = now();
    for (let i = 0; i < count; i++) {
      fs.writeSync(fd, JSON.stringify(entries[i]) + "\n");
      fs.fsyncSync(fd);
    }
    const ms = now() - start;
    fs.closeSync(fd);
    fs.rmSync(file);
    return ms;
  };
}

// --- ours ------------------------------------------------------------------------------

/**
 * Appends `count` entries, flushing every `flushEvery` (0: never). Without flushes the
 * writes are not awaited one by one, as a session manager's synchronous append* calls
 * them (the bytes are in the kernel when write() returns; failures latch and are checked
 * here at the end); `awaitEach` measures the await of every write as well.
 */
function oursAppend(storage, dir, count, flushEvery = 0, awaitEach = false) {
  return async () => {
    const file = fresh(dir);
    const writer = await storage.openWriter(file);
    const start = now();
    for (let i = 0; i < count; i++) {
      if (flushEvery > 0 || awaitEach) await writer.write(entries[i]);
      else writer.write(entries[i]);
      if (flushEvery > 0 && (i + 1) % flushEvery === 0) await writer.flush();
    }
    const ms = now() - start;
    if (writer.getError() !== undefined) throw writer.getError();
    await writer.close();
    await storage.unlink(file);
    return ms;
  };
}

/** A session file of about `bytes` bytes of real records, written back to disk. */
function sessionFileOf(dir, bytes) {
  const file = fresh(dir);
  const line = JSON.stringify(entries[0]) + "\n";
  const block = Buffer.from(line.repeat(Math.max(1, Math.floor(Math.min(bytes, 8 << 20) / line.length))));
  const fd = fs.openSync(file, "w", 0o600);
  for (let written = 0; written < bytes; written += block.length) fs.writeSync(fd, block);
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  return file;
}

/** Appends/s into existing files of the given sizes, rounds interleaved; best per size. */
async function appendRates(storage, dir, sizes) {
  const files = sizes.map((bytes) => sessionFileOf(dir, bytes));
  const rates = sizes.map(() => []);
  for (let r = 0; r < ROUNDS; r++) {
    for (const [k, file] of files.entries()) {
      settle();
      const writer = await storage.openWriter(file);
      const start = now();
      for (let i = 0; i < RATE_APPENDS; i++) writer.write(entries[i]);
      const ms = now() - start;
      if (writer.getError() !== undefined) throw writer.getError();
      await writer.close();
      rates[k].push((RATE_APPENDS / ms) * 1000);
    }
  }
  const result = sizes.map((size, k) => ({ size, rate: Math.max(...rates[k]) }));
  for (const file of files) fs.rmSync(file);
  return result;
}

try {
  const explicitDir = path.join(tmp, "explicit");
  const managedDir = path.join(tmp, "managed");
  const floorDir = path.join(tmp, "floor");
  fs.mkdirSync(floorDir, { mode: 0o700 });
  const explicit = new FileSessionStorage(explicitDir);
  explicit.ensureDirSync(explicitDir);
  const managed = ManagedSessionStorage.open(managedDir, { create: true });
  const storages = [
    ["explicit dir", explicit, explicitDir],
    ["managed", managed, managedDir],
  ];

  console.log(`session storage benchmark: ${ENTRIES} entries of ${entryBytes} bytes, best of ${ROUNDS} interleaved rounds`);
  // Ratios are only as steady as the machine: say how busy it was.
  console.log(
    `load average ${os
      .loadavg()
      .map((n) => n.toFixed(1))
      .join(" ")} on ${os.cpus().length} cores`,
  );
  console.log("");

  for (const [name, storage, dir] of storages) {
    const { ours, floor } = await compare(oursAppend(storage, dir, ENTRIES), floorAppend(floorDir, ENTRIES));
    report(`append, no fsync (${name})`, ours, floor, ENTRIES, 1.25);
    const awaited = await compare(oursAppend(storage, dir, ENTRIES, 0, true), floorAppend(floorDir, ENTRIES));
    report(`  the same, awaiting each write (${name})`, awaited.ours, awaited.floor, ENTRIES);
  }
  console.log("");

  for (const [name, storage, dir] of storages) {
    const perEntry = await compare(oursAppend(storage, dir, DURABLE_ENTRIES, 1), floorDurable(floorDir, DURABLE_ENTRIES));
    report(`append + flush() each (${name})`, perEntry.ours, perEntry.floor, DURABLE_ENTRIES, 1.1);
    const grouped = await compare(oursAppend(storage, dir, DURABLE_ENTRIES, 10), floorDurable(floorDir, DURABLE_ENTRIES));
    report(`append, flush() per 10 (${name})`, grouped.ours, grouped.floor, DURABLE_ENTRIES);
    console.log(`${"".padEnd(46)} group commit gain: x${(perEntry.ours / grouped.ours).toFixed(1)} over flush-per-append`);
  }
  console.log("");

  for (const [name, storage, dir] of storages) {
    const [small, big] = await appendRates(storage, dir, [1 << 20, BIG_FILE_BYTES]);
    const mb = (bytes) => `${(bytes / (1 << 20)).toFixed(0)} MB`;
    console.log(
      `appends/s, no fsync (${name}):`.padEnd(46) +
        ` at ${mb(small.size)}: ${small.rate.toFixed(0)}/s   at ${mb(big.size)}: ${big.rate.toFixed(0)}/s   ` +
        `ratio x${(small.rate / big.rate).toFixed(2)} (no growth: ~1)`,
    );
  }
  managed.close();
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
