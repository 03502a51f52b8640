/**
 * The race suite of one attack mode: every scenario of {@link SCENARIOS} as its own test,
 * asserting 0 escapes and 0 untyped errors, and that the attack really ran: at least {@link MIN_SWAPS} swaps
 * while the victim's attempts ran, else the scenario fails saying the machine gave the attacker no time.
 */
import { describe, expect, it } from "vitest";

import { hasCommand, isRoot, skipBecause } from "../helpers/processes.js";
import { ATTEMPTS, escapes, makeWorld, MAX_MS, MIN_SWAPS, MIN_SWAPS_WAIT_MS, report, runScenario, type Mode } from "./harness.js";
import { SCENARIOS } from "./scenarios.js";

const TIMEOUT = MAX_MS === 0 ? 24 * 3_600_000 : MIN_SWAPS_WAIT_MS + 60_000;

/** Declares the tests of `mode` (Linux only: renameat2 and inotify). */
export function defineRaceSuite(mode: Mode, title: string): void {
  describe.runIf(process.platform === "linux")(title, () => {
    for (const def of SCENARIOS) {
      it(
        `${def.name}: 0 escapes, every refusal typed`,
        async (ctx) => {
          if (mode === "parent" && !isRoot()) skipBecause(ctx, "the attacker-owned parent needs root to hand directories to uid 65534");
          if (mode === "parent" && !hasCommand("setpriv")) skipBecause(ctx, "setpriv (util-linux) is not installed");
          const world = makeWorld(mode);
          try {
            const tally = await runScenario(await def.build(world, ATTEMPTS));
            console.log(report(tally));
            expect(tally.attempts).toBeGreaterThan(0);
            const starved = `the attacker made ${tally.swaps} swaps (fewer than ${MIN_SWAPS}) in ${tally.attempts} attempts over ${MIN_SWAPS_WAIT_MS / 1000} s: the scenario could not be tested on this machine`;
            expect(tally.swaps, starved).toBeGreaterThanOrEqual(MIN_SWAPS);
            expect({ escapes: escapes(tally), untyped: [...tally.untyped] }).toEqual({ escapes: 0, untyped: [] });
          } finally {
            world.remove();
          }
        },
        TIMEOUT,
      );
    }
  });
}
