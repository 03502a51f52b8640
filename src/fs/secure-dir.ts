/**
 * SecureDir: an owner-only directory held by descriptor, and every operation below it.
 */
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

import { decodeEvidence, isNativeFailure, native, type NativeHandle } from "../native/index.js";
import { nearestInsecureAncestor } from "./ancestors.js";
import { requireArgument, unwrap, unwrapAsync } from "./call.js";
import { isValidEntryName } from "./identity.js";
import { SecureFsError } from "./errors.js";
import { SecureFile } from "./secure-file.js";
import { SecureLock, type LockRecord } from "./secure-lock.js";
import type { ExactStat, SecureData, SecureDirEntry, VerifyEvidence } from "./types.js";

/**
 * One entry name, or a relative path as a list of entry names. Every element is validated
 * on its own (no separators, no `.` or `..`), so a list can never climb out or follow a link.
 */
export type EntryPath = string | readonly string[];

/** Options of {@link SecureDir.openRoot} and {@link SecureDir.openDir}. */
export interface OpenDirOptions {
  /** Create missing directories owner-only (0700) instead of failing with `not_found`. */
  readonly create?: boolean;
  /**
   * Open an existing directory we own even if its mode or ACLs deviate, and fix them (owner-only
   * apply). Wrong type, foreign owner and links are still refused. Never creates.
   */
  readonly repair?: boolean;
  /**
   * With `create`: do not sync the parent after creating a directory. The caller makes the
   * new entries durable itself ({@link SecureDir.syncAsync} on each parent), as a staging
   * tree does once for all of them.
   * (Windows has no directory sync; there this changes nothing.)
   */
  readonly deferSync?: boolean;
  /**
   * Open a legacy source instead (read-only, never created or repaired): a directory older
   * tools made with looser permissions, accepted when it is no link, its owner is the
   * effective user, group and other cannot write it (0755 passes, 0775 does not) and it
   * carries no ACL (Windows: owner SID only). Directories and files opened from the result
   * without `source` are checked owner-only as always. With a relative path, every
   * directory on the way is opened by the same rules.
   */
  readonly source?: boolean;
  /**
   * Accept an existing directory of the effective user whatever its mode and ACLs, and
   * change nothing: for a directory that is only read through, never written (an older
   * tool's 0755 agent directory). A link, another type or another owner is still refused.
   * Never creates. With a list of names it applies to the last one; the others are verified
   * in full. Windows verifies in full.
   */
  readonly owned?: boolean;
}

/** Options of {@link SecureDir.openFile}. */
export interface OpenFileOptions {
  /** Open for positional writes. */
  readonly write?: boolean;
  /** Open for appending (every write lands at the end). */
  readonly append?: boolean;
  /**
   * `"exclusive"`: create, failing with `already_exists` if the name is taken.
   * `"if-missing"`: create, or open and verify what is there. Default: never create.
   */
  readonly create?: "exclusive" | "if-missing";
  /**
   * Open an existing file we own even if its mode or ACLs deviate, and fix them (owner-only
   * apply). Wrong type, foreign owner and extra links are still refused. Never creates.
   */
  readonly repair?: boolean;
  /**
   * Open a legacy source file read-only instead: as {@link OpenDirOptions.source} says for
   * directories, and with exactly one link (0644 passes, 0664 or a hard link does not).
   * Only without `write`, `append`, `create` and `repair`.
   */
  readonly source?: boolean;
}

/** Budgets of {@link SecureDir.removeTreeAsync}. */
export interface RemoveTreeLimits {
  /** Deepest level removed (the tree's root's children are level 1). */
  readonly maxDepth: number;
  /** Entries removed at most. */
  readonly maxEntries: number;
}

/** Options of {@link SecureDir.lock}. */
export interface LockOptions {
  /** How long to keep trying; 0 (default) tries once. */
  readonly waitMs?: number;
  /** Written into the lock record for diagnostics. */
  readonly purpose?: string;
}

// Retry spacing while waiting for a lock: short at first (locks are usually brief), then
// capped so a long wait costs little CPU.
const LOCK_FIRST_DELAY_MS = 2;
const LOCK_MAX_DELAY_MS = 50;

/**
 * An open owner-only directory (type, owner == effective user, mode 0700, no ACL), held by
 * descriptor (or, opened with `source`, a legacy source directory: see
 * {@link OpenDirOptions.source}). Every name passed to it is one validated entry name: no separators, no `.`
 * or `..`, nothing that could lead elsewhere; nothing below it is opened through a link.
 */
export class SecureDir {
  readonly #handle: NativeHandle;
  /** The path this directory was reached by, for messages only; never re-resolved. */
  readonly path: string;

  /** @internal Use {@link SecureDir.openRoot} or {@link SecureDir.openDir}. */
  constructor(handle: NativeHandle, dirPath: string) {
    this.#handle = handle;
    this.path = dirPath;
  }

  /**
   * Opens the trusted root. Existing ancestors are canonicalised (links in them are
   * resolved); the root itself must not be a link. With `create`, missing components are
   * created 0700. The root must pass the owner-only check. On POSIX every canonical ancestor
   * must be owned by root or the effective user and not writable by group or others unless
   * sticky, checked by descriptor on the chain that is opened: otherwise `insecure_ancestor`,
   * with `path` naming the nearest such directory.
   */
  static openRoot(rootPath: string, options: OpenDirOptions = {}): SecureDir {
    requireArgument(typeof rootPath === "string" && rootPath.length > 0, "openRoot", String(rootPath));
    const absolute = path.resolve(rootPath);
    const { create, repair, owned, deferSync } = options;
    if (options.source === true) {
      requireArgument(!create && !repair && !deferSync, "openRoot", absolute);
      return new SecureDir(unwrap(native.openSource(absolute, [], { directory: true }), "openRoot", absolute), absolute);
    }
    // The root's creations are always synced: `deferSync` is for the entries below it.
    const handle = native.openRoot(absolute, { create, repair, owned });
    // The addon refuses the chain by descriptor; the message names the directory at fault.
    const where = isNativeFailure(handle) && handle.code === "insecure_ancestor" ? (nearestInsecureAncestor(absolute) ?? absolute) : absolute;
    return new SecureDir(unwrap(handle, "openRoot", where), absolute);
  }

  /** True once {@link SecureDir.close} ran. */
  get closed(): boolean {
    return !this.#handle.isOpen();
  }

  /**
   * Opens (or with `create`, makes; with `repair`, fixes) the owner-only directory `name`
   * below this one. `name` may also be a relative path given as entry names
   * (`["a", "b"]`): every directory on the way is opened and verified the same way (and
   * created with `create`), in one native call.
   */
  openDir(name: EntryPath, options: OpenDirOptions = {}): SecureDir {
    const where = this.#child(name);
    if (options.source === true) {
      requireArgument(!options.create && !options.repair && !options.deferSync, "openDir", where);
      return new SecureDir(unwrap(native.openSource(this.#handle, name, { directory: true }), "openDir", where), where);
    }
    return new SecureDir(unwrap(native.openDir(this.#handle, name, options), "openDir", where), where);
  }

  /**
   * Opens (or creates) the owner-only regular file `name` below this directory. `name` may
   * also be a relative path of entry names (`["a", "b", "f.jsonl"]`): each directory on the
   * way is opened and verified (never created), then the file.
   */
  openFile(name: EntryPath, options: OpenFileOptions = {}): SecureFile {
    const where = this.#child(name);
    if (options.source === true) {
      requireArgument(!options.write && !options.append && !options.repair && options.create === undefined, "openFile", where);
      return new SecureFile(unwrap(native.openSource(this.#handle, name), "openFile", where), where);
    }
    return new SecureFile(unwrap(native.openFile(this.#handle, name, options), "openFile", where), where);
  }

  /** The entries of this directory (without `.` and `..`), in no particular order. */
  list(): SecureDirEntry[] {
    return unwrap(native.list(this.#handle), "list", this.path);
  }

  /**
   * Metadata of entry `name`, not following a link (a link reports type `symlink`); without
   * a name, of this held directory itself (its `dev`/`ino` identify it while it is held).
   */
  stat(name?: string): ExactStat {
    if (name === undefined) return unwrap(native.statHandle(this.#handle), "stat", this.path);
    return unwrap(native.statEntry(this.#handle, name), "stat", this.#child(name));
  }

  /**
   * A path to entry `name` that the kernel resolves through this held descriptor
   * (`/proc/self/fd/<n>/<name>` on Linux), so no later swap of a component of
   * {@link SecureDir.path} can redirect it; `undefined` where the platform has no such path.
   * Only for handing the directory to a library that takes paths: everything in this
   * package opens below the descriptor itself.
   */
  pinnedPath(name: string): string | undefined {
    requireArgument(isValidEntryName(name), "pinnedPath", this.#child(name));
    if (process.platform !== "linux") return undefined;
    const fd = unwrap(native.descriptorNumber(this.#handle), "pinnedPath", this.path);
    return `/proc/self/fd/${fd}/${name}`;
  }

  /** Checks this directory against the owner-only rules again; returns the evidence or throws. */
  verify(): VerifyEvidence {
    return decodeEvidence(unwrap(native.verify(this.#handle), "verify", this.path));
  }

  /**
   * Owner-only apply on this directory: if it is owned by the effective user, forces mode
   * 0700 and removes ACLs (access and default), then verifies. A directory we do not own is
   * left untouched (`owner_mismatch`).
   */
  repair(): VerifyEvidence {
    return decodeEvidence(unwrap(native.repair(this.#handle), "repair", this.path));
  }

  /**
   * Replaces (or with `noReplace`, creates) file `name` atomically: an owner-only temporary
   * is written, synced and verified, published, and this directory is synced.
   */
  writeFileAtomic(name: string, data: SecureData, options: { readonly noReplace?: boolean } = {}): void {
    unwrap(native.writeFileAtomic(this.#handle, name, data, options), "writeFileAtomic", this.#child(name));
  }

  /**
   * {@link SecureDir.writeFileAtomic} on the libuv thread pool: the fsyncs do not block the
   * event loop. The data is copied when called. This directory stays open until it settles
   * (a `close()` meanwhile takes effect when it is done).
   */
  async writeFileAtomicAsync(name: string, data: SecureData, options: { readonly noReplace?: boolean } = {}): Promise<void> {
    const result = native.writeFileAtomicAsync(this.#handle, name, data, options);
    await unwrapAsync(result, "writeFileAtomic", this.#child(name));
  }

  /** Renames `from` to `to` only if `to` does not exist (`already_exists` otherwise), then syncs. */
  publishNoReplace(from: string, to: string): void {
    unwrap(native.publishNoReplace(this.#handle, from, to), "publishNoReplace", this.#child(to));
  }

  /** Removes file `name` (directories are refused with `not_regular_file`). */
  unlink(name: string): void {
    unwrap(native.unlink(this.#handle, name), "unlink", this.#child(name));
  }

  /**
   * Removes directory `name` of this directory and everything below it, by descriptor on the
   * libuv thread pool: each directory on the way is opened without following a link and must
   * pass the owner-only check before anything in it goes, and every other entry (a link
   * included) is removed as itself, never followed, so nothing outside the tree is touched.
   * Fails with `too_large` past `limits` (what was removed stays removed), `identity_mismatch`
   * when a name keeps changing under it, and as {@link SecureDir.openDir} does for `name`.
   */
  async removeTreeAsync(name: string, limits: RemoveTreeLimits): Promise<void> {
    const { maxDepth, maxEntries } = limits;
    const where = this.#child(name);
    requireArgument(Number.isSafeInteger(maxDepth) && maxDepth >= 0 && maxDepth <= 0xffff_ffff && Number.isSafeInteger(maxEntries) && maxEntries >= 0, "removeTree", where);
    await unwrapAsync(native.removeTreeAsync(this.#handle, name, maxDepth, maxEntries), "removeTree", where);
  }

  /** Flushes this directory's entries to stable storage. */
  sync(): void {
    unwrap(native.sync(this.#handle), "sync", this.path);
  }

  /** {@link SecureDir.sync} on the libuv thread pool. */
  async syncAsync(): Promise<void> {
    await unwrapAsync(native.syncAsync(this.#handle), "sync", this.path);
  }

  /**
   * Takes the lock on lock file `name` at once, or throws `lock_busy`. The lock file is
   * created owner-only if missing and holds a {@link LockRecord} while held.
   */
  tryLock(name: string, options: { readonly purpose?: string } = {}): SecureLock {
    const record: LockRecord = { pid: process.pid, createdAt: new Date().toISOString(), purpose: options.purpose ?? "lock" };
    const handle = unwrap(native.tryLock(this.#handle, name, JSON.stringify(record)), "lock", this.#child(name));
    return new SecureLock(handle, name, record);
  }

  /**
   * Takes the lock on lock file `name`, trying for at most `waitMs` (0: once). Waiting does
   * not block the event loop. Throws `lock_busy` when the time runs out.
   */
  async lock(name: string, options: LockOptions = {}): Promise<SecureLock> {
    const waitMs = options.waitMs ?? 0;
    requireArgument(Number.isFinite(waitMs) && waitMs >= 0, "lock", this.#child(name));
    const tryOptions = options.purpose === undefined ? {} : { purpose: options.purpose };
    const deadline = Date.now() + waitMs;
    let delay = LOCK_FIRST_DELAY_MS;
    for (;;) {
      try {
        return this.tryLock(name, tryOptions);
      } catch (error) {
        const remaining = deadline - Date.now();
        if (!(error instanceof SecureFsError) || error.code !== "lock_busy" || remaining <= 0) throw error;
        await sleep(Math.min(delay, remaining));
        delay = Math.min(delay * 2, LOCK_MAX_DELAY_MS);
      }
    }
  }

  /** Closes the descriptor. Objects opened from this directory stay usable. Idempotent. */
  close(): void {
    native.close(this.#handle);
  }

  #child(name: EntryPath): string {
    if (typeof name === "string") return path.join(this.path, name);
    return Array.isArray(name) && name.every((n) => typeof n === "string") ? path.join(this.path, ...name) : this.path;
  }
}
