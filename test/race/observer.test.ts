// The race harness observes what it claims to: the attacker's exchanges alone leave the
// outside tree silent (they rename entries of the directory holding the link, never of the
// tree), while any read, write or creation through the link, and any outside content in a
// result, counts as an escape; typed refusals and other errors are told apart.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

import { hasCommand, isRoot } from "../helpers/processes.js";
import { arm, escapes, makeWorld, OUTSIDE_MARKER, runScenario, type Mode } from "./harness.js";
import * as ops from "./ops.js";

function seeded(mode: Mode) {
  const world = makeWorld(mode);
  fs.mkdirSync(path.join(world.outside, "sessions", "deep"), { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(world.outside, "sessions", "deep", "f"), OUTSIDE_MARKER, { mode: 0o600 });
  fs.mkdirSync(path.join(world.agentDir, "sessions"), { mode: 0o700 });
  return world;
}

const idle = async () => {
  await new Promise((r) => setTimeout(r, 2));
  return { kind: "ok", visible: "" } as const;
};

describe.runIf(process.platform === "linux")("the outside observer", () => {
  const modes: Mode[] = isRoot() && hasCommand("setpriv") ? ["inside", "parent"] : ["inside"];
  for (const mode of modes) {
    it(`${mode}: the attacker's swaps alone are no escape`, async () => {
      const world = seeded(mode);
      try {
        const swap = arm(world, ["sessions"]);
        const tally = await runScenario({ label: `calibration ${mode}`, world, swap, attempts: 150, op: idle });
        expect(tally.swaps).toBeGreaterThan(1000);
        expect(tally.observation).toMatchObject({ events: 0, changed: [], overflow: false });
        expect(escapes(tally)).toBe(0);
      } finally {
        world.remove();
      }
    });
  }

  it("a read, a creation and outside content in a result through the link all count", async () => {
    const world = seeded("inside");
    try {
      arm(world, ["sessions"]);
      const link = path.join(world.agentDir, "sessions.alt");
      const tally = await runScenario({
        label: "positive control",
        world,
        attempts: 3,
        op: async (i) => {
          if (i === 0) return { kind: "ok", visible: fs.readFileSync(path.join(link, "deep", "f"), "utf8") };
          if (i === 1) fs.writeFileSync(path.join(link, "deep", "new"), "x");
          return { kind: "ok", visible: "" };
        },
      });
      expect(tally.resultEscapes).toBe(1);
      expect(tally.observation?.reads).toBeGreaterThan(0);
      expect(tally.observation?.writes).toBeGreaterThan(0);
      expect(tally.observation?.changed).toEqual(["added /sessions/deep/new"]);
      expect(tally.observation?.sample).toContain("OPEN /sessions/deep/f");
    } finally {
      world.remove();
    }
  });

  it("a library refusal is typed, anything else thrown is not", async () => {
    const world = seeded("inside");
    try {
      const tally = await runScenario({
        label: "classification",
        world,
        attempts: 2,
        op: async (i) => {
          if (i === 0) return ops.historyAdd("", "prompt");
          throw Object.assign(new Error("plain"), { code: "ENOENT" });
        },
      });
      expect([...tally.refused.values()]).toEqual([1]);
      expect([...tally.untyped]).toEqual([["Error: plain", 1]]);
    } finally {
      world.remove();
    }
  });
});
