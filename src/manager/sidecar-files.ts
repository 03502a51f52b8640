/** The disposable sidecars beside session files (a directory's listing index, a session's line index): where a storage may keep them, read only from an owner-only regular file of ours. */
import fs from "node:fs";
import path from "node:path";

import { FileSessionStorage, isTrustedSidecar, ManagedSessionStorage, type SessionFileReader, type SessionStorage } from "../storage/index.js";

/** Name of the listing index kept in each session directory (peers ignore `.gjc-*` names). */
export const LISTING_INDEX_FILE_NAME = ".gjc-listing-index.v3.json";

/** Largest listing index read or written; past it, the oldest files are left out (and read again). */
export const MAX_LISTING_INDEX_BYTES = 64 * 1024 * 1024;

/** Where a storage keeps (or would keep) the listing index of `dir` (`file` undefined: memory and custom storages keep none), and whether it may write it. */
export interface IndexAccess {
  readonly file: string | undefined;
  readonly writable: boolean;
}

/**
 * Whether `storage` may hold sidecars for `dir`: a managed storage verifies every directory as owner-only, so always; an
 * explicit directory only when ours, owner-writable and without group or other bits (else a sidecar is exposed or impossible).
 */
export function indexAccess(storage: SessionStorage, dir: string): IndexAccess {
  const file = path.join(dir, LISTING_INDEX_FILE_NAME);
  if (storage instanceof ManagedSessionStorage) return { file, writable: true };
  if (!(storage instanceof FileSessionStorage) || process.geteuid === undefined) return { file: undefined, writable: false };
  try {
    const stat = fs.lstatSync(dir);
    return { file, writable: stat.isDirectory() && stat.uid === process.geteuid() && (stat.mode & 0o077) === 0 && (stat.mode & 0o200) !== 0 };
  } catch {
    return { file, writable: false };
  }
}

/** A positional read of a sidecar: fills `into` from file offset `position`, returns the count (0 at its end). */
export type SidecarRead = (into: Buffer, position: number) => number;

/**
 * What `consume` makes of the sidecar `file`, or `undefined` when it is missing, larger than `maxBytes`, or fails the owner-only
 * checks (here for explicit storages; managed ones verify on open). `consume` refuses a file reading longer than `size` (still written).
 */
export function readIndexSidecar<T>(
  storage: SessionStorage,
  file: string,
  maxBytes: number,
  consume: (read: SidecarRead, size: number) => T | undefined,
): T | undefined {
  let reader: SessionFileReader | undefined;
  try {
    let expected: fs.BigIntStats | undefined;
    if (storage instanceof FileSessionStorage) {
      // The explicit storage checks no owner or mode: this does, and the reader below must be this object.
      expected = fs.lstatSync(file, { bigint: true });
      if (!isTrustedSidecar(expected)) return undefined;
    }
    // No link followed, nothing but a regular file; a managed storage also verifies owner-only.
    reader = storage.openReaderSync(file);
    const { stat } = reader;
    if (expected !== undefined && (stat.dev !== expected.dev.toString() || stat.ino !== expected.ino.toString())) return undefined;
    if (stat.size > maxBytes) return undefined;
    return consume(reader.readSync.bind(reader), stat.size);
  } catch {
    return undefined;
  } finally {
    // Only read: a failed close loses nothing, and the caller falls back to a scan on undefined, never on a throw.
    try {
      reader?.close();
    } catch {}
  }
}

/** The bytes of the listing-index sidecar `file`, or `undefined` as {@link readIndexSidecar} says. */
export function readIndexBytes(storage: SessionStorage, file: string): Buffer | undefined {
  return readIndexSidecar(storage, file, MAX_LISTING_INDEX_BYTES, (read, size) => {
    // One byte more than the stat promised shows a file still being written: not trusted.
    const buffer = Buffer.allocUnsafe(size + 1);
    const count = read(buffer, 0);
    return count === size ? buffer.subarray(0, count) : undefined;
  });
}
