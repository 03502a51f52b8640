// The tree stays laid out by its formatters (scripts/format.mjs): a line is a stable unit in a diff.
import path from "node:path";

import { describe, expect, it } from "vitest";

import { hasCommand, run, skipBecause } from "./helpers/processes.js";

const ROOT = path.resolve(import.meta.dirname, "..");

describe("formatting", () => {
  it("leaves nothing for prettier or clang-format to change", (ctx) => {
    // .ci/run installs clang-format; elsewhere the C++ half cannot be checked.
    if (!hasCommand("clang-format")) skipBecause(ctx, "clang-format is not installed");
    const checked = run(process.execPath, [path.join(ROOT, "scripts", "format.mjs"), "--check"], { cwd: ROOT, timeout: 120_000 });
    expect(checked.stderr).toBe("");
    expect(checked.stdout.split("\n").filter(Boolean), "run `npm run format`").toEqual([]);
    expect(checked.status).toBe(0);
  });
});
