/**
 * The race suite of one attack mode: every scenario of {@link SCENARIOS} as its own test,
 * asserting 0 escapes and 0 untyped errors (and that the attack really ran).
 */
import { describe, expect, it } from "vitest";

import { hasCommand, isRoot, skipBecause } from "../helpers/processes.js";
import { ATTEMPTS, escapes, makeWorld, MAX_MS, report, runScenario, type Mode } from "./harness.js";
import { SCENARIOS } from "./scenarios.js";

const TIMEOUT = MAX_MS === 0 ? 24 * 3_600_000 : 90_000;

/** Declares the tests of `mode` (Linux only: renameat2 and inotify). */
export function defineRaceSuite(mode: Mode, title: string): void {
  describe.runIf(process.platform === "linux")(title, () => {
    for (const def of SCENARIOS) {
      it(`${def.name}: 0 escapes, every refusal typed`, async (ctx) => {
        if (mode === "parent" && !isRoot()) skipBecause(ctx, "the attacker-owned parent needs root to hand directories to uid 65534");
        if (mode === "parent" && !hasCommand("setpriv")) skipBecause(ctx, "setpriv (util-linux) is not installed");
        const world = makeWorld(mode);
        try {
          const tally = await runScenario(await def.build(world, ATTEMPTS));
          console.log(report(tally));
          expect(tally.attempts).toBeGreaterThan(0);
          expect(tally.swaps).toBeGreaterThan(0);
          expect({ escapes: escapes(tally), untyped: [...tally.untyped] }).toEqual({ escapes: 0, untyped: [] });
        } finally {
          world.remove();
        }
      }, TIMEOUT);
    }
  });
}
