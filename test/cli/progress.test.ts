// `migrate` in a real pseudo-terminal (util-linux `script`): the progress bar
// is drawn in place on the terminal, colour follows NO_COLOR, and none of it reaches a pipe.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { legacyDirectoryNames } from "../../src/index.js";
import { hasCommand, run, skipBecause } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { BUILD_HOOK_TIMEOUT_MS, builtCli, runCli } from "./helpers.js";
import { makeAgentDir, plant, sessionText, type AgentFixture } from "./fixtures.js";

let base: { path: string; remove(): void };
let counter = 0;

const quote = (arg: string) => `'${arg.replace(/'/g, "'\\''")}'`;

/** A fixture whose workspace has two legacy sessions waiting to be migrated. */
function withLegacy(): AgentFixture {
  counter += 1;
  const f = makeAgentDir(base.path, `p${counter}`);
  const dir = `sessions/${legacyDirectoryNames(f.scope)[0] as string}`;
  for (const n of [1, 2]) {
    plant(f, `${dir}/2024-01-0${n}T00-00-00-000Z_old${n}.jsonl`, sessionText(f.scope.canonicalCwd, { id: `0180a0b0-0000-7000-8000-00000000000${n}` }));
  }
  fs.chmodSync(path.join(f.agentDir, ...dir.split("/")), 0o700);
  return f;
}

/** Runs the CLI with a terminal on stdin, stdout and stderr; returns what the terminal showed. */
function inTerminal(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): { status: number | null; screen: string } {
  const command = [process.execPath, builtCli(), ...args].map(quote).join(" ");
  const result = run("script", ["-qec", command, "/dev/null"], { cwd, env, timeout: 120_000 });
  return { status: result.status, screen: result.stdout };
}

beforeAll(() => {
  builtCli();
  base = makeTempDir("gjc-cli-pty-");
}, BUILD_HOOK_TIMEOUT_MS);

afterAll(() => base.remove());

describe("migrate progress", () => {
  it("draws a progress bar in place on a terminal, and migrates every legacy session", (ctx) => {
    if (!hasCommand("script")) skipBecause(ctx, "util-linux `script` is not installed (no pseudo-terminal driver)");
    const f = withLegacy();
    const { status, screen } = inTerminal(["migrate", "--agent-dir", f.agentDir], f.workspace, { ...process.env, NO_COLOR: "1" });
    expect(status, screen).toBe(0);
    // Redrawn in place: carriage return, erase line, then the bar.
    expect(screen).toContain("\r\u001b[2K(1/2) 2024-01-01T00-00-00-000Z_old1.jsonl [");
    expect(screen).toMatch(/\(2\/2\) \S+ \[#{24}\] 100% {2}\d+\/\d+ files {2}done/);
    expect(screen).not.toMatch(/\u001b\[3\dm/); // NO_COLOR: no colour codes
    expect(screen.match(/migrated/g)).toHaveLength(2);
    const after = runCli(["audit", "--agent-dir", f.agentDir, "--json"]);
    expect(after.status, after.stdout).toBe(0);
  });

  it("uses colour on a terminal when NO_COLOR is not set", (ctx) => {
    if (!hasCommand("script")) skipBecause(ctx, "util-linux `script` is not installed (no pseudo-terminal driver)");
    const f = withLegacy();
    const env = { ...process.env };
    delete env.NO_COLOR;
    const { status, screen } = inTerminal(["migrate", "--agent-dir", f.agentDir], f.workspace, env);
    expect(status, screen).toBe(0);
    expect(screen).toContain("\u001b[32mmigrated\u001b[39m");
  });

  it("draws no bar and no colour into a pipe", () => {
    const f = withLegacy();
    const env = { ...process.env };
    delete env.NO_COLOR;
    const result = run(process.execPath, [builtCli(), "migrate", "--agent-dir", f.agentDir], { cwd: f.workspace, env });
    expect(result.status, result.stderr).toBe(0);
    expect(result.stderr).toBe("");
    expect(result.stdout).not.toMatch(/\r|\u001b/);
    expect(result.stdout.match(/^migrated /gm)).toHaveLength(2);
  });
});
