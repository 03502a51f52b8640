/** SecureDir: an owner-only directory held by descriptor, and every operation below it. */
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

import { decodeEvidence, isNativeFailure, native, type NativeHandle } from "../native/index.js";
import type { ExactStat, SecureData, SecureDirEntry, VerifyEvidence } from "../native/index.js";
import { nearestInsecureAncestor } from "./ancestors.js";
import { isValidEntryName } from "./identity.js";
import { SecureFsError, requireArgument, unwrap } from "./errors.js";
import { SecureFile } from "./secure-file.js";
import { SecureLock, type LockRecord } from "./secure-lock.js";

/** One entry name, or a relative path as entry names (each validated alone, so none can climb out or follow a link). */
export type EntryPath = string | readonly string[];

/** Options of {@link SecureDir.openRoot} and {@link SecureDir.openDir}. */
export interface OpenDirOptions {
  /** Create missing directories owner-only (0700) instead of failing with `not_found`. */
  readonly create?: boolean;
  /** Open an existing directory we own even if its mode or ACLs deviate, and fix them (links, other types and owners still refused). */
  readonly repair?: boolean;
  /** With `create`: leave the parent of a new directory unsynced for the caller to sync once, as a staging tree does. No-op on Windows. */
  readonly deferSync?: boolean;
  /**
   * Open a legacy source instead (read-only, never created or repaired): the effective user's,
   * no link, not group/other writable (0755 passes, 0775 not), no ACL (Windows: owner SID
   * only); on a path, each directory on the way. What is opened below it is owner-only as ever.
   */
  readonly source?: boolean;
  /**
   * Accept an existing directory of the effective user whatever its mode and ACLs, changing
   * nothing, for one only read through (an older tool's 0755 agent directory); on a path, the
   * last name. Links, other types and owners still refused; Windows verifies in full.
   */
  readonly owned?: boolean;
}

/** Options of {@link SecureDir.openFile}. */
export interface OpenFileOptions {
  /** Open for positional writes. */
  readonly write?: boolean;
  /** Open for appending (every write lands at the end). */
  readonly append?: boolean;
  /** `"exclusive"`: create or fail with `already_exists`; `"if-missing"`: create or open and verify. Default: never create. */
  readonly create?: "exclusive" | "if-missing";
  /** As {@link OpenDirOptions.repair}, for a file (extra links are refused too). */
  readonly repair?: boolean;
  /** Open a legacy source file read-only, as {@link OpenDirOptions.source} with exactly one link; only without the other options. */
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

// Lock retry spacing: short at first (locks are usually brief), capped so a long wait costs little CPU.
const LOCK_FIRST_DELAY_MS = 2;
const LOCK_MAX_DELAY_MS = 50;
/** What {@link SecureDir.lockSync} sleeps on (nobody wakes it). */
const SLEEPER = new Int32Array(new SharedArrayBuffer(4));

/**
 * An open owner-only directory (the effective user's, 0700, no ACL) held by descriptor, or a
 * legacy `source`. Every name passed is a validated entry name; nothing below is opened by a link.
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
   * Opens the trusted root: ancestors are canonicalised, the root must be no link and pass the
   * owner-only check (`create` makes missing components 0700). On POSIX each ancestor must be
   * root's or the effective user's and not group/other writable unless sticky, checked by
   * descriptor, else `insecure_ancestor` (its `path` names the nearest such directory).
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

  /** Opens (with `create`, makes; with `repair`, fixes) owner-only directory `name`; a path (`["a", "b"]`) alike, in one native call. */
  openDir(name: EntryPath, options: OpenDirOptions = {}): SecureDir {
    const where = this.#child(name);
    if (options.source === true) {
      requireArgument(!options.create && !options.repair && !options.deferSync, "openDir", where);
      return new SecureDir(unwrap(native.openSource(this.#handle, name, { directory: true }), "openDir", where), where);
    }
    return new SecureDir(unwrap(native.openDir(this.#handle, name, options), "openDir", where), where);
  }

  /** Opens (or creates) owner-only regular file `name`; on a path (`["a", "f.jsonl"]`) each directory is verified, never created. */
  openFile(name: EntryPath, options: OpenFileOptions = {}): SecureFile {
    const where = this.#child(name);
    if (options.source === true) {
      requireArgument(!options.write && !options.append && !options.repair && options.create === undefined, "openFile", where);
      return new SecureFile(unwrap(native.openSource(this.#handle, name), "openFile", where), where);
    }
    return new SecureFile(unwrap(native.openFile(this.#handle, name, options), "openFile", where), where);
  }

  /**
   * The entries of this directory (without `.` and `..`), in no particular order; with `prefix`, only those whose names
   * start with it, chosen before any reaches JavaScript (a few names looked for among thousands cost the directory read).
   */
  list(prefix?: string): SecureDirEntry[] {
    if (prefix !== undefined) requireArgument(typeof prefix === "string", "list", this.path);
    return unwrap(native.list(this.#handle, prefix), "list", this.path);
  }

  /** Metadata of entry `name`, never following a link (type `symlink`); without a name, of this directory. */
  stat(name?: string): ExactStat {
    if (name === undefined) return unwrap(native.statHandle(this.#handle), "stat", this.path);
    return unwrap(native.statEntry(this.#handle, name), "stat", this.#child(name));
  }

  /**
   * The ACLs of entry `name` (a `kind` object, never reached through a link), read whatever its owner and mode, as
   * the kernel stores them (POSIX ACL xattr values; empty: none): what a repair about to strip them must record to put
   * them back. `undefined` off Linux, where they are not read.
   */
  aclOf(name: string, kind: "file" | "directory"): { readonly access: Uint8Array; readonly default: Uint8Array } | undefined {
    if (native.readAcl === undefined) return undefined;
    return unwrap(native.readAcl(this.#handle, name, kind === "directory"), "readAcl", this.#child(name));
  }

  /**
   * A path to entry `name` the kernel resolves through this descriptor (`/proc/self/fd/<n>/<name>`),
   * so no swap of a component of {@link SecureDir.path} redirects it; `undefined` off Linux.
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

  /** Owner-only apply: a directory of the effective user gets 0700 and no ACLs, then is verified; another's is untouched (`owner_mismatch`). */
  repair(): VerifyEvidence {
    return decodeEvidence(unwrap(native.verify(this.#handle, { repair: true }), "repair", this.path));
  }

  /** Replaces (`noReplace`: creates) file `name` atomically: an owner-only temporary is synced, verified, published; the directory synced. */
  writeFileAtomic(name: string, data: SecureData, options: { readonly noReplace?: boolean } = {}): void {
    // Only the flag this form knows: an `async` carried in by a caller must not make it return early.
    unwrap(native.writeFileAtomic(this.#handle, name, data, { noReplace: options.noReplace === true }), "writeFileAtomic", this.#child(name));
  }

  /** {@link SecureDir.writeFileAtomic} on the libuv thread pool, the data copied at the call; a `close()` meanwhile waits for it. */
  async writeFileAtomicAsync(name: string, data: SecureData, options: { readonly noReplace?: boolean } = {}): Promise<void> {
    unwrap(await native.writeFileAtomic(this.#handle, name, data, { ...options, async: true }), "writeFileAtomic", this.#child(name));
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
   * Removes directory `name` and its tree by descriptor on the libuv thread pool: each directory
   * passes the owner-only check before anything in it goes; other entries (links too) go as
   * themselves. `too_large` past `limits` (removals stay done), `identity_mismatch` when a name
   * keeps changing, else as {@link SecureDir.openDir} for `name`.
   */
  async removeTreeAsync(name: string, limits: RemoveTreeLimits): Promise<void> {
    unwrap(await native.removeTree(this.#handle, name, limits), "removeTree", this.#child(name));
  }

  /** Flushes this directory's entries to stable storage. */
  sync(): void {
    unwrap(native.sync(this.#handle), "sync", this.path);
  }

  /** {@link SecureDir.sync} on the libuv thread pool. */
  async syncAsync(): Promise<void> {
    unwrap(await native.sync(this.#handle, { async: true }), "sync", this.path);
  }

  /** Takes the lock on lock file `name` (created owner-only, holding a {@link LockRecord}) at once, or throws `lock_busy`. */
  tryLock(name: string, options: { readonly purpose?: string } = {}): SecureLock {
    const record: LockRecord = { pid: process.pid, createdAt: new Date().toISOString(), purpose: options.purpose ?? "lock" };
    const handle = unwrap(native.tryLock(this.#handle, name, JSON.stringify(record)), "lock", this.#child(name));
    return new SecureLock(handle, name, record);
  }

  /** {@link SecureDir.tryLock}, retried without blocking the event loop for at most `waitMs`, then `lock_busy`. */
  async lock(name: string, options: LockOptions = {}): Promise<SecureLock> {
    const retry = this.#lockRetry(name, options);
    for (let delay = retry.next(); delay !== undefined; delay = retry.next()) await sleep(delay);
    return retry.lock();
  }

  /** {@link SecureDir.lock} for a synchronous caller: the thread sleeps between the tries. */
  lockSync(name: string, options: LockOptions = {}): SecureLock {
    const retry = this.#lockRetry(name, options);
    for (let delay = retry.next(); delay !== undefined; delay = retry.next()) Atomics.wait(SLEEPER, 0, 0, delay);
    return retry.lock();
  }

  /** The tries of one lock wait: `next()` tries, and gives the pause before the next try (`undefined`: done, `lock()` has the outcome). */
  #lockRetry(name: string, options: LockOptions): { next(): number | undefined; lock(): SecureLock } {
    const waitMs = options.waitMs ?? 0;
    requireArgument(Number.isFinite(waitMs) && waitMs >= 0, "lock", this.#child(name));
    const tryOptions = options.purpose === undefined ? {} : { purpose: options.purpose };
    const deadline = Date.now() + waitMs;
    let delay = LOCK_FIRST_DELAY_MS;
    let outcome: { lock: SecureLock } | { error: unknown } | undefined;
    return {
      next: () => {
        try {
          outcome = { lock: this.tryLock(name, tryOptions) };
          return undefined;
        } catch (error) {
          outcome = { error };
          const remaining = deadline - Date.now();
          if (!(error instanceof SecureFsError) || error.code !== "lock_busy" || remaining <= 0) return undefined;
          const pause = Math.min(delay, remaining);
          delay = Math.min(delay * 2, LOCK_MAX_DELAY_MS);
          return pause;
        }
      },
      lock: () => {
        if (outcome !== undefined && "lock" in outcome) return outcome.lock;
        throw (outcome as { error: unknown }).error;
      },
    };
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
