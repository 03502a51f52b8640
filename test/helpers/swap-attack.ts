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

/**
 * Runs `step(i)` while the attacker runs, until `minMs` passed, the attacker made its minimum of exchanges and
 * `missing()` is undefined; throws after {@link CAP_MS} naming what was missing, or if the attacker failed.
 */
export async function raceUntilProven(race: Race, step: (i: number) => Promise<void> | void): Promise<RaceResult> {
  const [command, ...args] = race.attacker;
  if (command === undefined) throw new Error("the race needs an attacker command");
  const minSwaps = race.minSwaps ?? MIN_SWAPS;
  const env = { ...process.env, SWAP_RACE_NOTIFY_AT: String(minSwaps) };
  const attacker = spawn(command, [...args, String(CAP_MS + 10_000), ...(race.attackerTail ?? [])], { stdio: ["ignore", "pipe", "pipe"], env });
  let stdout = "";
  let stderr = "";
  attacker.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
  attacker.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const closed = new Promise<number | null>((resolve) => attacker.on("close", (code) => resolve(code)));
  let exited = false;
  void closed.then(() => (exited = true));
  const yieldToEvents = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
  while (!stderr.includes("ready\n")) {
    if (exited) throw new Error(`swap_race did not start: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const started = Date.now();
  const lacking = (): string | undefined => {
    if (Date.now() - started < race.minMs) return `${race.minMs} ms of racing`;
    if (!stderr.includes(`reached ${minSwaps}\n`)) return `${minSwaps} attacker swaps`;
    return race.missing();
  };
  let steps = 0;
  let still: string | undefined;
  try {
    for (;;) {
      // The attacker's "reached" line arrives as an I/O event: the loop yields so it is seen.
      await yieldToEvents();
      still = lacking();
      if (still === undefined || Date.now() - started > CAP_MS || exited) break;
      await step(steps);
      steps += 1;
    }
  } finally {
    attacker.kill("SIGTERM");
  }
  const status = await closed;
  if (status !== 0) throw new Error(`swap_race failed (${status}): ${stderr}`);
  const swaps = Number.parseInt(stdout.trim(), 10);
  if (still !== undefined) throw new Error(`the race ended after ${Date.now() - started} ms and ${steps} steps (${swaps} swaps) without ${still}`);
  return { swaps, steps };
}
