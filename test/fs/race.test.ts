// Symlink-swap race: a helper process exchanges a store directory with an outside link (and
// with an owned-but-open directory) via renameat2(RENAME_EXCHANGE) as fast as it can while
// this process opens, reads and creates through the store. Every success must be an allowed
// inode, every failure an allowed code, and the outside secret is never opened or written.
// Each race goes on until the attacker made its swaps and both a success and the refusal under
// test were seen (test/helpers/swap-attack.ts), however loaded the machine.
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { SecureDir, SecureFsError } from "../../src/index.js";
import { buildTools, type Tools } from "../helpers/processes.js";
import { RACE_TIMEOUT_MS, raceUntilProven } from "../helpers/swap-attack.js";
import { makeTempDir } from "../helpers/temp.js";

const RACE_MS = 2_000;
// Exchanges each race must see the attacker make.
const MIN_SWAPS = 1_000;
const SECRET = "outside secret";

let tools: Tools;
let tmp: ReturnType<typeof makeTempDir>;
let root: SecureDir;
let outside: string;

beforeAll(() => {
  tools = buildTools();
});
beforeEach(() => {
  tmp = makeTempDir();
  root = SecureDir.openRoot(path.join(tmp.path, "store"), { create: true });
  const work = root.openDir("work", { create: true });
  work.writeFileAtomic("f", "inside");
  work.close();
  outside = path.join(tmp.path, "outside");
  fs.mkdirSync(outside, { mode: 0o700 });
  fs.writeFileSync(path.join(outside, "f"), SECRET, { mode: 0o600 });
});
afterEach(() => {
  root.close();
  tmp.remove();
});

interface Tally {
  ok: number;
  errors: Map<string, number>;
}

/** Races `work` against `partner` until a success and `expected` (a refusal code) were both seen. */
async function race(partner: string, allowed: ReadonlySet<string>, expected: string): Promise<{ tally: Tally; swaps: number }> {
  const workIno = root.stat("work").ino;
  const insideFileIno = fs.statSync(path.join(root.path, "work", "f")).ino.toString();
  const tally: Tally = { ok: 0, errors: new Map() };
  const created = new Set<string>();
  const missing = (): string | undefined => (tally.ok === 0 ? "an open that succeeded" : tally.errors.has(expected) ? undefined : `a refusal with ${expected}`);
  const { swaps } = await raceUntilProven({ attacker: [tools.swapRace, root.path, "work", partner], minMs: RACE_MS, minSwaps: MIN_SWAPS, missing }, (step) => {
    const i = step + 1;
    try {
      const dir = root.openDir("work", { create: i % 2 === 0 });
      try {
        expect(dir.stat().ino).toBe(workIno);
        expect(dir.stat("f").type).not.toBe("symlink");
        const file = dir.openFile("f");
        const content = file.readAll({ maxBytes: 64 }).toString();
        expect(content).not.toBe(SECRET);
        expect(file.stat().ino).toBe(insideFileIno);
        file.close();
        if (i % 4 === 0) {
          const name = `c${i}`;
          dir.openFile(name, { write: true, create: "exclusive" }).close();
          created.add(name);
        }
        expect(dir.verify().accessAcl).toBe("absent");
      } finally {
        dir.close();
      }
      tally.ok += 1;
    } catch (error) {
      if (!(error instanceof SecureFsError)) throw error;
      expect(allowed.has(error.code), `unexpected ${error.code}`).toBe(true);
      tally.errors.set(error.code, (tally.errors.get(error.code) ?? 0) + 1);
    }
  });
  // Anything created landed inside the store directory, never in the partner.
  const inWork = fs.readdirSync(path.join(root.path, fs.statSync(path.join(root.path, "work")).ino.toString() === workIno ? "work" : partner));
  for (const name of created) expect(inWork).toContain(name);
  return { tally, swaps };
}

function report(label: string, tally: Tally, swaps: number): void {
  const total = tally.ok + [...tally.errors.values()].reduce((a, b) => a + b, 0);
  const parts = [...tally.errors].map(([code, n]) => `${code} ${((100 * n) / total).toFixed(1)}%`);
  console.log(`[race ${label}] ${total} attempts, ${swaps} swaps: ok ${((100 * tally.ok) / total).toFixed(1)}%, ${parts.join(", ")}`);
}

describe("symlink-swap race (RENAME_EXCHANGE)", () => {
  it(
    "store dir <-> symlink to an outside dir: never opens or writes the outside",
    async () => {
      fs.symlinkSync(outside, path.join(root.path, "alt"));
      const { tally, swaps } = await race("alt", new Set(["symlink_refused", "not_directory"]), "symlink_refused");
      report("symlink", tally, swaps);
      expect(swaps).toBeGreaterThanOrEqual(MIN_SWAPS);
      expect(tally.ok).toBeGreaterThan(0);
      expect(tally.errors.size).toBeGreaterThan(0);
      expect(fs.readdirSync(outside)).toEqual(["f"]);
      expect(fs.readFileSync(path.join(outside, "f"), "utf8")).toBe(SECRET);
    },
    RACE_TIMEOUT_MS,
  );

  it(
    "store dir <-> a regular file: refused as not_directory, never opened as the store",
    async () => {
      fs.writeFileSync(path.join(root.path, "plain"), SECRET, { mode: 0o600 });
      const { tally, swaps } = await race("plain", new Set(["not_directory"]), "not_directory");
      report("regular file", tally, swaps);
      expect(swaps).toBeGreaterThanOrEqual(MIN_SWAPS);
      expect(tally.ok).toBeGreaterThan(0);
      expect(tally.errors.get("not_directory") ?? 0).toBeGreaterThan(0);
    },
    RACE_TIMEOUT_MS,
  );

  it(
    "store dir <-> an owned 0755 directory holding a decoy: refused by mode, never read",
    async () => {
      const wide = path.join(root.path, "wide");
      fs.mkdirSync(wide);
      fs.chmodSync(wide, 0o755);
      fs.writeFileSync(path.join(wide, "f"), SECRET, { mode: 0o600 });
      const { tally, swaps } = await race("wide", new Set(["mode_mismatch"]), "mode_mismatch");
      report("0755 dir", tally, swaps);
      expect(swaps).toBeGreaterThanOrEqual(MIN_SWAPS);
      expect(tally.ok).toBeGreaterThan(0);
      expect(tally.errors.get("mode_mismatch") ?? 0).toBeGreaterThan(0);
    },
    RACE_TIMEOUT_MS,
  );
});
