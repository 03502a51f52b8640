// The command line's first-use slips (issue 17, finding 6, and the CLI half of finding 3):
// --version, singular counts, an unreadable agent dir as one documented code, `history search
// --cwd <query>`, the legacy hints of `list` and `migrate`, distinguishable legacy rows, and
// `show` of a refused session file naming its refusal.
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { HistoryStorage, SessionManager } from "../../src/index.js";
import { hasCommand, isRoot, REPO_ROOT, skipBecause } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { assistant } from "../manager/helpers.js";
import { BUILD_HOOK_TIMEOUT_MS, builtCli, runCli } from "./helpers.js";

const UNPRIVILEGED = 65534;

let base: { path: string; remove(): void };
let agentDir: string;
let workspace: string;

const cli = (...args: string[]) => runCli([...args, "--agent-dir", agentDir], { cwd: workspace });

beforeAll(() => {
  builtCli();
}, BUILD_HOOK_TIMEOUT_MS);

beforeEach(() => {
  base = makeTempDir("gjc-cli-findings-");
  agentDir = path.join(base.path, "agent");
  workspace = path.join(base.path, "workspace");
  fs.mkdirSync(workspace);
  fs.mkdirSync(agentDir, { mode: 0o700 });
});
afterEach(() => {
  // An unprivileged test leaves the tree to another uid with no permissions.
  fs.chmodSync(agentDir, 0o700);
  base.remove();
});

async function managedSession(text: string): Promise<string> {
  const manager = SessionManager.create(workspace, undefined, undefined, { agentDir, terminalId: null });
  manager.appendMessage(assistant(text));
  await manager.close();
  return manager.getSessionFile()!;
}

/** A legacy folder of the workspace as pi writes it: 0755, its files 0644. */
function piFolder(files: Record<string, string>, mode = 0o755, fileMode = 0o644): string {
  const sessions = path.join(agentDir, "sessions");
  fs.mkdirSync(sessions, { mode: 0o700, recursive: true });
  const folder = path.join(sessions, `--${workspace.slice(1).replaceAll("/", "-")}--`);
  fs.mkdirSync(folder, { mode });
  fs.chmodSync(folder, mode);
  for (const [name, text] of Object.entries(files)) {
    fs.writeFileSync(path.join(folder, name), text);
    fs.chmodSync(path.join(folder, name), fileMode);
  }
  return folder;
}

const ID = "0190a0b0-3e82-7000-8000-000000000001";
const legacyFile = (cwd: string | undefined) =>
  `${JSON.stringify({ type: "session", version: 3, id: ID, timestamp: "2025-01-01T00:00:00.000Z", ...(cwd === undefined ? {} : { cwd }) })}\n` +
  `${JSON.stringify({ type: "message", id: "a1", parentId: null, timestamp: "2025-01-01T00:00:01.000Z", message: { role: "user", content: "hello", timestamp: 1 } })}\n`;

describe("version and counts", () => {
  it("--version prints the package version", () => {
    const { version } = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as { version: string };
    const result = cli("--version");
    expect(result.status).toBe(0);
    expect(result.stdout.trim()).toBe(version);
  });

  it("audit counts one session as `1 session`", async () => {
    await managedSession("one");
    const result = cli("audit");
    expect(result.stdout).toMatch(/ 1 session, /);
    expect(result.stdout).not.toMatch(/1 sessions/);
  });
});

describe("history search --cwd", () => {
  it("takes `--cwd DIR QUERY` as given, and a lone word after --cwd as the query in the current directory", () => {
    const history = HistoryStorage.open(path.join(agentDir, "history.db"));
    history.add("fix the tokenizer here", workspace);
    history.add("tokenizer elsewhere", "/elsewhere");
    history.close();
    const given = cli("history", "search", "--cwd", workspace, "tokenizer", "--json");
    expect(given.status, given.stderr).toBe(0);
    expect((JSON.parse(given.stdout) as { prompt: string }[]).map((e) => e.prompt)).toEqual(["fix the tokenizer here"]);
    const lone = cli("history", "search", "--cwd", "tokenizer", "--json");
    expect(lone.status, lone.stderr).toBe(0);
    expect((JSON.parse(lone.stdout) as { prompt: string }[]).map((e) => e.prompt)).toEqual(["fix the tokenizer here"]);
    const none = cli("history", "search");
    expect(none.status).toBe(2);
    expect(none.stderr).toContain("missing required argument 'query'");
  });
});

describe("legacy sessions", () => {
  it("list hints at unmigrated legacy sessions; list --all sums up a pi folder's; migrate names a header without cwd", () => {
    const folder = piFolder({ [`2025-01-01T00-00-00-000Z_${ID}.jsonl`]: legacyFile(workspace), "2025-01-02T00-00-00-000Z_nocwd.jsonl": legacyFile(undefined) });
    const list = cli("list");
    expect(list.status, list.stderr).toBe(0);
    expect(list.stdout).toContain("no sessions");
    expect(list.stdout).toContain("1 legacy session of this workspace not migrated yet: `gjc-session migrate`");
    expect(JSON.parse(cli("list", "--json").stdout)).toMatchObject({
      sessions: [],
      legacyUnmigrated: [path.join(folder, `2025-01-01T00-00-00-000Z_${ID}.jsonl`)],
    });

    const all = cli("list", "--all");
    expect(all.status, all.stderr).toBe(0);
    // pi's 0755 folder is not a refusal to repeat on every run: its sessions are summed up.
    expect(all.stdout).not.toContain(`skipped ${folder}`);
    expect(all.stdout).toContain("1 legacy session not migrated yet: `gjc-session migrate --all`");

    const migrate = cli("migrate");
    expect(migrate.status, migrate.stderr).toBe(0);
    expect(migrate.stdout).toContain(`not migrated ${path.join(folder, "2025-01-02T00-00-00-000Z_nocwd.jsonl")}: invalid_header`);
    expect(cli("list").stdout).not.toContain("legacy session");
  });

  it("list --all tells a retained legacy source from its migrated copy", () => {
    piFolder({ [`2025-01-01T00-00-00-000Z_${ID}.jsonl`]: legacyFile(workspace) }, 0o700, 0o600);
    expect(cli("migrate").status).toBe(0);
    const listed = JSON.parse(cli("list", "--all", "--json").stdout) as { sessions: { id: string; layout: string }[] };
    expect(
      listed.sessions
        .filter((s) => s.id === ID)
        .map((s) => s.layout)
        .sort(),
    ).toEqual(["legacy", "v2"]);
    const rows = cli("list", "--all")
      .stdout.split("\n")
      .filter((line) => line.includes(ID.slice(0, 8)));
    expect(rows).toHaveLength(2);
    expect(new Set(rows).size).toBe(2);
    expect(rows.map((row) => row.split(/\s+/)[4]).sort()).toEqual(["legacy", "v2"]);
  });
});

describe("a refused session file", () => {
  it("show by id says why it is refused (its code), not session_not_found", async () => {
    const file = await managedSession("loose");
    fs.chmodSync(file, 0o644);
    const id = path.basename(file, ".jsonl").split("_").pop()!;
    const show = cli("show", id.slice(0, 13));
    expect(show.status).toBe(1);
    expect(show.stderr).toMatch(/^gjc-session: unsafe_entry: session .* is refused: .*\(mode_mismatch\); `gjc-session audit --fix`/);
    expect(cli("show", file).stderr).toMatch(/^gjc-session: unsafe_entry: .*mode_mismatch/);
    const fixed = cli("audit", "--fix");
    expect(fixed.stdout).toContain("repaired");
    expect(cli("show", id).status).toBe(0);
  });
});

describe("an agent dir this user cannot read", () => {
  it("every reading command prints agent_dir_unusable, not a raw EACCES (as an unprivileged uid)", async (ctx) => {
    if (!isRoot()) skipBecause(ctx, "needs root to hand the tree to another uid");
    if (!hasCommand("setpriv")) skipBecause(ctx, "setpriv (util-linux) is not installed");
    await managedSession("kept");
    fs.chownSync(base.path, UNPRIVILEGED, UNPRIVILEGED);
    fs.chownSync(agentDir, UNPRIVILEGED, UNPRIVILEGED);
    fs.chmodSync(agentDir, 0o000);
    const wrapper = ["setpriv", `--reuid=${UNPRIVILEGED}`, `--regid=${UNPRIVILEGED}`, "--clear-groups"];
    for (const args of [
      ["list", "--all"],
      ["show", "0190"],
      ["context", "0190"],
      ["history", "recent"],
      ["history", "search", "x"],
    ]) {
      const result = runCli([...args, "--agent-dir", agentDir], { cwd: "/", wrapper });
      expect(result.status, args.join(" ")).toBe(1);
      expect(result.stderr.trim(), args.join(" ")).toMatch(/^gjc-session: agent_dir_unusable: cannot (open|read) .*: permission_denied$/);
    }
    const audit = runCli(["audit", "--agent-dir", agentDir], { cwd: "/", wrapper });
    expect(audit.stderr).toMatch(/^gjc-session: agent_dir_unusable: /);
  });
});
