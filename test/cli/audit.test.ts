// `gjc-session audit`: one agent dir per planted problem, each found with its code and
// exit status; `--fix` repairs modes and ACLs of owned objects and refuses the rest; the
// JSON output validates against the exported schema.
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { AuditReportSchema, type AuditReport } from "../../src/index.js";
import { aclHex, extendedAcl, trySetAcl } from "../helpers/acl.js";
import { buildTools, isRoot, run, skipBecause, type Tools } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { BUILD_HOOK_TIMEOUT_MS, builtCli, runCli } from "./helpers.js";
import { at, BINDING_FILE_NAME, makeAgentDir, plant, sessionText, type AgentFixture } from "./fixtures.js";

const ACCESS_ACL = "system.posix_acl_access";
const FOREIGN_UID = 65534;
let base: { path: string; remove(): void };
let counter = 0;
let tools: Tools;
let aclCapable = false;

function fresh(): AgentFixture {
  counter += 1;
  return makeAgentDir(base.path, String(counter));
}

function audit(agentDir: string, ...flags: string[]): { status: number | null; report: AuditReport; stderr: string } {
  const result = runCli(["audit", "--agent-dir", agentDir, "--json", ...flags]);
  expect(result.stderr).toBe("");
  // Parsing with the exported schema is the check that the document keeps its contract.
  return { status: result.status, report: AuditReportSchema.parse(JSON.parse(result.stdout)), stderr: result.stderr };
}

function findingsAt(report: AuditReport, rel: string): string[] {
  return report.objects.filter((o) => o.path === rel).flatMap((o) => o.findings.map((f) => f.code));
}

function setAcl(file: string): void {
  const result = run(tools.setXattr, [file, ACCESS_ACL, aclHex(extendedAcl(0, 6))]);
  expect(result.status, result.stderr).toBe(0);
}

beforeAll(() => {
  builtCli();
  base = makeTempDir("gjc-audit-");
  tools = buildTools();
  const probe = path.join(base.path, "acl-probe");
  fs.writeFileSync(probe, "");
  aclCapable = trySetAcl(tools.setXattr, probe);
}, BUILD_HOOK_TIMEOUT_MS);

afterAll(() => base.remove());

describe("audit: exit statuses", () => {
  it("a clean agent dir exits 0 with no objects", () => {
    const f = fresh();
    const { status, report } = audit(f.agentDir);
    expect(report.clean).toBe(true);
    expect(report.objects).toEqual([]);
    expect(report.counts.sessions).toBe(1);
    expect(report.counts.blobs).toBe(1);
    expect(status).toBe(0);
  });

  it("a missing agent dir exits 2 with a one-line error naming the code", () => {
    const result = runCli(["audit", "--agent-dir", path.join(base.path, "nowhere")]);
    expect(result.status).toBe(2);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain("agent_dir_not_found");
  });

  it("an agent dir that is a file exits 2 (agent_dir_unusable)", () => {
    const file = path.join(base.path, "plain-file");
    fs.writeFileSync(file, "x");
    const result = runCli(["audit", "--agent-dir", file]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("agent_dir_unusable");
  });
});

interface Case {
  readonly code: string;
  readonly title: string;
  /** plants the problem; returns the path (relative, or absolute for ancestors) it is reported at */
  readonly plant: (f: AgentFixture) => string;
  readonly line?: number;
  readonly severity?: "error" | "warning";
  readonly needs?: "root" | "acl";
}

const CASES: readonly Case[] = [
  { code: "mode_mismatch", title: "a session file at 0644", plant: (f) => (fs.chmodSync(at(f, f.sessionRel), 0o644), f.sessionRel) },
  { code: "mode_mismatch", title: "the blob directory at 0755", plant: (f) => (fs.chmodSync(at(f, "blobs"), 0o755), "blobs") },
  {
    code: "not_audited",
    title: "what lies below a directory that fails the check",
    severity: "warning",
    plant: (f) => (fs.chmodSync(at(f, "blobs"), 0o750), "blobs"),
  },
  { code: "mode_mismatch", title: "the agent dir itself at 0711", plant: (f) => (fs.chmodSync(f.agentDir, 0o711), ".") },
  { code: "acl_present", title: "an access ACL on a session file", needs: "acl", plant: (f) => (setAcl(at(f, f.sessionRel)), f.sessionRel) },
  {
    code: "owner_mismatch",
    title: "a session file owned by another uid",
    needs: "root",
    plant: (f) => (fs.chownSync(at(f, f.sessionRel), FOREIGN_UID, FOREIGN_UID), f.sessionRel),
  },
  {
    code: "owner_mismatch",
    title: "a scope directory owned by another uid",
    needs: "root",
    plant: (f) => (fs.chownSync(at(f, f.scopeRel), FOREIGN_UID, FOREIGN_UID), f.scopeRel),
  },
  {
    code: "symlink_refused",
    title: "a symbolic link posing as a session",
    plant: (f) => (fs.symlinkSync("/etc/passwd", at(f, `${f.scopeRel}/x.jsonl`)), `${f.scopeRel}/x.jsonl`),
  },
  {
    code: "hardlink_refused",
    title: "a session file with a second link",
    plant: (f) => (fs.linkSync(at(f, f.sessionRel), at(f, `${f.scopeRel}/copy.jsonl`)), f.sessionRel),
  },
  {
    code: "not_regular_file",
    title: "a FIFO in a scope",
    plant: (f) => (run("mkfifo", ["-m", "600", at(f, `${f.scopeRel}/pipe.jsonl`)]), `${f.scopeRel}/pipe.jsonl`),
  },
  {
    code: "invalid_header",
    title: "a session whose first record is not a header",
    line: 1,
    plant: (f) => plant(f, `${f.scopeRel}/bad.jsonl`, '{"type":"message","id":"x"}\n') && `${f.scopeRel}/bad.jsonl`,
  },
  {
    code: "unparseable_line",
    title: "a session with a garbage third line",
    line: 3,
    plant: (f) => (fs.appendFileSync(at(f, f.sessionRel), "{not json at all\n"), f.sessionRel),
  },
  {
    code: "version_too_new",
    title: "a session of version 9",
    plant: (f) => plant(f, `${f.scopeRel}/new.jsonl`, sessionText("/w", { version: 9 })) && `${f.scopeRel}/new.jsonl`,
  },
  {
    code: "invalid_version",
    title: "a session whose version is a string",
    plant: (f) => plant(f, `${f.scopeRel}/str.jsonl`, sessionText("/w", { version: "5" })) && `${f.scopeRel}/str.jsonl`,
  },
  { code: "dangling_blob_ref", title: "a session referencing a missing blob", plant: (f) => (fs.unlinkSync(at(f, f.blobRel)), f.sessionRel) },
  { code: "orphan_blob", title: "a blob no session references", severity: "warning", plant: (f) => orphanBlob(f) },
  { code: "corrupt_blob", title: "a blob whose bytes changed", plant: (f) => (fs.writeFileSync(at(f, f.blobRel), "changed"), f.blobRel) },
  { code: "invalid_blob_name", title: "a blob not named by a digest", plant: (f) => plant(f, "blobs/not-a-digest", "x") && "blobs/not-a-digest" },
  { code: "stale_staging_file", title: "a temporary file left two hours ago", plant: (f) => staleStaging(f) },
  {
    code: "binding_invalid",
    title: "a binding that is not canonical JSON",
    plant: (f) => (fs.writeFileSync(at(f, `${f.scopeRel}/${BINDING_FILE_NAME}`), "{}\n"), `${f.scopeRel}/${BINDING_FILE_NAME}`),
  },
  { code: "binding_invalid", title: "a scope without a binding", plant: (f) => (fs.unlinkSync(at(f, `${f.scopeRel}/${BINDING_FILE_NAME}`)), f.scopeRel) },
  { code: "binding_conflict", title: "a binding of another workspace", plant: (f) => foreignBinding(f) },
  {
    code: "legacy_unmigrated",
    title: "a legacy-layout session without a receipt",
    severity: "warning",
    plant: (f) => plant(f, "sessions/--old-layout--/s.jsonl", sessionText("/old")) && "sessions/--old-layout--/s.jsonl",
  },
  { code: "insecure_ancestor", title: "a world-writable parent without the sticky bit", plant: (f) => insecureParent(f) },
];

function orphanBlob(f: AgentFixture): string {
  const bytes = Buffer.from("nobody points here");
  const digest = createHash("sha256").update(bytes).digest("hex");
  return plant(f, `blobs/${digest}`, bytes) && `blobs/${digest}`;
}

function staleStaging(f: AgentFixture): string {
  const rel = `${f.scopeRel}/.gjc-tmp-0123456789abcdef`;
  const file = plant(f, rel, "half");
  const old = new Date(Date.now() - 2 * 3600_000);
  fs.utimesSync(file, old, old);
  // A fresh one next to it is a write in progress, not a finding.
  plant(f, `${f.scopeRel}/.gjc-tmp-fedcba9876543210`, "now");
  return rel;
}

function foreignBinding(f: AgentFixture): string {
  const other = makeAgentDir(path.dirname(f.agentDir), `${path.basename(f.agentDir)}-other`);
  const rel = `${f.scopeRel}/${BINDING_FILE_NAME}`;
  fs.copyFileSync(at(other, `${other.scopeRel}/${BINDING_FILE_NAME}`), at(f, rel));
  return rel;
}

function insecureParent(f: AgentFixture): string {
  const parent = path.join(base.path, `open-${counter}`);
  fs.mkdirSync(parent);
  const moved = path.join(parent, "agent");
  fs.renameSync(f.agentDir, moved);
  fs.chmodSync(parent, 0o777);
  (f as { agentDir: string }).agentDir = moved;
  return parent;
}

describe("audit: each planted problem is found with its code", () => {
  for (const c of CASES) {
    it(`${c.code}: ${c.title}`, (ctx) => {
      if (c.needs === "root" && !isRoot()) skipBecause(ctx, "chown to another uid needs root");
      if (c.needs === "acl" && !aclCapable) skipBecause(ctx, "the temp filesystem cannot store POSIX ACLs");
      const f = fresh();
      const rel = c.plant(f);
      const { status, report } = audit(f.agentDir);
      const object = report.objects.find((o) => o.path === rel);
      expect(object, JSON.stringify(report.objects, null, 1)).toBeDefined();
      const finding = object?.findings.find((x) => x.code === c.code);
      expect(finding, JSON.stringify(object)).toBeDefined();
      expect(finding?.severity).toBe(c.severity ?? "error");
      if (c.line !== undefined) expect(finding?.line).toBe(c.line);
      expect(report.clean).toBe(false);
      expect(status).toBe(1);
    });
  }

  it("a sticky world-writable parent is not a finding", () => {
    const f = fresh();
    const parent = path.join(base.path, "sticky");
    fs.mkdirSync(parent);
    fs.renameSync(f.agentDir, path.join(parent, "agent"));
    fs.chmodSync(parent, 0o1777);
    const { status, report } = audit(path.join(parent, "agent"));
    expect(report.objects).toEqual([]);
    expect(status).toBe(0);
  });

  it("a mode problem also reports a hard link on the same file (every deviation, not the first)", () => {
    const f = fresh();
    fs.chmodSync(at(f, f.sessionRel), 0o640);
    fs.linkSync(at(f, f.sessionRel), at(f, `${f.scopeRel}/second.jsonl`));
    const { report } = audit(f.agentDir);
    expect(findingsAt(report, f.sessionRel).sort()).toEqual(["hardlink_refused", "mode_mismatch"]);
  });
});

describe("audit --fix", () => {
  it("repairs modes and ACLs of owned objects and reports each repair", () => {
    const f = fresh();
    fs.chmodSync(at(f, f.sessionRel), 0o644);
    fs.chmodSync(at(f, "blobs"), 0o755);
    fs.chmodSync(at(f, f.blobRel), 0o400);
    if (aclCapable) setAcl(at(f, `${f.scopeRel}/${BINDING_FILE_NAME}`));
    const fixed = audit(f.agentDir, "--fix");
    const repaired = (fixed.report.repairs ?? [])
      .filter((r) => r.outcome === "repaired")
      .map((r) => r.path)
      .sort();
    const expected = [f.sessionRel, "blobs", f.blobRel, ...(aclCapable ? [`${f.scopeRel}/${BINDING_FILE_NAME}`] : [])].sort();
    expect(repaired).toEqual(expected);
    expect(fixed.report.clean).toBe(true);
    expect(fixed.status).toBe(0);
    expect(fs.statSync(at(f, f.sessionRel)).mode & 0o7777).toBe(0o600);
    expect(fs.statSync(at(f, "blobs")).mode & 0o7777).toBe(0o700);
    const again = audit(f.agentDir);
    expect(again.report.objects).toEqual([]);
    expect(again.status).toBe(0);
  });

  it("refuses links, foreign owners, hard links and content problems, and changes none of them", () => {
    const f = fresh();
    const link = `${f.scopeRel}/x.jsonl`;
    fs.symlinkSync("/etc/passwd", at(f, link));
    fs.linkSync(at(f, f.blobRel), at(f, "blobs/second"));
    fs.chmodSync(at(f, f.blobRel), 0o644); // a mode problem on a hard-linked file is not repaired either
    fs.appendFileSync(at(f, f.sessionRel), "{garbage\n");
    const foreign = `${f.scopeRel}/foreign.jsonl`;
    if (isRoot()) {
      plant(f, foreign, sessionText("/w"), 0o644);
      fs.chownSync(at(f, foreign), FOREIGN_UID, FOREIGN_UID);
    }
    const { status, report } = audit(f.agentDir, "--fix");
    const outcome = (rel: string) => report.repairs?.find((r) => r.path === rel);
    expect(outcome(link)?.outcome).toBe("refused");
    expect(outcome(f.blobRel)?.outcome).toBe("refused");
    expect(outcome(f.blobRel)?.codes).toContain("hardlink_refused");
    expect(outcome(f.sessionRel)?.outcome).toBe("refused");
    expect(report.repairs?.some((r) => r.outcome === "repaired")).toBe(false);
    expect(fs.lstatSync(at(f, link)).isSymbolicLink()).toBe(true);
    expect(fs.statSync(at(f, f.blobRel)).mode & 0o7777).toBe(0o644);
    if (isRoot()) {
      expect(outcome(foreign)?.outcome).toBe("refused");
      expect(outcome(foreign)?.reason).toBe("owner_mismatch");
      const st = fs.statSync(at(f, foreign));
      expect([st.uid, st.mode & 0o7777]).toEqual([FOREIGN_UID, 0o644]);
    }
    expect(status).toBe(1);
  });
});

describe("audit: human output", () => {
  it("lists each object with its findings aligned, and no colour without a terminal", () => {
    const f = fresh();
    fs.chmodSync(at(f, f.sessionRel), 0o644);
    fs.symlinkSync("/etc", at(f, `${f.scopeRel}/link.jsonl`));
    const result = runCli(["audit", "--agent-dir", f.agentDir], { env: { NO_COLOR: "" } });
    expect(result.status).toBe(1);
    expect(result.stdout).not.toMatch(/\u001b\[/);
    const lines = result.stdout.split("\n");
    const mode = lines.find((l) => l.includes("mode_mismatch")) as string;
    const link = lines.find((l) => l.includes("symlink_refused")) as string;
    // The message column starts at the same place for both findings.
    expect(mode.indexOf("mode_mismatch")).toBe(link.indexOf("symlink_refused"));
    expect(result.stdout).toContain(f.sessionRel);
    expect(result.stdout).toMatch(/2 errors, 0 warnings/);
  });
});
