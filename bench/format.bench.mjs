// Session format benchmark: parse + migrate + index + buildSessionContext of generated
// agent-loop sessions, each figure printed beside the floor measured in the same process
// (the file read as one Buffer, split on "\n", JSON.parse per line).
//
//   npm run bench:format                 builds, generates v1/v5 sessions of 10k and 100k
//                                        entries in a temp dir, measures, cleans up
//   BENCH_SIZES=10000 npm run bench:format   only the given entry counts
//   node bench/format.bench.mjs generate 5 100000 out.jsonl   one session file, for profiling
//
// Every measurement runs in a fresh child process: timing in one child (floor and library
// alternated, best of several rounds), peak RSS of the library and of the floor in one child
// each, so that neither the generator nor the other side inflates the figure.
//
// The import is the pure session layer of the build (dist/session), not dist/index.js: the
// package entry also loads the native addon, and a format benchmark must not need a C++ build.

import { spawnSync } from "node:child_process";
import { mkdtempSync, openSync, readFileSync, rmSync, statSync, writeSync, closeSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const SELF = fileURLToPath(import.meta.url);
const LIBRARY = new URL("../dist/session/index.js", import.meta.url);
const TIMING_ROUNDS = 3;
const CONTEXT_ROUNDS = 25;
const TARGET_RATIO = 1.3;
const TARGET_RSS_FACTOR = 3;
const TARGET_CONTEXT_MS = 20;

// ---------------------------------------------------------------------------------------------
// Generation (deterministic: the same seed gives the same bytes)

function rng32(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  "the session tree append branch leaf compaction summary tool result read edit write file " +
  "function const return import export async await error code path line entry message " +
  "assistant user model thinking token cache usage cost provider context über café naïve → 中文"
).split(" ");

/** About 320 KB of text with code-ish lines, quotes, backslashes and non-ASCII (BMP only). */
function buildCorpus(rand) {
  const lines = [];
  let size = 0;
  while (size < 320_000) {
    const count = 3 + Math.floor(rand() * 12);
    const words = [];
    for (let i = 0; i < count; i++) words.push(WORDS[Math.floor(rand() * WORDS.length)]);
    let line = words.join(" ");
    const shape = rand();
    if (shape < 0.15) line = `  const ${words[0]} = "${words.slice(1).join("_")}";`;
    else if (shape < 0.2) line = `\t// ${line} \\ ${words[0]}`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join("\n");
}

function makeGenerator(seed) {
  const rand = rng32(seed);
  const corpus = buildCorpus(rand);
  const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
  const text = (length) => {
    const at = Math.floor(rand() * (corpus.length - length));
    return corpus.slice(at, at + length);
  };
  // Between 200 and 20,000 characters, skewed towards short: most results are a few hundred
  // characters, a few are huge (a log-uniform draw bent towards the low end).
  const toolResultLength = () => Math.round(200 * 100 ** (rand() ** 2.4));
  const hex = (n) => {
    let out = "";
    while (out.length < n)
      out += Math.floor(rand() * 0x100000000)
        .toString(16)
        .padStart(8, "0");
    return out.slice(0, n);
  };
  const signature = () => Buffer.from(hex(240), "hex").toString("base64");
  return { rand, int, text, toolResultLength, hex, signature };
}

const MODELS = [
  ["anthropic", "claude-sonnet-4-5"],
  ["openai", "gpt-5"],
];

/**
 * Produces the records of one agent-loop session: user turns, assistant messages with
 * thinking and tool calls, tool results, occasional model/thinking changes, labels, custom
 * state, a compaction every ~2,000 entries (the last one just before the leaf) and, in v5, a
 * branch with summary every ~5,000 entries.
 */
function* agentLoop(version, count, gen) {
  const startMs = Date.UTC(2026, 0, 5, 9, 0, 0);
  let clock = startMs;
  const stamp = () => {
    clock += gen.int(200, 20_000);
    return new Date(clock).toISOString();
  };
  const v5 = version === 5;
  const path = [];
  const taken = new Set();
  const newId = () => {
    let id;
    do id = gen.hex(8);
    while (taken.has(id));
    taken.add(id);
    return id;
  };
  const header = v5
    ? { type: "session", version: 5, id: "019b8f4e-6a10-7c3d-9e21-5b7a3c9d0e1f", timestamp: new Date(startMs).toISOString(), cwd: "/work/project" }
    : {
        type: "session",
        id: "6f1d2c3b-4a59-4e8d-9c7b-2a1e0f9d8c7b",
        timestamp: new Date(startMs).toISOString(),
        cwd: "/work/project",
        provider: "anthropic",
        modelId: "claude-sonnet-4-5",
        thinkingLevel: "off",
      };
  yield header;

  let written = 0;
  let model = MODELS[0];
  let nextCompaction = gen.int(1800, 2200);
  let nextBranch = gen.int(4500, 5500);
  const finalCompactionAt = count - 120;

  const entry = (fields) => {
    const base = { type: fields.type };
    if (v5) {
      const id = newId();
      base.id = id;
      base.parentId = path.length === 0 ? null : path[path.length - 1];
      path.push(id);
    } else {
      path.push(written + 1); // v1: the file line index (header is line 0)
    }
    base.timestamp = stamp();
    written += 1;
    return Object.assign(base, fields);
  };

  const userMessage = () =>
    entry({ type: "message", message: { role: "user", content: [{ type: "text", text: gen.text(gen.int(40, 600)) }], timestamp: clock } });
  const assistantMessage = (toolUse) => {
    const content = [
      { type: "thinking", thinking: gen.text(gen.int(200, 2500)), thinkingSignature: gen.signature() },
      { type: "text", text: gen.text(gen.int(20, 400)) },
    ];
    let callId;
    if (toolUse) {
      callId = `toolu_${gen.hex(24)}`;
      content.push({ type: "toolCall", id: callId, name: "read", arguments: { path: `src/${gen.hex(6)}.ts`, offset: gen.int(1, 400) } });
    }
    const input = gen.int(1_000, 150_000);
    const output = gen.int(50, 4_000);
    const message = {
      role: "assistant",
      content,
      api: "anthropic-messages",
      provider: model[0],
      model: model[1],
      usage: {
        input,
        output,
        cacheRead: gen.int(0, input),
        cacheWrite: 0,
        totalTokens: input + output,
        cost: { input: 0.01, output: 0.02, cacheRead: 0, cacheWrite: 0, total: 0.03 },
      },
      stopReason: toolUse ? "toolUse" : "stop",
      timestamp: clock,
    };
    return { record: entry({ type: "message", message }), callId };
  };
  const toolResult = (callId) =>
    entry({
      type: "message",
      message: {
        role: "toolResult",
        toolCallId: callId,
        toolName: "read",
        content: [{ type: "text", text: gen.text(gen.toolResultLength()) }],
        isError: false,
        timestamp: clock,
      },
    });

  const side = () => {
    if (written >= nextCompaction || written === finalCompactionAt) {
      nextCompaction = written + gen.int(1800, 2200);
      const keptBack = Math.min(path.length, gen.int(10, 40));
      const kept = path[path.length - keptBack];
      const fields = { type: "compaction", summary: gen.text(gen.int(2_000, 6_000)), shortSummary: gen.text(80), tokensBefore: gen.int(120_000, 180_000) };
      if (v5) fields.firstKeptEntryId = kept;
      else fields.firstKeptEntryIndex = kept;
      return entry(fields);
    }
    if (v5 && written >= nextBranch && path.length > 60) {
      nextBranch = written + gen.int(4500, 5500);
      const back = gen.int(10, 50);
      const from = path[path.length - 1 - back];
      path.length -= back; // the abandoned tail stays in the file, off the path
      return entry({ type: "branch_summary", fromId: from, summary: gen.text(gen.int(200, 1200)) });
    }
    const roll = gen.rand();
    if (roll < 0.0004) {
      model = MODELS[gen.int(0, MODELS.length - 1)];
      return entry({ type: "model_change", ...(v5 ? { model: `${model[0]}/${model[1]}` } : { provider: model[0], modelId: model[1] }) });
    }
    if (roll < 0.0008) return entry({ type: "thinking_level_change", thinkingLevel: ["low", "medium", "high"][gen.int(0, 2)] });
    if (v5 && roll < 0.0015) return entry({ type: "label", targetId: path[path.length - 1], label: `checkpoint-${written}` });
    if (v5 && roll < 0.0025) return entry({ type: "custom", customType: "workflow-state", data: { step: written, files: [gen.text(30)] } });
    return undefined;
  };

  while (written < count) {
    const extra = side();
    if (extra !== undefined) {
      yield extra;
      continue;
    }
    yield userMessage();
    const calls = gen.int(1, 8);
    for (let i = 0; i < calls && written < count; i++) {
      const sideEntry = side();
      if (sideEntry !== undefined) yield sideEntry;
      if (written >= count) break;
      const { record, callId } = assistantMessage(true);
      yield record;
      if (written < count) yield toolResult(callId);
    }
    if (written < count) yield assistantMessage(false).record;
  }
}

function generate(file, version, count) {
  const fd = openSync(file, "w");
  let batch = [];
  let size = 0;
  for (const record of agentLoop(version, count, makeGenerator(version * 1_000_003 + count))) {
    const line = JSON.stringify(record);
    batch.push(line);
    size += line.length;
    if (size > 4 << 20) {
      writeSync(fd, `${batch.join("\n")}\n`);
      batch = [];
      size = 0;
    }
  }
  if (batch.length > 0) writeSync(fd, `${batch.join("\n")}\n`);
  closeSync(fd);
}

// ---------------------------------------------------------------------------------------------
// Measured work

function floorLoad(file) {
  const bytes = readFileSync(file);
  const records = [];
  let start = 0;
  for (;;) {
    const newline = bytes.indexOf(10, start);
    const end = newline === -1 ? bytes.length : newline;
    if (end > start) records.push(JSON.parse(bytes.toString("utf8", start, end)));
    if (newline === -1) break;
    start = newline + 1;
  }
  return records;
}

function libraryLoad(lib, file) {
  const loaded = lib.loadSession(readFileSync(file));
  if (loaded.kind !== "loaded") throw new Error(`bench session did not load: ${loaded.kind}`);
  const tree = new lib.SessionTree(loaded.entries);
  const context = lib.buildSessionContext(loaded.entries, tree.getLeafId(), tree.index);
  return { loaded, tree, context };
}

function elapsed(action) {
  const start = process.hrtime.bigint();
  const result = action();
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, result };
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function child(mode, file) {
  const lib = await import(LIBRARY.href);
  global.gc();
  const baselineRss = process.memoryUsage().rss;
  const report = { baselineRss };
  if (mode === "time") {
    report.floorMs = [];
    report.libraryMs = [];
    for (let round = 0; round < TIMING_ROUNDS; round++) {
      let run = elapsed(() => floorLoad(file));
      report.floorMs.push(run.ms);
      run = null;
      global.gc();
      run = elapsed(() => libraryLoad(lib, file));
      report.libraryMs.push(run.ms);
      if (round === TIMING_ROUNDS - 1) {
        const { loaded, tree, context } = run.result;
        const leaf = tree.getLeafId();
        const contextMs = [];
        for (let i = 0; i < CONTEXT_ROUNDS; i++) {
          contextMs.push(elapsed(() => lib.buildSessionContext(loaded.entries, leaf, tree.index)).ms);
        }
        report.contextMs = contextMs;
        report.entries = loaded.entries.length;
        report.pathLength = tree.getPath().length;
        report.contextMessages = context.messages.length;
        report.invalidLines = loaded.invalidLines.length;
        report.unknownEntries = loaded.unknownEntries;
        report.firstIsCompaction = context.messages[0]?.role === "compactionSummary";
      }
      run = null;
      global.gc();
    }
  } else if (mode === "rss-library") {
    const kept = libraryLoad(lib, file);
    report.entries = kept.loaded.entries.length;
  } else if (mode === "rss-floor") {
    const kept = floorLoad(file);
    report.entries = kept.length - 1;
  } else {
    throw new Error(`unknown child mode ${mode}`);
  }
  report.peakRss = process.resourceUsage().maxRSS * 1024;
  process.stdout.write(JSON.stringify(report));
}

function runChild(mode, file) {
  const out = spawnSync(process.execPath, ["--expose-gc", SELF, "child", mode, file], {
    encoding: "utf8",
    maxBuffer: 16 << 20,
  });
  if (out.status !== 0) throw new Error(`child ${mode} failed (${out.status}): ${out.stderr}`);
  return JSON.parse(out.stdout);
}

// ---------------------------------------------------------------------------------------------
// Orchestration and report

const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
const verdict = (ok) => (ok ? "ok" : "MISS");

function printCase({ name, count, size, timing, library, floor }) {
  const floorMs = Math.min(...timing.floorMs);
  const libraryMs = Math.min(...timing.libraryMs);
  const ratio = libraryMs / floorMs;
  const rssFactor = library.peakRss / size;
  const floorFactor = floor.peakRss / size;
  const contextMedian = median(timing.contextMs);
  console.log(
    `${name}  ${mb(size)}, ${timing.entries} entries, leaf path ${timing.pathLength}, ` +
      `${timing.contextMessages} context messages (compaction summary first: ${timing.firstIsCompaction}), ` +
      `${timing.invalidLines} invalid lines, ${timing.unknownEntries} unknown entries`,
  );
  console.log(
    `  load   floor ${floorMs.toFixed(0)} ms | library ${libraryMs.toFixed(0)} ms | ratio ${ratio.toFixed(2)}x ` +
      `(target <= ${TARGET_RATIO}x: ${verdict(ratio <= TARGET_RATIO)})`,
  );
  console.log(
    `  rss    floor peak ${mb(floor.peakRss)} (${floorFactor.toFixed(2)}x file) | library peak ${mb(library.peakRss)} ` +
      `(${rssFactor.toFixed(2)}x file, target < ${TARGET_RSS_FACTOR}x: ${verdict(rssFactor < TARGET_RSS_FACTOR)}) | ` +
      `above the ${mb(library.baselineRss)} process baseline: floor ${netFactor(floor, size)}x, library ${netFactor(library, size)}x`,
  );
  const contextTarget = count >= 100_000 ? ` (target < ${TARGET_CONTEXT_MS} ms: ${verdict(contextMedian < TARGET_CONTEXT_MS)})` : "";
  console.log(
    `  buildSessionContext median ${contextMedian.toFixed(2)} ms, min ${Math.min(...timing.contextMs).toFixed(2)} ms ` +
      `over ${timing.contextMs.length} runs${contextTarget}`,
  );
}

/** Peak RSS minus what the process held before reading, per byte of file. */
const netFactor = (child, size) => ((child.peakRss - child.baselineRss) / size).toFixed(2);

const loadAverage = () =>
  loadavg()
    .map((value) => value.toFixed(1))
    .join(" ");

function main() {
  const sizes = (process.env.BENCH_SIZES ?? "10000,100000").split(",").map(Number);
  const dir = mkdtempSync(join(tmpdir(), "gjc-format-bench-"));
  // The machines are shared: the load average says how far absolute times are inflated.
  console.log(
    `format bench: node ${process.version}, ${cpus().length} cpus, load average ${loadAverage()}, ` + `${TIMING_ROUNDS} timing rounds (best of), temp ${dir}`,
  );
  try {
    for (const count of sizes) {
      for (const version of [1, 5]) {
        const name = `v${version}-${count >= 1000 ? `${count / 1000}k` : count}`;
        const file = join(dir, `${name}.jsonl`);
        generate(file, version, count);
        const size = statSync(file).size;
        const timing = runChild("time", file);
        const library = runChild("rss-library", file);
        const floor = runChild("rss-floor", file);
        printCase({ name, count, size, timing, library, floor });
        rmSync(file);
      }
    }
    console.log(`load average at the end: ${loadAverage()}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// `generate <version> <count> <file>` writes one session and exits (for profiling by hand).
if (process.argv[2] === "child") await child(process.argv[3], process.argv[4]);
else if (process.argv[2] === "generate") generate(process.argv[5], Number(process.argv[3]), Number(process.argv[4]));
else main();
