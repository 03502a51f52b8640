/**
 * Swap races against migration (a helper exchanges two names with renameat2 RENAME_EXCHANGE
 * in a loop): the legacy directory swapped for a link to an outside tree while sessions are
 * listed and migrated, and a killed migration's staging subdirectory swapped for a link to an
 * outside tree while the next attempt removes that staging. Goal: 0 escapes (the outside tree
 * is never read into a copy or a listing, never changed or deleted), every refusal typed.
 * GJC_RACE_MS sets the least length of a race (default 2 s); a race goes on until its attacker
 * made its minimum of swaps and the outcomes asserted on were seen (test/helpers/swap-attack.ts).
 */
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { beforeAll, describe, expect, it } from "vitest";

import { listSessionCandidates, MIGRATION_ERROR_CODES, openCandidateForWrite, resolveManagedScope, type SessionCandidate } from "../../src/index.js";
import { operationId } from "../../src/migration/receipts.js";
import { buildTools, type Tools } from "../helpers/processes.js";
import { RACE_TIMEOUT_MS, raceUntilProven, startAttacker } from "../helpers/swap-attack.js";
import { treeState, useSandboxes, type Sandbox } from "../scope/helpers.js";
import { legacyName, listed, scopeOf, treeHashes, writeLegacySession } from "./fixtures.js";

const RACE_MS = Number(process.env.GJC_RACE_MS ?? 2_000);
const MARKER = "OUTSIDE-MARKER";
// Exchanges the migration race must see its attacker make.
const MIN_SWAPS = 1_000;
// Exchanges each staging race's attacker makes before the cleanup it races starts.
const SWAPS_BEFORE_CLEANUP = 20;
const sandbox = useSandboxes();
let tools: Tools;

beforeAll(() => {
  tools = buildTools();
});

/** No file below `root` holds the outside tree's marker (links are not followed). */
function expectNoMarker(root: string): void {
  const walk = (p: string) => {
    const st = fs.lstatSync(p);
    if (st.isDirectory()) for (const name of fs.readdirSync(p)) walk(path.join(p, name));
    else if (st.isFile()) expect(fs.readFileSync(p).includes(MARKER), p).toBe(false);
  };
  walk(root);
}

/** An outside tree mirroring `legacyDir`'s names, every file carrying the marker. */
function decoyOf(box: Sandbox, legacyDir: string): string {
  const decoy = path.join(box.root, "outside");
  fs.cpSync(legacyDir, decoy, { recursive: true });
  for (const [rel, hash] of Object.entries(treeHashes(decoy))) {
    if (hash !== "dir") fs.appendFileSync(path.join(decoy, rel), `${MARKER}\n`);
  }
  return decoy;
}

function tally(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

describe("swap races against migration", () => {
  it(
    "legacy directory <-> link to an outside tree while listing and migrating: 0 escapes, every refusal typed",
    async () => {
      const box = sandbox();
      const scope = scopeOf(box.cwd, box.agentDir);
      const files: string[] = [];
      for (let i = 0; i < 60; i++)
        files.push(writeLegacySession(scope.sessionsRoot, box.cwd, { lines: 5, artifacts: { "a.log": `artifact ${i}`, "sub/b.log": "b" } }));
      const legacyDir = path.dirname(files[0] as string);
      const originals = new Map(files.map((f) => [path.basename(f), fs.readFileSync(f)]));
      const candidates = (await listed(scope)).candidates;
      expect(candidates).toHaveLength(60);
      const decoy = decoyOf(box, legacyDir);
      fs.symlinkSync(decoy, path.join(scope.sessionsRoot, "alt"));
      const prepared = resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode: "write" });
      expect(prepared.kind).toBe("resolved");
      const before = treeState(decoy);

      const counts = new Map<string, number>();
      const pending: SessionCandidate[] = [...candidates];
      const attacker = [tools.swapRace, scope.sessionsRoot, legacyName(box.cwd), "alt"];
      const missing = (): string | undefined => (counts.has("migrated") ? undefined : "a migrated session");
      const { swaps } = await raceUntilProven({ attacker, minMs: RACE_MS, minSwaps: MIN_SWAPS, missing }, async () => {
        const listing = await listSessionCandidates(scope);
        if (listing.kind === "listed") {
          for (const c of listing.candidates) {
            if (c.provenance === "legacy") expect(c.identity.sha256).toBe(candidates.find((k) => k.path === c.path)?.identity.sha256);
          }
          tally(counts, "listed");
        } else {
          expect(MIGRATION_ERROR_CODES).toContain(listing.code);
          tally(counts, `list:${listing.code}`);
        }
        const candidate = pending.shift();
        if (candidate === undefined) return;
        const result = await openCandidateForWrite(scope, candidate);
        if (result.kind === "opened") {
          expect(fs.readFileSync(result.path)).toEqual(originals.get(path.basename(result.path)));
          tally(counts, result.migrated ? "migrated" : "opened");
        } else {
          expect(MIGRATION_ERROR_CODES).toContain(result.code);
          tally(counts, `${result.code}/${result.cause}`);
          pending.push(candidate);
        }
      });
      console.log(`[race migrate] ${swaps} swaps: ${JSON.stringify(Object.fromEntries(counts))}`);
      expect(swaps).toBeGreaterThanOrEqual(MIN_SWAPS);
      expect(counts.get("migrated") ?? 0).toBeGreaterThan(0);
      expect(treeState(decoy)).toEqual(before);
      expectNoMarker(scope.directoryPath);
    },
    RACE_TIMEOUT_MS,
  );

  it(
    "a killed migration's staging subdirectory <-> link to an outside tree while it is cleaned up: 0 escapes, every failure typed",
    async () => {
      const box = sandbox();
      const scope = scopeOf(box.cwd, box.agentDir);
      // One killed attempt's staging per candidate, each cleaned up while a swap loop runs on it.
      const each = 150;
      const count = Math.max(8, Math.min(200, Math.floor(RACE_MS / each)));
      for (let i = 0; i < count; i++) writeLegacySession(scope.sessionsRoot, box.cwd, { artifacts: { "a.log": `artifact ${i}` } });
      const candidates = (await listed(scope)).candidates;
      const prepared = resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode: "write" });
      if (prepared.kind !== "resolved") throw new Error(prepared.code);
      const scopeDir = prepared.scope.directoryPath;
      const outside = path.join(box.root, "outside");
      fs.mkdirSync(path.join(outside, "deep"), { recursive: true, mode: 0o700 });
      fs.writeFileSync(path.join(outside, "f"), MARKER, { mode: 0o600 });
      fs.writeFileSync(path.join(outside, "deep", "g"), MARKER, { mode: 0o600 });
      const before = treeState(outside);
      const counts = new Map<string, number>();
      let swaps = 0;
      for (const candidate of candidates) {
        // What an attempt killed while copying artifacts leaves: its staging tree, built under
        // another name and renamed into place (a swap cannot lead the planting outside).
        const remnant = `.gjc-migrate-${operationId(candidate.identity).slice(0, 16)}-${randomUUID()}.artifacts`;
        const build = path.join(scopeDir, `build-${randomUUID()}`);
        fs.mkdirSync(path.join(build, "d", "sub"), { recursive: true, mode: 0o700 });
        for (const name of ["1.log", "2.log", "sub/3.log"]) fs.writeFileSync(path.join(build, "d", name), "staged", { mode: 0o600 });
        fs.symlinkSync(outside, path.join(build, "alt"));
        fs.renameSync(build, path.join(scopeDir, remnant));
        // The cleanup starts only once the attacker is swapping (on a loaded machine it may get no CPU time at first).
        const attacker = await startAttacker([tools.swapRace, scopeDir, `${remnant}/d`, `${remnant}/alt`], ["keep-going"], SWAPS_BEFORE_CLEANUP);
        await attacker.reaching;
        const result = await openCandidateForWrite(scope, candidate);
        if (result.kind === "error") expect(MIGRATION_ERROR_CODES).toContain(result.code);
        tally(counts, result.kind === "opened" ? "opened" : `${result.code}/${result.cause}`);
        swaps += await attacker.stop();
      }
      console.log(`[race staging cleanup] ${swaps} swaps: ${JSON.stringify(Object.fromEntries(counts))}`);
      expect(swaps).toBeGreaterThanOrEqual(SWAPS_BEFORE_CLEANUP * candidates.length);
      expect(counts.get("opened") ?? 0).toBeGreaterThan(0);
      expect(treeState(outside)).toEqual(before);
      expectNoMarker(scopeDir);
    },
    RACE_TIMEOUT_MS,
  );
});
