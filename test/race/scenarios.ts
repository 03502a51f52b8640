/**
 * The race scenarios: for each victim operation, what both trees are seeded with, which
 * entries an attacker inside the agent dir swaps for links to the outside tree, and the
 * operation itself. The outside tree mirrors the victim's layout (same scope names, legacy
 * names and staging names) with decoy content, so a path resolved again after a swap finds
 * something to read, write or delete there, and the observer sees it. From an attacker-owned
 * parent the attack is always the same: the agent dir itself swapped for a link to the
 * outside tree.
 */
import fs from "node:fs";
import path from "node:path";

import { arm, OUTSIDE_ID_PREFIX, OUTSIDE_MARKER, PAUSE_US, seedCount, type RaceWorld, type Scenario, type SwapSpec } from "./harness.js";
import * as ops from "./ops.js";

/** A scenario before it is bound to a world. */
export interface ScenarioDef {
  readonly name: string;
  /** Seeds the victim's agent dir and the outside tree, arms the world and returns the scenario. */
  build(world: RaceWorld, attempts: number): Promise<Scenario>;
}

/** Sessions per workspace in the migration scenarios (each attempt migrates one). */
const PER_WORKSPACE = 25;

/**
 * A session and history entries on both sides; every outside one carries
 * {@link OUTSIDE_MARKER}, and the outside scope also holds a twin of the victim's session
 * file under the same name. Returns the workspace and the victim's session file.
 */
async function seedCommon(world: RaceWorld): Promise<{ cwd: string; sessionFile: string }> {
  const cwd = world.cwd("listed");
  const created = await ops.createAndWrite(world.agentDir, cwd, "inside prompt");
  await ops.createAndWrite(world.outside, cwd, `${OUTSIDE_MARKER} prompt`);
  await ops.historyAdd(world.agentDir, "racemark inside prompt");
  await ops.historyAdd(world.outside, `racemark ${OUTSIDE_MARKER} prompt`);
  const sessionFile = created.kind === "ok" ? (JSON.parse(created.visible) as string) : "";
  const twin = path.join(world.outside, path.relative(world.agentDir, sessionFile));
  fs.writeFileSync(twin, fs.readFileSync(sessionFile, "utf8").replaceAll("inside prompt", `${OUTSIDE_MARKER} prompt`), { mode: 0o600 });
  return { cwd, sessionFile };
}

/** A decoy session id for the outside twin of legacy session `n`. */
function decoyId(n: number): string {
  return `${OUTSIDE_ID_PREFIX}-0000-4000-8000-${String(n).padStart(12, "0")}`;
}

/** Legacy session `n` of workspace group `n / PER_WORKSPACE` in the victim, and its outside twin under the same name. */
function seedLegacy(world: RaceWorld, prefix: string, n: number): { cwd: string; file: string } {
  const cwd = world.cwd(`${prefix}${Math.floor(n / PER_WORKSPACE)}`);
  const file = ops.writeLegacy(world.agentDir, cwd);
  ops.writeLegacy(world.outside, cwd, { id: decoyId(n), fileName: path.basename(file), text: OUTSIDE_MARKER });
  return { cwd, file };
}

function bound(world: RaceWorld, label: string, inside: readonly string[], rest: Omit<Scenario, "label" | "world" | "swap">, pauseUs = PAUSE_US): Scenario {
  const swap = { ...arm(world, world.mode === "inside" ? inside : []), pauseUs };
  return { label: `${world.mode}: ${label}`, world, ...(world.mode === "parent" || rest.swapFor === undefined ? { swap } : {}), ...rest };
}

/** Every scenario of issue 16 item 4. */
export const SCENARIOS: readonly ScenarioDef[] = [
  {
    name: "session create (scope creation, blob, breadcrumb) and first write",
    async build(world) {
      await seedCommon(world);
      return bound(world, "create", ["sessions", "blobs", "terminal-sessions"], {
        op: (i) => ops.createAndWrite(world.agentDir, world.cwd(`created-${i}`)),
      });
    },
  },
  {
    name: "listing (list of one scope, listAll)",
    async build(world) {
      const { cwd } = await seedCommon(world);
      return bound(world, "listing", ["sessions"], {
        op: (i) => (i % 2 === 0 ? ops.list(world.agentDir, cwd) : ops.listAll(world.agentDir)),
      });
    },
  },
  {
    name: "open + append of an existing session",
    async build(world) {
      const { sessionFile } = await seedCommon(world);
      return bound(world, "open + append", ["sessions", "blobs"], {
        op: () => ops.openAndAppend(world.agentDir, sessionFile),
      });
    },
  },
  {
    name: "history add and search",
    async build(world) {
      await seedCommon(world);
      return bound(world, "history", ["history.db", "history.db-wal", "history.db-shm"], {
        op: (i) => (i % 2 === 0 ? ops.historyAdd(world.agentDir, `racemark prompt ${i}`) : ops.historySearch(world.agentDir, "racemark")),
      });
    },
  },
  {
    name: "migration of a legacy session",
    async build(world, attempts) {
      await seedCommon(world);
      const seeded = Array.from({ length: seedCount(attempts) }, (_, n) => seedLegacy(world, "legacy-", n));
      return bound(world, "migration", ["sessions"], {
        attempts: seeded.length,
        op: (i) => {
          const s = seeded[i];
          if (s === undefined) throw new Error(`no legacy session seeded for attempt ${i}`);
          return ops.migrate(world.agentDir, s.cwd);
        },
      });
    },
  },
  {
    name: "cleanup of a killed migration's staging",
    async build(world, attempts) {
      await seedCommon(world);
      const decoy = path.join(world.outside, "staging-decoy");
      fs.mkdirSync(path.join(decoy, "0"), { recursive: true, mode: 0o700 });
      fs.writeFileSync(path.join(decoy, "0", "a.bash.log"), OUTSIDE_MARKER, { mode: 0o600 });
      fs.writeFileSync(path.join(decoy, "c.bash.log"), OUTSIDE_MARKER, { mode: 0o600 });
      const legacy = Array.from({ length: seedCount(attempts) }, (_, n) => seedLegacy(world, "staged-", n));
      const seeded: Array<{ cwd: string; file: string; planted: ops.PlantedStaging; link: string }> = [];
      for (let g = 0; g < legacy.length; g += PER_WORKSPACE) {
        const group = legacy.slice(g, g + PER_WORKSPACE);
        const planted = await ops.plantStaging(
          world.agentDir,
          group[0]!.cwd,
          group.map((l) => l.file),
        );
        for (const [k, p] of planted.entries()) {
          mirrorStaging(world, p);
          // The inside attacker's link for this attempt's staging directory.
          const link = `staging-${g + k}.alt`;
          fs.symlinkSync(decoy, path.join(p.scopeDir, link));
          seeded.push({ ...group[k]!, planted: p, link });
        }
      }
      const swapFor = (i: number): SwapSpec => {
        const s = seeded[i];
        if (s === undefined) throw new Error(`no staging seeded for attempt ${i}`);
        return { dir: s.planted.scopeDir, pairs: [[path.basename(s.planted.artifacts), s.link]], asAttacker: false, pauseUs: PAUSE_US };
      };
      return bound(world, "staging cleanup", [], {
        ...(world.mode === "inside" ? { swapFor } : {}),
        attempts: seeded.length,
        op: (i) => {
          const s = seeded[i];
          if (s === undefined) throw new Error(`no staging seeded for attempt ${i}`);
          return ops.cleanupStaging(world.agentDir, s.cwd, s.file);
        },
      });
    },
  },
  {
    name: "audit",
    async build(world) {
      await seedCommon(world);
      return bound(world, "audit", ["sessions", "blobs", "terminal-sessions", "history.db"], {
        op: () => ops.audit(world.agentDir),
      });
    },
  },
];

/** The outside twin of a planted staging: the same names below the outside tree, decoy content. */
function mirrorStaging(world: RaceWorld, planted: ops.PlantedStaging): void {
  const twin = (p: string) => path.join(world.outside, path.relative(world.agentDir, p));
  const copy = (from: string, to: string): void => {
    const st = fs.lstatSync(from);
    if (st.isDirectory()) {
      fs.mkdirSync(to, { recursive: true, mode: 0o700 });
      for (const name of fs.readdirSync(from)) copy(path.join(from, name), path.join(to, name));
    } else {
      fs.mkdirSync(path.dirname(to), { recursive: true, mode: 0o700 });
      fs.writeFileSync(to, OUTSIDE_MARKER, { mode: 0o600 });
    }
  };
  copy(planted.artifacts, twin(planted.artifacts));
  copy(planted.transcript, twin(planted.transcript));
  copy(planted.receipt, twin(planted.receipt));
}
