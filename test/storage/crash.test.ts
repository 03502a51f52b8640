/**
 * Crash safety with real processes and real SIGKILLs: a child appends records (flush after
 * each) and rewrites a snapshot atomically; the parent kills it at a random moment, 200
 * times, and after every kill checks what survived on disk.
 */
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { SessionStorage } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { bundleChild, runUntilRandomKill, type BundledChild } from "./child-bundle.js";
import { SNAPSHOT_LINES, logRecord, snapshotChunks } from "./crash-records.js";
import { openStorage } from "./children/open-storage.js";

const KILLS = 200;
const MAX_KILL_DELAY_MS = 30;

interface Slot {
  kind: "file" | "managed";
  storage: SessionStorage;
  log: string;
  snapshot: string;
  /** Highest record index the child ever acknowledged as flushed. */
  ackedIndex: number;
  /** Snapshot version the child last acknowledged as replaced. */
  ackedVersion: number;
  nextIndex: number;
  tornFragments: number;
  killsDuringRewrite: number;
}

/** What one killed run reported before it died. */
interface RunReport {
  lastAck: number | undefined;
  lastVersion: number | undefined;
  rewriteInFlight: boolean;
}

async function runUntilKilled(child: BundledChild, slot: Slot, root: string): Promise<RunReport> {
  const args = [slot.kind, root, slot.log, slot.snapshot, String(slot.nextIndex), String(slot.ackedVersion)];
  const report: RunReport = { lastAck: undefined, lastVersion: undefined, rewriteInFlight: false };
  await runUntilRandomKill(child, args, MAX_KILL_DELAY_MS, (line) => {
    if (line.startsWith("a ")) {
      report.lastAck = Number(line.slice(2));
      report.rewriteInFlight = report.lastAck % 3 === 0;
    } else if (line.startsWith("r ")) {
      report.lastVersion = Number(line.slice(2));
      report.rewriteInFlight = false;
    }
  });
  return report;
}

/**
 * Checks the log after a kill and records the index the next run continues from.
 * `onDiskBefore` is the last record index the file held when the run started.
 */
function checkLog(text: string, slot: Slot, onDiskBefore: number): void {
  const segments = text.split("\n");
  const indexes: number[] = [];
  for (const [position, segment] of segments.entries()) {
    const final = position === segments.length - 1;
    if (final && segment === "") break;
    let parsed: { i?: unknown } | undefined;
    try {
      parsed = JSON.parse(segment) as { i?: unknown };
    } catch {
      // Only a record cut short by a kill may be unreadable, and the writer of the next run
      // must have started a fresh line after it: it is a strict prefix of the record that
      // was due next.
      expect(logRecord(indexes.length).startsWith(segment) && segment.length < logRecord(indexes.length).length).toBe(true);
      slot.tornFragments++;
      continue;
    }
    expect(segment).toBe(logRecord(Number(parsed.i)));
    indexes.push(Number(parsed.i));
  }
  // No gaps, no duplicates, in order.
  expect(indexes).toEqual(indexes.map((_, k) => k));
  const last = indexes.length - 1;
  // Every flushed record is there; beyond what was known before this run (flushed, or
  // already on disk when it started), at most one unflushed record was added.
  expect(last).toBeGreaterThanOrEqual(slot.ackedIndex);
  expect(last).toBeLessThanOrEqual(Math.max(slot.ackedIndex, onDiskBefore) + 1);
  slot.nextIndex = indexes.length;
}

/** Checks that the snapshot is one whole version, the acknowledged one or the next. */
function checkSnapshot(text: string, slot: Slot): void {
  const version = Number((JSON.parse(text.slice(0, text.indexOf("\n"))) as { v: number }).v);
  expect([slot.ackedVersion, slot.ackedVersion + 1]).toContain(version);
  expect(text).toBe(snapshotChunks(version).join(""));
  slot.ackedVersion = version;
}

describe("crash safety (SIGKILL)", () => {
  let child: BundledChild;
  let temp: ReturnType<typeof makeTempDir>;

  beforeAll(async () => {
    child = await bundleChild("crash-writer");
    temp = makeTempDir("gjc-crash-");
  });
  afterAll(() => {
    child.remove();
    temp.remove();
  });

  it(
    `keeps every flushed record and whole snapshots across ${KILLS} kills, and frees the lock`,
    async () => {
      const kinds = ["file", "managed", "file", "managed"] as const;
      const slots: Slot[] = kinds.map((kind, n) => {
        const root = path.join(temp.path, `${kind}-${n}`);
        const storage = openStorage(kind, root);
        const snapshot = path.join(root, "snapshot.jsonl");
        storage.writeTextSync(snapshot, snapshotChunks(0).join(""));
        return {
          kind,
          storage,
          log: path.join(root, "log.jsonl"),
          snapshot,
          ackedIndex: -1,
          ackedVersion: 0,
          nextIndex: 0,
          tornFragments: 0,
          killsDuringRewrite: 0,
        };
      });
      // Four children at a time: most of a run is node starting up, which overlaps well.
      for (let round = 0; round < KILLS / slots.length; round++) {
        await Promise.all(
          slots.map(async (slot) => {
            const report = await runUntilKilled(child, slot, slot.storage.root);
            const text = await slot.storage.readText(slot.log);
            const onDiskBefore = slot.nextIndex - 1;
            if (report.lastAck !== undefined) slot.ackedIndex = Math.max(slot.ackedIndex, report.lastAck);
            if (report.lastVersion !== undefined) slot.ackedVersion = report.lastVersion;
            if (report.rewriteInFlight) slot.killsDuringRewrite++;
            checkLog(text, slot, onDiskBefore);
            checkSnapshot(await slot.storage.readText(slot.snapshot), slot);
            // The kernel released the dead writer's lock: a new writer gets in at once.
            const writer = await slot.storage.openWriter(slot.log);
            await writer.close();
          }),
        );
      }
      for (const slot of slots) {
        expect(slot.storage.listFilesSync(slot.storage.root)).toEqual(["log.jsonl", "snapshot.jsonl"]);
        console.info(
          `[crash] ${slot.kind}: ${KILLS / slots.length} kills, ${slot.ackedIndex + 1} records flushed, ` +
            `${slot.killsDuringRewrite} kills during a ${SNAPSHOT_LINES}-line rewrite, ${slot.tornFragments} torn fragments`,
        );
      }
      // Progress was made, and kills landed during rewrites too, not only between them.
      for (const kind of ["file", "managed"]) {
        const mine = slots.filter((slot) => slot.kind === kind);
        expect(mine.reduce((sum, slot) => sum + slot.ackedIndex + 1, 0)).toBeGreaterThan(KILLS / 2);
        expect(mine.reduce((sum, slot) => sum + slot.killsDuringRewrite, 0)).toBeGreaterThan(0);
      }
    },
    // About 40 s of CPU in all (200 node start-ups dominate): ~20-30 s on two free cores,
    // far longer when other work starves the machine.
    300_000,
  );
});
