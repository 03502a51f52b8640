/**
 * The attack harness of the race tests: a victim agent dir and an outside tree, an attacker
 * exchanging entries with links to the outside (`swap_race`, as root inside the agent dir or
 * as uid 65534 from the agent dir's parent), an observer of the outside tree
 * (`outside_watch` plus a before/after snapshot), and the loop that runs a victim operation
 * while the attack goes on and tallies what happened.
 *
 * An escape is any use of the outside tree while the scenario runs (an inotify event there:
 * only the victim touches it, the attacker renames entries beside it), any change between
 * the snapshots, or outside content in what an operation returned.
 */
import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { buildTools, type Tools } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { isTypedRefusal, type OpOutcome } from "./ops.js";

/** The attacker's uid and gid in the parent-owner scenarios. */
export const ATTACKER_UID = 65534;

/** Attempts per scenario: `GJC_RACE_ATTEMPTS` (the long run uses 20000), default 200. */
export const ATTEMPTS = positiveEnv("GJC_RACE_ATTEMPTS", 200);

/** Wall-clock budget per scenario in ms, `GJC_RACE_MAX_MS` (0: none), default 1500; the loop stops at whichever limit comes first. */
export const MAX_MS = positiveEnv("GJC_RACE_MAX_MS", 1_500, true);

/**
 * Swaps the attacker must have made before a scenario may end, `GJC_RACE_MIN_SWAPS`, default 100: on a loaded machine
 * the attacker can get no CPU time while the victim's attempts run, and a scenario under no attack proves nothing. The
 * victim goes on past {@link ATTEMPTS} and {@link MAX_MS} until then, for at most {@link MIN_SWAPS_WAIT_MS}.
 */
export const MIN_SWAPS = positiveEnv("GJC_RACE_MIN_SWAPS", 100);

/** How long a scenario keeps its victim running to reach {@link MIN_SWAPS} before it reports it could not. */
export const MIN_SWAPS_WAIT_MS = 60_000;

/**
 * The attacker's random pause after each swap back (`GJC_RACE_PAUSE_US`, default 0: full
 * speed, which measured the most escapes here; a pause lets long operations get further).
 */
export const PAUSE_US = positiveEnv("GJC_RACE_PAUSE_US", 0, true);

/**
 * How many objects to seed for a scenario whose every attempt uses up one (a legacy session
 * to migrate): all attempts when the run has no time budget, else as many as the budget can
 * reach here (a migration takes 50-300 ms on two busy cores).
 */
export function seedCount(attempts: number): number {
  return MAX_MS === 0 ? attempts : Math.min(attempts, 20);
}

/** Text every outside object carries: finding it in a result is an escape. */
export const OUTSIDE_MARKER = "outsidemarker";

/** Session ids of outside decoys start with this. */
export const OUTSIDE_ID_PREFIX = "0ff51de0";

function positiveEnv(name: string, fallback: number, zeroAllowed = false): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0 || (n === 0 && !zeroAllowed)) throw new Error(`${name} must be a ${zeroAllowed ? "non-negative" : "positive"} integer`);
  return n;
}

/** Where the attack happens: swaps of entries inside the agent dir, or of the agent dir in an attacker-owned parent. */
export type Mode = "inside" | "parent";

/** The victim's agent dir, the outside tree and the workspaces of one scenario. */
export interface RaceWorld {
  readonly mode: Mode;
  readonly base: string;
  /** The directory holding the agent dir: `base` (inside), or `base/shared`, owned by the attacker once armed (parent). */
  readonly parent: string;
  readonly agentDir: string;
  /** A complete agent-dir layout full of decoys: what the links point at. */
  readonly outside: string;
  /** The workspace directory `name` (created on first use, outside both trees). */
  cwd(name: string): string;
  remove(): void;
}

/** A fresh world. Seed both trees, then {@link arm} it. */
export function makeWorld(mode: Mode): RaceWorld {
  const tmp = makeTempDir("gjc-race-");
  // The attacker must reach its directory and its binary.
  fs.chmodSync(tmp.path, 0o755);
  const parent = mode === "parent" ? path.join(tmp.path, "shared") : tmp.path;
  if (mode === "parent") fs.mkdirSync(parent, { mode: 0o755 });
  const agentDir = path.join(parent, "agent");
  fs.mkdirSync(agentDir, { mode: 0o700 });
  const outside = path.join(tmp.path, "outside");
  fs.mkdirSync(outside, { mode: 0o700 });
  const work = path.join(tmp.path, "work");
  fs.mkdirSync(work, { mode: 0o755 });
  return {
    mode,
    base: tmp.path,
    parent,
    agentDir,
    outside,
    cwd(name) {
      const dir = path.join(work, name);
      fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
      return dir;
    },
    remove: () => tmp.remove(),
  };
}

/** What the attacker exchanges: entries of `dir`, pair by pair, as root or as {@link ATTACKER_UID}. */
export interface SwapSpec {
  readonly dir: string;
  readonly pairs: ReadonlyArray<readonly [string, string]>;
  readonly asAttacker: boolean;
  /** Random pause (0..n µs) each time a pair is back to normal; default 0, full speed (see swap_race.c). */
  readonly pauseUs?: number;
}

/**
 * Makes the world attackable. Inside: a link `<agentDir>/<name>.alt` -> `<outside>/<name>`
 * for each name in `links`, and the swap of each name with its link. Parent: the outside
 * tree and the agent dir's parent are handed to the attacker, who gets a link
 * `agent.alt` -> outside beside the agent dir and swaps the two.
 */
export function arm(world: RaceWorld, links: readonly string[]): SwapSpec {
  if (world.mode === "inside") {
    for (const name of links) fs.symlinkSync(path.join(world.outside, name), path.join(world.agentDir, `${name}.alt`));
    return { dir: world.agentDir, pairs: links.map((n) => [n, `${n}.alt`] as const), asAttacker: false };
  }
  chownTree(world.outside, ATTACKER_UID);
  fs.chownSync(world.parent, ATTACKER_UID, ATTACKER_UID);
  const link = path.join(world.parent, "agent.alt");
  fs.symlinkSync(world.outside, link);
  fs.lchownSync(link, ATTACKER_UID, ATTACKER_UID);
  return { dir: world.parent, pairs: [["agent", "agent.alt"]], asAttacker: true };
}

/** Hands `target` and everything below it (links themselves, not followed) to `uid`:`uid`. */
export function chownTree(target: string, uid: number): void {
  const st = fs.lstatSync(target);
  fs.lchownSync(target, uid, uid);
  if (st.isDirectory()) for (const name of fs.readdirSync(target)) chownTree(path.join(target, name), uid);
}

// ---- attacker --------------------------------------------------------------------------

let tools: Tools | undefined;
const attackerBinaries = new Map<string, string>();

function swapBinary(world: RaceWorld, asAttacker: boolean): string {
  tools ??= buildTools();
  if (!asAttacker) return tools.swapRace;
  // The build cache is private to root: the attacker runs its own copy.
  let copy = attackerBinaries.get(world.base);
  if (copy === undefined || !fs.existsSync(copy)) {
    copy = path.join(world.base, "swap_race");
    fs.copyFileSync(tools.swapRace, copy);
    fs.chmodSync(copy, 0o755);
    attackerBinaries.set(world.base, copy);
  }
  return copy;
}

/** A running swap loop. */
interface Swapper {
  /** Whether it has made {@link MIN_SWAPS} exchanges so far. */
  reachedMinimum(): boolean;
  /** Stops the loop and resolves to the number of exchanges it made. */
  stop(): Promise<number>;
}

async function startSwapper(world: RaceWorld, spec: SwapSpec): Promise<Swapper> {
  const bin = swapBinary(world, spec.asAttacker);
  const [first, ...rest] = spec.pairs;
  if (first === undefined) throw new Error("a swap needs a pair");
  const args = [spec.dir, first[0], first[1], "3600000", "0", ...rest.flat()];
  const env = { ...process.env, SWAP_RACE_PAUSE_US: String(spec.pauseUs ?? 0), SWAP_RACE_NOTIFY_AT: String(MIN_SWAPS) };
  const options: SpawnOptions = { stdio: ["ignore", "pipe", "pipe"], env };
  const child = spec.asAttacker
    ? spawn("setpriv", [`--reuid=${ATTACKER_UID}`, `--regid=${ATTACKER_UID}`, "--clear-groups", bin, ...args], options)
    : spawn(bin, args, options);
  const out = collect(child);
  await waitFor(
    () => out.stderr.includes("ready\n"),
    child,
    () => `swap_race did not start: ${out.stderr}`,
  );
  return {
    reachedMinimum: () => out.stderr.includes(`reached ${MIN_SWAPS}\n`),
    async stop() {
      child.kill("SIGTERM");
      const status = await out.closed;
      if (status !== 0) throw new Error(`swap_race failed (${status}): ${out.stderr}`);
      return Number.parseInt(out.stdout.trim(), 10);
    },
  };
}

// ---- observer --------------------------------------------------------------------------

/** What the observer saw in the outside tree. */
export interface Observation {
  readonly events: number;
  readonly reads: number;
  readonly writes: number;
  readonly overflow: boolean;
  /** Plain opens, attribute changes and the deletion of the observed root itself (see outside_watch.c). */
  readonly rootOpens: number;
  readonly rootAttribs: number;
  readonly rootDeletes: number;
  /** The first events, as `<kinds> <path below the outside root>`. */
  readonly sample: string[];
  /** Entries added, removed or changed between the snapshots. */
  readonly changed: string[];
}

/** Watches `root` with inotify until stopped. */
export async function startObserver(root: string): Promise<{ stop(): Promise<Observation> }> {
  tools ??= buildTools();
  const before = snapshot(root);
  const child = spawn(tools.outsideWatch, [root], { stdio: ["pipe", "pipe", "pipe"] });
  const out = collect(child);
  await waitFor(
    () => out.stdout.includes("ready\n"),
    child,
    () => `outside_watch did not start: ${out.stderr}`,
  );
  return {
    async stop() {
      child.stdin?.end();
      const status = await out.closed;
      if (status !== 0) throw new Error(`outside_watch failed (${status}): ${out.stderr}`);
      const lines = out.stdout.split("\n");
      const total = lines.find((l) => l.startsWith("total "));
      const m =
        total === undefined ? null : /^total (\d+) reads (\d+) writes (\d+) overflow ([01]) rootopens (\d+) rootattribs (\d+) rootdeletes (\d+)$/.exec(total);
      if (m === null) throw new Error(`outside_watch said: ${out.stdout}`);
      const after = snapshot(root);
      return {
        events: Number(m[1]),
        reads: Number(m[2]),
        writes: Number(m[3]),
        overflow: m[4] === "1",
        rootOpens: Number(m[5]),
        rootAttribs: Number(m[6]),
        rootDeletes: Number(m[7]),
        sample: lines.filter((l) => l.startsWith("event ")).map((l) => l.slice("event ".length)),
        changed: diffSnapshots(before, after),
      };
    },
  };
}

/** Every entry below `root` (links not followed): type, mode, owner, size, content hash or link target. */
export function snapshot(root: string): Map<string, string> {
  const out = new Map<string, string>();
  // An observed object the victim removed (or moved aside) snapshots as nothing.
  if (!fs.existsSync(root) && !isLink(root)) return out;
  const walk = (p: string, rel: string): void => {
    const st = fs.lstatSync(p);
    const head = `${st.mode.toString(8)} ${st.uid}:${st.gid} ${st.size}`;
    if (st.isDirectory()) {
      out.set(`${rel}/`, head);
      for (const name of fs.readdirSync(p).sort()) walk(path.join(p, name), `${rel}/${name}`);
    } else if (st.isSymbolicLink()) {
      out.set(rel, `${head} -> ${fs.readlinkSync(p)}`);
    } else if (st.isFile()) {
      out.set(rel, `${head} ${createHash("sha256").update(fs.readFileSync(p)).digest("hex")}`);
    } else {
      out.set(rel, head);
    }
  };
  walk(root, "");
  return out;
}

function isLink(p: string): boolean {
  try {
    return fs.lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

function diffSnapshots(before: Map<string, string>, after: Map<string, string>): string[] {
  const changed: string[] = [];
  for (const [name, value] of before) {
    const now = after.get(name);
    if (now === undefined) changed.push(`removed ${name}`);
    else if (now !== value) changed.push(`changed ${name}`);
  }
  for (const name of after.keys()) if (!before.has(name)) changed.push(`added ${name}`);
  return changed;
}

// ---- the loop --------------------------------------------------------------------------

/** One scenario: the victim's operation, run while the attack goes on. */
export interface Scenario {
  readonly label: string;
  readonly world: RaceWorld;
  /** The attack running for the whole scenario... */
  readonly swap?: SwapSpec;
  /** ...or a fresh attack per attempt (for targets whose names change from one attempt to the next). */
  readonly swapFor?: (attempt: number) => SwapSpec;
  /** Attempts (default {@link ATTEMPTS}). */
  readonly attempts?: number;
  /** How long to go on for {@link MIN_SWAPS} (default {@link MIN_SWAPS_WAIT_MS}). */
  readonly minSwapsWaitMs?: number;
  readonly op: (attempt: number) => Promise<OpOutcome>;
}

/** What a scenario came to. */
export interface Tally {
  readonly label: string;
  attempts: number;
  swaps: number;
  ok: number;
  /** Typed refusals by code. */
  readonly refused: Map<string, number>;
  /** Anything else thrown, by name and message. */
  readonly untyped: Map<string, number>;
  /** Results holding outside content, and the first of them. */
  resultEscapes: number;
  readonly resultSamples: string[];
  observation: Observation | undefined;
}

/** Total escapes: outside events, snapshot changes and results with outside content. */
export function escapes(t: Tally): number {
  return (t.observation?.events ?? 0) + (t.observation?.changed.length ?? 0) + (t.observation?.overflow ? 1 : 0) + t.resultEscapes;
}

/**
 * Runs `scenario` and returns its tally (it asserts nothing). Attempts of an attacked scenario go on past the attempt count and the time budget
 * until the attack has made {@link MIN_SWAPS} exchanges (or {@link MIN_SWAPS_WAIT_MS} passed): an attempt past the count
 * repeats an earlier one's operation (a seeded object already used up is still reached through the attacked path).
 */
export async function runScenario(scenario: Scenario): Promise<Tally> {
  const tally: Tally = {
    label: scenario.label,
    attempts: 0,
    swaps: 0,
    ok: 0,
    refused: new Map(),
    untyped: new Map(),
    resultEscapes: 0,
    resultSamples: [],
    observation: undefined,
  };
  const limit = scenario.attempts ?? ATTEMPTS;
  const observer = await startObserver(scenario.world.outside);
  let swapper: Swapper | undefined;
  try {
    if (scenario.swap !== undefined) swapper = await startSwapper(scenario.world, scenario.swap);
    const started = Date.now();
    // A control run with no attack at all (the harness's own tests) has no minimum to wait for.
    const unattacked = scenario.swap === undefined && scenario.swapFor === undefined;
    const attacked = () => unattacked || (swapper !== undefined ? swapper.reachedMinimum() : tally.swaps >= MIN_SWAPS);
    const planned = (i: number) => i < limit && (MAX_MS === 0 || Date.now() - started < MAX_MS);
    for (let i = 0; ; i++) {
      if (!planned(i)) {
        // The swapper's "reached" arrives as an I/O event: let the event loop take it before asking.
        await new Promise((resolve) => setImmediate(resolve));
        if (attacked() || Date.now() - started >= (scenario.minSwapsWaitMs ?? MIN_SWAPS_WAIT_MS)) break;
      }
      let own: Swapper | undefined;
      if (scenario.swapFor !== undefined) own = await startSwapper(scenario.world, scenario.swapFor(i % limit));
      try {
        tally.attempts += 1;
        record(tally, await settle(() => scenario.op(i % limit)));
      } finally {
        if (own !== undefined) tally.swaps += await own.stop();
      }
    }
  } finally {
    if (swapper !== undefined) tally.swaps += await swapper.stop();
    tally.observation = await observer.stop();
  }
  return tally;
}

type Settled = OpOutcome | { readonly kind: "threw"; readonly error: unknown };

async function settle(op: () => Promise<OpOutcome>): Promise<Settled> {
  try {
    return await op();
  } catch (error) {
    return { kind: "threw", error };
  }
}

function record(tally: Tally, result: Settled): void {
  if (result.kind === "ok") {
    tally.ok += 1;
    if (result.visible.includes(OUTSIDE_MARKER) || result.visible.includes(OUTSIDE_ID_PREFIX)) {
      tally.resultEscapes += 1;
      if (tally.resultSamples.length < 3) tally.resultSamples.push(result.visible.slice(0, 300));
    }
  } else if (result.kind === "refused") {
    bump(tally.refused, result.code);
  } else if (isTypedRefusal(result.error)) {
    bump(tally.refused, result.error.code);
  } else {
    const e = result.error;
    bump(tally.untyped, e instanceof Error ? `${e.name}: ${e.message}`.slice(0, 160) : String(e));
  }
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

/** One line per scenario for the CI log, and the details an escape needs to be understood. */
export function report(t: Tally): string {
  const o = t.observation;
  const fmt = (m: Map<string, number>) => [...m].map(([k, n]) => `${k} ${n}`).join(", ") || "none";
  const lines = [
    `[race ${t.label}] ${t.attempts} attempts, ${t.swaps} swaps: ok ${t.ok}; refused (typed) ${fmt(t.refused)}; untyped ${fmt(t.untyped)}; ` +
      `escapes ${escapes(t)} (outside events ${o?.events ?? "?"}: ${o?.reads ?? "?"} reads, ${o?.writes ?? "?"} writes${o?.overflow ? ", queue overflow" : ""}; ` +
      `snapshot changes ${o?.changed.length ?? "?"}; results with outside content ${t.resultEscapes})`,
  ];
  if (o !== undefined && o.sample.length > 0) lines.push(`  first outside events: ${o.sample.slice(0, 8).join(" | ")}`);
  if (o !== undefined && o.changed.length > 0) lines.push(`  outside changes: ${o.changed.slice(0, 8).join(" | ")}`);
  if (t.resultSamples.length > 0) lines.push(`  outside content returned: ${t.resultSamples[0]}`);
  return lines.join("\n");
}

// ---- child process plumbing -----------------------------------------------------------

interface Collected {
  stdout: string;
  stderr: string;
  /** Resolves with the exit status once the output is complete (-2: killed by a signal). */
  readonly closed: Promise<number>;
}

/** Collects a child's output from its start; `closed` settles after the last byte. */
function collect(child: ChildProcess): Collected {
  const closed = new Promise<number>((resolve) => {
    child.once("close", (code, signal) => resolve(code ?? (signal === null ? -1 : -2)));
    child.once("error", () => resolve(-1));
  });
  const out: Collected = { stdout: "", stderr: "", closed };
  child.stdout?.on("data", (d: Buffer) => (out.stdout += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (out.stderr += d.toString()));
  return out;
}

async function waitFor(ready: () => boolean, child: ChildProcess, why: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!ready()) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(why());
    await new Promise((r) => setTimeout(r, 1));
  }
}
