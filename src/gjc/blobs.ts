/**
 * The blob store's maintenance calls GJC's disk GC makes: finding the hashes a transcript
 * references, listing the canonical blob files, and removing one only while it is exactly the
 * file that was listed. Every step goes through the directory's descriptor (owner-only, no link
 * followed), and removal detaches the file under a quarantine name first, so a file swapped in
 * after the check is put back, never deleted.
 */
import path from "node:path";

import { SecureDir, SecureFsError, type ExactStat } from "../fs/index.js";
import { BLOB_REF_PREFIX } from "../session/index.js";

/** The length of one `blob:sha256:<64 hex>` reference: what a chunked scan carries over between chunks. */
export const BLOB_REFERENCE_MAX_LENGTH = BLOB_REF_PREFIX.length + 64;

const REFERENCE = /blob:sha256:([0-9a-f]{64})/g;
const CANONICAL_NAME = /^[0-9a-f]{64}$/;

/** Adds to `into` the hash (64 hex digits, not the whole reference) of every blob reference in `text`. */
export function collectBlobReferences(text: string, into: Set<string>): void {
  for (const match of text.matchAll(REFERENCE)) into.add(match[1]!);
}

/** One canonical blob file as listed: what {@link removeCanonicalBlob} checks again before removing it. */
export interface CanonicalBlobEntry {
  /** The blob's hash, which is its file name. */
  hash: string;
  /** The file's path (for messages and for finding its directory). */
  path: string;
  /** Size in bytes. */
  bytes: number;
  /** Whole milliseconds since the epoch, as a bigint stat gives them. */
  mtimeMs: number;
  /** Modification time in nanoseconds since the epoch. */
  mtimeNs: bigint;
  /** Device and inode: which file this is. */
  dev: bigint;
  ino: bigint;
  /** Link count (1: only canonical blobs are listed). */
  nlink: bigint;
}

/** Why {@link removeCanonicalBlob} kept a blob; `failed` marks the reasons that are I/O failures, not refusals. */
export type CanonicalBlobRemoval = { removed: true } | { removed: false; reason: string; failed?: true };

/** Options of {@link removeCanonicalBlob}. */
export interface RemoveCanonicalBlobOptions {
  /** Asked after the blob was verified, right before it goes: resolving `false` keeps it (a reference appeared). */
  beforeUnlink?: () => Promise<boolean>;
}

/**
 * The canonical blobs of `dir`: regular files with exactly one link named by 64 lowercase hex
 * digits. Everything else (temporary files, links, directories, extra-linked files) is left out.
 * A missing directory lists as `[]`.
 * @throws SecureFsError when `dir` exists but fails the owner-only rules or cannot be read
 */
export async function listCanonicalBlobs(dir: string): Promise<CanonicalBlobEntry[]> {
  const held = openBlobDir(dir);
  if (held === undefined) return [];
  try {
    const entries: CanonicalBlobEntry[] = [];
    for (const { name, type } of held.list()) {
      if (type !== "file" || !CANONICAL_NAME.test(name)) continue;
      const stat = statOrUndefined(held, name);
      if (stat === undefined || stat.type !== "file" || stat.nlink !== 1) continue;
      const mtimeNs = BigInt(stat.mtimeNs);
      entries.push({
        hash: name,
        path: path.join(held.path, name),
        bytes: stat.size,
        mtimeMs: Number(mtimeNs / 1_000_000n),
        mtimeNs,
        dev: BigInt(stat.dev),
        ino: BigInt(stat.ino),
        nlink: BigInt(stat.nlink),
      });
    }
    return entries;
  } finally {
    held.close();
  }
}

/**
 * Removes the blob `entry` lists, only while the file is still that one (same device, inode,
 * size and mtime, a single-link regular file) and `beforeUnlink` agrees. It is renamed to
 * `.gjc-gc-blob-<hash>` first and checked again there, so a file swapped in meanwhile is renamed
 * back and kept. Reasons: `blob_disappeared`, `blob_not_plain_file`, `blob_changed`,
 * `blob_reference_evidence_changed`, and (failed) `blob_unverifiable`, `blob_cleanup_failed`,
 * `blob_unlink_failed`.
 */
export async function removeCanonicalBlob(entry: CanonicalBlobEntry, options: RemoveCanonicalBlobOptions = {}): Promise<CanonicalBlobRemoval> {
  const name = path.basename(entry.path);
  if (name !== entry.hash || !CANONICAL_NAME.test(name)) return { removed: false, reason: "blob_not_plain_file" };
  let held: SecureDir | undefined;
  try {
    held = openBlobDir(path.dirname(entry.path));
  } catch (error) {
    return { removed: false, reason: `blob_unverifiable: ${describe(error)}`, failed: true };
  }
  if (held === undefined) return { removed: false, reason: "blob_disappeared" };
  try {
    const verdict = check(held, name, entry);
    if (verdict !== undefined) return verdict;
    if (options.beforeUnlink !== undefined && !(await options.beforeUnlink())) return { removed: false, reason: "blob_reference_evidence_changed" };
    const quarantine = `.gjc-gc-blob-${entry.hash}`;
    try {
      held.publishNoReplace(name, quarantine);
    } catch (error) {
      if (error instanceof SecureFsError && error.code === "not_found") return { removed: false, reason: "blob_disappeared" };
      return { removed: false, reason: `blob_unlink_failed: ${describe(error)}`, failed: true };
    }
    const detached = check(held, quarantine, entry);
    if (detached !== undefined) {
      // Not the listed file after all: it goes back under its name, untouched.
      try {
        held.publishNoReplace(quarantine, name);
      } catch (error) {
        return { removed: false, reason: `blob_cleanup_failed: ${describe(error)}`, failed: true };
      }
      return detached;
    }
    try {
      held.unlink(quarantine);
      held.sync();
    } catch (error) {
      return { removed: false, reason: `blob_cleanup_failed: ${describe(error)}`, failed: true };
    }
    return { removed: true };
  } finally {
    held.close();
  }
}

/** `undefined` when `name` is still the file `entry` describes, else why it is kept. */
function check(held: SecureDir, name: string, entry: CanonicalBlobEntry): CanonicalBlobRemoval | undefined {
  let stat: ExactStat | undefined;
  try {
    stat = statOrUndefined(held, name);
  } catch (error) {
    return { removed: false, reason: `blob_unverifiable: ${describe(error)}`, failed: true };
  }
  if (stat === undefined) return { removed: false, reason: "blob_disappeared" };
  if (stat.type !== "file" || stat.nlink !== 1) return { removed: false, reason: "blob_not_plain_file" };
  const same = BigInt(stat.dev) === entry.dev && BigInt(stat.ino) === entry.ino && stat.size === entry.bytes && BigInt(stat.mtimeNs) === entry.mtimeNs;
  return same ? undefined : { removed: false, reason: "blob_changed" };
}

function openBlobDir(dir: string): SecureDir | undefined {
  try {
    return SecureDir.openRoot(dir);
  } catch (error) {
    if (error instanceof SecureFsError && error.code === "not_found") return undefined;
    throw error;
  }
}

function statOrUndefined(held: SecureDir, name: string): ExactStat | undefined {
  try {
    return held.stat(name);
  } catch (error) {
    if (error instanceof SecureFsError && error.code === "not_found") return undefined;
    throw error;
  }
}

function describe(error: unknown): string {
  return error instanceof SecureFsError ? error.code : error instanceof Error ? error.name : "unknown";
}
