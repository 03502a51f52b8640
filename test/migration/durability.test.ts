/**
 * How a migration makes its staging durable before publishing, observed in real migrator
 * processes through the LD_PRELOAD fault shim (which logs fsync and the publishing renameat2
 * calls in order, and can make a file's fsync fail or a write store other bytes): every
 * staged file and directory is fsynced before the first publishing rename, and nothing is
 * published when an fsync or the read-back fails.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { openCandidateForWrite, resolveManagedScope } from "../../src/index.js";
import { BINDING_FILE_NAME } from "../../src/scope/index.js";
import { buildTools, type Tools } from "../helpers/processes.js";
import { bundleChild, runChild, type BundledChild } from "../storage/child-bundle.js";
import { useSandboxes, type Sandbox } from "../scope/helpers.js";
import { CHUNK_BYTES } from "../../src/migration/session-file.js";
import { candidateAt, scopeOf, treeHashes, writeLegacySession } from "./fixtures.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const E = os.constants.errno;
const linux = process.platform === "linux";
const sandbox = useSandboxes();
/** Artifact files of each migrated session, spread over this many directories. */
const ARTIFACTS = 120;
const ARTIFACT_DIRS = 4;
let child: BundledChild;
let tools: Tools;

beforeAll(async () => {
  if (!linux) return;
  tools = buildTools();
  child = await bundleChild("migrate-child", path.join(here, "children"));
});
afterAll(() => child?.remove());

interface Migration {
  readonly box: Sandbox;
  readonly file: string;
  readonly scopeDir: string;
  readonly sourceBefore: Record<string, string>;
  /** The migrator's parsed result line. */
  readonly result: { kind: string; code?: string; cause?: string; migrated?: boolean; path?: string };
  /** Intercepted calls in the order the migrator made them. */
  readonly calls: string[];
}

/**
 * Migrates a fresh legacy session in a child process under the shim with `faults` (or those
 * made for its transcript); `extraArtifacts` join the small artifact files.
 */
async function migrateUnderShim(
  faults: Record<string, string> | ((transcript: string) => Record<string, string>),
  extraArtifacts: Record<string, Buffer> = {},
): Promise<Migration> {
  const box = sandbox();
  // The scope and its binding exist before the child starts, so every publishing call the
  // child logs belongs to the migration itself.
  const prepared = resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode: "write" });
  if (prepared.kind !== "resolved") throw new Error(prepared.code);
  const scope = scopeOf(box.cwd, box.agentDir);
  const artifacts: Record<string, string | Buffer> = { ...extraArtifacts };
  for (let i = 0; i < ARTIFACTS; i++) artifacts[`d${i % ARTIFACT_DIRS}/${i}.log`] = `${i}:`.padEnd(700, "z");
  const file = writeLegacySession(scope.sessionsRoot, box.cwd, { lines: 400, artifacts });
  const sourceBefore = { ...treeHashes(file), ...treeHashes(file.slice(0, -6)) };
  const log = path.join(box.root, "calls.log");
  const run = await runChild(child, [box.cwd, box.agentDir, "go", file, "5000"], {
    LD_PRELOAD: tools.faultShim,
    GJC_FAULT_LOG: log,
    GJC_FAULT_LOG_SYNCS: "1",
    ...(typeof faults === "function" ? faults(file) : faults),
  });
  expect(run.status, run.stderr).toBe(0);
  const result = JSON.parse(run.stdout.trim().split("\n").at(-1) ?? "null") as Migration["result"];
  const calls = fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n") : [];
  return { box, file, scopeDir: scope.directoryPath, sourceBefore, result, calls };
}

/** The fsyncs logged before the first publishing rename (the staging phase). */
function stagingFsyncs(calls: readonly string[]): number {
  const publish = calls.indexOf("renameat2");
  expect(publish).toBeGreaterThan(-1);
  return calls.slice(0, publish).filter((c) => c === "fsync").length;
}

/** The migrated copy is complete and byte-identical, and the source is untouched. */
function expectCompleteCopy(m: Migration): void {
  expect(m.result).toMatchObject({ kind: "opened", migrated: true });
  const dest = path.join(m.scopeDir, path.basename(m.file));
  expect(fs.readFileSync(dest)).toEqual(fs.readFileSync(m.file));
  expect(treeHashes(dest.slice(0, -6))).toEqual(treeHashes(m.file.slice(0, -6)));
  expect({ ...treeHashes(m.file), ...treeHashes(m.file.slice(0, -6)) }).toEqual(m.sourceBefore);
}

describe.runIf(linux)("staging durability before publication (Linux)", () => {
  it("every staged file and directory is fsynced before the publishing rename", async () => {
    const m = await migrateUnderShim({});
    expectCompleteCopy(m);
    // Each artifact, the transcript and the receipt; each artifact directory, the staging
    // root, the scope and the receipts directory.
    expect(stagingFsyncs(m.calls)).toBeGreaterThanOrEqual(ARTIFACTS + 2 + ARTIFACT_DIRS + 3);
    // Publication syncs the scope directory after each rename (artifacts, then transcript).
    // The receipt was staged durably, so committing it is one more rename and a sync of its
    // directory: no write and no fsync of its own after publication.
    const afterPublish = m.calls.slice(m.calls.indexOf("renameat2"));
    expect(afterPublish).toEqual(["renameat2", "fsync", "renameat2", "fsync", "renameat2", "fsync"]);
    const receipts = fs.readdirSync(path.join(m.scopeDir, ".gjc-managed-session-internal", "receipts"));
    expect(receipts).toHaveLength(1);
    expect(receipts[0]).toMatch(/^[0-9a-f]+\.json$/);
  }, 60_000);

  it("a staged file's fsync failing (EIO) -> durability_failed, nothing published, no staging left, source intact", async () => {
    const m = await migrateUnderShim({ GJC_FAULT_FSYNC_ERRNO: String(E.EIO) });
    expect(m.result).toMatchObject({ kind: "error", code: "durability_failed", cause: "io_error" });
    expect(m.calls).toContain("fsync:errno");
    expect(m.calls).not.toContain("renameat2");
    expect(fs.readdirSync(m.scopeDir).sort()).toEqual([BINDING_FILE_NAME, ".gjc-managed-session-internal"].sort());
    expect(fs.readdirSync(path.join(m.scopeDir, ".gjc-managed-session-internal", "receipts"))).toEqual([]);
    expect({ ...treeHashes(m.file), ...treeHashes(m.file.slice(0, -6)) }).toEqual(m.sourceBefore);
  }, 60_000);

  it("a staged file that does not read back as written (corrupting write) -> durability_failed, nothing published", async () => {
    // Every artifact is written in one 700-byte write; the shim stores it with its first byte inverted.
    const m = await migrateUnderShim({ GJC_FAULT_PWRITE_FLIP: "700" });
    expect(m.calls).toContain("pwrite:flipped");
    expect(m.result).toMatchObject({ kind: "error", code: "durability_failed", cause: "verify_mismatch" });
    expect(m.calls).not.toContain("renameat2");
    expect(fs.readdirSync(m.scopeDir).sort()).toEqual([BINDING_FILE_NAME, ".gjc-managed-session-internal"].sort());
    expect({ ...treeHashes(m.file), ...treeHashes(m.file.slice(0, -6)) }).toEqual(m.sourceBefore);
  }, 60_000);

  it("a transcript that does not read back as written (corrupting write of its one chunk) -> durability_failed, nothing published", async () => {
    // Under one copy chunk, the transcript is written by a single write of its size.
    const m = await migrateUnderShim((transcript) => ({ GJC_FAULT_PWRITE_FLIP: String(fs.statSync(transcript).size) }));
    expect(fs.statSync(m.file).size).toBeLessThan(CHUNK_BYTES);
    expect(m.calls.filter((c) => c === "pwrite:flipped")).toEqual(["pwrite:flipped"]);
    expect(m.result).toMatchObject({ kind: "error", code: "durability_failed", cause: "verify_mismatch" });
    expect(m.calls).not.toContain("renameat2");
    expect(fs.readdirSync(m.scopeDir).sort()).toEqual([BINDING_FILE_NAME, ".gjc-managed-session-internal"].sort());
    expect({ ...treeHashes(m.file), ...treeHashes(m.file.slice(0, -6)) }).toEqual(m.sourceBefore);
  }, 60_000);
});

describe("copy paths", () => {
  it("artifacts streamed in several chunks, exactly one chunk, empty, and many small ones all arrive byte-identical", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    // Larger than two copy chunks, so it is streamed in three.
    const large = Buffer.alloc(2 * CHUNK_BYTES + 17);
    for (let i = 0; i < large.length; i++) large[i] = (i * 31 + (i >> 11)) & 0xff;
    const artifacts: Record<string, string | Buffer> = {
      "big.bin": large,
      "edge.bin": large.subarray(0, CHUNK_BYTES),
      "over.bin": large.subarray(0, CHUNK_BYTES + 1),
      "empty.log": "",
    };
    for (let i = 0; i < 40; i++) artifacts[`s/${i}.log`] = `${i}`.repeat(i * 13);
    const file = writeLegacySession(scope.sessionsRoot, box.cwd, { lines: 30, artifacts });
    const result = await openCandidateForWrite(scope, await candidateAt(scope, file));
    expect(result).toMatchObject({ kind: "opened", migrated: true });
    if (result.kind !== "opened") return;
    expect(treeHashes(result.path.slice(0, -6))).toEqual(treeHashes(file.slice(0, -6)));
  });
});
