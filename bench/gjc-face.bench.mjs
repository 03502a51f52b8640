// The /gjc face beside the main entry, in one process with rounds interleaved so both sides see
// the same machine: what the face adds to an append and to a resume (open + context).
//
//   npm run build && node bench/gjc-face.bench.mjs
//
// Figures (issue 28: the face adds no measurable cost):
//   appends/s through each manager into a fresh session, flushed   target: ratio >= 0.95
//     (the face writes the first write before the append returns, as GJC's app expects; the main
//     entry queues it, so the two differ in when the first write happens, not in what is written)
//   open + buildSessionContext of a flat 20k-entry session (the face also links message identity
//     and copies the context, which here holds every message)   target: ratio <= 1.1
//   open + buildSessionContext of a 100k-entry session with a compaction every 1,000, through its
//     line index (a resume of long real work)   target: ratio <= 1.1

import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const { SessionManager: Main } = await import(new URL("../dist/index.js", import.meta.url).href);
const { SessionManager: Face } = await import(new URL("../dist/gjc/index.js", import.meta.url).href);

const ROUNDS = 9;
const APPENDS = 2000;
const OPEN_ENTRIES = 20_000;
/** A long session with a compaction every 1,000 entries: what a resume of real work looks like. */
const LONG_ENTRIES = 100_000;
const options = { terminalId: null, logger: { error() {} } };
const text = "The quick brown fox jumps over the lazy dog while the agent reads the file again. ".repeat(11);
const user = (i) => ({ role: "user", content: [{ type: "text", text }], timestamp: i });
const assistant = (i) => ({ role: "assistant", provider: "p", model: "m", content: [{ type: "text", text }], timestamp: i });

const root = fs.mkdtempSync(path.join(os.tmpdir(), "gjc-face-bench-"));
fs.chmodSync(root, 0o700);

/** Appends/s of one round: a fresh session, `APPENDS` messages, flushed. */
async function appendRound(Manager, dir) {
  fs.mkdirSync(dir, { mode: 0o700 });
  const manager = Manager.create("/bench", dir, undefined, options);
  const started = process.hrtime.bigint();
  for (let i = 0; i < APPENDS; i++) manager.appendMessage(i % 2 === 0 ? user(i) : assistant(i));
  await manager.flush();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await manager.close();
  return APPENDS / seconds;
}

/** Milliseconds to open `file` and build its context. */
async function openRound(Manager, file) {
  const started = process.hrtime.bigint();
  const manager = await Manager.open(file, path.dirname(file), undefined, undefined, undefined, options);
  manager.buildSessionContext();
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  await manager.close();
  return ms;
}

try {
  const sides = { main: Main, face: Face };
  const appends = { main: [], face: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of round % 2 === 0 ? ["main", "face"] : ["face", "main"]) {
      appends[side].push(await appendRound(sides[side], path.join(root, `append-${side}-${round}`)));
    }
  }

  const openDir = path.join(root, "open");
  fs.mkdirSync(openDir, { mode: 0o700 });
  const writer = Main.create("/bench", openDir, undefined, options);
  for (let i = 0; i < OPEN_ENTRIES; i++) writer.appendMessage(i % 2 === 0 ? user(i) : assistant(i));
  await writer.flush();
  const file = writer.getSessionFile();
  await writer.close();
  const opens = { main: [], face: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of round % 2 === 0 ? ["main", "face"] : ["face", "main"]) opens[side].push(await openRound(sides[side], file));
  }

  // The long session is written as lines (an agent's would have taken days), then a writer's open indexes it.
  const longFile = path.join(openDir, "long.jsonl");
  const id = (i) => `e${i.toString(16).padStart(7, "0")}`;
  const lines = [JSON.stringify({ type: "session", version: 5, id: "long", timestamp: new Date(0).toISOString(), cwd: "/bench" })];
  for (let i = 0; i < LONG_ENTRIES; i++) {
    const base = { id: id(i), parentId: i === 0 ? null : id(i - 1), timestamp: new Date(i * 1000).toISOString() };
    if (i > 0 && i % 1000 === 0)
      lines.push(JSON.stringify({ type: "compaction", ...base, summary: "summary", firstKeptEntryId: id(i - 10), tokensBefore: 1000 }));
    else lines.push(JSON.stringify({ type: "message", ...base, message: i % 2 === 0 ? user(i) : assistant(i) }));
  }
  fs.writeFileSync(longFile, lines.join("\n") + "\n", { mode: 0o600 });
  await (await Main.open(longFile, openDir, undefined, undefined, undefined, options)).close();
  const longOpens = { main: [], face: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of round % 2 === 0 ? ["main", "face"] : ["face", "main"]) longOpens[side].push(await openRound(sides[side], longFile));
  }

  const best = (values, pick) => values.reduce((a, b) => pick(a, b));
  const appendMain = best(appends.main, Math.max);
  const appendFace = best(appends.face, Math.max);
  const openMain = best(opens.main, Math.min);
  const openFace = best(opens.face, Math.min);
  console.log(
    `load average ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}; best of ${ROUNDS} interleaved rounds`,
  );
  console.log(
    `appends/s, ${APPENDS} entries   main ${appendMain.toFixed(0)}   /gjc ${appendFace.toFixed(0)}   ratio ${(appendFace / appendMain).toFixed(2)} (target >= 0.95)`,
  );
  console.log(
    `open + context, ${OPEN_ENTRIES} entries (ms)   main ${openMain.toFixed(1)}   /gjc ${openFace.toFixed(1)}   ratio ${(openFace / openMain).toFixed(2)} (target <= 1.1)`,
  );
  const longMain = best(longOpens.main, Math.min);
  const longFace = best(longOpens.face, Math.min);
  console.log(
    `open + context, ${LONG_ENTRIES} entries with compactions (ms)   main ${longMain.toFixed(1)}   /gjc ${longFace.toFixed(1)}   ratio ${(longFace / longMain).toFixed(2)} (target <= 1.1)`,
  );
} finally {
  fs.rmSync(root, { recursive: true, force: true });
}
