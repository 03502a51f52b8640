/**
 * One writer per file, across processes: the writer of `<dir>/<name>` holds a
 * kernel-released lock (Linux OFD lock, via the secure fs layer) on
 * `<dir>/.gjc-locks/<name>.lock`. A crashed holder's lock is released by the kernel, so no
 * lease or pid guess is ever needed. Readers take no lock and are never blocked.
 *
 * The lock lives in its own owner-only directory rather than on the data file because the
 * lock file carries a diagnostic record, and because a rewrite replaces the data file's
 * inode while the lock must stay put. Lock files are left in place (emptied) on release:
 * removing one safely would need the holder to prove the name still refers to its locked
 * file, which the lock handle cannot do.
 */

import path from "node:path";

import { SecureDir, SecureFsError } from "../fs/index.js";
import { pathError, toStorageError } from "./errors.js";

/** The directory, next to the data files, that holds their lock files. */
export const LOCK_DIRECTORY = ".gjc-locks";

/** A held writer lock. */
export interface HeldWriterLock {
  /** Lets go of the lock. Idempotent. */
  release(): void;
}

/**
 * Takes the writer lock of file `name` in directory `dir` (an absolute path that the
 * caller has already checked), creating the owner-only lock directory when missing.
 * @throws StorageError `session_busy` when another writer holds it.
 */
export function lockWriterAt(dir: string, name: string): HeldWriterLock {
  return lockWith(() => SecureDir.openRoot(path.join(dir, LOCK_DIRECTORY), { create: true }), name, path.join(dir, name));
}

/**
 * Takes the writer lock of file `name` below a held owner-only directory.
 * @throws StorageError `session_busy` when another writer holds it.
 */
export function lockWriterIn(dir: SecureDir, name: string): HeldWriterLock {
  return lockWith(() => dir.openDir(LOCK_DIRECTORY, { create: true }), name, path.join(dir.path, name));
}

function lockWith(openLocks: () => SecureDir, name: string, target: string): HeldWriterLock {
  let locks: SecureDir;
  try {
    locks = openLocks();
  } catch (error) {
    throw toStorageError(error, "write", target, "lock");
  }
  try {
    return locks.tryLock(`${name}.lock`, { purpose: "session-writer" });
  } catch (error) {
    if (error instanceof SecureFsError && error.code === "lock_busy") {
      throw pathError("session_busy", target, { detail: error.code, cause: error });
    }
    throw toStorageError(error, "write", target, "lock");
  } finally {
    // The held lock keeps its own descriptor; the directory handle is not needed after.
    locks.close();
  }
}
