/**
 * One writer and several readers on one session, in real processes, with no attacker: the writer
 * resumes the session again and again (open, a numbered message and its answer, now and then an
 * abandoned answer, a tool call with a long output and images, a compaction, a rewrite of an
 * earlier message; flush, close) while read-only opens and the CLI's `show` and `context` read it.
 * No reader ever writes the line index, every reader sees every message flushed before its open
 * began with no hole, the model's context is the path from the last compaction's kept question
 * on, and the file ends holding every message once, in order.
 *
 * GJC_RESUME_RACE_CYCLES sets the writer's cycles (default 150).
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { makeTempDir } from "../helpers/temp.js";
import { REPO_ROOT } from "../helpers/processes.js";
import { startChild, type BundledChild } from "../storage/child-bundle.js";
import { bundleManagerChild } from "./child.js";
import { fullParse } from "./line-index-helpers.js";

const CYCLES = Number(process.env.GJC_RESUME_RACE_CYCLES ?? 150);
const REWRITE_EVERY = 10;
/** Cycles between compactions: the one in cycle `c` (`c % COMPACT_EVERY === COMPACT_EVERY - 1`) keeps the questions from `c - 2` on. */
const COMPACT_EVERY = 25;
const READERS = 2;
const CLI = path.join(REPO_ROOT, "dist", "cli", "main.js");
const run = promisify(execFile);

let writer: BundledChild;
let reader: BundledChild;
let tmp: { path: string; remove(): void };
beforeAll(async () => {
  [writer, reader] = await Promise.all([bundleManagerChild("resume-writer"), bundleManagerChild("resume-reader")]);
  tmp = makeTempDir("gjc-resume-race-");
});
afterAll(() => {
  writer?.remove();
  reader?.remove();
  tmp?.remove();
});

/** Lines a child prints, as they come; resolves with all of them when it exits 0. */
function linesOf(child: ReturnType<typeof startChild>, onLine: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    let buffered = "";
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout?.on("data", (chunk: Buffer) => {
      buffered += chunk.toString();
      for (let newline = buffered.indexOf("\n"); newline !== -1; newline = buffered.indexOf("\n")) {
        onLine(buffered.slice(0, newline));
        buffered = buffered.slice(newline + 1);
      }
    });
    child.on("close", (status) => (status === 0 ? resolve() : reject(new Error(`child exited ${status}: ${stderr}`))));
  });
}

/** `0..n` as a list. */
const upTo = (n: number): number[] => Array.from({ length: n + 1 }, (_, i) => i);

describe("one writer resuming beside readers", () => {
  it(`never shows a reader a hole and never loses a flushed message, over ${CYCLES} writer cycles`, async () => {
    const file = path.join(tmp.path, "session.jsonl");
    const stop = path.join(tmp.path, "stop");
    fs.writeFileSync(`${file}.acked`, "-1");
    // The first cycle creates the file; readers start once it exists.
    let acked = -1;
    const writing = startChild(writer, [file, "0", String(CYCLES), String(REWRITE_EVERY), String(COMPACT_EVERY)]);
    let readersStarted: Promise<void>[] = [];
    const reads: { before: number; onPath: number[]; all: number[]; note: string; inContext: number[]; summarized: boolean }[] = [];
    const startReaders = () => {
      readersStarted = Array.from({ length: READERS }, () =>
        linesOf(startChild(reader, [file, stop]), (line) => {
          if (line === "done") return;
          const [before, onPath, all, note, inContext, summarized] = line.split("|") as [string, string, string, string, string, string];
          const list = (text: string) => (text === "" ? [] : text.split(",").map(Number));
          reads.push({ before: Number(before), onPath: list(onPath), all: list(all), note, inContext: list(inContext), summarized: summarized === "summary" });
        }),
      );
    };
    const cliRuns: { command: string; before: number; stdout: string }[] = [];
    let cliLoop: Promise<void> = Promise.resolve();
    const startCli = () => {
      cliLoop = (async () => {
        while (!fs.existsSync(stop)) {
          for (const command of ["show", "context"]) {
            const before = acked;
            const { stdout } = await run(process.execPath, [CLI, "--verbose", command, file], { env: { ...process.env, NO_COLOR: "1" }, maxBuffer: 64 << 20 });
            cliRuns.push({ command, before, stdout });
          }
        }
      })();
    };
    await linesOf(writing, (line) => {
      if (line === "done") return;
      acked = Number(line);
      fs.writeFileSync(`${file}.acked`, line);
      if (acked === 0) {
        startReaders();
        startCli();
      }
    });
    fs.writeFileSync(stop, "");
    await Promise.all([...readersStarted, cliLoop]);

    // The readers did their work beside the writer: a race test that asserts on nothing proves nothing.
    expect(reads.length).toBeGreaterThanOrEqual(CYCLES / 5);
    expect(reads.filter((read) => read.before >= 0 && read.before < CYCLES - 1).length).toBeGreaterThanOrEqual(CYCLES / 10);
    // A CLI run costs a process start: on a loaded machine the writer may finish after one show and one context.
    expect(cliRuns.length).toBeGreaterThanOrEqual(2);
    expect(cliRuns.some((run) => run.before < CYCLES - 1)).toBe(true);
    expect(reads.some((read) => read.note === "used")).toBe(true);
    // The readers met the session's shapes: compacted contexts, and the writer's rewrites.
    expect(reads.some((read) => read.summarized)).toBe(true);
    for (const read of reads) {
      // Contiguous from 0, and at least up to what was flushed before the open began.
      expect(read.onPath).toEqual(upTo(read.onPath.length - 1));
      expect(read.all).toEqual(read.onPath);
      expect(read.onPath.length - 1).toBeGreaterThanOrEqual(read.before);
      // The context: the path's questions from the last compaction's kept one on.
      const last = read.onPath.length - 1;
      const compactions = upTo(last).filter((c) => c % COMPACT_EVERY === COMPACT_EVERY - 1);
      const done = compactions.filter((c) => c < last);
      const from = done.length === 0 ? 0 : done[done.length - 1]! - 2;
      // A compaction in the last cycle seen may not be written yet.
      const starts = compactions.includes(last) ? [from, last - 2] : [from];
      expect(starts).toContain(read.inContext[0] ?? 0);
      expect(read.inContext).toEqual(read.onPath.slice(read.inContext[0] ?? 0));
      expect(read.summarized).toBe((read.inContext[0] ?? 0) > 0);
    }
    const questions = (stdout: string) => [...new Set([...stdout.matchAll(/question (\d+)(?![0-9])/g)].map((match) => Number(match[1])))].sort((a, b) => a - b);
    for (const { command, before, stdout } of cliRuns) {
      const seen = questions(stdout);
      // `show` prints the whole transcript; `context` what the model gets, which begins at a kept question.
      if (command === "show") expect(seen.slice(0, before + 1)).toEqual(upTo(before));
      else expect(seen).toEqual(Array.from({ length: seen.length }, (_, i) => seen[0]! + i));
      expect(seen[seen.length - 1] ?? -1).toBeGreaterThanOrEqual(before);
    }
    const final = (await fullParse(file)) as { entries: { type: string; message?: { role?: string; n?: number } }[] };
    const numbers = final.entries.filter((entry) => entry.type === "message" && entry.message?.role === "user").map((entry) => entry.message!.n);
    expect(numbers).toEqual(upTo(CYCLES - 1));
  }, 900_000);
});
