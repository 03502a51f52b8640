// Issue 16 item 4, plant cases (no race): at each managed path of a seeded agent dir, a
// symlink or dangling link into an outside twin of the tree, a hard link to an outside
// file, a FIFO, a socket or a foreign-owned object replaces what was there; then every entry
// point that uses that path runs on that agent dir (root: the kernel checks nothing). Nothing
// outside may be touched, a foreign-owned object may be opened to be checked but never read,
// written or repaired, every refusal is typed, and nothing hangs (a child process runs the
// entries under a watchdog). Root runs every plant; uid 65534 runs the hard links and foreign
// owners again, where a permission denial must still come back as a typed refusal.
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { hasCommand, isRoot } from "../helpers/processes.js";
import { bundleChild, type BundledChild } from "../storage/child-bundle.js";
import { ATTACKER_UID, chownTree, makeWorld, OUTSIDE_MARKER, startObserver, type Observation, type RaceWorld } from "./harness.js";
import * as ops from "./ops.js";
import { ENTRIES, entriesUsing, type PlantGroup } from "./plant-entries.js";

const here = path.dirname(fileURLToPath(import.meta.url));
/** A case that prints nothing for this long is hung (every entry takes well under 1 s here). */
const WATCHDOG_MS = 4_000;

const PLANTS = ["symlink", "dangling link", "hard link", "FIFO", "socket", "foreign-owned"] as const;
type Plant = (typeof PLANTS)[number];

let child: BundledChild;
let template: RaceWorld;
let templateCwd: string;

beforeAll(async () => {
  child = await bundleChild("plant-child", path.join(here, "children"));
  template = makeWorld("inside");
  templateCwd = template.cwd("listed");
  await ops.createAndWrite(template.agentDir, templateCwd, "racemark inside prompt");
  await ops.historyAdd(template.agentDir, "racemark inside prompt");
  ops.writeLegacy(template.agentDir, templateCwd);
}, 120_000);
afterAll(() => {
  child?.remove();
  template?.remove();
});

/** One agent dir copied from the template, with its own staging, and its managed paths. */
interface Prepared {
  readonly world: RaceWorld;
  readonly group: PlantGroup;
  readonly paths: ops.ManagedPath[];
}

async function prepare(id: string, label: string, victimUid: number): Promise<Prepared> {
  const world = makeWorld("inside");
  fs.cpSync(template.agentDir, world.agentDir, { recursive: true });
  const legacyDir = fs.readdirSync(ops.sessionsRootOf(world.agentDir)).find((n) => n.startsWith("--"));
  if (legacyDir === undefined) throw new Error("no legacy dir in the template");
  const dir = path.join(ops.sessionsRootOf(world.agentDir), legacyDir);
  const legacyFile = path.join(dir, fs.readdirSync(dir)[0] ?? "");
  const [staging] = await ops.plantStaging(world.agentDir, templateCwd, [legacyFile]);
  if (staging === undefined) throw new Error("no staging planted");
  const paths = await ops.managedPaths(world.agentDir, templateCwd, legacyFile, staging);
  // The outside twin: the same tree, every path present (also those that exist only at times),
  // its session texts marked so a result showing them is caught.
  fs.cpSync(world.agentDir, world.outside, { recursive: true });
  markSessions(world.outside);
  for (const p of paths) {
    const twin = twinOf(world, p.path);
    fs.mkdirSync(path.dirname(twin), { recursive: true, mode: 0o700 });
    if (!fs.existsSync(twin)) fs.writeFileSync(twin, "", { mode: 0o600 });
  }
  if (victimUid !== 0) {
    chownTree(world.agentDir, victimUid);
    chownTree(world.outside, victimUid);
  }
  const sessionFile = paths.find((p) => p.label === "session file")?.path ?? "";
  const entries = entriesUsing(label);
  return { world, paths, group: { id, agentDir: world.agentDir, cwd: templateCwd, newCwd: world.cwd("fresh"), sessionFile, legacyFile, entries } };
}

function markSessions(dir: string): void {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) markSessions(p);
    else if (entry.isFile() && (entry.name.endsWith(".jsonl") || entry.name.endsWith(".transcript"))) {
      fs.writeFileSync(
        p,
        fs
          .readFileSync(p, "utf8")
          .replaceAll("inside prompt", `${OUTSIDE_MARKER} prompt`)
          .replace(/"line (\d+)"/g, `"${OUTSIDE_MARKER} $1"`),
      );
    }
  }
}

function twinOf(world: RaceWorld, p: string): string {
  return path.join(world.outside, path.relative(world.agentDir, p));
}

/**
 * Puts `plant` at `target`, owned by the victim (a foreign-owned object: by uid 65534 for a
 * root victim, by root for the other); returns what to undo after the case (a socket).
 */
async function plant(kind: Plant, world: RaceWorld, target: ops.ManagedPath, victimUid: number): Promise<() => void> {
  // A path that exists only at times (the lock) gets its directory, as a migration makes it.
  fs.mkdirSync(path.dirname(target.path), { recursive: true, mode: 0o700 });
  if (victimUid !== 0) fs.lchownSync(path.dirname(target.path), victimUid, victimUid);
  const undo = await place(kind, world, target, victimUid === 0 ? ATTACKER_UID : 0);
  if (kind !== "foreign-owned" && victimUid !== 0) fs.lchownSync(target.path, victimUid, victimUid);
  return undo;
}

async function place(kind: Plant, world: RaceWorld, target: ops.ManagedPath, foreignUid: number): Promise<() => void> {
  const p = target.path;
  const twin = twinOf(world, p);
  const replace = () => fs.rmSync(p, { recursive: true, force: true });
  switch (kind) {
    case "symlink":
      replace();
      fs.symlinkSync(twin, p);
      return () => {};
    case "dangling link":
      replace();
      fs.symlinkSync(`${twin}.missing`, p);
      return () => {};
    case "hard link":
      replace();
      fs.linkSync(twin, p);
      return () => {};
    case "FIFO":
      replace();
      execFileSync("mkfifo", ["-m", "600", p]);
      return () => {};
    case "socket": {
      replace();
      // A socket path is limited to ~107 bytes: bind a short name, then move the socket in place.
      const short = fs.mkdtempSync(path.join(os.tmpdir(), "gjc-sock-"));
      const server = net.createServer();
      await new Promise<void>((resolve, reject) => server.once("error", reject).listen(path.join(short, "s"), resolve));
      fs.chmodSync(path.join(short, "s"), 0o600);
      fs.renameSync(path.join(short, "s"), p);
      return () => {
        server.close();
        fs.rmSync(short, { recursive: true, force: true });
      };
    }
    case "foreign-owned":
      if (!fs.existsSync(p)) fs.writeFileSync(p, "", { mode: 0o600 });
      fs.lchownSync(p, foreignUid, foreignUid);
      return () => {};
  }
}

type Outcome = { kind: "ok"; outside: boolean } | { kind: "refused"; code: string } | { kind: "untyped"; message: string } | { kind: "hang" };

/** Runs every entry of every group in child processes, restarting after a hung case. */
async function runEntries(groups: readonly PlantGroup[], victimUid: number): Promise<Outcome[][]> {
  const results: Outcome[][] = groups.map(() => []);
  const jobFile = path.join(template.base, `job-${Date.now()}-${Math.random().toString(36).slice(2)}.json`);
  let from = { group: 0, entry: 0 };
  while (from.group < groups.length) {
    if (!(groups[from.group]?.entries ?? []).some((e) => e >= from.entry)) {
      from = { group: from.group + 1, entry: 0 };
      continue;
    }
    fs.writeFileSync(jobFile, JSON.stringify({ groups, ...from, marker: OUTSIDE_MARKER }));
    const command = [process.execPath, child.file, jobFile];
    const proc =
      victimUid === 0
        ? spawn(command[0]!, command.slice(1), { stdio: ["ignore", "pipe", "pipe"] })
        : spawn("setpriv", [`--reuid=${victimUid}`, `--regid=${victimUid}`, "--clear-groups", ...command], { stdio: ["ignore", "pipe", "pipe"] });
    let buffer = "";
    let stderr = "";
    let current: { group: number; entry: number } | undefined;
    let finished = false;
    const next = await new Promise<{ group: number; entry: number }>((resolve, reject) => {
      let timer = setTimeout(onHang, WATCHDOG_MS);
      function onHang(): void {
        finished = true;
        proc.kill("SIGKILL");
        const hung = current ?? { group: from.group, entry: groups[from.group]?.entries.find((e) => e >= from.entry) ?? 0 };
        (results[hung.group] ??= [])[hung.entry] = { kind: "hang" };
        // Go on with the next entry of that group, or the next group.
        resolve({ group: hung.group, entry: hung.entry + 1 });
      }
      proc.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
      proc.stdout?.on("data", (d: Buffer) => {
        buffer += d.toString();
        let nl: number;
        while ((nl = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          const m = /^(begin|end) (\d+) (\d+)(?: (.*))?$/.exec(line);
          if (m === null) continue;
          clearTimeout(timer);
          timer = setTimeout(onHang, WATCHDOG_MS);
          const at = { group: Number(m[2]), entry: Number(m[3]) };
          if (m[1] === "begin") current = at;
          else {
            const o = JSON.parse(m[4] ?? "null") as Outcome;
            (results[at.group] ??= [])[at.entry] = o;
            current = undefined;
          }
        }
      });
      proc.on("close", (code) => {
        if (finished) return;
        clearTimeout(timer);
        if (code === 0) resolve({ group: groups.length, entry: 0 });
        else reject(new Error(`plant child failed (${code}): ${stderr}`));
      });
    });
    from = next;
  }
  fs.rmSync(jobFile, { force: true });
  return results;
}

/** What went wrong in one (path, plant) case, as readable lines. */
function failuresOf(label: string, entries: readonly number[], outcomes: readonly Outcome[], outside: Observation, object: Observation | undefined): string[] {
  const out: string[] = [];
  if (outside.events > 0 || outside.changed.length > 0) {
    out.push(
      `${label}: outside touched (${outside.reads} reads, ${outside.writes} writes, ${outside.changed.length} changes: ${[...outside.sample.slice(0, 3), ...outside.changed.slice(0, 2)].join(" | ")})`,
    );
  }
  if (object !== undefined) {
    // Opening the object to check it is no use of it; nor is unlinking the name in the
    // victim's own directory (which drops its link count), as long as nothing else happened.
    const unlinked = object.rootDeletes > 0;
    const used = object.events - object.rootOpens - (unlinked ? object.rootAttribs + object.rootDeletes : 0);
    const changed = object.changed.filter((c) => !(unlinked && (c === "removed " || c === "changed " || c === "removed /")));
    if (used > 0 || changed.length > 0) {
      out.push(
        `${label}: foreign object used (${used} events beyond checking or unlinking it: ${[...object.sample.slice(0, 4), ...changed.slice(0, 2)].join(" | ")})`,
      );
    }
  }
  for (const e of entries) {
    const name = ENTRIES[e]?.[0] ?? String(e);
    const o = outcomes[e];
    if (o === undefined) out.push(`${label} / ${name}: no outcome`);
    else if (o.kind === "ok" && o.outside) out.push(`${label} / ${name}: returned outside content`);
    else if (o.kind === "untyped") out.push(`${label} / ${name}: untyped ${o.message}`);
    else if (o.kind === "hang") out.push(`${label} / ${name}: hung`);
  }
  return out;
}

/**
 * Who runs the entry points: root (no kernel permission check stands in for the library's),
 * and uid 65534 for the plants whose outcome a permission check can change (a foreign owner
 * is then root, and the kernel refuses some of what the library must refuse itself).
 */
const VICTIMS: ReadonlyArray<{ readonly name: string; readonly uid: number; readonly plants: readonly Plant[] }> = [
  { name: "root", uid: 0, plants: PLANTS },
  ...(hasCommand("setpriv") ? [{ name: "uid 65534", uid: ATTACKER_UID, plants: ["hard link", "foreign-owned"] as const }] : []),
];

describe.runIf(process.platform === "linux" && isRoot())("planted objects at every managed path", () => {
  for (const { name: victimName, uid: victimUid, plants } of VICTIMS) {
    defineCases(victimName, victimUid, plants);
  }
});

function defineCases(victimName: string, victimUid: number, plants: readonly Plant[]): void {
  const victim = { name: victimName, uid: victimUid };
  for (const kind of plants) {
    it(`victim ${victim.name}, ${kind}: nothing outside touched, every refusal typed, nothing hangs`, async () => {
      const cases: Array<{ label: string; prepared: Prepared; target: ops.ManagedPath; undo: () => void }> = [];
      try {
        // The paths of the first prepared dir tell which cases this plant has.
        const first = await prepare(`${kind} 0`, "agent dir", victim.uid);
        const targets = first.paths.filter((p) => kind !== "hard link" || p.type === "file");
        if (targets[0]?.label !== "agent dir") first.world.remove();
        const prepared = await Promise.all(targets.map((t, i) => (i === 0 && t.label === "agent dir" ? first : prepare(`${kind} ${i}`, t.label, victim.uid))));
        for (const [i, t] of targets.entries()) {
          const p = prepared[i]!;
          const target = p.paths.find((m) => m.label === t.label);
          if (target === undefined) throw new Error(`no ${t.label}`);
          cases.push({ label: `${kind} at ${t.label}`, prepared: p, target, undo: await plant(kind, p.world, target, victim.uid) });
        }
        const observers = await Promise.all(
          cases.map(async (c) => ({
            outside: await startObserver(c.prepared.world.outside),
            object: kind === "foreign-owned" ? await startObserver(c.target.path) : undefined,
          })),
        );
        const results = await runEntries(
          cases.map((c) => c.prepared.group),
          victim.uid,
        );
        const seen = await Promise.all(observers.map(async (o) => ({ outside: await o.outside.stop(), object: await o.object?.stop() })));
        const failures: string[] = [];
        let refusals = 0;
        for (const [i, c] of cases.entries()) {
          const outcomes = results[i] ?? [];
          refusals += outcomes.filter((o) => o.kind === "refused").length;
          failures.push(...failuresOf(c.label, c.prepared.group.entries, outcomes, seen[i]!.outside, seen[i]!.object));
        }
        const calls = cases.reduce((n, c) => n + c.prepared.group.entries.length, 0);
        console.log(
          `[plant ${victim.name}, ${kind}] ${cases.length} paths, ${calls} entry-point calls: ${refusals} typed refusals, ${failures.length} failures\n  ${failures.join("\n  ")}`,
        );
        expect(failures).toEqual([]);
      } finally {
        for (const c of cases) {
          c.undo();
          c.prepared.world.remove();
        }
      }
    }, 240_000);
  }
}
