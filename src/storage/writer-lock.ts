/**
 * One writer per file, across processes: the writer of `<dir>/<name>` holds a kernel-released
 * lock on `<dir>/.gjc-locks/<name>.lock` (a crashed holder needs no lease or pid guess; readers
 * take none). Not on the data file, whose inode a rewrite replaces. Lock files are left, emptied:
 * removing one safely would need proof that the name still is the locked file.
 */

import path from "node:path";

import { SecureDir, SecureFsError, type SecureLock } from "../fs/index.js";
import { pathError, toStorageError } from "./errors.js";

const LOCK_DIRECTORY = ".gjc-locks";

/**
 * Takes the writer lock of `name` in `dir`, a path the caller checked, or a held directory.
 * @throws StorageError `session_busy` when another writer holds it.
 */
export function lockWriter(dir: string | SecureDir, name: string): SecureLock {
  const target = path.join(typeof dir === "string" ? dir : dir.path, name);
  let locks: SecureDir;
  try {
    locks = typeof dir === "string" ? SecureDir.openRoot(path.join(dir, LOCK_DIRECTORY), { create: true }) : dir.openDir(LOCK_DIRECTORY, { create: true });
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
    // The held lock keeps its own descriptor.
    locks.close();
  }
}

/** Runs `step` holding the writer lock of `name` in `dir` (`session_busy` if a writer has it). */
export function withWriterLock<T>(dir: string | SecureDir, name: string, step: () => T): T {
  const lock = lockWriter(dir, name);
  try {
    return step();
  } finally {
    lock.release();
  }
}
