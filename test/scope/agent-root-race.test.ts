// Swap races against scope creation and the managed listings: a helper process exchanges a
// managed directory with a link to an outside tree (renameat2 RENAME_EXCHANGE) as fast as it
// can while this process creates scopes and writes through the managed target, or lists.
// Goal: 0 escapes (the outside tree is never written, nothing from it is listed), and every
// refusal typed. GJC_RACE_MS sets the least duration per scenario (default 2 s); each goes on
// until the attacker made its swaps and the outcomes asserted on were seen.
import fs from "node:fs";
import path from "node:path";

import { beforeAll, describe, expect, it } from "vitest";

import { ScopeError, StorageError } from "../../src/index.js";
import { listAllManaged, listManagedScope } from "../../src/manager/index.js";
import { managedSessionTarget } from "../../src/scope/index.js";
import { buildTools, hasCommand, isRoot, skipBecause, type Tools } from "../helpers/processes.js";
import { RACE_TIMEOUT_MS, raceUntilProven } from "../helpers/swap-attack.js";
import { treeState, useSandboxes, type Sandbox } from "./helpers.js";

const RACE_MS = Number(process.env.GJC_RACE_MS ?? 2_000);
const sandbox = useSandboxes();
const FOREIGN = 65534;
let tools: Tools;
beforeAll(() => {
  tools = buildTools();
});

function sessionText(cwd: string, id: string): string {
  return `${JSON.stringify({ type: "session", version: 3, id, timestamp: "2026-01-01T00:00:00.000Z", cwd })}\n`;
}

/** An owner-only outside tree holding a session file whose id marks anything read from it. */
function outsideTree(box: Sandbox): { dir: string; state(): Record<string, string> } {
  const dir = path.join(box.root, "outside");
  fs.mkdirSync(dir, { mode: 0o700 });
  fs.writeFileSync(path.join(dir, "marker.jsonl"), sessionText(box.cwd, "outside-marker"), { mode: 0o600 });
  return { dir, state: () => treeState(dir) };
}

/**
 * Runs swap_race on `a` and `b` in `dir` while `step` runs in a loop, until the race is proven (`missing`, given the
 * tally so far, says what it still lacks); tallies the outcomes.
 */
async function race(
  dir: string,
  a: string,
  b: string,
  step: (i: number) => Promise<string> | string,
  missing: (tally: ReadonlyMap<string, number>) => string | undefined,
  runAs: readonly string[] = [],
): Promise<Map<string, number>> {
  const tally = new Map<string, number>();
  await raceUntilProven({ attacker: [...runAs, tools.swapRace, dir, a, b], minMs: RACE_MS, missing: () => missing(tally) }, async (i) => {
    const outcome = await step(i);
    tally.set(outcome, (tally.get(outcome) ?? 0) + 1);
  });
  return tally;
}

/** The first of `outcomes` the tally has not seen, as `missing` reports it. */
function unseen(tally: ReadonlyMap<string, number>, outcomes: readonly string[]): string | undefined {
  const absent = outcomes.find((outcome) => !tally.has(outcome));
  return absent === undefined ? undefined : `the outcome ${absent}`;
}

function typed(error: unknown): string {
  if (error instanceof ScopeError) return `scope:${error.code}/${error.detail}`;
  if (error instanceof StorageError) return `storage:${error.code}`;
  throw error;
}

describe("an agent directory inside another user's directory", () => {
  it(
    "that user swapping the agent dir for a link gets nothing created, written or listed (root only)",
    async (ctx) => {
      if (!isRoot()) skipBecause(ctx, "chown to another uid needs root");
      const box = sandbox();
      fs.chmodSync(box.root, 0o711); // the attacker must reach their own directory
      const theirs = path.join(box.root, "theirs");
      fs.mkdirSync(theirs, { mode: 0o755 });
      const agentDir = path.join(theirs, "agent");
      fs.mkdirSync(agentDir, { mode: 0o700 });
      const outside = outsideTree(box);
      const before = outside.state();
      fs.symlinkSync(outside.dir, path.join(theirs, "swap"));
      fs.chownSync(theirs, FOREIGN, FOREIGN);
      const EXPECTED = ["scope:sessions_root_unavailable/insecure_ancestor", "skipped:unsafe_entry"];
      const tally = await race(
        theirs,
        "agent",
        "swap",
        async (i) => {
          try {
            if (i % 3 === 0) {
              const target = managedSessionTarget(box.cwd, agentDir);
              target.storage.close();
              target.agentRoot.close();
              return "created";
            }
            const listing = i % 3 === 1 ? await listAllManaged({ agentDir }) : await listManagedScope(box.cwd, agentDir);
            if (listing.sessions.length > 0) return "listed";
            return `skipped:${listing.skipped.map((s) => s.code).join(",")}`;
          } catch (error) {
            return typed(error);
          }
        },
        (seen) => unseen(seen, EXPECTED),
        hasCommand("setpriv") ? ["setpriv", `--reuid=${FOREIGN}`, `--regid=${FOREIGN}`, "--clear-groups"] : [],
      );
      expect([...tally.keys()].sort()).toEqual(EXPECTED);
      expect(outside.state()).toEqual(before);
    },
    RACE_TIMEOUT_MS,
  );
});

describe("swap races below the agent directory", () => {
  it(
    "scope creation and writes through the managed target never land outside (sessions/ swapped)",
    async () => {
      const box = sandbox();
      managedSessionTarget(box.cwd, box.agentDir).storage.close();
      const outside = outsideTree(box);
      const before = outside.state();
      fs.symlinkSync(outside.dir, path.join(box.agentDir, "l"));
      const written: string[] = [];
      const tally = await race(
        box.agentDir,
        "sessions",
        "l",
        (i) => {
          let target;
          try {
            target = managedSessionTarget(box.cwd, box.agentDir);
          } catch (error) {
            return typed(error);
          }
          try {
            const name = `probe-${i}.jsonl`;
            target.storage.writeTextSync(path.join(target.sessionDir, name), "x\n");
            written.push(name);
            return "written";
          } catch (error) {
            return typed(error);
          } finally {
            target.storage.close();
            target.agentRoot.close();
          }
        },
        (seen) => (!seen.has("written") ? "a write through the managed target" : seen.size === 1 ? "a creation the swap refused" : undefined),
      );
      expect(outside.state()).toEqual(before);
      // A link seen by the open may be a directory again when the refusal is explained.
      const allowed = /^(written|scope:sessions_root_unavailable\/(reparse_point|not_directory)|scope:binding_invalid\/.+)$/;
      expect([...tally.keys()].filter((k) => !allowed.test(k))).toEqual([]);
      expect(tally.get("written") ?? 0).toBeGreaterThan(0);
      // Every probe is in the one real sessions directory, wherever the race left its name.
      const real = ["sessions", "l"].map((n) => path.join(box.agentDir, n)).find((p) => !fs.lstatSync(p).isSymbolicLink()) as string;
      const scopeDir = fs.readdirSync(real).find((n) => n.startsWith("v2-")) as string;
      const present = new Set(fs.readdirSync(path.join(real, scopeDir)));
      expect(written.filter((n) => !present.has(n))).toEqual([]);
    },
    RACE_TIMEOUT_MS,
  );

  it(
    "listings never show or index anything from the outside tree (the scope directory swapped)",
    async () => {
      const box = sandbox();
      const target = managedSessionTarget(box.cwd, box.agentDir);
      const scopeName = path.basename(target.sessionDir);
      const sessionsRoot = path.dirname(target.sessionDir);
      fs.writeFileSync(path.join(target.sessionDir, "inside.jsonl"), sessionText(box.cwd, "inside"), { mode: 0o600 });
      target.storage.close();
      target.agentRoot.close();
      const outside = outsideTree(box);
      const before = outside.state();
      fs.symlinkSync(outside.dir, path.join(sessionsRoot, "v2-link"));
      const tally = await race(
        sessionsRoot,
        scopeName,
        "v2-link",
        async (i) => {
          try {
            const listing = i % 2 === 0 ? await listAllManaged({ agentDir: box.agentDir }) : await listManagedScope(box.cwd, box.agentDir);
            if (listing.sessions.some((s) => s.id === "outside-marker" || s.path.startsWith(outside.dir))) return "escape";
            const codes = [...new Set(listing.skipped.map((s) => s.code))].sort().join(",");
            return `listed:${listing.sessions.map((s) => s.id).join(",")}:${codes}`;
          } catch (error) {
            return typed(error);
          }
        },
        (seen) => {
          const keys = [...seen.keys()];
          if (!keys.some((k) => k.startsWith("listed:inside"))) return "a listing of the inside session";
          return keys.some((k) => k !== "listed:inside:") ? undefined : "a listing the swap changed";
        },
      );
      expect(tally.get("escape") ?? 0).toBe(0);
      expect(outside.state()).toEqual(before);
      const allowed = /^(listed:(inside)?:(symlink_refused|not_regular_file|not_found|unsafe_entry|,)*|scope:binding_invalid\/.+)$/;
      expect([...tally.keys()].filter((k) => !allowed.test(k))).toEqual([]);
      expect([...tally.keys()].some((k) => k.startsWith("listed:inside"))).toBe(true);
    },
    RACE_TIMEOUT_MS,
  );
});
