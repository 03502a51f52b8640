/**
 * The persistent listing index: the on-disk form of {@link SessionInfoCache}, one file per
 * session directory, so a listing in a fresh process does not re-read files it already knows.
 *
 * File: `<sessionDir>/.gjc-listing-index.v1`, owner-only (0600), a small binary format
 * (`listing-index-codec.ts`): a header (magic, version, record count, SHA-256 of the rest),
 * then one record per session file, keyed by its name: the identity it was read with (dev,
 * ino, size, mtime, ctime), the prefix summary and late patch values, and for a v4/v5 file
 * its resume point. Everything a listing shows is rebuilt from that, so a hit costs one
 * no-follow stat.
 *
 * Trust: the index is a hint, never an authority. It is read only when it is a regular file
 * of ours, mode 0600, with one link, no larger than {@link MAX_LISTING_INDEX_BYTES}, whose
 * header, checksum and every record check out; anything else is ignored as a whole. A record
 * is used only while the live stat of its file matches its identity exactly, and a resume
 * point only after the prefix digest and boundary bytes are compared against the file.
 *
 * Writes: only where the storage may write safely (a managed storage, whose directories are
 * verified owner-only; an explicit directory only when it is ours, 0700 or stricter, and
 * owner-writable), only when something changed, through the storage's atomic temp + fsync +
 * rename publish. A failed write is silent: the listing never depends on it.
 */
import fs from "node:fs";
import path from "node:path";

import { FileSessionStorage, ManagedSessionStorage, type SessionStorage } from "../storage/index.js";
import { decodeIndex, encodeIndex } from "./listing-index-codec.js";
import type { ListingRecord } from "./session-info-cache.js";

/** Name of the listing index kept in each session directory (peers ignore `.gjc-*` names). */
export const LISTING_INDEX_FILE_NAME = ".gjc-listing-index.v1";

/**
 * Largest index read or written. A record holds at most what a 4 KiB prefix and two late
 * patch values produce, so this covers tens of thousands of sessions per directory; when the
 * records would exceed it, the oldest files are left out of the index (they are read again).
 */
export const MAX_LISTING_INDEX_BYTES = 64 * 1024 * 1024;


/** The records of one directory's index, by file name. */
export type ListingIndex = Map<string, ListingRecord>;

/** Where a storage keeps (or would keep) the index of `dir`, and whether it may write it. */
export interface IndexAccess {
  /** `undefined` when this storage keeps no index (memory or custom storages). */
  readonly file: string | undefined;
  readonly writable: boolean;
}

/**
 * Whether `storage` may hold an index for `dir`. Managed storages verify every directory as
 * owner-only on open, so they may always write. An explicit directory is written only when
 * it is ours, has no group or other bits and is owner-writable: an index in a shared or
 * read-only directory would be either exposed or impossible, and the listing must not care.
 */
export function indexAccess(storage: SessionStorage, dir: string): IndexAccess {
  const file = path.join(dir, LISTING_INDEX_FILE_NAME);
  if (storage instanceof ManagedSessionStorage) return { file, writable: true };
  if (!(storage instanceof FileSessionStorage) || process.geteuid === undefined) return { file: undefined, writable: false };
  try {
    const stat = fs.lstatSync(dir);
    const mine = stat.isDirectory() && stat.uid === process.geteuid() && (stat.mode & 0o077) === 0 && (stat.mode & 0o200) !== 0;
    return { file, writable: mine };
  } catch {
    return { file, writable: false };
  }
}

/**
 * The index of `dir`, or `undefined` when there is none that can be trusted (missing,
 * damaged, foreign, loosely permitted, a link, too large, another version). Never throws.
 */
export function readListingIndex(storage: SessionStorage, access: IndexAccess, dir: string): ListingIndex | undefined {
  if (access.file === undefined) return undefined;
  const bytes = readIndexBytes(storage, access.file);
  return bytes === undefined ? undefined : decodeListingIndex(bytes, dir);
}

/**
 * Publishes `records` as the index of the directory (newest files first, cut at
 * {@link MAX_LISTING_INDEX_BYTES}). Returns whether it was written; a failure (read-only
 * file system, a link planted at the name, a full disk) leaves the listing unaffected.
 */
export function writeListingIndex(storage: SessionStorage, access: IndexAccess, records: ListingIndex): boolean {
  if (access.file === undefined || !access.writable) return false;
  try {
    storage.writeTextSync(access.file, encodeListingIndex(records));
    return true;
  } catch {
    return false;
  }
}

/** The index file's bytes for `records`: newest files first, cut at {@link MAX_LISTING_INDEX_BYTES}. */
export function encodeListingIndex(records: ListingIndex): Buffer {
  const ordered = [...records].sort(([nameA, a], [nameB, b]) => b.mtimeMs - a.mtimeMs || (nameA < nameB ? -1 : 1));
  return encodeIndex(ordered, MAX_LISTING_INDEX_BYTES);
}

/**
 * The records in `bytes` with their session paths below `dir`, or `undefined` when anything
 * about it is wrong (see `listing-index-codec.ts`).
 */
export function decodeListingIndex(bytes: Buffer, dir: string): ListingIndex | undefined {
  return decodeIndex(bytes, path.join(dir, path.sep));
}

/**
 * The bytes of the sidecar `file` (an index this library keeps beside session files), or
 * `undefined` when it is missing, larger than `maxBytes`, still being written, or fails the
 * owner-only checks (explicit storages are checked here, managed ones verify on open).
 */
export function readIndexBytes(storage: SessionStorage, file: string, maxBytes = MAX_LISTING_INDEX_BYTES): Buffer | undefined {
  let expected: fs.BigIntStats | undefined;
  if (storage instanceof FileSessionStorage) {
    // The explicit storage checks no owner or mode: this does, and the descriptor opened below
    // must be the object checked here.
    try {
      expected = fs.lstatSync(file, { bigint: true });
    } catch {
      return undefined;
    }
    const mode = Number(expected.mode & 0o7777n);
    if (!expected.isFile() || Number(expected.uid) !== process.geteuid?.() || mode !== 0o600 || expected.nlink !== 1n) return undefined;
  }
  let reader;
  try {
    // No link followed, nothing but a regular file; a managed storage also verifies owner-only.
    reader = storage.openReaderSync(file);
  } catch {
    return undefined;
  }
  try {
    const { stat } = reader;
    if (expected !== undefined && (stat.dev !== expected.dev.toString() || stat.ino !== expected.ino.toString())) return undefined;
    if (stat.size > maxBytes) return undefined;
    // One byte more than the stat promised shows a file still being written: not trusted.
    const buffer = Buffer.allocUnsafe(stat.size + 1);
    const read = reader.readSync(buffer, 0);
    return read === stat.size ? buffer.subarray(0, read) : undefined;
  } catch {
    return undefined;
  } finally {
    reader.close();
  }
}
