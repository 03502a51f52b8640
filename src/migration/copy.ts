/**
 * Bounded, verified copying from an unmanaged source into an owner-only staging tree: the
 * artifact directory of a transcript is snapshotted (no links, no extra hard links, no
 * special files, depth/count/size budgets), copied file by file with each file's identity
 * pinned from the snapshot, hashed on the way and read back as it is written. Making the
 * copies durable is the job of staging.ts.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import {
  ContentDigest,
  SecureFsError,
  unmanagedTreeUnchanged,
  walkUnmanagedTree,
  type ImportedFile,
  type ImportRequest,
  type SecureDir,
  type SecureFile,
  type UnmanagedEntry,
  type UnmanagedTree,
} from "../fs/index.js";
import { MigrationError } from "./errors.js";
import type { ManifestEntry } from "./receipts.js";
import { openRegularNoFollow, sameStat, sourceOpenFailure, stableStat, type StableStat } from "./session-file.js";
import { CHUNK_BYTES, hashManagedFile, pool, type StagedSet } from "./staging.js";
import { TimeSlice } from "./time-slice.js";

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

/**
 * The version of a source entry a copy must find: identity, size, link count and times, as
 * bigint stats give them (kept as the walk reported them, so a large tree costs no
 * conversions).
 */
export type SourceVersion = Pick<UnmanagedEntry, "dev" | "ino" | "size" | "nlink" | "mtimeNs" | "ctimeNs">;

/** One entry of a snapshot: its relative path (`/`-separated) and the version it must keep. */
export interface SnapshotEntry {
  readonly kind: "directory" | "file";
  readonly path: string;
  readonly stat: SourceVersion;
}

/** A snapshot of a source artifact tree. */
export interface ArtifactSnapshot {
  readonly root: SourceVersion;
  /** Directories before their contents, sorted by path within each directory. */
  readonly entries: readonly SnapshotEntry[];
  readonly totalBytes: number;
  readonly files: number;
  /** The native walk it was taken from (absent where the tree is walked in JS), to check it again. */
  readonly walked?: UnmanagedTree;
}

/**
 * Snapshots the tree at `root`, or returns undefined when nothing is there. Links, hard
 * links, special files, a too-deep entry or a too-large file -> `unsafe_artifacts`; more
 * entries or bytes than the budget -> `artifact_capacity_exceeded`; a tree that cannot be
 * walked safely (a name that is not UTF-8, a directory swapped while walked, an unreadable
 * directory) -> `unsafe_artifacts` with the file-system code.
 */
export async function snapshotArtifactTree(root: string, limits: ArtifactLimits): Promise<ArtifactSnapshot | undefined> {
  let rootStat: fs.BigIntStats;
  try {
    rootStat = fs.lstatSync(root, { bigint: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new MigrationError("unsafe_artifacts", (error as NodeJS.ErrnoException).code ?? "io_error", "the artifact directory cannot be inspected");
  }
  if (!rootStat.isDirectory()) throw new MigrationError("unsafe_artifacts", rootStat.isSymbolicLink() ? "symlink" : "not_directory", "the artifact path is not a real directory");
  const walked = await walkUnmanagedTree(path.resolve(root), rootStat, limits).catch(unwalkable);
  const entries: SnapshotEntry[] = [];
  let totalBytes = 0;
  let files = 0;
  const admit = (entry: UnmanagedEntry): void => {
    if (entry.depth > limits.maxDepth) throw new MigrationError("unsafe_artifacts", "too_deep", "the artifact tree is too deep");
    if (entries.length + 1 > limits.maxEntries) throw new MigrationError("artifact_capacity_exceeded", "too_many_entries", "the artifact tree has too many entries");
    if (entry.type === "symlink") throw new MigrationError("unsafe_artifacts", "symlink", "the artifact tree holds a symbolic link");
    if (entry.type === "directory") {
      entries.push({ kind: "directory", path: entry.path, stat: entry });
      return;
    }
    if (entry.type !== "file") throw new MigrationError("unsafe_artifacts", "special_file", "the artifact tree holds a special file");
    if (entry.nlink !== 1) throw new MigrationError("unsafe_artifacts", "hardlink", "an artifact file has more than one link");
    if (entry.size > limits.maxFileBytes) throw new MigrationError("unsafe_artifacts", "file_too_large", "an artifact file is larger than allowed");
    totalBytes += entry.size;
    files += 1;
    if (totalBytes > limits.maxTotalBytes) throw new MigrationError("artifact_capacity_exceeded", "too_many_bytes", "the artifact tree is larger than allowed");
    entries.push({ kind: "file", path: entry.path, stat: entry });
  };
  if (walked === "unsupported") {
    for await (const entry of portableWalk(root, limits)) admit(entry);
  } else {
    // Checked in time slices: 50,000 entries in one run would hold the event loop.
    const slice = new TimeSlice();
    for (const entry of walked.entries) {
      admit(entry);
      if (slice.due()) await slice.yield();
    }
  }
  const rootVersion = { dev: rootStat.dev, ino: rootStat.ino, size: Number(rootStat.size), nlink: Number(rootStat.nlink), mtimeNs: rootStat.mtimeNs, ctimeNs: rootStat.ctimeNs };
  return { root: rootVersion, entries, totalBytes, files, ...(walked === "unsupported" ? {} : { walked }) };
}

function unwalkable(error: unknown): never {
  if (error instanceof SecureFsError) throw new MigrationError("unsafe_artifacts", error.code, `the artifact tree cannot be walked safely (${error.code})`);
  throw error;
}

/** The version as {@link StableStat}, for the checks shared with the transcript. */
function stableOf(entry: SourceVersion): StableStat {
  return {
    dev: entry.dev.toString(),
    ino: entry.ino.toString(),
    nlink: entry.nlink,
    size: entry.size,
    mtimeNs: entry.mtimeNs.toString(),
    ctimeNs: entry.ctimeNs.toString(),
    mtimeMs: Number(entry.mtimeNs / 1_000_000n),
  };
}

function sameVersion(a: SourceVersion, b: SourceVersion): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.nlink === b.nlink && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

/**
 * The walk where the platform has no native one (Windows): the same entries in the same
 * shape, from lstat by path, each directory's names sorted, directories down to the depth
 * bound entered. Synchronous calls in time slices: a thread-pool round trip per entry would
 * cost far more than the lstat itself (the tree may hold 50,000 entries).
 */
async function* portableWalk(root: string, limits: ArtifactLimits, relative = "", depth = 1, slice = new TimeSlice()): AsyncGenerator<UnmanagedEntry> {
  for (const name of fs.readdirSync(path.join(root, relative)).sort()) {
    const rel = relative === "" ? name : `${relative}/${name}`;
    await slice.yieldIfDue();
    const st = fs.lstatSync(path.join(root, rel), { bigint: true });
    const type = st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "directory" : st.isFile() ? "file" : "unknown";
    yield { path: rel, depth, type, dev: st.dev, ino: st.ino, size: Number(st.size), nlink: Number(st.nlink), mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs };
    if (type === "directory" && depth <= limits.maxDepth) yield* portableWalk(root, limits, rel, depth + 1, slice);
  }
}

/**
 * True when the tree at `root` still matches `snapshot` entry for entry: the same paths and
 * types, and every file the same version. Where the snapshot came from the native walk, the
 * addon checks the tree as it walks it again (no objects per entry: this runs right before
 * publication, with nothing else left to overlap it).
 */
export async function snapshotStillHolds(root: string, snapshot: ArtifactSnapshot | undefined, limits: ArtifactLimits): Promise<boolean> {
  if (snapshot?.walked !== undefined) {
    const rootId = { dev: snapshot.root.dev, ino: snapshot.root.ino };
    try {
      return await unmanagedTreeUnchanged(path.resolve(root), rootId, limits, snapshot.walked);
    } catch (error) {
      // Moved, replaced, unreadable or no longer walkable: not the tree that was copied.
      if (error instanceof SecureFsError) return false;
      throw error;
    }
  }
  let now: ArtifactSnapshot | undefined;
  try {
    now = await snapshotArtifactTree(root, limits);
  } catch (error) {
    if (error instanceof MigrationError) return false;
    throw error;
  }
  if (now === undefined || snapshot === undefined) return now === snapshot;
  if (now.entries.length !== snapshot.entries.length) return false;
  return now.entries.every((e, i) => {
    const was = snapshot.entries[i];
    return was !== undefined && was.path === e.path && was.kind === e.kind && (e.kind === "directory" || sameVersion(was.stat, e.stat));
  });
}

/** Called with the bytes of each copied chunk. */
export type BytesCallback = (bytes: number) => void;

/** Bytes per chunk of a file copied on its own (two chunks are in flight). */
export const COPY_CHUNK_BYTES = 4 << 20;

/**
 * Copies the regular file `source` into a new owner-only file `name` of `dir` (created
 * exclusively), checking that it is still the object of `expected`, and returns the SHA-256
 * of the bytes copied. Nothing is synced here: the caller makes all staged files durable at
 * once ({@link StagedSet}).
 *
 * Each chunk is written, read back and compared on the thread pool, and hashed there as it
 * reads back equal ({@link SecureFile.writeVerifiedAsync} with a {@link ContentDigest}),
 * while the next chunk is read: the JS thread does no per-byte work. The digest is thus of
 * the bytes both read from the source and found in the copy, one pass for both. Reading
 * back before the flush proves as much as after it: reads are served from the page cache
 * either way, which is what the flush writes out, and whether that writeback succeeded is
 * what the flush reports. A
 * short write, a write at the wrong place, a staged file changed behind our back: each is a
 * mismatch (`durability_failed`). Once `signal` is aborted, the copy stops at the next chunk
 * with its reason.
 */
export async function copyFileInto(source: string, expected: StableStat, dir: SecureDir, name: string, onBytes: BytesCallback, signal?: AbortSignal): Promise<string> {
  const { handle, stat } = await openRegularNoFollow(source).catch(sourceOpenFailed);
  let out: SecureFile | undefined;
  // The verified write of the previous chunk, running on the thread pool.
  let writing: Promise<boolean> | undefined;
  try {
    requireStill(stat, expected, "changed_before_copy");
    const file = dir.openFile(name, { write: true, create: "exclusive" });
    out = file;
    const digest = ContentDigest.create();
    const size = Math.min(COPY_CHUNK_BYTES, Math.max(expected.size, 1));
    const buffers = [Buffer.allocUnsafe(size), Buffer.allocUnsafe(size)] as const;
    let position = 0;
    for (let turn = 0; ; turn ^= 1) {
      signal?.throwIfAborted();
      // The other buffer may still be in the write in flight; this one is free.
      const buffer = buffers[turn] as Buffer;
      const { bytesRead } = await handle.read(buffer, 0, buffer.byteLength, position);
      if (bytesRead === 0) break;
      const chunk = buffer.subarray(0, bytesRead);
      if (writing !== undefined) requireVerified(await writing);
      writing = file.writeVerifiedAsync(chunk, position, digest);
      // Awaited at the next turn or in `finally`; marked handled now so that a failure
      // while the next read is awaited is not an unhandled rejection.
      writing.catch(() => false);
      position += bytesRead;
      onBytes(bytesRead);
    }
    if (writing !== undefined) requireVerified(await writing);
    writing = undefined;
    requireCopiedWhole(position, stableStat(await handle.stat({ bigint: true })), expected);
    // An empty copy must be empty too.
    if (position === 0) requireVerified(await file.writeVerifiedAsync(Buffer.alloc(0), 0));
    return digest.hex();
  } finally {
    // A write still in flight (after a failure) settles before its buffers and file go.
    await writing?.catch(() => false);
    out?.close();
    await handle.close();
  }
}

function requireVerified(verified: boolean): void {
  if (!verified) throw verifyMismatch();
}

/** The error for a copy that did not read back as written. */
export function verifyMismatch(): MigrationError {
  return new MigrationError("durability_failed", "verify_mismatch", "a copied file does not read back as written");
}

function sourceOpenFailed(error: unknown): never {
  if (error instanceof MigrationError) throw new MigrationError("source_changed", error.detail, "a source file changed during migration");
  throw error;
}

function requireStill(stat: StableStat, expected: StableStat, detail: string): void {
  if (!sameStat(stat, expected)) throw new MigrationError("source_changed", detail, "a source file changed during migration");
}

/** The copy read exactly the snapshot's size, and the source's stat after it is unchanged. */
function requireCopiedWhole(position: number, after: StableStat, expected: StableStat): void {
  if (position !== expected.size) throw new MigrationError("source_changed", "changed_while_copying", "a source file changed during migration");
  requireStill(after, expected, "changed_while_copying");
}

/** Large files copied at the same time (each keeps a read and a write in flight). */
const COPY_CONCURRENCY = 4;

/** Bytes of one import batch's buffer; a file that needs more (its size + 1) is copied on its own. */
export const IMPORT_BUFFER_BYTES = 4 << 20;

/** Files per import batch: bounds the time between progress reports. */
const IMPORT_BATCH_FILES = 256;

/**
 * Import batches in flight: with the transcript's read and write, this keeps the four
 * threads of libuv's default pool busy.
 */
const IMPORT_LANES = 2;

/** Files of one source directory copied by one native import. */
interface ImportBatch {
  readonly dir: string;
  readonly dirStat: SourceVersion;
  readonly files: SnapshotEntry[];
}

/** The snapshot's files grouped by directory into import batches of bounded size. */
function importBatches(snapshot: ArtifactSnapshot): ImportBatch[] {
  const stats = new Map<string, SourceVersion>([["", snapshot.root]]);
  const byDir = new Map<string, SnapshotEntry[]>();
  for (const entry of snapshot.entries) {
    if (entry.kind === "directory") {
      stats.set(entry.path, entry.stat);
      continue;
    }
    const dir = parentPath(entry.path);
    const files = byDir.get(dir);
    if (files === undefined) byDir.set(dir, [entry]);
    else files.push(entry);
  }
  const batches: ImportBatch[] = [];
  for (const [dir, files] of byDir) {
    const dirStat = stats.get(dir) as SourceVersion;
    let current: SnapshotEntry[] = [];
    let bytes = 0;
    for (const file of files) {
      const room = file.stat.size + 1;
      if (current.length === IMPORT_BATCH_FILES || (current.length > 0 && bytes + room > IMPORT_BUFFER_BYTES)) {
        batches.push({ dir, dirStat, files: current });
        current = [];
        bytes = 0;
      }
      current.push(file);
      bytes += room;
    }
    batches.push({ dir, dirStat, files: current });
  }
  return batches;
}

function parentPath(rel: string): string {
  const cut = rel.lastIndexOf("/");
  return cut < 0 ? "" : rel.slice(0, cut);
}

function importRequest(entry: SnapshotEntry, name: string): ImportRequest {
  const { dev, ino, size, mtimeNs, ctimeNs } = entry.stat;
  return { name, dev, ino, size, mtimeNs, ctimeNs };
}

/** The migration error for an imported file that was neither copied nor deferred. */
function importFailure(file: ImportedFile): Error {
  switch (file.outcome) {
    case "changed": {
      if (file.change === "unopenable") return sourceOpenFailure(file.error?.errnoName ?? file.error?.code ?? "io_error");
      const detail = { not_regular: "not_regular_file", hardlink: "hardlink", before_copy: "changed_before_copy", while_copying: "changed_while_copying" }[file.change ?? "before_copy"];
      return new MigrationError("source_changed", detail, "a source file changed during migration");
    }
    case "mismatch":
      return verifyMismatch();
    default:
      // `failed`: the staged copy could not be created, written or read back.
      return file.error ?? new MigrationError("durability_failed", file.outcome, "a file could not be copied");
  }
}

/** A failed import as a whole: the source directory is gone or is another one now. */
function importBatchFailure(error: unknown): never {
  const moved: readonly string[] = ["identity_mismatch", "not_found", "symlink_refused", "not_directory"];
  if (error instanceof SecureFsError && moved.includes(error.code)) {
    throw new MigrationError("source_changed", "tree_changed", "the artifact tree changed during migration");
  }
  throw error;
}

/**
 * Copies every entry of `snapshot` from `sourceRoot` into the held (empty) staging directory
 * `target` (each file read back as it is written), records every created directory and
 * copied file in `staged` (which the caller makes durable and closes), and returns the
 * manifest. `onFile` is called once per copied file.
 *
 * The files of each directory go through native import batches (many files per addon call,
 * on the thread pool), two at a time, which also hash each file as it reads back equal.
 * Files too large for a batch,
 * and every file where the platform has no import, are copied one by one.
 */
export async function copyArtifactTree(
  sourceRoot: string,
  snapshot: ArtifactSnapshot,
  target: SecureDir,
  staged: StagedSet,
  onBytes: BytesCallback,
  onFile: () => void,
): Promise<ManifestEntry[]> {
  const dirs = new Map<string, SecureDir>([["", target]]);
  const manifest: ManifestEntry[] = [];
  const dirOf = (rel: string): SecureDir => {
    const dir = dirs.get(rel);
    if (dir === undefined) throw new MigrationError("source_changed", "tree_changed", "the artifact tree changed during migration");
    return dir;
  };
  const nameOf = (rel: string): string => rel.slice(rel.lastIndexOf("/") + 1);
  const slice = new TimeSlice();
  for (const entry of snapshot.entries) {
    if (entry.kind !== "directory") continue;
    // Not synced one by one: the staged set makes every staged entry durable at once.
    const child = dirOf(parentPath(entry.path)).openDir(nameOf(entry.path), { create: true, deferSync: true });
    staged.holdDir(child, { own: true });
    dirs.set(entry.path, child);
    manifest.push({ kind: "directory", path: entry.path });
    await slice.yieldIfDue();
  }
  const sourceOf = (rel: string): string => path.resolve(sourceRoot, ...rel.split("/").filter((part) => part !== ""));
  const copied = (entry: SnapshotEntry, sha256: string): void => {
    staged.addFile(dirOf(parentPath(entry.path)), nameOf(entry.path));
    manifest.push({ kind: "file", path: entry.path, size: entry.stat.size, sha256 });
    onFile();
  };
  const oneByOne: SnapshotEntry[] = [];
  const buffers: Buffer[] = Array.from({ length: IMPORT_LANES }, () => Buffer.allocUnsafe(IMPORT_BUFFER_BYTES));
  await pool(importBatches(snapshot), IMPORT_LANES, async (batch) => {
    const buffer = buffers.pop() as Buffer;
    try {
      const dir = dirOf(batch.dir);
      const requests = batch.files.map((entry) => importRequest(entry, nameOf(entry.path)));
      const sourceId = { dev: batch.dirStat.dev, ino: batch.dirStat.ino };
      const results = await dir.importFilesAsync(sourceOf(batch.dir), sourceId, requests, buffer).catch(importBatchFailure);
      if (results === "unsupported") {
        oneByOne.push(...batch.files);
        return;
      }
      results.forEach((file, i) => {
        const entry = batch.files[i] as SnapshotEntry;
        if (file.outcome === "deferred") {
          oneByOne.push(entry);
          return;
        }
        if (file.outcome !== "copied" || file.sha256 === undefined) throw importFailure(file);
        copied(entry, file.sha256);
        onBytes(entry.stat.size);
      });
    } finally {
      buffers.push(buffer);
    }
  });
  await pool(oneByOne, COPY_CONCURRENCY, async (entry) => {
    const sha256 = await copyFileInto(sourceOf(entry.path), stableOf(entry.stat), dirOf(parentPath(entry.path)), nameOf(entry.path), onBytes);
    copied(entry, sha256);
  });
  return manifest.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** The manifest of `snapshot` computed from the source itself (nothing is written). */
export async function manifestOfSource(sourceRoot: string, snapshot: ArtifactSnapshot): Promise<ManifestEntry[]> {
  const manifest: ManifestEntry[] = [];
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  for (const entry of snapshot.entries) {
    if (entry.kind === "directory") {
      manifest.push({ kind: "directory", path: entry.path });
      continue;
    }
    const { handle, stat } = await openRegularNoFollow(path.join(sourceRoot, ...entry.path.split("/")));
    try {
      if (!sameStat(stat, stableOf(entry.stat))) throw new MigrationError("source_changed", "changed_while_hashing", "a source file changed during migration");
      const digest = createHash("sha256");
      let position = 0;
      for (;;) {
        const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, position);
        if (bytesRead === 0) break;
        digest.update(buffer.subarray(0, bytesRead));
        position += bytesRead;
      }
      manifest.push({ kind: "file", path: entry.path, size: position, sha256: digest.digest("hex") });
    } finally {
      await handle.close();
    }
  }
  return manifest.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * The manifest of an owner-only tree held as `dir`, walked by descriptor: any link, extra
 * hard link or foreign object in it fails the fs layer's checks and is reported as
 * `destination_conflict` by the caller.
 */
export async function manifestOfManagedTree(dir: SecureDir, limits: ArtifactLimits, prefix = "", depth = 1, slice = new TimeSlice()): Promise<ManifestEntry[]> {
  const manifest: ManifestEntry[] = [];
  for (const entry of dir.list().sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const rel = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
    if (depth > limits.maxDepth) throw new MigrationError("destination_conflict", "too_deep", "the destination tree is too deep");
    if (entry.type === "directory") {
      manifest.push({ kind: "directory", path: rel });
      const child = dir.openDir(entry.name);
      try {
        manifest.push(...(await manifestOfManagedTree(child, limits, rel, depth + 1, slice)));
      } finally {
        child.close();
      }
    } else if (entry.type === "file") {
      const { size, sha256 } = await hashManagedFile(dir, entry.name, { slice });
      manifest.push({ kind: "file", path: rel, size, sha256 });
    } else {
      throw new MigrationError("destination_conflict", entry.type, "the destination tree holds something that is not a plain file or directory");
    }
  }
  return prefix === "" ? manifest.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)) : manifest;
}

/** True when two manifests list the same entries with the same contents. */
export function sameManifest(a: readonly ManifestEntry[], b: readonly ManifestEntry[]): boolean {
  return a.length === b.length && a.every((e, i) => JSON.stringify(e) === JSON.stringify(b[i]));
}
