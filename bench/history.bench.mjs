// Prompt-history benchmark: insert throughput beside a plain INSERT loop, and search latency
// at 100k and 1M prompts. Run with `npm run bench:history` (builds dist/ first).
//
// Floors:
//   insert  a prepared INSERT into the same schema (same triggers and indexes), all rows in
//           one transaction, on a raw better-sqlite3 connection: the least SQLite can do.
//   search  the bare FTS5 query on a raw connection (rowids only, no join, no fallback pass).
// Targets (issue 6): inserts within 1.5x of the floor; p99 one-token search < 10 ms at 1M.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { setImmediate as yieldToLoop } from "node:timers/promises";

import Database from "better-sqlite3";

import { HistoryStorage } from "../dist/index.js";

const INSERT_COUNT = Number(process.env.HISTORY_BENCH_INSERTS ?? 100_000);
const BIG_COUNT = Number(process.env.HISTORY_BENCH_BIG ?? 1_000_000);
const QUERIES = Number(process.env.HISTORY_BENCH_QUERIES ?? 300);
const LIMIT = 100;

// Deterministic corpus: 50,000 words of letters drawn with English letter frequencies (so
// trigrams are as varied as in real text), used with a skewed (Zipf-like) frequency; 4-23
// words per prompt (about 100 characters), ten working directories.
const LETTER_WEIGHTS = "eeeeeeeeeeeetttttttttaaaaaaaaoooooooiiiiiiinnnnnnnsssssshhhhhhrrrrrrddddllllcccuuummmwwffggyyppbbvkjxqz";

function corpus(seed) {
  let state = seed >>> 0;
  const random = () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
  const vocabulary = [];
  for (let i = 0; i < 50_000; i++) {
    let word = "";
    const n = 2 + Math.floor(random() * 5) + Math.floor(random() * 5);
    for (let j = 0; j < n; j++) word += LETTER_WEIGHTS[Math.floor(random() * LETTER_WEIGHTS.length)];
    vocabulary.push(word);
  }
  const word = () => vocabulary[Math.floor(random() ** 2.5 * vocabulary.length)];
  return {
    random,
    word,
    prompt(i) {
      const n = 4 + Math.floor(random() * 20);
      const words = [];
      for (let k = 0; k < n; k++) words.push(word());
      // The serial keeps every prompt distinct, so consecutive-duplicate skipping never hides work.
      return `${words.join(" ")} #${i}`;
    },
    cwd: (i) => `/home/dev/project-${i % 10}`,
  };
}

function freshAgentDir(label) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `gjc-history-bench-${label}-`));
  fs.chmodSync(root, 0o700);
  return { root, agent: path.join(root, "agent") };
}

// A raw connection to a new store's database: the schema comes from the store itself.
function rawStoreDatabase(label, pragmas) {
  const dir = freshAgentDir(label);
  HistoryStorage.open(dir.agent).close();
  const db = new Database(path.join(dir.agent, "history.db"));
  for (const pragma of ["journal_mode = WAL", ...pragmas]) db.pragma(pragma);
  return { dir, db };
}

function secondsSince(start) {
  return Number(process.hrtime.bigint() - start) / 1e9;
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

function fmt(ms) {
  return `${ms.toFixed(2).padStart(7)} ms`;
}

function rate(count, seconds) {
  return `${Math.round(count / seconds)
    .toLocaleString("en-US")
    .padStart(9)} prompts/s`;
}

async function benchInsert() {
  const prompts = [];
  const source = corpus(1);
  for (let i = 0; i < INSERT_COUNT; i++) prompts.push([source.prompt(i), source.cwd(i)]);

  // Floor: same schema (created by the store), raw prepared INSERTs in one transaction.
  const { dir: floorDir, db: raw } = rawStoreDatabase("floor", ["synchronous = NORMAL", "secure_delete = ON"]);
  const insert = raw.prepare("INSERT INTO history(prompt, created_at, cwd) VALUES (?, ?, ?)");
  const now = Math.floor(Date.now() / 1000);
  let start = process.hrtime.bigint();
  raw.transaction(() => {
    for (const [prompt, cwd] of prompts) insert.run(prompt, now, cwd);
  })();
  const floorSeconds = secondsSince(start);
  raw.close();
  fs.rmSync(floorDir.root, { recursive: true, force: true });

  // add() in a tight loop, then flush(): every prompt goes through the queue and batches.
  const burstDir = freshAgentDir("burst");
  let store = HistoryStorage.open(burstDir.agent);
  start = process.hrtime.bigint();
  for (const [prompt, cwd] of prompts) store.add(prompt, cwd);
  store.flush();
  const burstSeconds = secondsSince(start);
  store.close();

  // add() from an event loop that yields every 100 prompts: the background batches do the writing.
  const paced = freshAgentDir("paced");
  store = HistoryStorage.open(paced.agent);
  start = process.hrtime.bigint();
  for (let i = 0; i < prompts.length; i++) {
    store.add(prompts[i][0], prompts[i][1]);
    if (i % 100 === 99) await yieldToLoop();
  }
  store.flush();
  const pacedSeconds = secondsSince(start);
  store.close();
  fs.rmSync(paced.root, { recursive: true, force: true });

  console.log(`\nInsert ${INSERT_COUNT.toLocaleString("en-US")} prompts (target: within 1.5x of the floor)`);
  console.log(`  floor: raw INSERT loop, one transaction   ${rate(INSERT_COUNT, floorSeconds)}   ${floorSeconds.toFixed(2)} s`);
  console.log(
    `  add() burst + flush()                     ${rate(INSERT_COUNT, burstSeconds)}   ${burstSeconds.toFixed(2)} s   ${(burstSeconds / floorSeconds).toFixed(2)}x floor`,
  );
  console.log(
    `  add() yielding every 100 (background)     ${rate(INSERT_COUNT, pacedSeconds)}   ${pacedSeconds.toFixed(2)} s   ${(pacedSeconds / floorSeconds).toFixed(2)}x floor`,
  );
  return burstDir;
}

// Builds a database of `count` prompts quickly: rows first with the index triggers removed,
// then one FTS5 'rebuild' per index, then the triggers put back exactly as they were. The
// result is the same file the store would write one prompt at a time.
function generateBig(count) {
  const { dir, db } = rawStoreDatabase("big", ["synchronous = OFF", "cache_size = -262144"]);
  const triggers = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").all();
  const source = corpus(7);
  const start = process.hrtime.bigint();
  db.transaction(() => {
    for (const { name } of triggers) db.exec(`DROP TRIGGER ${name}`);
    const insert = db.prepare("INSERT INTO history(prompt, created_at, cwd) VALUES (?, ?, ?)");
    const base = Math.floor(Date.now() / 1000) - count;
    for (let i = 0; i < count; i++) insert.run(source.prompt(i), base + i, source.cwd(i));
    db.exec("INSERT INTO history_fts(history_fts) VALUES('rebuild')");
    db.exec("INSERT INTO history_infix(history_infix) VALUES('rebuild')");
    for (const { sql } of triggers) db.exec(sql);
  })();
  db.pragma("wal_checkpoint(TRUNCATE)");
  db.close();
  const size = fs.statSync(path.join(dir.agent, "history.db")).size;
  console.log(`\nGenerated ${count.toLocaleString("en-US")} prompts in ${secondsSince(start).toFixed(1)} s (${(size / 1e6).toFixed(0)} MB)`);
  return dir;
}

// Query sets drawn from the stored prompts themselves, so every query can match.
function querySets(dbPath) {
  const db = new Database(dbPath, { readonly: true });
  const max = db.prepare("SELECT max(id) AS n FROM history").get().n;
  const pick = db.prepare("SELECT prompt FROM history WHERE id = ?");
  const source = corpus(99);
  const words = () => {
    for (;;) {
      const row = pick.get(1 + Math.floor(source.random() * max));
      if (row) return row.prompt.split(" ").slice(0, -1);
    }
  };
  const sets = { "one-token": [], "three-token": [], infix: [] };
  for (let i = 0; i < QUERIES; i++) {
    const w = words();
    sets["one-token"].push(w[Math.floor(source.random() * w.length)]);
    const at = Math.floor(source.random() * Math.max(1, w.length - 2));
    sets["three-token"].push(w.slice(at, at + 3).join(" "));
    const long = w.filter((x) => x.length >= 6);
    const x = long.length > 0 ? long[Math.floor(source.random() * long.length)] : w[0];
    // Four letters from inside a word: never a word prefix, so only the substring pass finds it.
    sets.infix.push(x.length >= 6 ? x.slice(1, 5) : x);
  }
  db.close();
  return sets;
}

function latencies(fn, queries) {
  for (const q of queries.slice(0, 20)) fn(q);
  const times = [];
  for (const q of queries) {
    const start = process.hrtime.bigint();
    fn(q);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 0.5), p99: percentile(times, 0.99) };
}

function benchSearch(agent, count) {
  const dbPath = path.join(agent, "history.db");
  const sets = querySets(dbPath);
  const store = HistoryStorage.open(agent);
  const raw = new Database(dbPath, { readonly: true });
  const ftsFloor = raw.prepare("SELECT rowid FROM history_fts WHERE history_fts MATCH ? ORDER BY rowid DESC LIMIT ?");
  const infixFloor = raw.prepare("SELECT rowid FROM history_infix WHERE prompt LIKE ? ORDER BY rowid DESC LIMIT ?");
  const quotedPrefix = (q) =>
    q
      .split(" ")
      .map((t) => `"${t}"*`)
      .join(" ");
  console.log(`\nSearch at ${count.toLocaleString("en-US")} prompts, limit ${LIMIT}, ${QUERIES} queries each`);
  console.log(
    `  ${"query".padEnd(12)} ${"ours p50".padStart(10)} ${"ours p99".padStart(10)}   ${"floor p50".padStart(10)} ${"floor p99".padStart(10)}   floor`,
  );
  for (const [name, queries] of Object.entries(sets)) {
    const ours = latencies((q) => store.search(q, { limit: LIMIT }), queries);
    const floor =
      name === "infix" ? latencies((q) => infixFloor.all(`%${q}%`, LIMIT), queries) : latencies((q) => ftsFloor.all(quotedPrefix(q), LIMIT), queries);
    const target = name === "one-token" && count >= 1_000_000 ? `   target p99 < 10 ms: ${ours.p99 < 10 ? "met" : "MISSED"}` : "";
    console.log(
      `  ${name.padEnd(12)} ${fmt(ours.p50)} ${fmt(ours.p99)}   ${fmt(floor.p50)} ${fmt(floor.p99)}   ${name === "infix" ? "bare trigram LIKE" : "bare FTS5 MATCH"}${target}`,
    );
  }
  const recent = latencies(() => store.getRecent(LIMIT), sets["one-token"]);
  console.log(`  ${"getRecent".padEnd(12)} ${fmt(recent.p50)} ${fmt(recent.p99)}`);
  raw.close();
  store.close();
}

console.log(
  `history bench: node ${process.version}, SQLite ${new Database(":memory:").prepare("SELECT sqlite_version() AS v").get().v}, ${os.cpus().length} CPUs`,
);
const small = await benchInsert();
benchSearch(small.agent, INSERT_COUNT);
fs.rmSync(small.root, { recursive: true, force: true });
if (BIG_COUNT > 0) {
  const big = generateBig(BIG_COUNT);
  benchSearch(big.agent, BIG_COUNT);
  fs.rmSync(big.root, { recursive: true, force: true });
}
