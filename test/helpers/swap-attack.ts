/**
 * A race that proves something on a loaded machine: the swap_race attacker runs while a victim step runs again and
 * again, and the race ends only once it has gone on for a minimum time, the attacker has made a minimum of exchanges
 * and every outcome the test asserts on has been seen; a fixed duration could end with an attacker that got no CPU
 * time, or a victim that never met the case under test, and assert on nothing. If that takes longer than a cap, the
 * race fails saying what it still lacked.
 */
import { spawn } from "node:child_process";

/** Exchanges the attacker must make, `GJC_RACE_MIN_SWAPS` (as test/race uses it), default 100. */
const MIN_SWAPS = Number(process.env.GJC_RACE_MIN_SWAPS ?? 100);
/** How long a race may go on to reach its minimums before it fails. */
const CAP_MS = 90_000;

/** What {@link raceUntilProven} needs. */
export interface Race {
  /** The attacker's command line before its duration: `[swapRace, dir, a, b]`, or behind `setpriv ...`. */
  readonly attacker: readonly string[];
  /** Arguments after the duration (`keep-going`, more pairs). */
  readonly attackerTail?: readonly string[];
  /** The least time the victim runs (ms). */
  readonly minMs: number;
  /** Exchanges the attacker must make (default {@link MIN_SWAPS}). */
  readonly minSwaps?: number;
  /** What the race has not seen yet (an outcome the test asserts on), or undefined once it has seen all. */
  readonly missing: () => string | undefined;
}

/** How a race ended. */
export interface RaceResult {
  /** Exchanges the attacker made. */
  readonly swaps: number;
  /** Times the victim step ran. */
  readonly steps: number;
}

/** The vitest timeout a test running one {@link raceUntilProven} needs. */
export const RACE_TIMEOUT_MS = CAP_MS + 30_000;

/** A running swap_race. */
export interface Attacker {
  /** Whether it has made the exchanges it was started to report. */
  reached(): boolean;
  /** Resolves once it has made them (rejects if it ends first). */
  readonly reaching: Promise<void>;
  /** Whether it has ended (it should not before {@link Attacker.stop}). */
  ended(): boolean;
  /** Stops it and resolves to the number of exchanges it made; throws if it failed. */
  stop(): Promise<number>;
}

/**
 * Starts swap_race (`attacker` before its duration, `tail` after it), to run until stopped (or {@link CAP_MS}), and
 * resolves once it holds its directory; it reports when it has made `minSwaps` exchanges.
 */
export async function startAttacker(attacker: readonly string[], tail: readonly string[], minSwaps: number): Promise<Attacker> {
  const [command, ...args] = attacker;
  if (command === undefined) throw new Error("the race needs an attacker command");
  const env = { ...process.env, SWAP_RACE_NOTIFY_AT: String(minSwaps) };
  const child = spawn(command, [...args, String(CAP_MS + 10_000), ...tail], { stdio: ["ignore", "pipe", "pipe"], env });
  let stdout = "";
  let stderr = "";
  let ended = false;
  const closed = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  void closed.then(() => (ended = true));
  let heard: () => void = () => undefined;
  const heardOf = (): void => heard();
  const watch = (wanted: string): Promise<void> =>
    new Promise((resolve, reject) => {
      heard = () => {
        if (stderr.includes(wanted)) resolve();
      };
      heard();
      void closed.then(() => reject(new Error(`swap_race ended before ${wanted.trim()}: ${stderr}`)));
    });
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
    heardOf();
  });
  await watch("ready\n");
  const reaching = watch(`reached ${minSwaps}\n`);
  reaching.catch(() => undefined);
  return {
    reached: () => stderr.includes(`reached ${minSwaps}\n`),
    reaching,
    ended: () => ended,
    async stop() {
      child.kill("SIGTERM");
      const status = await closed;
      if (status !== 0) throw new Error(`swap_race failed (${status}): ${stderr}`);
      return Number.parseInt(stdout.trim(), 10);
    },
  };
}

/**
 * Runs `step(i)` while the attacker runs, until `minMs` passed, the attacker made its minimum of exchanges and
 * `missing()` is undefined; throws after {@link CAP_MS} naming what was missing, or if the attacker failed.
 */
export async function raceUntilProven(race: Race, step: (i: number) => Promise<void> | void): Promise<RaceResult> {
  const minSwaps = race.minSwaps ?? MIN_SWAPS;
  const attacker = await startAttacker(race.attacker, race.attackerTail ?? [], minSwaps);
  const started = Date.now();
  const lacking = (): string | undefined => {
    if (Date.now() - started < race.minMs) return `${race.minMs} ms of racing`;
    if (!attacker.reached()) return `${minSwaps} attacker swaps`;
    return race.missing();
  };
  let steps = 0;
  let still: string | undefined;
  try {
    for (;;) {
      // The attacker's "reached" line arrives as an I/O event: the loop yields so it is seen.
      await new Promise((resolve) => setImmediate(resolve));
      still = lacking();
      if (still === undefined || Date.now() - started > CAP_MS || attacker.ended()) break;
      await step(steps);
      steps += 1;
    }
  } catch (error) {
    await attacker.stop().catch(() => undefined);
    throw error;
  }
  const swaps = await attacker.stop();
  if (still !== undefined) throw new Error(`the race ended after ${Date.now() - started} ms and ${steps} steps (${swaps} swaps) without ${still}`);
  return { swaps, steps };
}
