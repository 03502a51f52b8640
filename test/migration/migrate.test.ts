import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

import { describe, expect, it } from "vitest";

import { openCandidateForWrite, retireCandidate, type MigrationProgress } from "../../src/index.js";
import { BINDING_FILE_NAME, resolveManagedScope } from "../../src/scope/index.js";
import { operationId } from "../../src/migration/receipts.js";
import { treeState, useSandboxes } from "../scope/helpers.js";
import { candidateAt, legacyName, listed, scopeOf, treeHashes, writeLegacySession } from "./fixtures.js";

const sandbox = useSandboxes();

describe("legacy discovery", () => {
  it("lists legacy sessions read-only with provenance and state", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const file = writeLegacySession(scope.sessionsRoot, box.cwd, { artifacts: { "1.bash.log": "out" } });
    const before = treeState(box.root);
    const listing = await listed(scope);
    expect(listing.candidates).toHaveLength(1);
    expect(listing.candidates[0]).toMatchObject({
      path: file,
      provenance: "legacy",
      migrationState: "legacy_unmigrated",
      legacyDirectory: legacyName(box.cwd),
    });
    expect(treeState(box.root)).toEqual(before);
  });

  it("colliding encoded names: ownership is decided per file by the header cwd", async () => {
    const box = sandbox();
    const a = path.join(box.root, "a", "b-c");
    const b = path.join(box.root, "a-b", "c");
    fs.mkdirSync(a, { recursive: true });
    fs.mkdirSync(b, { recursive: true });
    expect(legacyName(a)).toBe(legacyName(b));
    const sa = scopeOf(a, box.agentDir);
    const sb = scopeOf(b, box.agentDir);
    const fa = writeLegacySession(sa.sessionsRoot, a);
    const fb = writeLegacySession(sa.sessionsRoot, b);
    const la = await listed(sa);
    const lb = await listed(sb);
    expect(la.candidates.map((c) => c.path)).toEqual([fa]);
    expect(lb.candidates.map((c) => c.path)).toEqual([fb]);
    expect(la.foreign).toBe(1);
    expect(lb.foreign).toBe(1);
  });

  it("finds sessions in other '-'-prefixed directories, and reports a linked legacy directory", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const odd = writeLegacySession(scope.sessionsRoot, box.cwd, { dirName: "-renamed-by-hand" });
    fs.mkdirSync(path.join(box.root, "target"));
    fs.symlinkSync(path.join(box.root, "target"), path.join(scope.sessionsRoot, legacyName(box.cwd)));
    const listing = await listed(scope);
    expect(listing.candidates.map((c) => c.path)).toEqual([odd]);
    expect(listing.scanErrors).toContainEqual({ path: path.join(scope.sessionsRoot, legacyName(box.cwd)), code: "symlink" });
  });
});

describe("copy-retain migration", () => {
  it("copies transcript and artifacts, verifies, publishes, and keeps the source byte-identical", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const file = writeLegacySession(scope.sessionsRoot, box.cwd, {
      lines: 50,
      artifacts: { "1.bash.log": "a".repeat(5000), "sub/2.read.log": "b", ".artifact-id-2": "" },
    });
    const sourceBefore = { ...treeHashes(file), ...treeHashes(file.slice(0, -6)) };
    const stateBefore = treeState(path.dirname(file));
    const progress: MigrationProgress[] = [];
    const result = await openCandidateForWrite(scope, await candidateAt(scope, file), { onProgress: (p) => progress.push(p) });
    expect(result).toMatchObject({ kind: "opened", provenance: "legacy", migrated: true });
    if (result.kind !== "opened") return;
    expect(path.dirname(result.path)).toBe(scope.directoryPath);
    expect(fs.readFileSync(result.path)).toEqual(fs.readFileSync(file));
    expect(treeHashes(result.path.slice(0, -6))).toEqual(treeHashes(file.slice(0, -6)));
    expect(fs.statSync(result.path).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.join(result.path.slice(0, -6), "sub")).mode & 0o777).toBe(0o700);
    expect({ ...treeHashes(file), ...treeHashes(file.slice(0, -6)) }).toEqual(sourceBefore);
    expect(treeState(path.dirname(file))).toEqual(stateBefore);
    expect(progress.at(-1)).toMatchObject({ phase: "done", filesDone: 4, filesTotal: 4 });
    // Later scans show the v2 copy as migrated and hide the source.
    const listing = await listed(scope);
    expect(listing.candidates.map((c) => [c.path, c.migrationState])).toEqual([[result.path, "migrated_v2"]]);
    expect(listing.candidates[0]?.migratedFrom).toBe(file);
    // No staging leftovers, and only the expected names in the scope.
    expect(fs.readdirSync(scope.directoryPath).sort()).toEqual(
      [BINDING_FILE_NAME, ".gjc-managed-session-internal", path.basename(result.path), path.basename(result.path, ".jsonl")].sort(),
    );
  });

  it("a receipt staged by an attempt that died is removed, and the rerun commits its own", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const file = writeLegacySession(scope.sessionsRoot, box.cwd, { artifacts: { "1.log": "one" } });
    const candidate = await candidateAt(scope, file);
    // What an attempt killed between its flush and its commit leaves in the receipts
    // directory: its staged receipt, under the staging name of this source's operation.
    const receiptsDir = path.join(scope.directoryPath, ".gjc-managed-session-internal", "receipts");
    fs.mkdirSync(receiptsDir, { recursive: true, mode: 0o700 });
    const op = operationId(candidate.identity);
    const remnant = `.gjc-migrate-${op.slice(0, 16)}-00000000-0000-4000-8000-000000000000.receipt`;
    fs.writeFileSync(path.join(receiptsDir, remnant), '{"torn":', { mode: 0o600 });
    // Another operation's staged receipt is not this attempt's to remove.
    const other = `.gjc-migrate-${"0".repeat(16)}-00000000-0000-4000-8000-000000000000.receipt`;
    fs.writeFileSync(path.join(receiptsDir, other), "", { mode: 0o600 });
    expect(await openCandidateForWrite(scope, candidate)).toMatchObject({ kind: "opened", migrated: true });
    expect(fs.readdirSync(receiptsDir).sort()).toEqual([other, `${op}.json`].sort());
    expect((await listed(scope)).candidates.map((c) => c.migrationState)).toEqual(["migrated_v2"]);
  });

  it("a copy published by an attempt that died before its receipt is committed by the rerun; one without its artifacts is refused", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const file = writeLegacySession(scope.sessionsRoot, box.cwd, { artifacts: { "1.log": "one", "sub/2.log": "two" } });
    const candidate = await candidateAt(scope, file);
    const first = await openCandidateForWrite(scope, candidate);
    if (first.kind !== "opened") throw new Error(first.code);
    const receipt = path.join(scope.directoryPath, ".gjc-managed-session-internal", "receipts", `${operationId(candidate.identity)}.json`);
    const committed = JSON.parse(fs.readFileSync(receipt, "utf8")) as { artifactManifest: unknown };
    fs.unlinkSync(receipt);
    expect(await openCandidateForWrite(scope, candidate)).toMatchObject({ kind: "opened", path: first.path, migrated: true });
    expect((JSON.parse(fs.readFileSync(receipt, "utf8")) as { artifactManifest: unknown }).artifactManifest).toEqual(committed.artifactManifest);
    expect(fs.readdirSync(scope.directoryPath).filter((n) => n.startsWith(".gjc-migrate-"))).toEqual([]);
    fs.unlinkSync(receipt);
    fs.rmSync(first.path.slice(0, -6), { recursive: true });
    expect(await openCandidateForWrite(scope, candidate)).toMatchObject({ kind: "error", code: "destination_conflict", cause: "artifacts_missing" });
    expect(fs.existsSync(receipt)).toBe(false);
  });

  it("disabled policy refuses with a typed result, then re-enabling migrates", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const file = writeLegacySession(scope.sessionsRoot, box.cwd);
    const candidate = await candidateAt(scope, file);
    const before = treeState(box.root);
    expect(await openCandidateForWrite(scope, candidate, { directoryMigration: "disabled" })).toMatchObject({
      kind: "error",
      code: "legacy_migration_disabled",
    });
    expect(treeState(box.root)).toEqual(before);
    expect(await openCandidateForWrite(scope, candidate, { directoryMigration: "copy-retain" })).toMatchObject({ kind: "opened", migrated: true });
    expect(await openCandidateForWrite(scope, candidate, { directoryMigration: "bogus" as never })).toMatchObject({ code: "invalid_request" });
  });

  it("a second open of the same source finds the committed copy", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const file = writeLegacySession(scope.sessionsRoot, box.cwd);
    const candidate = await candidateAt(scope, file);
    const first = await openCandidateForWrite(scope, candidate);
    const second = await openCandidateForWrite(scope, candidate);
    expect(second).toMatchObject({ kind: "opened", migrated: false });
    expect(second.kind === "opened" && first.kind === "opened" && second.path === first.path).toBe(true);
  });

  it("a v2 candidate opens in place", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const file = writeLegacySession(scope.sessionsRoot, box.cwd);
    const migrated = await openCandidateForWrite(scope, await candidateAt(scope, file));
    if (migrated.kind !== "opened") throw new Error(migrated.code);
    const v2 = await candidateAt(scope, migrated.path);
    expect(await openCandidateForWrite(scope, v2)).toEqual({ kind: "opened", path: migrated.path, provenance: "v2", migrated: false });
  });

  it("a source changed after listing -> source_changed, nothing published", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const file = writeLegacySession(scope.sessionsRoot, box.cwd);
    const candidate = await candidateAt(scope, file);
    fs.appendFileSync(file, "{}\n");
    expect(await openCandidateForWrite(scope, candidate)).toMatchObject({ kind: "error", code: "source_changed" });
    expect(fs.readdirSync(scopeOf(box.cwd, box.agentDir).directoryPath).filter((n) => n.endsWith(".jsonl"))).toEqual([]);
  });

  it("a different file at the destination -> destination_conflict; a planted symlink too", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const file = writeLegacySession(scope.sessionsRoot, box.cwd);
    const candidate = await candidateAt(scope, file);
    const prepared = await openCandidateForWrite(scope, candidate, { directoryMigration: "disabled" });
    expect(prepared).toMatchObject({ code: "legacy_migration_disabled" });
    fs.mkdirSync(scope.directoryPath, { recursive: true, mode: 0o700 });
    fs.chmodSync(scope.sessionsRoot, 0o700);
    const dest = path.join(scope.directoryPath, path.basename(file));
    fs.writeFileSync(dest, "different\n", { mode: 0o600 });
    expect(await openCandidateForWrite(scope, candidate)).toMatchObject({ kind: "error", code: "destination_conflict" });
    fs.unlinkSync(dest);
    const victim = path.join(box.root, "victim");
    fs.writeFileSync(victim, "keep");
    fs.symlinkSync(victim, dest);
    expect(await openCandidateForWrite(scope, candidate)).toMatchObject({ kind: "error", code: "destination_conflict" });
    expect(fs.readFileSync(victim, "utf8")).toBe("keep");
    expect(fs.lstatSync(dest).isSymbolicLink()).toBe(true);
  });

  it("symlinks, hard links and special files in the artifact tree -> unsafe_artifacts", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const cases: [string, (root: string) => void][] = [
      ["symlink", (root) => fs.symlinkSync("/etc/passwd", path.join(root, "evil"))],
      ["symlink", (root) => fs.symlinkSync("/etc", path.join(root, "sub", "evil-dir"))],
      ["hardlink", (root) => fs.linkSync(path.join(root, "ok.log"), path.join(box.root, `hl-${Math.random()}`))],
      ["special_file", (root) => execFileSync("mkfifo", [path.join(root, "pipe")])],
      // A name JS cannot hold exactly (not UTF-8): refused rather than copied under another name.
      ["not_utf8", (root) => fs.writeFileSync(Buffer.concat([Buffer.from(`${path.join(root, "sub")}/bad-`), Buffer.from([0xff, 0xfe])]), "x")],
    ];
    for (const [cause, plant] of cases) {
      const file = writeLegacySession(scope.sessionsRoot, box.cwd, { artifacts: { "ok.log": "ok", "sub/fine.log": "fine" } });
      plant(file.slice(0, -6));
      const result = await openCandidateForWrite(scope, await candidateAt(scope, file));
      expect(result).toMatchObject({ kind: "error", code: "unsafe_artifacts", cause });
    }
    expect(fs.readdirSync(scopeOf(box.cwd, box.agentDir).directoryPath).filter((n) => !n.startsWith(".gjc-managed") && n !== BINDING_FILE_NAME)).toEqual([]);
  });

  it("artifact budgets: too deep -> unsafe_artifacts; too many entries or bytes -> artifact_capacity_exceeded", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const deep = writeLegacySession(scope.sessionsRoot, box.cwd, { artifacts: { "a/b/c/d.log": "x" } });
    expect(await openCandidateForWrite(scope, await candidateAt(scope, deep), { limits: { maxDepth: 3 } })).toMatchObject({ code: "unsafe_artifacts" });
    const many = writeLegacySession(scope.sessionsRoot, box.cwd, { artifacts: { "1": "x", "2": "x", "3": "x" } });
    expect(await openCandidateForWrite(scope, await candidateAt(scope, many), { limits: { maxEntries: 2 } })).toMatchObject({
      code: "artifact_capacity_exceeded",
    });
    const big = writeLegacySession(scope.sessionsRoot, box.cwd, { artifacts: { "1": "xxxx", "2": "xxxx" } });
    expect(await openCandidateForWrite(scope, await candidateAt(scope, big), { limits: { maxTotalBytes: 6 } })).toMatchObject({
      code: "artifact_capacity_exceeded",
    });
    expect(await openCandidateForWrite(scope, await candidateAt(scope, big), { limits: { maxFileBytes: 3 } })).toMatchObject({ code: "unsafe_artifacts" });
    expect(await openCandidateForWrite(scope, await candidateAt(scope, big))).toMatchObject({ kind: "opened", migrated: true });
  });

  it("a scope directory swapped for a symlink is refused", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const file = writeLegacySession(scope.sessionsRoot, box.cwd);
    const candidate = await candidateAt(scope, file);
    const first = writeLegacySession(scope.sessionsRoot, box.cwd);
    await openCandidateForWrite(scope, await candidateAt(scope, first));
    const moved = path.join(box.root, "moved-scope");
    fs.renameSync(scope.directoryPath, moved);
    fs.symlinkSync(moved, scope.directoryPath);
    expect(await openCandidateForWrite(scope, candidate)).toMatchObject({ kind: "error", code: "binding_invalid" });
    expect(fs.readdirSync(moved).filter((n) => n.endsWith(".jsonl"))).toHaveLength(1);
  });

  it("a retired source is hidden and never migrated", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const file = writeLegacySession(scope.sessionsRoot, box.cwd);
    const candidate = await candidateAt(scope, file);
    expect(await retireCandidate(scope, candidate)).toMatchObject({ kind: "retired" });
    expect(await retireCandidate(scope, candidate)).toMatchObject({ kind: "retired" });
    expect((await listed(scope)).candidates).toEqual([]);
    expect(fs.existsSync(file)).toBe(true);
    expect(await openCandidateForWrite(scope, candidate)).toMatchObject({ kind: "error", code: "migration_retired" });
  });

  it("with an explicit sessions root, retiring and migrating write below that root, not the agent dir's", async () => {
    const box = sandbox();
    const sessionsRoot = path.join(box.root, "elsewhere", "sessions");
    fs.mkdirSync(sessionsRoot, { recursive: true, mode: 0o700 });
    const resolved = resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, sessionsRoot });
    if (resolved.kind !== "resolved") throw new Error(`${resolved.code}/${resolved.cause}`);
    const scope = resolved.scope;
    const retired = await candidateAt(scope, writeLegacySession(sessionsRoot, box.cwd));
    const kept = await candidateAt(scope, writeLegacySession(sessionsRoot, box.cwd));
    expect(await retireCandidate(scope, retired)).toMatchObject({ kind: "retired" });
    expect((await listed(scope)).candidates.map((c) => c.path)).toEqual([kept.path]);
    const opened = await openCandidateForWrite(scope, kept);
    expect(opened).toMatchObject({ kind: "opened", migrated: true });
    expect(opened.kind === "opened" && opened.path.startsWith(scope.directoryPath + path.sep)).toBe(true);
    expect(fs.existsSync(path.join(box.agentDir, "sessions"))).toBe(false);
  });

  it.each([
    ["transcript appended", (file: string) => fs.appendFileSync(file, "{}\n")],
    ["artifact rewritten", (file: string) => fs.writeFileSync(path.join(file.slice(0, -6), "1.log"), "changed!")],
    ["artifact added", (file: string) => fs.writeFileSync(path.join(file.slice(0, -6), "new.log"), "x")],
    [
      "artifact swapped for a symlink",
      (file: string) => {
        fs.unlinkSync(path.join(file.slice(0, -6), "1.log"));
        fs.symlinkSync("/etc/passwd", path.join(file.slice(0, -6), "1.log"));
      },
    ],
  ])("source modified mid-copy (%s) -> source_changed, nothing published", async (_name, modify) => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const file = writeLegacySession(scope.sessionsRoot, box.cwd, { artifacts: { "1.log": "original", "2.log": "two" } });
    const candidate = await candidateAt(scope, file);
    let modified = false;
    const result = await openCandidateForWrite(scope, candidate, {
      onProgress: (p) => {
        if (p.phase === "copying" && !modified) {
          modified = true;
          modify(file);
        }
      },
    });
    expect(modified).toBe(true);
    expect(result).toMatchObject({ kind: "error", code: "source_changed" });
    const names = fs.readdirSync(scope.directoryPath);
    expect(names.filter((n) => n !== BINDING_FILE_NAME && n !== ".gjc-managed-session-internal")).toEqual([]);
  });
});
