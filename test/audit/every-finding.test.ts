// One tree holding every problem the audit knows, beside clean objects of every size around
// the content checks' read chunk: each finding is reported with its line and detail, the
// audit holds no descriptor afterwards, and --fix repairs what is safe and refuses the rest.
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { auditAgentDir, type AuditFindingCode, type AuditReport } from "../../src/index.js";
import { aclHex, extendedAcl } from "../helpers/acl.js";
import { buildTools, isRoot, run, type Tools } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { inLayout } from "../../src/audit/layout.js";
import { descriptorsUnder } from "./descriptors.js";
import { at, BINDING_FILE_NAME, makeAgentDir, plant, sessionText, type AgentFixture } from "../cli/fixtures.js";

const FOREIGN_UID = 65534;
/** The content checks read files in chunks of this size (src/audit/content.ts). */
const READ_CHUNK = 256 * 1024;
const NOW = Date.now();
let base: ReturnType<typeof makeTempDir>;
let tools: Tools;
let counter = 0;

beforeAll(() => {
  base = makeTempDir("gjc-audit-diff-");
  tools = buildTools();
}, 120_000);
afterAll(() => base.remove());

/** A session text of more than `bytes` bytes: many messages after the header. */
function bigSession(cwd: string, bytes: number, options: { blob?: string; garbageLast?: boolean } = {}): string {
  let text = sessionText(cwd);
  let parent = "a1b2c3d4";
  for (let i = 0; text.length <= bytes; i++) {
    const id = `b${String(i).padStart(7, "0")}`;
    const content: unknown[] = [{ type: "text", text: `message ${i} `.repeat(40) }];
    text += `${JSON.stringify({ type: "message", id, parentId: parent, timestamp: "2024-05-01T10:00:02.000Z", message: { role: "user", content, timestamp: 2 } })}\n`;
    parent = id;
  }
  // A blob reference past the first read chunk, and a damaged line at the very end.
  if (options.blob !== undefined) {
    const content = [{ type: "image", data: `blob:sha256:${options.blob}`, mimeType: "image/png" }];
    text += `${JSON.stringify({ type: "message", id: "c0000000", parentId: parent, timestamp: "2024-05-01T10:00:03.000Z", message: { role: "user", content, timestamp: 3 } })}\n`;
  }
  if (options.garbageLast === true) text += "{torn line\n";
  return text;
}

function blobOf(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/**
 * Plants every problem the audit knows in one tree, beside clean objects of each kind.
 * Without `ownerOnly`, only content problems: with every session readable, orphan blobs
 * are reported too.
 */
function plantEverything(f: AgentFixture, acl: boolean, ownerOnly = true): void {
  const s = f.scopeRel;
  const cwd = f.scope.canonicalCwd;
  // Clean sessions and blobs of every size up to one read chunk and past it.
  plant(f, `${s}/clean-small.jsonl`, sessionText(cwd, { id: "0190a0b0-0000-7000-8000-000000000002" }));
  plant(f, `${s}/empty.jsonl`, "");
  plant(f, `${s}/clean-big.jsonl`, bigSession(cwd, READ_CHUNK + 10_000));
  plant(f, `${s}/at-bound.jsonl`, bigSession(cwd, READ_CHUNK - 2_000));
  const bigBlob = Buffer.alloc(READ_CHUNK + 5, 0x42);
  plant(f, `blobs/${blobOf(bigBlob)}`, bigBlob);
  plant(f, `${s}/refs-big-blob.jsonl`, bigSession(cwd, READ_CHUNK + 1_000, { blob: blobOf(bigBlob) }));
  plantContentProblems(f);
  if (!ownerOnly) return;
  fs.chmodSync(at(f, f.sessionRel), 0o644);
  plant(f, `${s}/read-only.jsonl`, sessionText(cwd), 0o400);
  const linked = plant(f, `${s}/linked.jsonl`, sessionText(cwd));
  fs.linkSync(linked, at(f, `${s}/linked-again.jsonl`));
  fs.symlinkSync("/etc/passwd", at(f, `${s}/link.jsonl`));
  fs.symlinkSync("clean-small.jsonl", at(f, `${s}/relative-link.jsonl`));
  expect(run("mkfifo", ["-m", "600", at(f, `${s}/pipe.jsonl`)]).status).toBe(0);
  fs.mkdirSync(at(f, "terminal-sessions"), { mode: 0o750 });
  plant(f, "terminal-sessions/inside.jsonl", "not examined");
  fs.chmodSync(at(f, "terminal-sessions"), 0o750);
  // No part of the store's layout (the agent's own files, a user's notes): never read, reported or repaired.
  fs.mkdirSync(at(f, "closed"), { mode: 0o750 });
  plant(f, "closed/inside.jsonl", "{not json", 0o644);
  fs.chmodSync(at(f, "closed"), 0o750);
  plant(f, "settings.json", "{}\n", 0o644);
  if (isRoot()) {
    const foreign = plant(f, `${s}/foreign.jsonl`, sessionText(cwd));
    fs.chownSync(foreign, FOREIGN_UID, FOREIGN_UID);
  }
  if (acl) {
    const withAcl = plant(f, `${s}/acl.jsonl`, sessionText(cwd));
    expect(run(tools.setXattr, [withAcl, "system.posix_acl_access", aclHex(extendedAcl(0, 6))]).status).toBe(0);
  }
}

function plantContentProblems(f: AgentFixture): void {
  const s = f.scopeRel;
  const cwd = f.scope.canonicalCwd;
  plant(f, `${s}/bad-header.jsonl`, '{"type":"message","id":"x"}\n');
  plant(f, `${s}/garbage.jsonl`, `${sessionText(cwd)}{not json\n\n   \n[1,2]\n{"type":5}\n`);
  plant(f, `${s}/many-bad.jsonl`, sessionText(cwd) + "x\n".repeat(150));
  plant(f, `${s}/big-garbage.jsonl`, bigSession(cwd, READ_CHUNK + 3_000, { garbageLast: true }));
  plant(f, `${s}/new.jsonl`, sessionText(cwd, { version: 9 }));
  plant(f, `${s}/str.jsonl`, sessionText(cwd, { version: "5" }));
  plant(f, `${s}/dangling.jsonl`, sessionText(cwd, { blob: "f".repeat(64) }));
  plant(f, `blobs/${blobOf(Buffer.from("orphan"))}`, "orphan");
  plant(f, `blobs/${"e".repeat(64)}`, "does not hash to its name");
  plant(f, "blobs/not-a-digest", "x");
  const stale = plant(f, `${s}/.gjc-tmp-0123456789abcdef`, "half");
  const old = new Date(NOW - 2 * 3600_000);
  fs.utimesSync(stale, old, old);
  plant(f, `${s}/.gjc-tmp-fedcba9876543210`, "now");
  plant(f, "sessions/--old-layout--/s.jsonl", sessionText("/old"));
  plant(f, `sessions/v2-${"a".repeat(52)}/${BINDING_FILE_NAME}`, "{}\n");
}

/** A report without the fields that differ between two runs or two trees. */
function comparable(report: AuditReport, agentDir: string): unknown {
  const { startedAt: _s, durationMs: _d, agentDir: _a, ...rest } = report;
  return JSON.parse(JSON.stringify(rest).split(agentDir).join("<agent>"));
}

function tree(ownerOnly = true): [AgentFixture, boolean] {
  counter += 1;
  const probe = path.join(base.path, `probe-${counter}`);
  fs.writeFileSync(probe, "");
  const acl = run(tools.setXattr, [probe, "system.posix_acl_access", aclHex(extendedAcl(0, 6))]).status === 0;
  const f = makeAgentDir(base.path, String(counter));
  plantEverything(f, acl, ownerOnly);
  return [f, acl];
}

function codes(report: AuditReport): Set<AuditFindingCode> {
  return new Set(report.objects.flatMap((o) => o.findings.map((f) => f.code)));
}

describe("audit: a tree holding every finding", () => {
  it("reports every code, with the lines and details of each", () => {
    const [a, acl] = tree();
    const report = auditAgentDir(a.agentDir, { now: NOW });
    const expected: AuditFindingCode[] = [
      "mode_mismatch",
      "hardlink_refused",
      "symlink_refused",
      "not_regular_file",
      "not_audited",
      "invalid_header",
      "unparseable_line",
      "version_too_new",
      "invalid_version",
      "dangling_blob_ref",
      "corrupt_blob",
      "invalid_blob_name",
      "stale_staging_file",
      "binding_invalid",
      "legacy_unmigrated",
      ...(isRoot() ? (["owner_mismatch"] as const) : []),
      ...(acl ? (["acl_present"] as const) : []),
    ];
    const found = codes(report);
    for (const code of expected) expect(found.has(code), code).toBe(true);
    const garbage = report.objects.find((o) => o.path.endsWith("/garbage.jsonl"));
    // Line 4 is empty and line 5 only spaces: blank to the loader.
    expect(garbage?.findings.map((f) => f.line)).toEqual([3, 6, 7]);
    const bigGarbage = report.objects.find((o) => o.path.endsWith("/big-garbage.jsonl"));
    expect(bigGarbage?.findings.map((f) => f.code)).toEqual(["unparseable_line"]);
    // The big blob is referenced past the first read chunk: it is neither orphan nor dangling.
    const bigBlob = blobOf(Buffer.alloc(READ_CHUNK + 5, 0x42));
    expect(JSON.stringify(report.objects)).not.toContain(bigBlob);
    // Clean files of every size around the read chunk yield no finding.
    for (const clean of ["clean-small", "empty", "clean-big", "at-bound", "refs-big-blob"]) {
      expect(
        report.objects.some((o) => o.path.endsWith(`/${clean}.jsonl`)),
        clean,
      ).toBe(false);
    }
    // Objects come in walk order (names sorted in each directory): the same on every run.
    const again = auditAgentDir(a.agentDir, { now: NOW });
    expect(comparable(again, a.agentDir)).toEqual(comparable(report, a.agentDir));
  });

  it("holds no descriptor after the audit returns", () => {
    const [a] = tree();
    auditAgentDir(a.agentDir, { now: NOW });
    expect(descriptorsUnder(a.agentDir)).toBe(0);
  });

  it("reports orphan blobs too when no owner-only problem hides a session", () => {
    const [a] = tree(false);
    const found = codes(auditAgentDir(a.agentDir, { now: NOW }));
    for (const code of ["orphan_blob", "corrupt_blob", "dangling_blob_ref", "unparseable_line", "invalid_header", "legacy_unmigrated"] as const) {
      expect(found.has(code), code).toBe(true);
    }
    expect(found.has("mode_mismatch")).toBe(false);
  });

  it("with --fix repairs what is safe, refuses the rest, and a second audit no longer sees the repaired", () => {
    const [a] = tree();
    const report = auditAgentDir(a.agentDir, { now: NOW, fix: true });
    expect(report.repairs?.some((r) => r.outcome === "repaired")).toBe(true);
    expect(report.repairs?.some((r) => r.outcome === "refused")).toBe(true);
    expect(fs.statSync(at(a, a.sessionRel)).mode & 0o777).toBe(0o600);
    // `closed/` and `settings.json` are no part of the store's layout: not looked at, so neither reported nor repaired.
    for (const report_ of [report, auditAgentDir(a.agentDir, { now: NOW })]) {
      expect(report_.objects.filter((o) => !inLayout(o.path.split("/")[0] as string)).map((o) => o.path)).toEqual([]);
      expect(report_.repairs?.filter((r) => !inLayout(r.path.split("/")[0] as string)) ?? []).toEqual([]);
    }
    expect([
      fs.statSync(at(a, "closed")).mode & 0o7777,
      fs.statSync(at(a, "closed/inside.jsonl")).mode & 0o7777,
      fs.statSync(at(a, "settings.json")).mode & 0o7777,
    ]).toEqual([0o750, 0o644, 0o644]);
    const again = auditAgentDir(a.agentDir, { now: NOW });
    const loose = again.objects.filter((o) => o.findings.some((f) => f.code === "mode_mismatch")).map((o) => o.path);
    expect(loose).toEqual([]);
    expect(descriptorsUnder(a.agentDir)).toBe(0);
  });

  it("a directory of sessions just under the read chunk is clean", () => {
    counter += 1;
    const f = makeAgentDir(base.path, `${counter}-clean`);
    for (let i = 0; i < 5; i++) plant(f, `${f.scopeRel}/big-${i}.jsonl`, bigSession(f.scope.canonicalCwd, READ_CHUNK - 5_000));
    const report = auditAgentDir(f.agentDir, { now: NOW });
    expect(report.clean).toBe(true);
    expect(report.counts.sessions).toBe(6);
  });
});
