/**
 * Reading unmanaged trees (a legacy session's artifacts) without following links: walking
 * one in a single addon call ({@link walkUnmanagedTree}), and importing its files into an
 * owner-only directory many per call (see {@link SecureDir.importFilesAsync}).
 */
import path from "node:path";

import { native, type NativeImportBatch, type NativeTreeWalk } from "../native/index.js";
import { requireArgument, unwrapAsync } from "./call.js";
import { errorFromFailure, type SecureFsError } from "./errors.js";
import type { EntryType } from "./types.js";

/** One object of an unmanaged tree, with its no-follow stat (bigints as Node's bigint stats give them). */
export interface UnmanagedEntry {
  /** Below the root, `/`-separated. */
  readonly path: string;
  /** Children of the root: 1. */
  readonly depth: number;
  readonly type: EntryType;
  readonly dev: bigint;
  readonly ino: bigint;
  readonly size: number;
  readonly nlink: number;
  readonly mtimeNs: bigint;
  readonly ctimeNs: bigint;
}

/** What {@link walkUnmanagedTree} found. */
export interface UnmanagedTree {
  /** Directories before their contents; each directory's names sorted by their UTF-8 bytes. */
  readonly entries: readonly UnmanagedEntry[];
  /** The walk stopped after `maxEntries + 1` entries: there are more. */
  readonly truncated: boolean;
}

const ENTRY_TYPES: readonly EntryType[] = ["file", "directory", "symlink", "fifo", "socket", "char_device", "block_device", "unknown"];

/**
 * Walks the unmanaged directory tree at `root` on the libuv thread pool, by descriptor and
 * never through a link: `root` is absolute, its last component is not followed, and it must
 * be the directory `rootId` names (`identity_mismatch` otherwise). Every entry is stat'ed
 * without following it; directories down to `maxDepth` are entered (each must be the object
 * just stat'ed), deeper ones only reported. Stops after `maxEntries + 1` entries. Resolves
 * `"unsupported"` on Windows, where the caller walks the tree itself. A listing, stat or
 * open that fails on the way rejects with its {@link SecureFsError} (`not_utf8` for a name
 * that is not UTF-8).
 */
export async function walkUnmanagedTree(
  root: string,
  rootId: { readonly dev: bigint; readonly ino: bigint },
  limits: { readonly maxDepth: number; readonly maxEntries: number },
): Promise<UnmanagedTree | "unsupported"> {
  const id = walkArguments(root, rootId, limits);
  const walk = await unwrapAsync(native.walkTreeAsync(root, id, limits.maxDepth, limits.maxEntries), "walkTree", root);
  if (walk === "unsupported") return walk;
  const tree = { entries: treeEntries(walk), truncated: walk.truncated };
  walksOf.set(tree, walk);
  return tree;
}

/**
 * Walks `root` again exactly as {@link walkUnmanagedTree} did for `tree` (same `rootId` and
 * `limits`) and resolves true when every entry is still there, in the same place, of the
 * same type, and every regular file still has the same dev, ino, size, link count, mtime
 * and ctime; false at the first difference. The comparison runs in the addon as the tree is
 * walked, so checking a large tree again costs no object per entry. Rejects as the walk
 * does (a root that moved is `identity_mismatch`); `tree` must come from walkUnmanagedTree.
 */
export async function unmanagedTreeUnchanged(
  root: string,
  rootId: { readonly dev: bigint; readonly ino: bigint },
  limits: { readonly maxDepth: number; readonly maxEntries: number },
  tree: UnmanagedTree,
): Promise<boolean> {
  const id = walkArguments(root, rootId, limits);
  const expected = walksOf.get(tree);
  requireArgument(expected !== undefined, "walkTree", root);
  const verdict = await unwrapAsync(native.walkTreeAsync(root, id, limits.maxDepth, limits.maxEntries, expected as NativeTreeWalk), "walkTree", root);
  return verdict === "same";
}

/** The addon's result behind each tree walkUnmanagedTree returned, for unmanagedTreeUnchanged. */
const walksOf = new WeakMap<UnmanagedTree, NativeTreeWalk>();

function walkArguments(
  root: string,
  rootId: { readonly dev: bigint; readonly ino: bigint },
  limits: { readonly maxDepth: number; readonly maxEntries: number },
): BigUint64Array {
  const { maxDepth, maxEntries } = limits;
  const valid =
    typeof root === "string" &&
    path.isAbsolute(root) &&
    typeof rootId?.dev === "bigint" &&
    typeof rootId.ino === "bigint" &&
    Number.isSafeInteger(maxDepth) &&
    maxDepth >= 0 &&
    Number.isSafeInteger(maxEntries) &&
    maxEntries >= 0;
  requireArgument(valid, "walkTree", String(root));
  return BigUint64Array.of(BigInt.asUintN(64, rootId.dev), BigInt.asUintN(64, rootId.ino));
}

function treeEntries(walk: NativeTreeWalk): UnmanagedEntry[] {
  return walk.paths.map((entryPath, i) => ({
    path: entryPath,
    depth: walk.info[i * 4] as number,
    type: ENTRY_TYPES[walk.info[i * 4 + 1] as number] ?? "unknown",
    size: walk.info[i * 4 + 2] as number,
    nlink: walk.info[i * 4 + 3] as number,
    dev: walk.ids[i * 2] as bigint,
    ino: walk.ids[i * 2 + 1] as bigint,
    mtimeNs: walk.times[i * 2] as bigint,
    ctimeNs: walk.times[i * 2 + 1] as bigint,
  }));
}

/** One file for {@link SecureDir.importFilesAsync}: an entry of the source directory and the exact version it must be. */
export interface ImportRequest {
  /** The entry name, in the source directory and for the copy. */
  readonly name: string;
  readonly dev: bigint;
  readonly ino: bigint;
  readonly size: number;
  readonly mtimeNs: bigint;
  readonly ctimeNs: bigint;
}

/**
 * What the import did with a request: `copied` (created owner-only, written and read back
 * equal; {@link ImportedFile.content} holds its bytes), `deferred` (did not fit in the rest
 * of the buffer; nothing created), `changed` (the source could not be opened or was not the
 * requested version), `failed` (creating, writing or reading back the copy failed),
 * `mismatch` (the copy did not read back as written), `skipped` (not attempted after an
 * earlier request that was neither copied nor deferred).
 */
export type ImportOutcome = "copied" | "deferred" | "changed" | "failed" | "mismatch" | "skipped";

/**
 * How a `changed` source differed: `unopenable` (the no-follow open failed; the error says
 * why, `ELOOP` for a link), `not_regular`, `hardlink`, `before_copy` (another version when
 * opened), `while_copying` (it read shorter or longer than its size).
 */
export type ImportChange = "unopenable" | "not_regular" | "hardlink" | "before_copy" | "while_copying";

/** The result for one {@link ImportRequest}. */
export interface ImportedFile {
  readonly name: string;
  readonly outcome: ImportOutcome;
  /** Set for `changed`. */
  readonly change?: ImportChange;
  /** Set for `failed` and for `changed` with `unopenable`. */
  readonly error?: SecureFsError;
  /** Set for `copied`: the bytes written, a view into the caller's buffer. */
  readonly content?: Buffer;
  /** Set for `copied`: the lowercase hex SHA-256 of those bytes, taken as they read back equal. */
  readonly sha256?: string;
}

// The addon's layout (src/native/binding.d.cts `NativeImportBatch`).
const FIELDS = 4;
const OUTCOMES: readonly ImportOutcome[] = ["copied", "deferred", "changed", "failed", "mismatch", "skipped"];
const CHANGES: readonly (ImportChange | undefined)[] = [undefined, "unopenable", "not_regular", "hardlink", "before_copy", "while_copying"];

/** The native answer of an import as one {@link ImportedFile} per request, in order. */
export function importedFiles(batch: NativeImportBatch, requests: readonly ImportRequest[], buffer: Buffer, sourceDir: string): ImportedFile[] {
  const files: ImportedFile[] = new Array<ImportedFile>(requests.length);
  for (let i = 0; i < requests.length; i += 1) {
    const name = (requests[i] as ImportRequest).name;
    const row = i * FIELDS;
    const outcome = OUTCOMES[batch.info[row] as number] ?? "skipped";
    if (outcome === "copied") {
      // The common case, built as one literal: this runs once per file of a large tree.
      const offset = batch.info[row + 2] as number;
      const content = buffer.subarray(offset, offset + (batch.info[row + 3] as number));
      files[i] = { name, outcome, content, sha256: batch.digests.toString("hex", i * 32, i * 32 + 32) };
      continue;
    }
    const change = CHANGES[batch.info[row + 1] as number];
    const failure = batch.failures[i];
    files[i] = {
      name,
      outcome,
      ...(outcome === "changed" && change !== undefined ? { change } : {}),
      ...(failure !== undefined ? { error: errorFromFailure(failure, "importFiles", path.join(sourceDir, name)) } : {}),
    };
  }
  return files;
}
