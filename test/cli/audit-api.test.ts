// auditAgentDir called as a library (no CLI): its errors, options and bounds; and the CLI
// audit run as an unprivileged uid, where the OS itself refuses what root would be allowed.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { AuditError, AuditReportSchema, auditAgentDir } from "../../src/index.js";
import { MAX_LINE_FINDINGS_PER_FILE } from "../../src/audit/index.js";
import { hasCommand, isRoot, skipBecause } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { at, makeAgentDir, plant, sessionText, type AgentFixture } from "./fixtures.js";
import { BUILD_HOOK_TIMEOUT_MS, builtCli, runCli } from "./helpers.js";

const UNPRIVILEGED = 65534;
let base: { path: string; remove(): void };
let counter = 0;

function fresh(): AgentFixture {
  counter += 1;
  return makeAgentDir(base.path, `api${counter}`);
}

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    if (error instanceof AuditError) return error.code;
    throw error;
  }
  return "returned";
}

beforeAll(() => {
  builtCli();
  base = makeTempDir("gjc-audit-api-");
}, BUILD_HOOK_TIMEOUT_MS);

afterAll(() => base.remove());

describe("auditAgentDir", () => {
  it("throws AuditError for what it cannot audit", () => {
    expect(codeOf(() => auditAgentDir(""))).toBe("invalid_argument");
    expect(codeOf(() => auditAgentDir(path.join(base.path, "missing")))).toBe("agent_dir_not_found");
    // A path through a file: the lstat fails with ENOTDIR, which is typed as well.
    const file = path.join(base.path, "a-file");
    fs.writeFileSync(file, "");
    expect(codeOf(() => auditAgentDir(path.join(file, "agent")))).toBe("agent_dir_unusable");
  });

  it("judges staleness by staleAfterMs and now", () => {
    const f = fresh();
    const rel = `${f.scopeRel}/.gjc-tmp-00000000000000aa`;
    plant(f, rel, "x");
    const mtime = fs.statSync(at(f, rel)).mtimeMs;
    const stale = (options: { staleAfterMs?: number; now?: number }) =>
      auditAgentDir(f.agentDir, options).objects.some((o) => o.path === rel && o.findings.some((x) => x.code === "stale_staging_file"));
    expect(stale({})).toBe(false);
    expect(stale({ staleAfterMs: 1000, now: mtime + 2000 })).toBe(true);
    expect(stale({ staleAfterMs: 5000, now: mtime + 2000 })).toBe(false);
  });

  it("skips the ancestors when asked", () => {
    const f = fresh();
    const parent = path.join(base.path, `open-${counter}`);
    fs.mkdirSync(parent, { mode: 0o777 });
    fs.chmodSync(parent, 0o777);
    fs.renameSync(f.agentDir, path.join(parent, "agent"));
    // The ancestor stops the managed open, so nothing below is audited, and the ancestor is
    // reported even when ancestors are not asked for: it is why the walk could not run.
    for (const options of [{}, { ancestors: false }]) {
      const report = auditAgentDir(path.join(parent, "agent"), options);
      expect(report.objects.map((o) => o.path)).toEqual([".", parent]);
      expect(report.objects[0]?.findings.map((x) => [x.code, x.detail])).toEqual([["not_audited", "insecure_ancestor"]]);
      expect(report.objects[1]?.findings.map((x) => [x.code, x.severity])).toEqual([["insecure_ancestor", "error"]]);
    }
    // A sticky parent is safe: with it the whole tree is audited and clean.
    fs.chmodSync(parent, 0o1777);
    expect(auditAgentDir(path.join(parent, "agent"), { ancestors: false }).clean).toBe(true);
    expect(auditAgentDir(path.join(parent, "agent")).clean).toBe(true);
  });

  it("lists the first 100 unparseable lines of a file one by one, then one summary", () => {
    const f = fresh();
    fs.appendFileSync(at(f, f.sessionRel), "{bad\n".repeat(MAX_LINE_FINDINGS_PER_FILE + 5));
    const report = AuditReportSchema.parse(auditAgentDir(f.agentDir));
    const findings = report.objects.find((o) => o.path === f.sessionRel)?.findings ?? [];
    expect(findings).toHaveLength(MAX_LINE_FINDINGS_PER_FILE + 1);
    expect(findings[0]?.line).toBe(3);
    expect(findings[MAX_LINE_FINDINGS_PER_FILE - 1]?.line).toBe(MAX_LINE_FINDINGS_PER_FILE + 2);
    expect(findings[MAX_LINE_FINDINGS_PER_FILE]).toMatchObject({ code: "unparseable_line", detail: "5" });
  });

  it("finds the same damaged lines in a session without blob refs (byte fast path) as through the loader", () => {
    const f = fresh();
    const digest = f.blobRel.slice("blobs/".length);
    const damage =
      ["{bad", "[1,2]", '{"no":"type"}', '{"type":"custom","data":"raw \u0001 control"}', "   ", '{"type":"custom","customType":"x"}'].join("\n") + "\n";
    const plainRel = `${f.scopeRel}/2024-05-01T10-00-00-000Z_s2.jsonl`;
    const blobRel = `${f.scopeRel}/2024-05-01T10-00-00-000Z_s3.jsonl`;
    plant(f, plainRel, sessionText(f.scope.canonicalCwd, { id: "0190a0b0-0000-7000-8000-000000000002" }) + damage);
    plant(f, blobRel, sessionText(f.scope.canonicalCwd, { id: "0190a0b0-0000-7000-8000-000000000003", blob: digest }) + damage);
    const report = AuditReportSchema.parse(auditAgentDir(f.agentDir, { ancestors: false }));
    const lineFindings = (rel: string) => (report.objects.find((o) => o.path === rel)?.findings ?? []).map((x) => ({ code: x.code, line: x.line }));
    expect(lineFindings(plainRel)).toEqual([3, 4, 5, 6].map((line) => ({ code: "unparseable_line", line })));
    expect(lineFindings(blobRel)).toEqual(lineFindings(plainRel));
  });

  it("modifies nothing without fix", () => {
    const f = fresh();
    fs.chmodSync(at(f, f.sessionRel), 0o644);
    fs.chmodSync(at(f, "blobs"), 0o755);
    const report = auditAgentDir(f.agentDir);
    expect(report.repairs).toBeUndefined();
    expect(fs.statSync(at(f, f.sessionRel)).mode & 0o7777).toBe(0o644);
    expect(fs.statSync(at(f, "blobs")).mode & 0o7777).toBe(0o755);
  });
});

describe("audit as an unprivileged uid", () => {
  it("reports a root-owned directory as owner_mismatch and permission_denied, repairs only its own files", (ctx) => {
    if (!isRoot()) skipBecause(ctx, "needs root to build a tree owned by two users");
    if (!hasCommand("setpriv")) skipBecause(ctx, "setpriv (util-linux) is not installed");
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "gjc-audit-unpriv-"));
    try {
      const f = makeAgentDir(home, "u");
      const chownTree = (p: string): void => {
        fs.lchownSync(p, UNPRIVILEGED, UNPRIVILEGED);
        if (fs.lstatSync(p).isDirectory()) for (const name of fs.readdirSync(p)) chownTree(path.join(p, name));
      };
      chownTree(home);
      fs.chmodSync(home, 0o755);
      const rootDir = `${f.scopeRel}/root-only`;
      fs.mkdirSync(at(f, rootDir), { mode: 0o700 }); // owned by root: this uid cannot even list it
      fs.chmodSync(at(f, f.sessionRel), 0o640);
      const wrapper = ["setpriv", `--reuid=${UNPRIVILEGED}`, `--regid=${UNPRIVILEGED}`, "--clear-groups"];
      const result = runCli(["audit", "--agent-dir", f.agentDir, "--json", "--fix"], { wrapper, env: { HOME: home } });
      expect(result.stderr).toBe("");
      const report = AuditReportSchema.parse(JSON.parse(result.stdout));
      const codes = report.objects.find((o) => o.path === rootDir)?.findings.map((x) => x.code);
      expect(codes).toEqual(expect.arrayContaining(["owner_mismatch", "permission_denied"]));
      const outcome = (rel: string) => report.repairs?.find((r) => r.path === rel)?.outcome;
      expect(outcome(f.sessionRel)).toBe("repaired");
      expect(outcome(rootDir)).toBe("refused");
      expect(fs.statSync(at(f, f.sessionRel)).mode & 0o7777).toBe(0o600);
      expect(fs.statSync(at(f, rootDir)).uid).toBe(0);
      expect(result.status).toBe(1);
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });
});
