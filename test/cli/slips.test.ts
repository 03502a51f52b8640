// The command line's first-use slips of issue 29: output cut short by its reader, an empty session
// file, usage errors in the one error form, refusals in a person's terms, a mistyped --agent-dir,
// one JSON time format and key set, the history error's advice, the LICENSE.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { resolveManagedScopeOrThrow, SecureDir } from "../../src/index.js";
import { REPO_ROOT, run } from "../helpers/processes.js";
import { generateSession } from "../helpers/session-corpus.js";
import { makeTempDir } from "../helpers/temp.js";
import { BUILD_HOOK_TIMEOUT_MS, builtCli, runCli } from "./helpers.js";

let base: { path: string; remove(): void };
let agentDir: string;
let workspace: string;
let sessionFile: string;
let sessionId: string;

const cli = (...args: string[]) => runCli([...args, "--agent-dir", agentDir], { cwd: workspace });
const ERROR_LINE = /^gjc-session: [a-z_]+: \S.*$/;

beforeAll(() => {
  builtCli();
  base = makeTempDir("gjc-cli-slips-");
  agentDir = path.join(base.path, "agent");
  workspace = path.join(base.path, "workspace");
  fs.mkdirSync(workspace);
  const demo = runCli(["demo", "--agent-dir", agentDir], { cwd: workspace });
  expect(demo.status, demo.stderr).toBe(0);
  const scope = resolveManagedScopeOrThrow({ cwd: workspace, agentDir, mode: "write" });
  const session = generateSession({ seed: 7, cwd: scope.canonicalCwd, entries: 600 });
  const dir = SecureDir.openRoot(agentDir).openDir(["sessions", scope.directoryName]);
  dir.writeFileAtomic(session.name, session.text);
  dir.close();
  sessionFile = path.join(scope.directoryPath, session.name);
  sessionId = session.id;
}, BUILD_HOOK_TIMEOUT_MS);

afterAll(() => base?.remove());

/** Runs the CLI with its stdout into a reader that exits at once without reading (as `| head` does once it has its lines). */
function intoClosedPipe(args: readonly string[]): { cliStatus: string; stderr: string } {
  const quoted = [process.execPath, builtCli(), ...args, "--agent-dir", agentDir].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
  const result = run("bash", ["-c", `${quoted} | true; echo "status=\${PIPESTATUS[0]}" >&2`], { cwd: workspace, env: { ...process.env, NO_COLOR: "1" } });
  const status = /status=(\d+)/.exec(result.stderr)?.[1] ?? "none";
  return { cliStatus: status, stderr: result.stderr.replace(/status=\d+\n?/, "") };
}

describe("output cut short by its reader", () => {
  it.each([
    ["list", "--all"],
    ["show", "SESSION"],
    ["context", "SESSION"],
    ["show", "SESSION", "--json"],
  ])("%s %s ends quietly with status 0", (...args) => {
    const { cliStatus, stderr } = intoClosedPipe(args.map((a) => (a === "SESSION" ? sessionId : a)));
    expect(stderr).toBe("");
    expect(cliStatus).toBe("0");
  });
});

describe("errors", () => {
  it("show and context of an empty file: `empty`, exit 1, no invented session", () => {
    const empty = path.join(base.path, "empty.jsonl");
    fs.writeFileSync(empty, "");
    for (const command of ["show", "context"]) {
      const result = cli(command, empty);
      expect(result.status).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^gjc-session: empty: .*empty\.jsonl holds no session/)]);
    }
  });

  it.each([[["frobnicate"]], [["list", "--bogus"]], [["show"]], [["context", "a", "b"]], [["history", "recent", "--limit", "-3"]]])(
    "usage error %j: one line `gjc-session: usage: ...`, exit 2",
    (args) => {
      const result = runCli(args, { cwd: workspace });
      expect(result.status).toBe(2);
      expect(result.stdout).toBe("");
      expect(result.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^gjc-session: usage: \S.*\(add --help for usage\)$/)]);
    },
  );

  it("--help still prints the usage, exit 0", () => {
    const result = runCli(["show", "--help"]);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain("Usage: gjc-session show");
  });

  it("a refused or missing file is said in a person's terms, the syscall only with --verbose", () => {
    const link = path.join(base.path, "link.jsonl");
    fs.symlinkSync(sessionFile, link);
    const refused = cli("show", link);
    expect(refused.status).toBe(1);
    expect(refused.stderr.trim()).toBe(`gjc-session: symlink_refused: ${link} is a symbolic link, and links are never followed`);
    expect(cli("show", link, "--verbose").stderr).toMatch(/ELOOP/);
    const missing = cli("context", path.join(base.path, "gone.jsonl"));
    expect(missing.stderr.trim()).toBe(`gjc-session: not_found: ${path.join(base.path, "gone.jsonl")} does not exist`);
    for (const result of [refused, missing]) expect(result.stderr).not.toMatch(/ELOOP|ENOENT|fstat|openFile|failed for/);
  });

  it("a mistyped --agent-dir is agent_dir_not_found (exit 1) for every reading command, and creates nothing", () => {
    const typo = path.join(base.path, "agnet");
    for (const args of [
      ["list"],
      ["list", "--all"],
      ["show", "0190"],
      ["context", "0190"],
      ["history", "recent"],
      ["history", "search", "x"],
      ["migrate", "--dry-run"],
    ]) {
      const result = runCli([...args, "--agent-dir", typo], { cwd: workspace });
      expect(result.status, args.join(" ")).toBe(1);
      expect(result.stderr.trim().split("\n"), args.join(" ")).toEqual([`gjc-session: agent_dir_not_found: no agent directory at ${typo} (--agent-dir)`]);
    }
    expect(fs.existsSync(typo)).toBe(false);
  });

  it("a missing default agent directory still lists as empty", () => {
    const missing = path.join(base.path, "not-yet");
    const result = runCli(["list"], { cwd: workspace, env: { GJC_CODING_AGENT_DIR: missing } });
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toBe("no sessions\n");
    expect(fs.existsSync(missing)).toBe(false);
  });

  it("the history error gives its advice before the reasons, whole on one line", () => {
    const result = runCli(["history", "recent", "--agent-dir", agentDir], { env: { GJC_SQLITE_DRIVER: "bun:sqlite" } });
    expect(result.status).toBe(1);
    const line = result.stderr.trim();
    expect(line.split("\n")).toHaveLength(1);
    expect(line).toMatch(ERROR_LINE);
    expect(line.indexOf("use Node 22.13+")).toBeGreaterThan(0);
    expect(line.indexOf("use Node 22.13+")).toBeLessThan(line.indexOf("bun:sqlite:"));
    expect(line).toContain("npm rebuild better-sqlite3");
  });
});

describe("JSON output", () => {
  const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

  it("list and list --all print the same keys, times as ISO strings", () => {
    const one = JSON.parse(cli("list", "--json").stdout) as Record<string, unknown>;
    const all = JSON.parse(cli("list", "--all", "--json").stdout) as Record<string, unknown>;
    expect(Object.keys(one).sort()).toEqual(Object.keys(all).sort());
    expect(Object.keys(one).sort()).toEqual(["legacyUnmigrated", "sessions", "skipped"]);
    for (const listed of [one, all]) {
      for (const session of listed.sessions as { created: unknown; modified: unknown }[]) {
        expect(session.created).toMatch(ISO);
        expect(session.modified).toMatch(ISO);
      }
    }
    // The demo migrated its legacy session: nothing is left unmigrated in either mode.
    expect(all.legacyUnmigrated).toEqual([]);
  });

  it("history --json gives each prompt's time as an ISO string", () => {
    const rows = JSON.parse(cli("history", "recent", "--json").stdout) as Record<string, unknown>[];
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(row.created).toMatch(ISO);
      expect(row).not.toHaveProperty("created_at");
    }
  });
});

it("the package has an MIT LICENSE naming its contributors, as package.json says", () => {
  const license = fs.readFileSync(path.join(REPO_ROOT, "LICENSE"), "utf8");
  expect(license.split("\n")[0]).toBe("MIT License");
  expect(license).toMatch(/^Copyright \(c\) \d{4} gjc-session-store contributors$/m);
  expect((JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as { license: string }).license).toBe("MIT");
});
