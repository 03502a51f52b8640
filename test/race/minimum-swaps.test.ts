// The race suites cannot pass on no attack: a scenario keeps its victim running past its planned
// attempts until the attacker has made MIN_SWAPS exchanges, and one whose attacker makes none
// ends with fewer (which the suite's assertion fails, saying the scenario could not be tested).
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

import { makeWorld, MIN_SWAPS, runScenario } from "./harness.js";

describe.runIf(process.platform === "linux")("the race harness's minimum of attacker work", () => {
  it("an attack that got no swaps in during the planned attempts is waited for", async () => {
    const world = makeWorld("inside");
    try {
      fs.writeFileSync(path.join(world.base, "a"), "a");
      fs.writeFileSync(path.join(world.base, "b"), "b");
      // One planned attempt that ends at once, and an attacker pausing up to 20 ms after each round trip: the minimum
      // takes it about half a second, well past the attempt.
      const tally = await runScenario({
        label: "instant victim",
        world,
        attempts: 1,
        swap: { dir: world.base, pairs: [["a", "b"]], asAttacker: false, pauseUs: 20_000 },
        op: async () => ({ kind: "ok", visible: "" }),
      });
      expect(tally.swaps).toBeGreaterThanOrEqual(MIN_SWAPS);
      expect(tally.attempts).toBeGreaterThan(1);
    } finally {
      world.remove();
    }
  });

  it("an attacker that can make no swap leaves the tally short of the minimum, after going on for the wait", async () => {
    const world = makeWorld("inside");
    try {
      const tally = await runScenario({
        label: "starved attacker",
        world,
        attempts: 1,
        minSwapsWaitMs: 500,
        // Neither entry exists: every exchange misses.
        swap: { dir: world.base, pairs: [["missing-a", "missing-b"]], asAttacker: false },
        op: async () => ({ kind: "ok", visible: "" }),
      });
      expect(tally.swaps).toBe(0);
      expect(tally.swaps).toBeLessThan(MIN_SWAPS);
      expect(tally.attempts).toBeGreaterThan(1);
    } finally {
      world.remove();
    }
  });
});
