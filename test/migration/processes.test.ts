/**
 * Real processes: eight concurrent openers of one legacy session, and migrators killed with
 * SIGKILL at random points.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { openCandidateForWrite } from "../../src/index.js";
import { BINDING_FILE_NAME } from "../../src/scope/index.js";
import { bundleChild, runChild, startChild, type BundledChild } from "../storage/child-bundle.js";
import { makeSandbox, type Sandbox } from "../scope/helpers.js";
import { listed, scopeOf, treeHashes, writeLegacySession } from "./fixtures.js";

const here = path.dirname(fileURLToPath(import.meta.url));
let child: BundledChild;

beforeAll(async () => {
  child = await bundleChild("migrate-child", path.join(here, "children"));
});
afterAll(() => child?.remove());

/** Files visible in the scope, apart from the binding and the internal directory. */
function visible(scopeDir: string): string[] {
  if (!fs.existsSync(scopeDir)) return [];
  // `.gjc-tmp-*` are the fs layer's own temporaries of a killed atomic write (never sessions).
  return fs
    .readdirSync(scopeDir)
    .filter((n) => n !== BINDING_FILE_NAME && n !== ".gjc-managed-session-internal" && !n.startsWith(".gjc-tmp-"))
    .sort();
}

function artifacts(n: number, size: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < n; i++) out[`${i % 7}/${i}.bash.log`] = `${i}`.padEnd(size, "x");
  return out;
}

describe("concurrent openers", () => {
  it("8 processes open the same legacy session for writing: one copy, byte-identical, no partial files", async () => {
    const box: Sandbox = makeSandbox();
    try {
      const scope = scopeOf(box.cwd, box.agentDir);
      const file = writeLegacySession(scope.sessionsRoot, box.cwd, { lines: 2000, artifacts: artifacts(40, 4096) });
      const source = { ...treeHashes(file), ...treeHashes(file.slice(0, -6)) };
      const results = await Promise.all(Array.from({ length: 8 }, () => runChild(child, [box.cwd, box.agentDir, "go", file, "20000"])));
      const parsed = results.map((r) => {
        expect(r.status, r.stderr).toBe(0);
        return JSON.parse(r.stdout.trim().split("\n").at(-1) ?? "null") as { kind: string; code?: string; migrated?: boolean; path?: string };
      });
      for (const r of parsed) expect(r.kind === "opened" || r.code === "migration_busy", JSON.stringify(r)).toBe(true);
      const opened = parsed.filter((r) => r.kind === "opened");
      expect(opened.filter((r) => r.migrated).length).toBe(1);
      const dest = path.join(scope.directoryPath, path.basename(file));
      for (const r of opened) expect(r.path).toBe(dest);
      expect(visible(scope.directoryPath)).toEqual([path.basename(file, ".jsonl"), path.basename(file)].sort());
      expect(fs.readFileSync(dest)).toEqual(fs.readFileSync(file));
      expect(treeHashes(dest.slice(0, -6))).toEqual(treeHashes(file.slice(0, -6)));
      expect({ ...treeHashes(file), ...treeHashes(file.slice(0, -6)) }).toEqual(source);
    } finally {
      box.remove();
    }
  }, 120_000);
});

/**
 * One kill run in its own sandbox, the kill landing a random 0..`maxDelayMs` after the child
 * is ready; returns whether the child died before reporting. With `maxDelayMs` undefined
 * the child is not killed, and the result is how long it took to report (ms).
 */
async function killRun(maxDelayMs: number): Promise<boolean>;
async function killRun(maxDelayMs: undefined): Promise<number>;
async function killRun(maxDelayMs: number | undefined): Promise<boolean | number> {
  const box = makeSandbox();
  try {
    const scope = scopeOf(box.cwd, box.agentDir);
    const file = writeLegacySession(scope.sessionsRoot, box.cwd, { lines: 1500, artifacts: artifacts(12, 2048) });
    const source = { ...treeHashes(file), ...treeHashes(file.slice(0, -6)) };
    const proc = startChild(child, [box.cwd, box.agentDir, "ready", file, "0"]);
    const delayMs = Math.random() * (maxDelayMs ?? 0);
    let output = "";
    let readyAt = 0;
    let reportedAt = 0;
    await new Promise<void>((resolve) => {
      proc.stdout?.on("data", (chunk: Buffer) => {
        output += chunk.toString();
        if (readyAt === 0 && output.startsWith("ready\n")) {
          readyAt = performance.now();
          if (maxDelayMs !== undefined && !proc.killed) setTimeout(() => proc.kill("SIGKILL"), delayMs);
        }
        if (reportedAt === 0 && output.includes('"kind"')) reportedAt = performance.now();
      });
      proc.on("close", () => resolve());
    });
    if (maxDelayMs === undefined) {
      expect(output).toContain('"kind"');
      // Up to the report, not the exit: a kill after the report lands on no migration step.
      return reportedAt - readyAt;
    }
    // Whatever the kill left: the source is untouched and nothing partial is visible.
    expect({ ...treeHashes(file), ...treeHashes(file.slice(0, -6)) }).toEqual(source);
    const dest = path.join(scope.directoryPath, path.basename(file));
    const names = visible(scope.directoryPath).filter((n) => !n.startsWith(".gjc-migrate-"));
    expect(names.filter((n) => n.endsWith(".jsonl")).length).toBeLessThanOrEqual(1);
    if (fs.existsSync(dest)) expect(fs.readFileSync(dest)).toEqual(fs.readFileSync(file));
    if (fs.existsSync(dest.slice(0, -6))) expect(treeHashes(dest.slice(0, -6))).toEqual(treeHashes(file.slice(0, -6)));
    // A rerun completes with exactly one copy and removes the dead attempt's staging.
    // (A child that finished before the kill left a committed copy: the source is then hidden.)
    const listing = await listed(scope);
    const candidate = listing.candidates.find((c) => c.path === file || c.migratedFrom === file);
    if (candidate === undefined) throw new Error("neither the source nor its copy is listed");
    const rerun = await openCandidateForWrite(scope, candidate, { waitMs: 5000 });
    expect(rerun).toMatchObject({ kind: "opened", path: dest });
    expect(visible(scope.directoryPath)).toEqual([path.basename(file, ".jsonl"), path.basename(file)].sort());
    // One committed receipt, and no receipt a dead attempt had staged.
    expect(fs.readdirSync(path.join(scope.directoryPath, ".gjc-managed-session-internal", "receipts"))).toEqual([expect.stringMatching(/^[0-9a-f]+\.json$/)]);
    expect(fs.readFileSync(dest)).toEqual(fs.readFileSync(file));
    expect(treeHashes(dest.slice(0, -6))).toEqual(treeHashes(file.slice(0, -6)));
    expect({ ...treeHashes(file), ...treeHashes(file.slice(0, -6)) }).toEqual(source);
    return !output.includes('"kind"');
  } finally {
    box.remove();
  }
}

describe("SIGKILL during migration", () => {
  it("50 kills (up to 100) at random points: source intact, never two copies, never a partial visible file, a rerun completes", async () => {
    const runs = 50;
    const parallel = 5;
    // Kills spread over how long a whole migration takes here and now (five at once, as
    // below), so most land mid-way whatever the machine's speed or load. The median span, not
    // the longest: one run slowed by a load spike would push most kills past the end.
    const spans = await Promise.all(Array.from({ length: parallel }, () => killRun(undefined)));
    const maxDelayMs = [...spans].sort((a, b) => a - b)[Math.floor(parallel / 2)]!;
    let killedMidway = 0;
    let done = 0;
    // The parent sees "ready" late on a loaded machine, so some kills land after the end; more
    // runs (up to twice as many) make up for them, so the test always proves runs / 5 mid-way kills.
    while (done < runs || (killedMidway <= runs / 5 && done < 2 * runs)) {
      const outcomes = await Promise.all(Array.from({ length: parallel }, () => killRun(maxDelayMs)));
      killedMidway += outcomes.filter(Boolean).length;
      done += parallel;
    }
    console.log(`[migration crash] ${killedMidway}/${done} children killed before reporting a result (kills within ${maxDelayMs.toFixed(0)} ms)`);
    expect(killedMidway).toBeGreaterThan(runs / 5);
    // A hang guard, not a timing: up to 100 runs with a rerun each, on a loaded 2-core machine.
  }, 900_000);
});
