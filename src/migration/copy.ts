/**
 * Bounded, verified copying from an unmanaged source into an owner-only staging tree: the
 * artifact directory of a transcript is snapshotted (no links, no extra hard links, no
 * special files, depth/count/size budgets), copied file by file with each file's identity
 * pinned from the snapshot, hashed on the way, synced, then read back and hashed again.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { setImmediate as yieldToLoop } from "node:timers/promises";

import type { SecureDir, SecureFile } from "../fs/index.js";
import { MigrationError } from "./errors.js";
import type { ManifestEntry } from "./receipts.js";
import { openRegularNoFollow, sameStat, stableStat, type StableStat } from "./session-file.js";

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

/** One entry of a snapshot: its relative path (`/`-separated) and the stat it must keep. */
export interface SnapshotEntry {
  readonly kind: "directory" | "file";
  readonly path: string;
  readonly stat: StableStat;
}

/** A snapshot of a source artifact tree. */
export interface ArtifactSnapshot {
  readonly root: StableStat;
  /** Directories before their contents, sorted by path within each directory. */
  readonly entries: readonly SnapshotEntry[];
  readonly totalBytes: number;
  readonly files: number;
}

const CHUNK_BYTES = 1 << 20;

/**
 * Snapshots the tree at `root`, or returns undefined when nothing is there. Links, hard
 * links, special files, a too-deep entry or a too-large file -> `unsafe_artifacts`; more
 * entries or bytes than the budget -> `artifact_capacity_exceeded`.
 */
export async function snapshotArtifactTree(root: string, limits: ArtifactLimits): Promise<ArtifactSnapshot | undefined> {
  let rootStat: fs.BigIntStats;
  try {
    rootStat = await fs.promises.lstat(root, { bigint: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new MigrationError("unsafe_artifacts", (error as NodeJS.ErrnoException).code ?? "io_error", "the artifact directory cannot be inspected");
  }
  if (!rootStat.isDirectory()) throw new MigrationError("unsafe_artifacts", rootStat.isSymbolicLink() ? "symlink" : "not_directory", "the artifact path is not a real directory");
  const entries: SnapshotEntry[] = [];
  let totalBytes = 0;
  let files = 0;
  const walk = async (relative: string, depth: number): Promise<void> => {
    const names = (await fs.promises.readdir(path.join(root, relative))).sort();
    for (const name of names) {
      const rel = relative === "" ? name : `${relative}/${name}`;
      if (depth > limits.maxDepth) throw new MigrationError("unsafe_artifacts", "too_deep", "the artifact tree is too deep");
      if (entries.length + 1 > limits.maxEntries) throw new MigrationError("artifact_capacity_exceeded", "too_many_entries", "the artifact tree has too many entries");
      const st = await fs.promises.lstat(path.join(root, rel), { bigint: true });
      if (st.isSymbolicLink()) throw new MigrationError("unsafe_artifacts", "symlink", "the artifact tree holds a symbolic link");
      if (st.isDirectory()) {
        entries.push({ kind: "directory", path: rel, stat: stableStat(st) });
        await walk(rel, depth + 1);
        continue;
      }
      if (!st.isFile()) throw new MigrationError("unsafe_artifacts", "special_file", "the artifact tree holds a special file");
      if (st.nlink !== 1n) throw new MigrationError("unsafe_artifacts", "hardlink", "an artifact file has more than one link");
      const size = Number(st.size);
      if (size > limits.maxFileBytes) throw new MigrationError("unsafe_artifacts", "file_too_large", "an artifact file is larger than allowed");
      totalBytes += size;
      files += 1;
      if (totalBytes > limits.maxTotalBytes) throw new MigrationError("artifact_capacity_exceeded", "too_many_bytes", "the artifact tree is larger than allowed");
      entries.push({ kind: "file", path: rel, stat: stableStat(st) });
    }
  };
  await walk("", 1);
  return { root: stableStat(rootStat), entries, totalBytes, files };
}

/** True when the tree at `root` still matches `snapshot` entry for entry. */
export async function snapshotStillHolds(root: string, snapshot: ArtifactSnapshot | undefined, limits: ArtifactLimits): Promise<boolean> {
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
    return was !== undefined && was.path === e.path && was.kind === e.kind && (e.kind === "directory" || sameStat(was.stat, e.stat));
  });
}

/** Called with the bytes of each copied chunk. */
export type BytesCallback = (bytes: number) => void;

/**
 * Copies the regular file `source` into a new owner-only file `name` of `dir` (created
 * exclusively), checking that it is still the object of `expected`; returns the SHA-256 of
 * the bytes copied. With `sync` the destination is synced before it is closed; without it
 * the caller syncs it later (see {@link hashManagedFile}).
 */
export async function copyFileInto(
  source: string,
  expected: StableStat,
  dir: SecureDir,
  name: string,
  onBytes: BytesCallback,
  options: { readonly sync: boolean } = { sync: true },
): Promise<string> {
  const { handle, stat } = await openRegularNoFollow(source).catch((error: unknown) => {
    if (error instanceof MigrationError) throw new MigrationError("source_changed", error.detail, "a source file changed during migration");
    throw error;
  });
  let out: SecureFile | undefined;
  try {
    if (!sameStat(stat, expected)) throw new MigrationError("source_changed", "changed_before_copy", "a source file changed during migration");
    out = dir.openFile(name, { write: true, create: "exclusive" });
    const hash = createHash("sha256");
    const buffer = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, Math.max(expected.size, 1)));
    let position = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.byteLength, position);
      if (bytesRead === 0) break;
      const chunk = buffer.subarray(0, bytesRead);
      hash.update(chunk);
      out.write(chunk, position);
      position += bytesRead;
      onBytes(bytesRead);
    }
    const after = stableStat(await handle.stat({ bigint: true }));
    if (position !== expected.size || !sameStat(after, expected)) {
      throw new MigrationError("source_changed", "changed_while_copying", "a source file changed during migration");
    }
    if (options.sync) await out.syncAsync();
    return hash.digest("hex");
  } finally {
    out?.close();
    await handle.close();
  }
}

/**
 * SHA-256 of the owner-only file `name` in `dir`, read back in chunks (yielding between
 * them); with `sync`, the file is fsynced first through the same descriptor.
 */
export async function hashManagedFile(dir: SecureDir, name: string, options: { readonly sync?: boolean } = {}): Promise<{ size: number; sha256: string }> {
  const file = dir.openFile(name);
  try {
    if (options.sync === true) await file.syncAsync();
    const hash = createHash("sha256");
    const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
    let position = 0;
    for (;;) {
      const n = file.read(buffer, { position });
      if (n === 0) break;
      hash.update(buffer.subarray(0, n));
      position += n;
      if (position % (4 * CHUNK_BYTES) === 0) await yieldToLoop();
    }
    return { size: position, sha256: hash.digest("hex") };
  } finally {
    file.close();
    // Reads of small files never reach the yield above; thousands of them in a row would
    // otherwise hold the event loop for seconds.
    await yieldToLoop();
  }
}

/** Runs `work` over `items` with at most `limit` in flight. */
async function pool<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: unknown;
  const lane = async () => {
    while (failure === undefined && next < items.length) {
      const item = items[next++] as T;
      try {
        await work(item);
      } catch (error) {
        failure ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  if (failure !== undefined) throw failure;
}

/** Files copied at the same time: reads and fsyncs overlap on the thread pool. */
const COPY_CONCURRENCY = 8;

/**
 * Copies every entry of `snapshot` from `sourceRoot` into the held (empty) staging directory
 * `target`, syncs every directory, reads every file back, and returns the manifest.
 * `onFile` is called once per copied file.
 */
export async function copyArtifactTree(
  sourceRoot: string,
  snapshot: ArtifactSnapshot,
  target: SecureDir,
  onBytes: BytesCallback,
  onFile: () => void,
): Promise<ManifestEntry[]> {
  const dirs = new Map<string, SecureDir>([["", target]]);
  const manifest: ManifestEntry[] = [];
  const parentOf = (rel: string): { dir: SecureDir; name: string } => {
    const cut = rel.lastIndexOf("/");
    const dir = dirs.get(cut < 0 ? "" : rel.slice(0, cut));
    if (dir === undefined) throw new MigrationError("source_changed", "tree_changed", "the artifact tree changed during migration");
    return { dir, name: cut < 0 ? rel : rel.slice(cut + 1) };
  };
  try {
    for (const entry of snapshot.entries) {
      if (entry.kind !== "directory") continue;
      const { dir, name } = parentOf(entry.path);
      dirs.set(entry.path, dir.openDir(name, { create: true }));
      manifest.push({ kind: "directory", path: entry.path });
      // Each creation syncs its parent: let other work run between them.
      await yieldToLoop();
    }
    const files = snapshot.entries.filter((e) => e.kind === "file");
    const hashes = new Map<string, string>();
    await pool(files, COPY_CONCURRENCY, async (entry) => {
      const { dir, name } = parentOf(entry.path);
      // Synced in the read-back pass below: all writes first, then the fsyncs, so they
      // overlap with writeback already under way instead of forcing one commit per file.
      hashes.set(entry.path, await copyFileInto(path.join(sourceRoot, ...entry.path.split("/")), entry.stat, dir, name, onBytes, { sync: false }));
      onFile();
    });
    await pool(files, COPY_CONCURRENCY, async (entry) => {
      const { dir, name } = parentOf(entry.path);
      const back = await hashManagedFile(dir, name, { sync: true });
      if (back.size !== entry.stat.size || back.sha256 !== hashes.get(entry.path)) {
        throw new MigrationError("durability_failed", "verify_mismatch", "a copied artifact does not read back as written");
      }
    });
    await pool([...dirs.values()], COPY_CONCURRENCY, (dir) => dir.syncAsync());
    for (const entry of files) manifest.push({ kind: "file", path: entry.path, size: entry.stat.size, sha256: hashes.get(entry.path) as string });
    return manifest.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  } finally {
    for (const [rel, dir] of dirs) if (rel !== "") dir.close();
  }
}

/** The manifest of `snapshot` computed from the source itself (nothing is written). */
export async function manifestOfSource(sourceRoot: string, snapshot: ArtifactSnapshot): Promise<ManifestEntry[]> {
  const manifest: ManifestEntry[] = [];
  for (const entry of snapshot.entries) {
    if (entry.kind === "directory") {
      manifest.push({ kind: "directory", path: entry.path });
      continue;
    }
    const { handle, stat } = await openRegularNoFollow(path.join(sourceRoot, ...entry.path.split("/")));
    try {
      if (!sameStat(stat, entry.stat)) throw new MigrationError("source_changed", "changed_while_hashing", "a source file changed during migration");
      const hash = createHash("sha256");
      const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
      let position = 0;
      for (;;) {
        const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, position);
        if (bytesRead === 0) break;
        hash.update(buffer.subarray(0, bytesRead));
        position += bytesRead;
      }
      manifest.push({ kind: "file", path: entry.path, size: position, sha256: hash.digest("hex") });
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
export async function manifestOfManagedTree(dir: SecureDir, limits: ArtifactLimits, prefix = "", depth = 1): Promise<ManifestEntry[]> {
  const manifest: ManifestEntry[] = [];
  for (const entry of dir.list().sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const rel = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
    if (depth > limits.maxDepth) throw new MigrationError("destination_conflict", "too_deep", "the destination tree is too deep");
    if (entry.type === "directory") {
      manifest.push({ kind: "directory", path: rel });
      const child = dir.openDir(entry.name);
      try {
        manifest.push(...(await manifestOfManagedTree(child, limits, rel, depth + 1)));
      } finally {
        child.close();
      }
    } else if (entry.type === "file") {
      const { size, sha256 } = await hashManagedFile(dir, entry.name);
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
