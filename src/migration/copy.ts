/**
 * Bounded, verified copying from a legacy source into an owner-only staging tree, all by
 * descriptor: the artifact directory of a transcript is snapshotted by one walk below its
 * held legacy directory (no links, no extra hard links, no special files, nothing another
 * user owns or may write, depth/count/size budgets), then copied file by file with each
 * file's version pinned from the snapshot: read, written, hashed, given its source's times,
 * fsynced and read back. Syncing the staged directories is the job of staging.ts.
 */
import { SecureFsError, type EntryPath, type ExactStat, type SecureDir, type SecureFile } from "../fs/index.js";
import { MigrationError } from "./errors.js";
import type { ManifestEntry } from "./receipts.js";
import { refusalCause, sameStat, sourceRefusal, stableStat, type StableStat } from "./session-file.js";
import { chunkBuffer, hashManagedFile, hashOpenFile, verifyMismatch, type StagedSet } from "./staging.js";

/** Budgets of one artifact tree. */
export interface ArtifactLimits {
  /** Deepest allowed entry (root children are depth 1). */
  readonly maxDepth: number;
  /** Entries (directories and files) in the tree. */
  readonly maxEntries: number;
  /** Bytes of one file. */
  readonly maxFileBytes: number;
  /** Bytes of all files together. */
  readonly maxTotalBytes: number;
}

/** The peer's bounds: depth 32, 50,000 entries, 128 MiB per file, 512 MiB in total. */
export const DEFAULT_ARTIFACT_LIMITS: ArtifactLimits = Object.freeze({
  maxDepth: 32,
  maxEntries: 50_000,
  maxFileBytes: 128 * 1024 * 1024,
  maxTotalBytes: 512 * 1024 * 1024,
});

/** One entry of a snapshot: its relative path (`/`-separated) and the version it must keep. */
export interface SnapshotEntry {
  readonly kind: "directory" | "file";
  readonly path: string;
  readonly stat: StableStat;
}

/** A snapshot of a source artifact tree. */
export interface ArtifactSnapshot {
  readonly root: StableStat;
  /** Directories before their contents, each directory's names sorted. */
  readonly entries: readonly SnapshotEntry[];
  readonly totalBytes: number;
  readonly files: number;
}

/** The entry names of a snapshot path. */
function partsOf(rel: string): string[] {
  return rel.split("/");
}

/**
 * Opens the artifact directory `name` of the held legacy directory `parent` (legacy-source
 * rules), or returns undefined when nothing is there. A link, a non-directory or an object
 * not safe to read -> `unsafe_artifacts` with the cause.
 */
function openArtifactRoot(parent: SecureDir, name: string): SecureDir | undefined {
  try {
    return parent.openDir(name, { source: true });
  } catch (error) {
    if (error instanceof SecureFsError && error.code === "not_found") return undefined;
    throw unwalkable(error);
  }
}

/**
 * Snapshots the artifact tree `name` of the held legacy directory `parent`, or returns
 * undefined when nothing is there. Links, hard links, special files, objects another user
 * owns or may write, a too-deep entry or a too-large file -> `unsafe_artifacts`; more
 * entries or bytes than the budget -> `artifact_capacity_exceeded`; a tree that cannot be
 * walked safely (a name that is not UTF-8, a directory swapped while walked, an unreadable
 * directory) -> `unsafe_artifacts` with the file-system code.
 */
export function snapshotArtifactTree(parent: SecureDir, name: string, limits: ArtifactLimits): ArtifactSnapshot | undefined {
  const root = openArtifactRoot(parent, name);
  if (root === undefined) return undefined;
  try {
    const entries: SnapshotEntry[] = [];
    let totalBytes = 0;
    let files = 0;
    const euid = process.geteuid?.();
    const admit = (rel: string, depth: number, st: ExactStat): void => {
      if (depth > limits.maxDepth) throw new MigrationError("unsafe_artifacts", "too_deep", "the artifact tree is too deep");
      if (entries.length + 1 > limits.maxEntries) throw new MigrationError("artifact_capacity_exceeded", "too_many_entries", "the artifact tree has too many entries");
      if (st.type === "symlink") throw new MigrationError("unsafe_artifacts", "symlink", "the artifact tree holds a symbolic link");
      if (st.type === "directory") {
        entries.push({ kind: "directory", path: rel, stat: stableStat(st) });
        return;
      }
      if (st.type !== "file") throw new MigrationError("unsafe_artifacts", "special_file", "the artifact tree holds a special file");
      if (st.nlink !== 1) throw new MigrationError("unsafe_artifacts", "hardlink", "an artifact file has more than one link");
      // Where the OS reports owners and modes (POSIX); on Windows the open checks the owner.
      if (euid !== undefined && st.uid !== euid) throw new MigrationError("unsafe_artifacts", "owner_mismatch", "an artifact file belongs to another user");
      if (euid !== undefined && (st.mode & 0o022) !== 0) throw new MigrationError("unsafe_artifacts", "mode_mismatch", "another user may write an artifact file");
      if (st.size > limits.maxFileBytes) throw new MigrationError("unsafe_artifacts", "file_too_large", "an artifact file is larger than allowed");
      totalBytes += st.size;
      files += 1;
      if (totalBytes > limits.maxTotalBytes) throw new MigrationError("artifact_capacity_exceeded", "too_many_bytes", "the artifact tree is larger than allowed");
      entries.push({ kind: "file", path: rel, stat: stableStat(st) });
    };
    try {
      walkTree(root, limits, admit);
    } catch (error) {
      unwalkable(error);
    }
    return { root: stableStat(root.stat()), entries, totalBytes, files };
  } finally {
    root.close();
  }
}

/**
 * Walks the held source directory `dir` by descriptor: every entry is stat'ed without
 * following it and given to `visit` (which throws to stop), and each directory down to the
 * depth bound is opened by the legacy-source rules and must be the object just stat'ed.
 */
function walkTree(dir: SecureDir, limits: ArtifactLimits, visit: (rel: string, depth: number, st: ExactStat) => void, prefix = "", depth = 1): void {
  for (const name of dir.list().map((entry) => entry.name).sort()) {
    const rel = prefix === "" ? name : `${prefix}/${name}`;
    const st = dir.stat(name);
    visit(rel, depth, st);
    if (st.type !== "directory" || depth > limits.maxDepth) continue;
    const child = dir.openDir(name, { source: true });
    try {
      const held = child.stat();
      if (held.dev !== st.dev || held.ino !== st.ino) throw new SecureFsError("identity_mismatch", { operation: "walk", path: child.path });
      walkTree(child, limits, visit, rel, depth + 1);
    } finally {
      child.close();
    }
  }
}

function unwalkable(error: unknown): never {
  if (error instanceof MigrationError) throw error;
  if (error instanceof SecureFsError) throw new MigrationError("unsafe_artifacts", refusalCause(error), `the artifact tree cannot be walked safely (${error.code})`);
  throw error;
}

/**
 * True when the artifact tree `name` of `parent` still matches `snapshot` entry for entry:
 * the same root directory, the same paths and types, and every file the same version.
 */
export function snapshotStillHolds(parent: SecureDir, name: string, snapshot: ArtifactSnapshot | undefined, limits: ArtifactLimits): boolean {
  let now: ArtifactSnapshot | undefined;
  try {
    now = snapshotArtifactTree(parent, name, limits);
  } catch (error) {
    if (error instanceof MigrationError) return false;
    throw error;
  }
  if (now === undefined || snapshot === undefined) return now === snapshot;
  if (now.root.dev !== snapshot.root.dev || now.root.ino !== snapshot.root.ino || now.entries.length !== snapshot.entries.length) return false;
  return now.entries.every((e, i) => {
    const was = snapshot.entries[i];
    return was !== undefined && was.path === e.path && was.kind === e.kind && (e.kind === "directory" || sameStat(was.stat, e.stat));
  });
}

/** Called with the bytes of each copied chunk. */
export type BytesCallback = (bytes: number) => void;

/**
 * Copies the legacy source file `sourceName` of the held directory `sourceDir` (opened by
 * the legacy-source rules, and still the version `expected`) into a new owner-only file
 * `name` of `dir` (created exclusively), gives the copy the source's access and modification
 * times, fsyncs it, and returns the SHA-256 of the bytes copied. The copy is read back first
 * and must hash the same: a write path that stored other bytes is `durability_failed`
 * (`verify_mismatch`) before anything is published. The caller syncs the directories the
 * copies were made in ({@link StagedSet}).
 */
export async function copyFileInto(sourceDir: SecureDir, sourceName: EntryPath, expected: StableStat, dir: SecureDir, name: string, onBytes: BytesCallback): Promise<string> {
  let source: SecureFile;
  let opened: ExactStat;
  try {
    source = sourceDir.openFile(sourceName, { source: true });
    opened = source.stat();
  } catch (error) {
    throw changedOrUnsafe(error);
  }
  let out: SecureFile | undefined;
  try {
    requireStill(stableStat(opened), expected, "changed_before_copy");
    const file = dir.openFile(name, { write: true, create: "exclusive" });
    out = file;
    const buffer = chunkBuffer(expected.size);
    const { size: position, sha256 } = hashOpenFile(source, buffer, (chunk, at) => {
      file.write(chunk, at);
      onBytes(chunk.byteLength);
    });
    requireCopiedWhole(position, stableStat(source.stat()), expected);
    // Read back before the fsync proves as much as after it (both are served from the page
    // cache the fsync writes out), and before setting the times, which a read would touch.
    const back = hashOpenFile(file, buffer);
    if (back.size !== position || back.sha256 !== sha256) throw verifyMismatch();
    // Newest-by-mtime choices (continueRecent) must see the session's own age, not the copy's.
    file.setTimes(BigInt(opened.atimeNs), BigInt(opened.mtimeNs));
    await file.syncAsync();
    return sha256;
  } finally {
    out?.close();
    source.close();
  }
}

/** A refused source open during the copy: it was fine when snapshotted, so it changed. */
function changedOrUnsafe(error: unknown): MigrationError {
  const refusal = sourceRefusal(error);
  return new MigrationError("source_changed", refusal.detail, "a source file changed during migration");
}

function requireStill(stat: StableStat, expected: StableStat, detail: string): void {
  if (!sameStat(stat, expected)) throw new MigrationError("source_changed", detail, "a source file changed during migration");
}

/** The copy read exactly the snapshot's size, and the source's stat after it is unchanged. */
function requireCopiedWhole(position: number, after: StableStat, expected: StableStat): void {
  if (position !== expected.size) throw new MigrationError("source_changed", "changed_while_copying", "a source file changed during migration");
  requireStill(after, expected, "changed_while_copying");
}

/**
 * Copies every entry of `snapshot` from the artifact tree `name` of the held legacy
 * directory `parent` into the held (empty) staging directory `target`, records every
 * created directory in `staged` (which the caller syncs and closes; each file is fsynced as
 * it is copied), and returns the manifest. `onFile` is called once per copied file.
 */
export async function copyArtifactTree(
  parent: SecureDir,
  name: string,
  snapshot: ArtifactSnapshot,
  target: SecureDir,
  staged: StagedSet,
  onBytes: BytesCallback,
  onFile: () => void,
): Promise<ManifestEntry[]> {
  const root = openArtifactRoot(parent, name);
  try {
    if (root === undefined || !sameRoot(root, snapshot)) throw new MigrationError("source_changed", "tree_changed", "the artifact tree changed during migration");
    const dirs = new Map<string, SecureDir>([["", target]]);
    const dirOf = (rel: string): SecureDir => dirs.get(rel.slice(0, Math.max(rel.lastIndexOf("/"), 0))) as SecureDir;
    const baseName = (rel: string): string => rel.slice(rel.lastIndexOf("/") + 1);
    const manifest: ManifestEntry[] = [];
    for (const entry of snapshot.entries) {
      if (entry.kind === "directory") {
        // Its parent is synced once with the other staged directories, after the copies.
        const child = dirOf(entry.path).openDir(baseName(entry.path), { create: true, deferSync: true });
        staged.holdDir(child, { own: true });
        dirs.set(entry.path, child);
        manifest.push({ kind: "directory", path: entry.path });
        continue;
      }
      const sha256 = await copyFileInto(root, partsOf(entry.path), entry.stat, dirOf(entry.path), baseName(entry.path), onBytes);
      manifest.push({ kind: "file", path: entry.path, size: entry.stat.size, sha256 });
      onFile();
    }
    return manifest.sort(byPath);
  } finally {
    root?.close();
  }
}

function sameRoot(root: SecureDir, snapshot: ArtifactSnapshot): boolean {
  const st = root.stat();
  return st.dev === snapshot.root.dev && st.ino === snapshot.root.ino;
}

function byPath(a: ManifestEntry, b: ManifestEntry): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}

/** The manifest of `snapshot` computed from the source tree `name` of `parent` itself (nothing is written). */
export function manifestOfSource(parent: SecureDir, name: string, snapshot: ArtifactSnapshot): ManifestEntry[] {
  const root = openArtifactRoot(parent, name);
  try {
    if (root === undefined || !sameRoot(root, snapshot)) throw new MigrationError("source_changed", "tree_changed", "the artifact tree changed during migration");
    const manifest: ManifestEntry[] = [];
    for (const entry of snapshot.entries) {
      if (entry.kind === "directory") {
        manifest.push({ kind: "directory", path: entry.path });
        continue;
      }
      let file: SecureFile;
      try {
        file = root.openFile(partsOf(entry.path), { source: true });
      } catch (error) {
        throw changedOrUnsafe(error);
      }
      try {
        if (!sameStat(stableStat(file.stat()), entry.stat)) throw new MigrationError("source_changed", "changed_while_hashing", "a source file changed during migration");
        const { size, sha256 } = hashOpenFile(file, chunkBuffer(entry.stat.size));
        manifest.push({ kind: "file", path: entry.path, size, sha256 });
      } finally {
        file.close();
      }
    }
    return manifest.sort(byPath);
  } finally {
    root?.close();
  }
}

/**
 * The manifest of an owner-only tree held as `dir`, walked by descriptor: any link, extra
 * hard link or foreign object in it fails the fs layer's checks and is reported as
 * `destination_conflict` by the caller.
 */
export function manifestOfManagedTree(dir: SecureDir, limits: ArtifactLimits, prefix = "", depth = 1): ManifestEntry[] {
  const manifest: ManifestEntry[] = [];
  for (const entry of dir.list().sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const rel = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
    if (depth > limits.maxDepth) throw new MigrationError("destination_conflict", "too_deep", "the destination tree is too deep");
    if (entry.type === "directory") {
      manifest.push({ kind: "directory", path: rel });
      const child = dir.openDir(entry.name);
      try {
        manifest.push(...manifestOfManagedTree(child, limits, rel, depth + 1));
      } finally {
        child.close();
      }
    } else if (entry.type === "file") {
      const { size, sha256 } = hashManagedFile(dir, entry.name);
      manifest.push({ kind: "file", path: rel, size, sha256 });
    } else {
      throw new MigrationError("destination_conflict", entry.type, "the destination tree holds something that is not a plain file or directory");
    }
  }
  return prefix === "" ? manifest.sort(byPath) : manifest;
}

/** True when two manifests list the same entries with the same contents. */
export function sameManifest(a: readonly ManifestEntry[], b: readonly ManifestEntry[]): boolean {
  return a.length === b.length && a.every((e, i) => JSON.stringify(e) === JSON.stringify(b[i]));
}
