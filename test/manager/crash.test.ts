/**
 * Crash safety of the manager with real processes and real SIGKILLs, 200 kills in total: a
 * child appends entries (flush after each) or rewrites the whole session atomically; the
 * parent kills it at a random moment and checks what is on disk after every kill.
 */
import fs from "node:fs";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { SessionManager } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { runUntilRandomKill, type BundledChild } from "../storage/child-bundle.js";
import { bundleManagerChild } from "./child.js";

// Four files killed in parallel: 4 x (38 + 12) = 200 kills.
const SLOTS = 4;
const APPEND_KILLS = 38;
const REWRITE_KILLS = 12;
const MAX_KILL_DELAY_MS = 25;

let child: BundledChild;
let tmp: { path: string; remove(): void };

beforeAll(async () => {
  child = await bundleManagerChild("crash-manager");
  tmp = makeTempDir("gjc-manager-crash-");
});
afterAll(() => {
  child?.remove();
  tmp?.remove();
});

/** Runs the child until a random kill; returns the last acknowledged number (or undefined). */
async function runUntilKilled(args: string[]): Promise<number | undefined> {
  let last: number | undefined;
  await runUntilRandomKill(child, args, MAX_KILL_DELAY_MS, (line) => (last = Number(line)));
  return last;
}

const quiet = { error() {} };

async function customNumbers(dir: string, file: string, field: "n" | "gen") {
  const manager = await SessionManager.open(file, dir, undefined, undefined, undefined, { terminalId: null, readOnly: true, logger: quiet });
  const values = manager
    .getEntries()
    .filter((entry) => entry.type === "message" && (entry as { message?: { role?: string } }).message?.role === "user")
    .map((entry) => (entry as unknown as { message: Record<string, number> }).message[field]);
  return { values, report: manager.getLoadReport() };
}

/**
 * One slot: a session file that goes through `appendKills` killed append runs, then
 * `rewriteKills` killed rewrite runs, checking the file after every kill.
 */
async function slot(dir: string, file: string, appendKills: number, rewriteKills: number): Promise<void> {
  let acked = -1;
  let next = 0;
  for (let run = 0; run < appendKills; run++) {
    const last = await runUntilKilled(["append", dir, file, String(next)]);
    if (last !== undefined) acked = last;
    const { values, report } = await customNumbers(dir, file, "n");
    // Contiguous from 0: nothing in the middle was lost or duplicated.
    expect(values).toEqual(values.map((_, i) => i));
    // Every acknowledged entry is there; beyond the last one this run acknowledged (or the
    // last one it found), at most the single entry the kill interrupted.
    expect(values.length - 1).toBeGreaterThanOrEqual(acked);
    expect(values.length - 1).toBeLessThanOrEqual((last ?? next - 1) + 1);
    // A torn tail is the only damage a kill may leave.
    expect(report.invalidLines).toBeLessThanOrEqual(1);
    next = values.length;
  }
  const count = next;
  let generation = -1;
  let nextGen = 0;
  for (let run = 0; run < rewriteKills; run++) {
    const last = await runUntilKilled(["rewrite", dir, file, String(nextGen)]);
    if (last !== undefined) generation = last;
    const { values, report } = await customNumbers(dir, file, "gen");
    expect(values).toHaveLength(count);
    expect(report.invalidLines).toBeLessThanOrEqual(1);
    // Either the old or the new version, never a mix.
    expect(new Set(values).size).toBe(1);
    const seen = values[0];
    // The last generation this run acknowledged (or the one it started from), or the one
    // after it that the kill interrupted after its rename.
    const base = last ?? nextGen - 1;
    expect([base, base + 1]).toContain(seen ?? -1);
    expect(seen ?? -1).toBeGreaterThanOrEqual(generation);
    nextGen = (seen ?? -1) + 1;
  }
}

describe("SIGKILL during appends and rewrites", () => {
  it(`keeps every flushed entry and only whole versions across ${SLOTS * (APPEND_KILLS + REWRITE_KILLS)} kills`, async () => {
    const dir = path.join(tmp.path, "sessions");
    const files = Array.from({ length: SLOTS }, (_, i) => path.join(dir, `crash-${i}.jsonl`));
    await Promise.all(files.map((file) => slot(dir, file, APPEND_KILLS, REWRITE_KILLS)));
    const names = fs.readdirSync(dir).filter((name) => !name.startsWith("."));
    // Temporary files of interrupted rewrites never take a session's name or suffix.
    expect(names.filter((name) => name.endsWith(".jsonl")).sort()).toEqual(files.map((f) => path.basename(f)).sort());
  }, 600_000);
});
