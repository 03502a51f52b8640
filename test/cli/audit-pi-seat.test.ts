// `audit` on a pi user's agent directory: pi's own `sessions/--<cwd>--/` folders (0755) and files (0644) are legacy
// sources, read by the legacy rules as migration reads them. Before migration they are `legacy_unmigrated` warnings
// only, after it nothing at all, and `audit --fix` never changes their modes. A legacy source that another user could
// change (group/other-writable, foreign owner, a link, extra hard links) is still an error, and still left alone.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { auditAgentDir, AuditReportSchema, type AuditReport } from "../../src/index.js";
import { hasCommand, isRoot, skipBecause } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { BUILD_HOOK_TIMEOUT_MS, builtCli, runCli } from "./helpers.js";

const UNPRIVILEGED = 65534;
let base: { path: string; remove(): void };
let agentDir: string;

const cli = (...args: string[]) => runCli([...args, "--agent-dir", agentDir], { cwd: base.path });

beforeAll(() => {
  builtCli();
}, BUILD_HOOK_TIMEOUT_MS);

beforeEach(() => {
  base = makeTempDir("gjc-audit-pi-seat-");
  agentDir = path.join(base.path, "pi-agent");
  fs.mkdirSync(path.join(agentDir, "sessions"), { recursive: true });
  for (const dir of [agentDir, path.join(agentDir, "sessions")]) fs.chmodSync(dir, 0o755);
});
afterEach(() => base.remove());

/** A session pi wrote for workspace `name` (created) in its `--<cwd>--` folder, as pi makes them: folder 0755, file 0644. */
function piSession(name: string, id: string): string {
  const cwd = path.join(base.path, name);
  fs.mkdirSync(cwd, { recursive: true });
  const folder = path.join(agentDir, "sessions", `--${cwd.slice(1).replaceAll("/", "-")}--`);
  fs.mkdirSync(folder, { recursive: true });
  fs.chmodSync(folder, 0o755);
  const lines: unknown[] = [{ type: "session", version: 3, id, timestamp: "2025-03-01T09:00:00.000Z", cwd }];
  let parentId: string | null = null;
  for (let i = 0; i < 8; i++) {
    const role = i % 2 === 0 ? "user" : "assistant";
    const text = i === 0 ? `Why does this fail?\n${"    at Object.<anonymous> (/srv/app/index.js:12:5)\n".repeat(120)}` : `turn ${i} of ${name}`;
    lines.push({
      type: "message",
      id: `m${i}`,
      parentId,
      timestamp: `2025-03-01T09:00:0${i}.000Z`,
      message: { role, content: [{ type: "text", text }], timestamp: i },
    });
    parentId = `m${i}`;
  }
  const file = path.join(folder, `2025-03-01T09-00-00-000Z_${id}.jsonl`);
  fs.writeFileSync(file, lines.map((line) => JSON.stringify(line)).join("\n") + "\n");
  fs.chmodSync(file, 0o644);
  return file;
}

/** Every finding as `path:code:severity`. */
function findings(report: AuditReport): string[] {
  return report.objects.flatMap((o) => o.findings.map((f) => `${o.path}:${f.code}:${f.severity}`));
}

function auditJson(...extra: string[]): { status: number | null; report: AuditReport } {
  const result = cli("audit", "--json", ...extra);
  return { status: result.status, report: AuditReportSchema.parse(JSON.parse(result.stdout)) };
}

const modeOf = (p: string) => fs.lstatSync(p).mode & 0o7777;
const rel = (p: string) => path.relative(agentDir, p);

describe("audit on a pi user's seat", () => {
  it("pi's 0755 folders and 0644 files are warned about only until migrated, then the audit is clean; --fix leaves them as pi made them", () => {
    const files = [piSession("shop", "0190a0b0-3e82-7000-8000-00000000c001"), piSession("blog", "0190a0b0-3e82-7000-8000-00000000c002")];
    // The agent dir and sessions/ are the store's (migration makes them owner-only); here already, to see pi's folders alone.
    for (const dir of [agentDir, path.join(agentDir, "sessions")]) fs.chmodSync(dir, 0o700);

    const before = auditJson();
    expect(before.status).toBe(1);
    expect(findings(before.report).sort()).toEqual(files.map((f) => `${rel(f)}:legacy_unmigrated:warning`).sort());
    expect(before.report.counts.errors).toBe(0);
    expect(before.report.counts.sessions).toBe(2);

    const fixed = auditJson("--fix");
    expect(fixed.report.repairs?.filter((r) => r.outcome === "repaired")).toEqual([]);
    for (const file of files) expect([modeOf(path.dirname(file)), modeOf(file)]).toEqual([0o755, 0o644]);

    const migrated = cli("migrate", "--all");
    expect(migrated.status, migrated.stderr).toBe(0);
    const after = cli("audit");
    expect(after.status, after.stdout).toBe(0);
    expect(auditAgentDir(agentDir).clean).toBe(true);
    const fixAfter = auditJson("--fix");
    expect(fixAfter.status).toBe(0);
    expect(fixAfter.report.repairs).toEqual([]);
    for (const file of files) expect([modeOf(path.dirname(file)), modeOf(file)]).toEqual([0o755, 0o644]);
  });

  it("after the first migration of a seat pi left at 0755 throughout, the audit passes", () => {
    const file = piSession("shop", "0190a0b0-3e82-7000-8000-00000000c003");
    const migrated = cli("migrate", "--all");
    expect(migrated.status, migrated.stderr).toBe(0);
    const { status, report } = auditJson();
    expect([status, findings(report)]).toEqual([0, []]);
    expect([modeOf(path.dirname(file)), modeOf(file)]).toEqual([0o755, 0o644]);
  });

  it("a legacy source others could change is still an error, and --fix refuses it as outside the layout", () => {
    for (const dir of [agentDir, path.join(agentDir, "sessions")]) fs.chmodSync(dir, 0o700);
    const open = piSession("open-folder", "0190a0b0-3e82-7000-8000-00000000c004");
    fs.chmodSync(path.dirname(open), 0o775);
    const writable = piSession("writable-file", "0190a0b0-3e82-7000-8000-00000000c005");
    fs.chmodSync(writable, 0o666);
    const linked = piSession("linked", "0190a0b0-3e82-7000-8000-00000000c006");
    fs.linkSync(linked, path.join(base.path, "second-name.jsonl"));
    const target = piSession("target", "0190a0b0-3e82-7000-8000-00000000c007");
    const symlink = path.join(path.dirname(target), "2025-03-02T00-00-00-000Z_0190a0b0-3e82-7000-8000-00000000c008.jsonl");
    fs.symlinkSync(target, symlink);

    const { status, report } = auditJson("--fix");
    expect(status).toBe(1);
    const found = findings(report);
    expect(found).toContain(`${rel(path.dirname(open))}:mode_mismatch:error`);
    expect(found).toContain(`${rel(path.dirname(open))}:not_audited:warning`);
    expect(found).toContain(`${rel(writable)}:mode_mismatch:error`);
    expect(found).toContain(`${rel(linked)}:hardlink_refused:error`);
    expect(found).toContain(`${rel(symlink)}:symlink_refused:error`);
    // The pi-made modes that are fine are not findings.
    expect(found.filter((f) => f.includes(rel(path.dirname(writable))) && f.includes("mode_mismatch"))).toEqual([`${rel(writable)}:mode_mismatch:error`]);
    expect(report.objects.find((o) => o.path === rel(writable))?.findings[0]).toMatchObject({ detail: "0666", fixable: false });
    const refused = Object.fromEntries((report.repairs ?? []).map((r) => [r.path, r.reason]));
    expect(refused[rel(path.dirname(open))]).toBe("outside_layout");
    expect(refused[rel(writable)]).toBe("outside_layout");
    expect(refused[rel(linked)]).toBe("hardlink_refused");
    expect([modeOf(path.dirname(open)), modeOf(writable)]).toEqual([0o775, 0o666]);
    expect(report.undoFile).toBeUndefined();
  });

  it("a legacy file another user owns is owner_mismatch", (ctx) => {
    if (!isRoot()) skipBecause(ctx, "needs root to give a file to another uid");
    for (const dir of [agentDir, path.join(agentDir, "sessions")]) fs.chmodSync(dir, 0o700);
    const foreign = piSession("foreign", "0190a0b0-3e82-7000-8000-00000000c009");
    fs.lchownSync(foreign, UNPRIVILEGED, UNPRIVILEGED);
    const { status, report } = auditJson("--fix");
    expect(status).toBe(1);
    expect(findings(report)).toContain(`${rel(foreign)}:owner_mismatch:error`);
    expect(report.repairs?.find((r) => r.path === rel(foreign))?.reason).toBe("owner_mismatch");
    expect([fs.lstatSync(foreign).uid, modeOf(foreign)]).toEqual([UNPRIVILEGED, 0o644]);
  });

  it("as an unprivileged uid: pi's seat migrates and then audits clean, pi's folders left as pi made them", (ctx) => {
    if (!isRoot()) skipBecause(ctx, "needs root to hand a tree to another uid");
    if (!hasCommand("setpriv")) skipBecause(ctx, "setpriv (util-linux) is not installed");
    // Under the system temp dir: the test's own base is root's, and not searchable by the other uid.
    const owner = fs.mkdtempSync(path.join(os.tmpdir(), "gjc-audit-pi-seat-unpriv-"));
    ctx.onTestFinished(() => fs.rmSync(owner, { recursive: true, force: true }));
    fs.chmodSync(owner, 0o755);
    base.remove();
    base = { path: owner, remove: () => {} };
    agentDir = path.join(owner, "pi-agent");
    fs.mkdirSync(path.join(agentDir, "sessions"), { recursive: true, mode: 0o755 });
    const file = piSession("shop", "0190a0b0-3e82-7000-8000-00000000c010");
    const chownTree = (p: string): void => {
      fs.lchownSync(p, UNPRIVILEGED, UNPRIVILEGED);
      if (fs.lstatSync(p).isDirectory()) for (const name of fs.readdirSync(p)) chownTree(path.join(p, name));
    };
    chownTree(owner);
    const wrapper = ["setpriv", `--reuid=${UNPRIVILEGED}`, `--regid=${UNPRIVILEGED}`, "--clear-groups"];
    const as = (...args: string[]) => runCli([...args, "--agent-dir", agentDir], { cwd: owner, wrapper, env: { HOME: "/nonexistent" } });
    const migrated = as("migrate", "--all");
    expect(migrated.status, migrated.stderr).toBe(0);
    const audit = as("audit", "--fix", "--json");
    expect(audit.stderr).toBe("");
    const report = AuditReportSchema.parse(JSON.parse(audit.stdout));
    expect([audit.status, findings(report), report.repairs]).toEqual([0, [], []]);
    expect([modeOf(path.dirname(file)), modeOf(file), fs.lstatSync(file).uid]).toEqual([0o755, 0o644, UNPRIVILEGED]);
  });
});
