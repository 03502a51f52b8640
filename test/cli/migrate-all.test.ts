// `migrate --all` over a pi user's agent directory: every workspace's legacy sessions copied into its scope, a
// deleted workspace's named once and migrated when named with `--cwd` (into the scope of the path it had), pi's
// directories made owner-only only with a line saying so, and neither `list --all` nor `audit` asking again.
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { makeTempDir } from "../helpers/temp.js";
import { BUILD_HOOK_TIMEOUT_MS, builtCli, runCli } from "./helpers.js";

let base: { path: string; remove(): void };
let agentDir: string;
let live: string;
let gone: string;

const cli = (...args: string[]) => runCli([...args, "--agent-dir", agentDir], { cwd: base.path });

beforeAll(() => {
  builtCli();
}, BUILD_HOOK_TIMEOUT_MS);

beforeEach(() => {
  base = makeTempDir("gjc-cli-migrate-all-");
  agentDir = path.join(base.path, "pi-agent");
  live = path.join(base.path, "live");
  gone = path.join(base.path, "deleted");
  fs.mkdirSync(live);
  fs.mkdirSync(agentDir, { mode: 0o755 });
  fs.chmodSync(agentDir, 0o755);
});
afterEach(() => base.remove());

const LIVE_ID = "0190a0b0-3e82-7000-8000-0000000000a1";
const GONE_ID = "0190a0b0-3e82-7000-8000-0000000000b2";

/** A session pi wrote for `cwd` in its `--<cwd>--` folder, with a long first prompt and a few turns; folder and file modes as given. */
function piSession(cwd: string, id: string, modes: { dir: number; file: number }): string {
  const folder = path.join(agentDir, "sessions", `--${cwd.slice(1).replaceAll("/", "-")}--`);
  fs.mkdirSync(folder, { recursive: true });
  for (const dir of [path.join(agentDir, "sessions"), folder]) fs.chmodSync(dir, modes.dir);
  const lines: unknown[] = [{ type: "session", version: 3, id, timestamp: "2025-01-01T00:00:00.000Z", cwd }];
  let parentId: string | null = null;
  for (let i = 0; i < 6; i++) {
    const role = i % 2 === 0 ? "user" : "assistant";
    const text = i === 0 ? `Please review this file:\n${"const x = 1;\n".repeat(600)}` : `turn ${i}`;
    const entryId = `e${i}`;
    lines.push({
      type: "message",
      id: entryId,
      parentId,
      timestamp: `2025-01-01T00:00:0${i}.000Z`,
      message: { role, content: [{ type: "text", text }], timestamp: i },
    });
    parentId = entryId;
  }
  const file = path.join(folder, `2025-01-01T00-00-00-000Z_${id}.jsonl`);
  fs.writeFileSync(file, lines.map((line) => JSON.stringify(line)).join("\n") + "\n");
  fs.chmodSync(file, modes.file);
  return file;
}

describe("migrate --all", () => {
  it("copies each live workspace's sessions, names a deleted workspace once, says what it made owner-only, and list --all stops asking", () => {
    const liveFile = piSession(live, LIVE_ID, { dir: 0o755, file: 0o644 });
    const goneFile = piSession(gone, GONE_ID, { dir: 0o755, file: 0o644 });
    const bytes = [fs.readFileSync(liveFile), fs.readFileSync(goneFile)];

    // pi's agent directory is still 0755: nothing managed is read through it (refused), but the legacy sessions are counted.
    const before = cli("list", "--all");
    expect(before.status, before.stderr).toBe(1);
    expect(before.stderr).toContain("mode_mismatch");
    expect(before.stdout).toContain("1 legacy session not migrated yet: `gjc-session migrate --all`");
    expect(before.stdout).not.toContain("skipped");

    const dry = cli("migrate", "--all", "--dry-run");
    expect(dry.status, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(`Would migrate 1 legacy session into`);
    expect(fs.statSync(agentDir).mode & 0o777).toBe(0o755);

    const run = cli("migrate", "--all");
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain(`made ${agentDir} owner-only (mode 0700)`);
    expect(run.stdout).toContain(`migrated  ${liveFile}`);
    // The deleted workspace: said once, at the end; not as a failure of the live workspace.
    expect(run.stdout.split(gone).length - 1).toBe(2);
    expect(run.stdout).toContain(`1 legacy session of ${gone}, which no longer exists, left where they are: \`gjc-session migrate --cwd ${gone}\``);
    expect(run.stdout).not.toContain("cwd_missing");

    const after = cli("list", "--all");
    expect(after.stdout).toContain(LIVE_ID.slice(0, 8));
    expect(after.stdout).not.toContain("legacy session");
    expect(after.stdout).not.toContain("skipped");
    // pi's folders and files are left as pi made them.
    expect([fs.readFileSync(liveFile), fs.readFileSync(goneFile)]).toEqual(bytes);
    expect(fs.statSync(path.dirname(liveFile)).mode & 0o777).toBe(0o755);
    expect(fs.statSync(liveFile).mode & 0o777).toBe(0o644);
  });

  it("a deleted workspace named with --cwd is migrated into the scope of its path; then migrate --all and audit are settled", () => {
    piSession(live, LIVE_ID, { dir: 0o700, file: 0o600 });
    const goneFile = piSession(gone, GONE_ID, { dir: 0o700, file: 0o600 });
    fs.chmodSync(agentDir, 0o700);
    expect(cli("migrate", "--all").status).toBe(0);
    const unsettled = cli("audit", "--json");
    expect(unsettled.status).toBe(1);
    const findings = (JSON.parse(unsettled.stdout) as { objects: { path: string; findings: { code: string }[] }[] }).objects;
    expect(findings.flatMap((o) => o.findings.map((f) => `${o.path}:${f.code}`))).toEqual([`${path.relative(agentDir, goneFile)}:legacy_unmigrated`]);

    const named = cli("migrate", "--cwd", gone);
    expect(named.status, named.stderr).toBe(0);
    expect(named.stdout).toContain(`migrated  ${goneFile}`);
    expect(fs.existsSync(gone)).toBe(false);
    const listed = JSON.parse(cli("list", "--all", "--json").stdout) as { sessions: { id: string; cwd: string; layout: string }[] };
    expect(
      listed.sessions
        .filter((s) => s.layout === "v2")
        .map((s) => [s.id, s.cwd])
        .sort(),
    ).toEqual([
      [LIVE_ID, live],
      [GONE_ID, gone],
    ]);
    expect(cli("migrate", "--all").stdout).not.toContain(gone);
    const audit = cli("audit");
    expect(audit.status, audit.stdout).toBe(0);

    // Made again at that path, the workspace finds its sessions in that scope.
    fs.mkdirSync(gone);
    const again = JSON.parse(cli("list", "--cwd", gone, "--json").stdout) as { sessions: { id: string }[] };
    expect(again.sessions.map((s) => s.id)).toEqual([GONE_ID]);
  });

  it("a --cwd that does not exist and that no legacy session names is still cwd_missing; --all with --cwd is a usage error", () => {
    const typo = cli("migrate", "--cwd", path.join(base.path, "no-such-workspace"));
    expect(typo.status).toBe(1);
    expect(typo.stderr).toContain("cwd_missing");
    expect(fs.existsSync(path.join(agentDir, "sessions"))).toBe(false);
    expect(cli("migrate", "--all", "--cwd", live).status).toBe(2);
  });
});
