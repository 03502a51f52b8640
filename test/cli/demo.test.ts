// `gjc-session demo` on a fresh machine: an empty HOME, as root and as an unprivileged uid.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";

import { hasCommand, isRoot, skipBecause } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { BUILD_HOOK_TIMEOUT_MS, builtCli, runCli } from "./helpers.js";

const UNPRIVILEGED = 65534;

function cleanEnv(home: string): NodeJS.ProcessEnv {
  // Nothing of the developer's environment may leak in: no agent dir, no config dir.
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, TMPDIR: home, NO_COLOR: "1" };
  return env;
}

function expectCleanDemo(stdout: string, stderr: string, status: number | null): void {
  expect(stderr).toBe("");
  expect(status).toBe(0);
  for (const marker of ["◀ leaf", "[first answer]", "compaction", "[image]", "found: Summarise", "migrated ", "clean: no findings", "everything checked out"]) {
    expect(stdout).toContain(marker);
  }
}

describe("gjc-session demo", () => {
  beforeAll(() => {
    builtCli();
  }, BUILD_HOOK_TIMEOUT_MS);

  it("runs clean with an empty HOME as the current user", () => {
    const home = makeTempDir("gjc-demo-home-");
    try {
      const result = runCli(["demo"], { env: cleanEnv(home.path), cwd: home.path });
      expectCleanDemo(result.stdout, result.stderr, result.status);
      // The temporary agent dir it made under TMPDIR is gone, and HOME stayed untouched.
      expect(result.stdout).toMatch(/removed .*gjc-demo-/);
      expect(fs.readdirSync(home.path)).toEqual([]);
    } finally {
      home.remove();
    }
  });

  it("runs clean in a given --agent-dir and leaves it auditable", () => {
    const home = makeTempDir("gjc-demo-home-");
    try {
      const agent = path.join(home.path, "agent");
      const result = runCli(["demo", "--agent-dir", agent], { env: cleanEnv(home.path), cwd: home.path });
      expectCleanDemo(result.stdout, result.stderr, result.status);
      const audit = runCli(["audit", "--agent-dir", agent], { env: cleanEnv(home.path) });
      expect(audit.status, audit.stdout).toBe(0);
    } finally {
      home.remove();
    }
  });

  it("runs clean with an empty HOME as an unprivileged uid", (ctx) => {
    if (!isRoot()) skipBecause(ctx, "not root: the first test already ran as an unprivileged user");
    if (!hasCommand("setpriv")) skipBecause(ctx, "setpriv (util-linux) is not installed");
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "gjc-demo-unpriv-"));
    try {
      fs.chownSync(home, UNPRIVILEGED, UNPRIVILEGED);
      const wrapper = ["setpriv", `--reuid=${UNPRIVILEGED}`, `--regid=${UNPRIVILEGED}`, "--clear-groups"];
      const result = runCli(["demo"], { env: cleanEnv(home), cwd: home, wrapper });
      expectCleanDemo(result.stdout, result.stderr, result.status);
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });
});
