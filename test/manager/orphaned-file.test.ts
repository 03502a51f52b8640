/**
 * A session file removed or replaced by another process while a manager holds its writer: the manager's lines would
 * go on into the orphaned inode, so its next flush (the durability promise) must refuse, latched, and nothing may be
 * recreated, overwritten or indexed for the orphan. Real processes: a writer child, and this process as the other one.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { loadSession } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";
import type { BundledChild } from "../storage/child-bundle.js";
import { bundleManagerChild } from "./child.js";

interface Outcome {
  code: string;
  cause?: string;
  detail?: string;
  message?: string;
}
interface Report {
  turns: Outcome;
  afterTurns: number;
  flush: Outcome;
  later: Outcome[];
  close: Outcome;
  inMemory: number;
  logged: string[];
}

let child: BundledChild;
let tmp: { path: string; remove(): void };
beforeAll(async () => {
  child = await bundleManagerChild("orphan-writer");
  tmp = makeTempDir("gjc-orphaned-file-");
});
afterAll(() => {
  child?.remove();
  tmp?.remove();
});

/** Starts the writer child in a fresh 0700 directory and waits for its first flushed session. */
async function startWriter(kind: "file" | "managed", name: string): Promise<{ proc: ChildProcessWithoutNullStreams; file: string; report: Promise<Report> }> {
  const dir = path.join(tmp.path, name);
  fs.mkdirSync(dir, { mode: 0o700 });
  const proc = spawn(process.execPath, [child.file, kind, dir], { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  proc.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const lines = readline.createInterface({ input: proc.stdout });
  const received: string[] = [];
  let wake: (() => void) | undefined;
  lines.on("line", (line) => {
    received.push(line);
    wake?.();
  });
  const exited = new Promise<number | null>((resolve) => proc.on("close", resolve));
  const next = async (): Promise<string> => {
    while (received.length === 0) {
      const woken = new Promise<void>((resolve) => (wake = resolve));
      const status = await Promise.race([woken.then(() => undefined), exited]);
      if (status !== undefined && received.length === 0) throw new Error(`writer exited ${status}: ${stderr}`);
    }
    return received.shift()!;
  };
  const ready = await next();
  expect(ready).toMatch(/^ready /);
  return { proc, file: ready.slice("ready ".length), report: next().then((line) => JSON.parse(line) as Report) };
}

const sidecarOf = (file: string) => path.join(path.dirname(file), `.gjc-lines.${path.basename(file)}.v6`);
const entriesIn = (file: string) => {
  const loaded = loadSession(fs.readFileSync(file));
  if (loaded.kind !== "loaded") throw new Error(loaded.kind);
  return loaded.lines.filter((line) => line.kind === "entry").length;
};

/** What every refused step reports: the latched failure, caused by the writer finding its name taken or gone. */
function expectRefused(report: Report, removed: boolean): void {
  expect(report.turns.code).toBe("ok");
  expect(report.afterTurns).toBe(30);
  expect(report.flush).toMatchObject({ code: "persistence_failed", cause: "unsafe_entry", detail: "identity_changed" });
  expect(report.flush.message).toContain(removed ? "was removed" : "now names another file");
  expect(report.flush.message).toContain("writes nothing more");
  expect(report.later.map((step) => step.code)).toEqual(Array(4).fill("persistence_failed"));
  expect(report.later.every((step) => step.message === report.flush.message)).toBe(true);
  expect(report.close.code).toBe("persistence_failed");
  // Every entry the agent appended is still in memory; the failure was logged once.
  expect(report.inMemory).toBe(60 * 3);
  expect(report.logged).toEqual(["unsafe_entry"]);
}

describe.each(["file", "managed"] as const)("a session file changed under its writer (%s storage)", (kind) => {
  it("removed by another process: the next flush refuses, later appends refuse, nothing is recreated or indexed", async () => {
    const { proc, file, report } = await startWriter(kind, `${kind}-removed`);
    const sidecar = sidecarOf(file);
    const indexed = fs.statSync(sidecar).size;
    expect(indexed).toBeGreaterThan(32);
    fs.unlinkSync(file);
    proc.stdin.end("go\n");
    expectRefused(await report, true);
    expect(fs.existsSync(file)).toBe(false);
    expect(fs.statSync(sidecar).size).toBe(indexed);
  });

  it("replaced by a rename over its name: the flush refuses and the replacement is untouched", async () => {
    const { proc, file, report } = await startWriter(kind, `${kind}-replaced`);
    const sidecar = sidecarOf(file);
    const indexed = fs.statSync(sidecar).size;
    // Another program's copy of the session, published the usual way: a temporary renamed over the name.
    const replacement = Buffer.concat([
      fs.readFileSync(file),
      Buffer.from('{"type":"custom","customType":"other-program","id":"x1","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z"}\n'),
    ]);
    const temporary = path.join(path.dirname(file), "replacement.tmp");
    fs.writeFileSync(temporary, replacement, { mode: 0o600 });
    fs.renameSync(temporary, file);
    const before = fs.statSync(file, { bigint: true });
    proc.stdin.end("go\n");
    expectRefused(await report, false);
    expect(fs.readFileSync(file).equals(replacement)).toBe(true);
    const after = fs.statSync(file, { bigint: true });
    expect([after.ino, after.size, after.mtimeNs]).toEqual([before.ino, before.size, before.mtimeNs]);
    expect(fs.statSync(sidecar).size).toBe(indexed);
  });

  it("left alone: every flush resolves and the file and its index hold every entry", async () => {
    const { proc, file, report } = await startWriter(kind, `${kind}-alone`);
    const indexed = fs.statSync(sidecarOf(file)).size;
    proc.stdin.end("go\n");
    const outcome = await report;
    expect([outcome.turns.code, outcome.flush.code, ...outcome.later.map((step) => step.code), outcome.close.code]).toEqual(Array(7).fill("ok"));
    expect(outcome.logged).toEqual([]);
    // 180 entries from the turns, one more message; the title is a patch, the rewrite keeps them all.
    expect(entriesIn(file)).toBe(60 * 3 + 1);
    expect(fs.statSync(sidecarOf(file)).size).toBeGreaterThan(indexed);
  });
});
