/**
 * Copying a legacy artifact tree into owner-only staging, all by descriptor: one snapshot walk of the source (no links,
 * no extra hard links, no special files, nothing another user owns or may write, within the budgets), then one copy
 * loop that pins every file to its snapshot version: read, write, hash, read back, the source's times, fsync.
 */
import { SecureFsError, type EntryPath, type ExactStat, type SecureDir, type SecureFile } from "../fs/index.js";
import { MigrationError } from "./errors.js";
import type { ManifestEntry } from "./receipts.js";
import { hashOpenFile, openTranscript, refusalCause, sameStat, stableStat, type StableStat } from "./session-file.js";
import { wait, type Steps } from "./waits.js";

/** Budgets of one artifact tree: deepest entry (root children are depth 1), entries, bytes of one file, bytes in all. */
export interface ArtifactLimits {
  readonly maxDepth: number;
  readonly maxEntries: number;
  readonly maxFileBytes: number;
  readonly maxTotalBytes: number;
}

/** The peer's bounds: depth 32, 50,000 entries, 128 MiB per file, 512 MiB in total. */
export const DEFAULT_ARTIFACT_LIMITS: ArtifactLimits = Object.freeze({
  maxDepth: 32,
  maxEntries: 50_000,
  maxFileBytes: 128 * 1024 * 1024,
  maxTotalBytes: 512 * 1024 * 1024,
});

/** A snapshot of a source artifact tree: each entry's `/`-separated path and version, directories before their contents, names sorted. */
export interface ArtifactSnapshot {
  readonly root: StableStat;
  readonly entries: readonly { readonly kind: "directory" | "file"; readonly path: string; readonly stat: StableStat }[];
  readonly totalBytes: number;
  readonly files: number;
}

/** Opens the artifact directory `name` of the held legacy directory `parent`; undefined when absent. */
function openArtifactRoot(parent: SecureDir, name: string): SecureDir | undefined {
  try {
    return parent.openDir(name, { source: true });
  } catch (error) {
    if (error instanceof SecureFsError && error.code === "not_found") return undefined;
    throw unwalkable(error);
  }
}

/**
 * Walks the held `dir` by descriptor (legacy-source rules with `source`, else owner-only): each entry is stat'ed
 * without following it and given to `visit`, which throws to stop; each subdirectory opened must be the one stat'ed.
 */
function walkTree(
  dir: SecureDir,
  source: boolean,
  visit: (rel: string, depth: number, st: ExactStat, parent: SecureDir, name: string) => void,
  prefix = "",
  depth = 1,
): void {
  for (const name of dir
    .list()
    .map((entry) => entry.name)
    .sort()) {
    const rel = prefix === "" ? name : `${prefix}/${name}`;
    const st = dir.stat(name);
    visit(rel, depth, st, dir, name);
    if (st.type !== "directory") continue;
    const child = dir.openDir(name, source ? { source: true } : {});
    try {
      const held = child.stat();
      if (held.dev !== st.dev || held.ino !== st.ino) throw new SecureFsError("identity_mismatch", { operation: "walk", path: child.path });
      walkTree(child, source, visit, rel, depth + 1);
    } finally {
      child.close();
    }
  }
}

function unwalkable(error: unknown): MigrationError {
  if (error instanceof MigrationError) return error;
  if (error instanceof SecureFsError)
    return new MigrationError("unsafe_artifacts", refusalCause(error), `the artifact tree cannot be walked safely (${error.code})`);
  throw error;
}

/**
 * Snapshots the artifact tree `name` of the held legacy directory `parent` (undefined when absent). Links, hard links,
 * special files, objects another user owns or may write, too deep, a too-large file or an unsafe walk ->
 * `unsafe_artifacts`; more entries or bytes than the budget -> `artifact_capacity_exceeded`.
 */
export function snapshotArtifactTree(parent: SecureDir, name: string, limits: ArtifactLimits): ArtifactSnapshot | undefined {
  const root = openArtifactRoot(parent, name);
  if (root === undefined) return undefined;
  try {
    const entries: ArtifactSnapshot["entries"][number][] = [];
    let totalBytes = 0;
    let files = 0;
    const euid = process.geteuid?.();
    const unsafe = (detail: string, message: string) => new MigrationError("unsafe_artifacts", detail, message);
    const capacity = (detail: string, message: string) => new MigrationError("artifact_capacity_exceeded", detail, message);
    try {
      walkTree(root, true, (rel, depth, st) => {
        if (depth > limits.maxDepth) throw unsafe("too_deep", "the artifact tree is too deep");
        if (entries.length >= limits.maxEntries) throw capacity("too_many_entries", "the artifact tree has too many entries");
        if (st.type === "symlink") throw unsafe("symlink", "the artifact tree holds a symbolic link");
        if (st.type === "file") {
          if (st.nlink !== 1) throw unsafe("hardlink", "an artifact file has more than one link");
          // Where the OS reports owners and modes (POSIX); on Windows the open checks the owner.
          if (euid !== undefined && st.uid !== euid) throw unsafe("owner_mismatch", "an artifact file belongs to another user");
          if (euid !== undefined && (st.mode & 0o022) !== 0) throw unsafe("mode_mismatch", "another user may write an artifact file");
          if (st.size > limits.maxFileBytes) throw unsafe("file_too_large", "an artifact file is larger than allowed");
          totalBytes += st.size;
          files += 1;
          if (totalBytes > limits.maxTotalBytes) throw capacity("too_many_bytes", "the artifact tree is larger than allowed");
        } else if (st.type !== "directory") {
          throw unsafe("special_file", "the artifact tree holds a special file");
        }
        entries.push({ kind: st.type, path: rel, stat: stableStat(st) });
      });
    } catch (error) {
      throw unwalkable(error);
    }
    return { root: stableStat(root.stat()), entries, totalBytes, files };
  } finally {
    root.close();
  }
}

/** True when the artifact tree `name` of `parent` still matches `snapshot` entry for entry (a second snapshot). */
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

function changed(detail: string): MigrationError {
  return new MigrationError("source_changed", detail, "a source file changed during migration");
}

/** The error for a copy that does not read back as written. */
export function verifyMismatch(): MigrationError {
  return new MigrationError("durability_failed", "verify_mismatch", "a copied file does not read back as written");
}

/**
 * Copies the source file `sourceName` of `sourceDir`, which must still be version `expected`, into the new owner-only
 * file `name` of `dir`: read, written and hashed in one pass, read back (other bytes: `durability_failed`/
 * `verify_mismatch`), given the source's times and fsynced. The caller syncs the directory.
 */
export function* copyFileInto(
  sourceDir: SecureDir,
  sourceName: EntryPath,
  expected: StableStat,
  dir: SecureDir,
  name: string,
  onBytes: (bytes: number) => void,
): Steps<{ size: number; sha256: string }> {
  let source: SecureFile;
  let opened: ExactStat;
  try {
    ({ file: source, stat: opened } = openTranscript(sourceDir, sourceName, "source"));
  } catch (error) {
    // It was fine when listed or snapshotted, so a refusal now means it changed.
    throw error instanceof MigrationError ? changed(error.detail) : error;
  }
  let out: SecureFile | undefined;
  try {
    if (!sameStat(opened, expected)) throw changed("changed_before_copy");
    const file = (out = dir.openFile(name, { write: true, create: "exclusive" }));
    const copied = hashOpenFile(source, expected.size, (chunk, at) => {
      file.write(chunk, at);
      onBytes(chunk.byteLength);
    });
    if (copied.size !== expected.size || !sameStat(source.stat(), expected)) throw changed("changed_while_copying");
    // Read back before the fsync proves as much as after it (both are served from the page
    // cache the fsync writes out), and before setting the times, which a read would touch.
    const back = hashOpenFile(file, copied.size);
    if (back.size !== copied.size || back.sha256 !== copied.sha256) throw verifyMismatch();
    // Newest-by-mtime choices (continueRecent) must see the session's own age, not the copy's.
    file.setTimes(BigInt(opened.atimeNs), BigInt(opened.mtimeNs));
    yield* wait({ now: () => file.sync(), later: () => file.syncAsync() });
    return copied;
  } finally {
    out?.close();
    source.close();
  }
}

/**
 * Copies the artifact tree `name` of `parent`, as `snapshot` lists it, into the empty staging directory `target` and
 * returns its manifest. Every directory it creates is pushed to `opened`, for the caller to sync and close.
 */
export function* copyTree(
  parent: SecureDir,
  name: string,
  snapshot: ArtifactSnapshot,
  target: SecureDir,
  opened: SecureDir[],
  onBytes: (bytes: number) => void,
  onFile: () => void,
): Steps<ManifestEntry[]> {
  const root = openArtifactRoot(parent, name);
  try {
    const st = root?.stat();
    if (root === undefined || st?.dev !== snapshot.root.dev || st.ino !== snapshot.root.ino) {
      throw new MigrationError("source_changed", "tree_changed", "the artifact tree changed during migration");
    }
    const dirs = new Map<string, SecureDir>([["", target]]);
    const manifest: ManifestEntry[] = [];
    for (const entry of snapshot.entries) {
      const cut = entry.path.lastIndexOf("/");
      const into = dirs.get(entry.path.slice(0, Math.max(cut, 0)));
      // A snapshot lists every directory before its contents; a copy must never skip an entry.
      if (into === undefined) throw new MigrationError("source_changed", "tree_changed", `the artifact snapshot lists ${entry.path} before its directory`);
      const base = entry.path.slice(cut + 1);
      if (entry.kind === "directory") {
        // Its parent is synced once with the other staged directories, after the copies.
        const child = into.openDir(base, { create: true, deferSync: true });
        opened.push(child);
        dirs.set(entry.path, child);
        manifest.push({ kind: "directory", path: entry.path });
      } else {
        manifest.push({ kind: "file", path: entry.path, ...(yield* copyFileInto(root, entry.path.split("/"), entry.stat, into, base, onBytes)) });
        onFile();
      }
    }
    return manifest.sort(byPath);
  } finally {
    root?.close();
  }
}

function byPath(a: ManifestEntry, b: ManifestEntry): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}

/** SHA-256 and size of the owner-only file `name` in `dir`. */
export function hashManagedFile(dir: SecureDir, name: string): { size: number; sha256: string } {
  const file = dir.openFile(name);
  try {
    return hashOpenFile(file, file.stat().size);
  } finally {
    file.close();
  }
}

/** The manifest of the owner-only tree `dir`: a link, extra hard link or foreign object fails the fs checks (the caller's `destination_conflict`). */
export function manifestOfManagedTree(dir: SecureDir, limits: ArtifactLimits): ManifestEntry[] {
  const manifest: ManifestEntry[] = [];
  walkTree(dir, false, (rel, depth, st, parent, name) => {
    if (depth > limits.maxDepth) throw new MigrationError("destination_conflict", "too_deep", "the destination tree is too deep");
    if (st.type === "directory") manifest.push({ kind: "directory", path: rel });
    else if (st.type === "file") manifest.push({ kind: "file", path: rel, ...hashManagedFile(parent, name) });
    else throw new MigrationError("destination_conflict", st.type, "the destination tree holds something that is not a plain file or directory");
  });
  return manifest.sort(byPath);
}

/** True when two manifests list the same entries with the same contents. */
export function sameManifest(a: readonly ManifestEntry[], b: readonly ManifestEntry[]): boolean {
  return a.length === b.length && a.every((e, i) => JSON.stringify(e) === JSON.stringify(b[i]));
}
