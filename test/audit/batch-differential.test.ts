// The audit reads most files through the directory batch; every file the batch cannot
// decide goes through the one-by-one open. Both must give the same report: the same objects
// in the same order, with the same codes, lines and details, with and without --fix. The
// reference is the same audit told to read every file one by one.
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { auditAgentDirWith } from "../../src/audit/audit.js";
import { BATCH_MAX_FILE_BYTES } from "../../src/audit/batch-reads.js";
import type { AuditFindingCode, AuditReport } from "../../src/index.js";
import { aclHex, extendedAcl } from "../helpers/acl.js";
import { buildTools, isRoot, run, type Tools } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { descriptorsUnder } from "./descriptors.js";
import { at, BINDING_FILE_NAME, makeAgentDir, plant, sessionText, type AgentFixture } from "../cli/fixtures.js";

const FOREIGN_UID = 65534;
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
  // Clean objects the batch reads: sessions of every size up to the bound and past it.
  plant(f, `${s}/clean-small.jsonl`, sessionText(cwd, { id: "0190a0b0-0000-7000-8000-000000000002" }));
  plant(f, `${s}/empty.jsonl`, "");
  plant(f, `${s}/clean-big.jsonl`, bigSession(cwd, BATCH_MAX_FILE_BYTES + 10_000));
  plant(f, `${s}/at-bound.jsonl`, bigSession(cwd, BATCH_MAX_FILE_BYTES - 2_000));
  const bigBlob = Buffer.alloc(BATCH_MAX_FILE_BYTES + 5, 0x42);
  plant(f, `blobs/${blobOf(bigBlob)}`, bigBlob);
  plant(f, `${s}/refs-big-blob.jsonl`, bigSession(cwd, BATCH_MAX_FILE_BYTES + 1_000, { blob: blobOf(bigBlob) }));
  plantContentProblems(f);
  if (!ownerOnly) return;
  fs.chmodSync(at(f, f.sessionRel), 0o644);
  plant(f, `${s}/read-only.jsonl`, sessionText(cwd), 0o400);
  const linked = plant(f, `${s}/linked.jsonl`, sessionText(cwd));
  fs.linkSync(linked, at(f, `${s}/linked-again.jsonl`));
  fs.symlinkSync("/etc/passwd", at(f, `${s}/link.jsonl`));
  fs.symlinkSync("clean-small.jsonl", at(f, `${s}/relative-link.jsonl`));
  expect(run("mkfifo", ["-m", "600", at(f, `${s}/pipe.jsonl`)]).status).toBe(0);
  fs.mkdirSync(at(f, "closed"), { mode: 0o750 });
  plant(f, "closed/inside.jsonl", "not examined");
  fs.chmodSync(at(f, "closed"), 0o750);
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
  plant(f, `${s}/big-garbage.jsonl`, bigSession(cwd, BATCH_MAX_FILE_BYTES + 3_000, { garbageLast: true }));
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

function twoTrees(ownerOnly = true): [AgentFixture, AgentFixture, boolean] {
  counter += 1;
  const probe = path.join(base.path, `probe-${counter}`);
  fs.writeFileSync(probe, "");
  const acl = run(tools.setXattr, [probe, "system.posix_acl_access", aclHex(extendedAcl(0, 6))]).status === 0;
  const a = makeAgentDir(base.path, `${counter}-batch`);
  const b = makeAgentDir(base.path, `${counter}-single`);
  plantEverything(a, acl, ownerOnly);
  plantEverything(b, acl, ownerOnly);
  return [a, b, acl];
}

function codes(report: AuditReport): Set<AuditFindingCode> {
  return new Set(report.objects.flatMap((o) => o.findings.map((f) => f.code)));
}

describe("audit: the batch path and the one-by-one path agree", () => {
  it("report the same objects, codes, lines and details for a tree holding every finding", () => {
    const [a, , acl] = twoTrees();
    const batch = auditAgentDirWith(a.agentDir, { now: NOW }, { batchReads: true });
    const single = auditAgentDirWith(a.agentDir, { now: NOW }, { batchReads: false });
    expect(comparable(batch, a.agentDir)).toEqual(comparable(single, a.agentDir));
    // The comparison means something only if the tree really holds every kind of finding.
    const expected: AuditFindingCode[] = [
      "mode_mismatch", "hardlink_refused", "symlink_refused", "not_regular_file", "not_audited",
      "invalid_header", "unparseable_line", "version_too_new", "invalid_version", "dangling_blob_ref",
      "corrupt_blob", "invalid_blob_name", "stale_staging_file", "binding_invalid",
      "legacy_unmigrated",
      ...(isRoot() ? (["owner_mismatch"] as const) : []),
      ...(acl ? (["acl_present"] as const) : []),
    ];
    const found = codes(batch);
    for (const code of expected) expect(found.has(code), code).toBe(true);
    const garbage = batch.objects.find((o) => o.path.endsWith("/garbage.jsonl"));
    // Line 4 is empty and line 5 only spaces: blank to the loader, yet not shown plain.
    expect(garbage?.findings.map((f) => f.line)).toEqual([3, 6, 7]);
    const bigGarbage = batch.objects.find((o) => o.path.endsWith("/big-garbage.jsonl"));
    expect(bigGarbage?.findings.map((f) => f.code)).toEqual(["unparseable_line"]);
    // The big blob is referenced past the first read chunk: it is neither orphan nor dangling.
    const bigBlob = blobOf(Buffer.alloc(BATCH_MAX_FILE_BYTES + 5, 0x42));
    expect(JSON.stringify(batch.objects)).not.toContain(bigBlob);
    expect(batch.counts).toEqual(single.counts);
  });

  it("holds no descriptor after the audit returns (read-ahead included)", () => {
    const [a] = twoTrees();
    auditAgentDirWith(a.agentDir, { now: NOW }, { batchReads: true });
    expect(descriptorsUnder(a.agentDir)).toBe(0);
  });

  it("report the same content findings, orphan blobs included, when no owner-only problem hides a session", () => {
    const [a] = twoTrees(false);
    const batch = auditAgentDirWith(a.agentDir, { now: NOW }, { batchReads: true });
    const single = auditAgentDirWith(a.agentDir, { now: NOW }, { batchReads: false });
    expect(comparable(batch, a.agentDir)).toEqual(comparable(single, a.agentDir));
    const found = codes(batch);
    for (const code of ["orphan_blob", "corrupt_blob", "dangling_blob_ref", "unparseable_line", "invalid_header", "legacy_unmigrated"] as const) {
      expect(found.has(code), code).toBe(true);
    }
    expect(found.has("mode_mismatch")).toBe(false);
  });

  it("repair and refuse the same objects with --fix, leaving the trees alike", () => {
    const [a, b] = twoTrees();
    const batch = auditAgentDirWith(a.agentDir, { now: NOW, fix: true }, { batchReads: true });
    const single = auditAgentDirWith(b.agentDir, { now: NOW, fix: true }, { batchReads: false });
    // Two trees differ in their scope and blob names, and so in where those sort: compare
    // them by path (the single-tree tests above compare the order too).
    const norm = (report: AuditReport, f: AgentFixture) => {
      const text = JSON.stringify(comparable(report, f.agentDir)).split(f.scope.directoryName).join("<scope>");
      const doc = JSON.parse(text.split(blobOf(fs.readFileSync(at(f, f.blobRel)))).join("<blob>")) as { objects: { path: string }[]; repairs: { path: string }[] };
      const byPath = (x: { path: string }, y: { path: string }) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0);
      return { ...doc, objects: doc.objects.sort(byPath), repairs: doc.repairs.sort(byPath) };
    };
    expect(norm(batch, a)).toEqual(norm(single, b));
    expect(batch.repairs?.some((r) => r.outcome === "repaired")).toBe(true);
    expect(batch.repairs?.some((r) => r.outcome === "refused")).toBe(true);
    expect(fs.statSync(at(a, a.sessionRel)).mode & 0o777).toBe(0o600);
    expect(fs.statSync(at(b, b.sessionRel)).mode & 0o777).toBe(0o600);
    // After the repair both paths see the same, smaller set of findings.
    const again = auditAgentDirWith(a.agentDir, { now: NOW }, { batchReads: true });
    const againSingle = auditAgentDirWith(a.agentDir, { now: NOW }, { batchReads: false });
    expect(comparable(again, a.agentDir)).toEqual(comparable(againSingle, a.agentDir));
    expect(codes(again).has("mode_mismatch")).toBe(false);
  });

  it("agree on a clean tree, also when a directory holds more than one batch buffer", () => {
    counter += 1;
    const f = makeAgentDir(base.path, `${counter}-clean`);
    // Five sessions just under the bound overflow the first 1 MiB buffer: the rest are
    // deferred to the one-by-one path, and the next directory gets a bigger buffer.
    for (let i = 0; i < 5; i++) plant(f, `${f.scopeRel}/big-${i}.jsonl`, bigSession(f.scope.canonicalCwd, BATCH_MAX_FILE_BYTES - 5_000));
    const batch = auditAgentDirWith(f.agentDir, { now: NOW }, { batchReads: true });
    const single = auditAgentDirWith(f.agentDir, { now: NOW }, { batchReads: false });
    expect(batch.clean).toBe(true);
    expect(comparable(batch, f.agentDir)).toEqual(comparable(single, f.agentDir));
  });
});
