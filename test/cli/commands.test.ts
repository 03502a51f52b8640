// list, show, context, history, migrate --dry-run, help and error output of the built CLI,
// on an agent dir the demo filled.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { makeTempDir } from "../helpers/temp.js";
import { BUILD_HOOK_TIMEOUT_MS, builtCli, runCli } from "./helpers.js";

let base: { path: string; remove(): void };
let agentDir: string;
let workspace: string;

const cli = (...args: string[]) => runCli([...args, "--agent-dir", agentDir], { cwd: workspace });

function json<T>(result: { stdout: string; stderr: string; status: number | null }): T {
  expect(result.stderr).toBe("");
  expect(result.status).toBe(0);
  return JSON.parse(result.stdout) as T;
}

interface Listed {
  sessions: { id: string; path: string; displayName: string; messageCount: number }[];
}

beforeAll(() => {
  builtCli();
  base = makeTempDir("gjc-cli-commands-");
  agentDir = path.join(base.path, "agent");
  workspace = path.join(base.path, "workspace");
  fs.mkdirSync(workspace);
  const demo = runCli(["demo", "--agent-dir", agentDir], { cwd: workspace });
  expect(demo.status, demo.stdout + demo.stderr).toBe(0);
}, BUILD_HOOK_TIMEOUT_MS);

afterAll(() => base.remove());

function mainSession(): Listed["sessions"][number] {
  const listed = json<Listed>(cli("list", "--json"));
  return listed.sessions.find((s) => s.displayName.startsWith("Summarise")) as Listed["sessions"][number];
}

describe("list", () => {
  it("lists the workspace's sessions (the demo's and the migrated copy), newest first, as JSON", () => {
    const listed = json<Listed>(cli("list", "--json"));
    expect(listed.sessions.map((s) => s.displayName).sort()).toEqual(["A question from before the v2 layout.", "Summarise the tokenizer module."]);
    expect(listed.sessions.every((s) => !("allMessagesText" in s))).toBe(true);
  });

  it("--all also lists the retained legacy source; --cwd picks another workspace", () => {
    expect(json<Listed>(cli("list", "--all", "--json")).sessions).toHaveLength(3);
    const other = path.join(base.path, "elsewhere");
    fs.mkdirSync(other, { recursive: true });
    expect(json<Listed>(cli("list", "--cwd", other, "--json")).sessions).toEqual([]);
  });

  it("prints aligned columns with a header", () => {
    const result = cli("list");
    expect(result.status).toBe(0);
    const lines = result.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^MODIFIED\s+ID\s+MSGS\s+TITLE$/);
    const titleAt = (lines[0] as string).indexOf("TITLE");
    for (const line of lines.slice(1)) expect(line.slice(titleAt - 2, titleAt)).toBe("  ");
  });
});

describe("show and context", () => {
  it("show prints the tree with the label and the leaf marked, by id prefix", () => {
    const { id } = mainSession();
    const result = cli("show", id.slice(0, 18));
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain(`Session ${id}`);
    expect(result.stdout).toMatch(/assistant: It splits input.*\[first answer\]/);
    expect(result.stdout.match(/◀ leaf/g)).toHaveLength(1);
    expect(result.stdout).toMatch(/├─ .*user: And the error handling\?/);
    expect(result.stdout).toMatch(/└─ .*user: Show me the diagram instead\./);
  });

  it("show accepts a session file path", () => {
    const { path: file } = mainSession();
    const result = cli("show", file);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain(file);
  });

  it("context --json rebuilds the model's view at the leaf and at --leaf", () => {
    const { id } = mainSession();
    type Ctx = { leafId: string; context: { messages: { role: string }[] } };
    const atLeaf = json<Ctx>(cli("context", id, "--json"));
    expect(atLeaf.context.messages.map((m) => m.role)).toEqual(["compactionSummary", "user", "assistant", "user", "assistant"]);
    const tree = cli("show", id).stdout;
    const firstUser = /([0-9a-f]{8}) user: Summarise/.exec(tree)?.[1] as string;
    expect(atLeaf.leafId.startsWith(firstUser)).toBe(false);
    const full = fs
      .readFileSync(mainSession().path, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { id?: string });
    const firstId = full.find((e) => e.id?.startsWith(firstUser))?.id as string;
    const early = json<Ctx>(cli("context", id, "--leaf", firstId, "--json"));
    expect(early.context.messages.map((m) => m.role)).toEqual(["user"]);
  });

  it("an unknown --leaf is one line with its code and exit 1", () => {
    const { id } = mainSession();
    const result = cli("context", id, "--leaf", "nope");
    expect(result.status).toBe(1);
    expect(result.stderr.trim().split("\n")).toEqual([expect.stringContaining("unknown_entry")]);
  });
});

describe("history", () => {
  it("search finds a prompt by prefix; recent lists the newest first", () => {
    const found = json<{ prompt: string }[]>(cli("history", "search", "tokeni", "--json"));
    expect(found.map((e) => e.prompt)).toEqual(["Summarise the tokenizer module."]);
    const recent = json<{ prompt: string }[]>(cli("history", "recent", "--json"));
    expect(recent.map((e) => e.prompt)).toEqual(["Show me the diagram instead.", "Summarise the tokenizer module."]);
  });

  it("--cwd limits to prompts typed in a directory", () => {
    const elsewhere = path.join(base.path, "elsewhere");
    fs.mkdirSync(elsewhere, { recursive: true });
    expect(json<unknown[]>(cli("history", "search", "tokeni", "--cwd", elsewhere, "--json"))).toEqual([]);
    expect(json<unknown[]>(cli("history", "search", "tokeni", "--cwd", "--json"))).toHaveLength(1);
  });
});

describe("migrate, help and errors", () => {
  it("migrate --dry-run after the demo has nothing left to do", () => {
    const result = cli("migrate", "--dry-run");
    expect(result.status).toBe(0);
    expect(result.stdout).toContain("no legacy sessions to migrate");
  });

  it("--help works on every command", () => {
    for (const command of [[], ["demo"], ["audit"], ["list"], ["show"], ["context"], ["migrate"], ["history"], ["history", "search"], ["history", "recent"]]) {
      const result = runCli([...command, "--help"]);
      expect(result.status, command.join(" ")).toBe(0);
      expect(result.stdout).toContain(`Usage: gjc-session${command.length > 0 ? ` ${command.join(" ")}` : ""}`);
    }
  });

  it("errors are one line with the code; --verbose adds the detail", () => {
    const plain = cli("show", "no-such-session");
    expect(plain.status).toBe(1);
    expect(plain.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^gjc-session: session_not_found: /)]);
    const verbose = cli("show", "no-such-session", "--verbose");
    expect(verbose.stderr.trim().split("\n").length).toBeGreaterThan(2);
    expect(verbose.stderr).toContain("CliError");
  });

  it("an unknown command or option is a usage error (exit 2)", () => {
    expect(runCli(["frobnicate"]).status).toBe(2);
    expect(runCli(["list", "--bogus"]).status).toBe(2);
  });
});

describe("read-only commands on a missing default agent dir", () => {
  it("history and list report nothing and create nothing", () => {
    const missing = path.join(base.path, "never-made");
    for (const args of [["history", "recent"], ["history", "search", "x"], ["list"], ["list", "--all"]]) {
      const result = runCli(args, { cwd: workspace, env: { GJC_CODING_AGENT_DIR: missing } });
      expect(result.status, `${args.join(" ")}: ${result.stderr}`).toBe(0);
      expect(result.stdout).toMatch(/^no (prompts|sessions)\n$/);
    }
    expect(fs.existsSync(missing)).toBe(false);
  });
});
