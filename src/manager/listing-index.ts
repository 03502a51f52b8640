/**
 * The persistent listing index: the on-disk form of {@link SessionInfoCache}, one file per
 * session directory, so a listing in a fresh process does not re-read files it already knows.
 *
 * File: `<sessionDir>/.gjc-listing-index.v2.json`, owner-only (0600), a versioned JSON
 * object `{ version, records }` holding per session file (by name) the identity it was read
 * with (dev, ino, size, mtime, ctime), its prefix summary and late patch values (or why it
 * is skipped), and for a v4/v5 file its resume point. A hit costs one no-follow stat.
 *
 * Trust: the index is a hint, never an authority. It is read only when it is a regular file
 * of ours, mode 0600, one link, at most {@link MAX_LISTING_INDEX_BYTES}, and parses and
 * validates as a whole; anything else is ignored. A record is used only while the live stat
 * of its file matches its identity exactly, and a resume point only after the prefix digest
 * and boundary bytes are compared against the file.
 *
 * Writes: only where the storage may write safely (a managed storage, whose directories are
 * verified owner-only; an explicit directory only when it is ours, 0700 or stricter, and
 * owner-writable), only when something changed, through the storage's atomic temp + fsync +
 * rename publish. A failed write is silent: the listing never depends on it.
 */
import fs from "node:fs";
import path from "node:path";

import { FileSessionStorage, ManagedSessionStorage, type SessionStorage } from "../storage/index.js";
import type { ListingRecord } from "./session-info-cache.js";
import { buildSessionInfo, type LatePatches, type PrefixRejection, type PrefixSummary } from "./session-info.js";

/** Name of the listing index kept in each session directory (peers ignore `.gjc-*` names). */
export const LISTING_INDEX_FILE_NAME = ".gjc-listing-index.v2.json";

/** Format version written into (and required of) every index file. */
const VERSION = 2;

/** Largest index read or written; past it, the oldest files are left out (and read again). */
export const MAX_LISTING_INDEX_BYTES = 64 * 1024 * 1024;

/** The records of one directory's index, by file name. */
export type ListingIndex = Map<string, ListingRecord>;

/** Where a storage keeps (or would keep) the index of `dir`, and whether it may write it. */
export interface IndexAccess {
  /** `undefined` when this storage keeps no index (memory or custom storages). */
  readonly file: string | undefined;
  readonly writable: boolean;
}

/** A record as stored: {@link ListingRecord} with its name, a plain summary, the boundary in base64. */
interface StoredRecord {
  name: string;
  dev: string;
  ino: string;
  size: number;
  mtimeMs: number;
  ctimeMs?: number;
  skip?: SkipCode;
  summary?: Omit<PrefixSummary, "kind">;
  late?: LatePatches;
  resume?: { offset: number; boundary: string; prefixDigest: string };
}

type SkipCode = PrefixRejection["code"];
const SKIPS: readonly SkipCode[] = ["empty", "invalid_header", "version_too_new", "invalid_version"];
const SESSION_NAME = /^[^./\\\0][^/\\\0]*\.jsonl$/;
const DECIMAL = /^\d{1,20}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

// Checked by hand rather than with a schema: a fresh process checks every record of every
// listed directory, and a schema library costs several times the JSON parse itself.
const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;
const isText = (value: unknown): value is string => typeof value === "string";
const isOptionalText = (value: unknown): boolean => value === undefined || typeof value === "string";
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

function isStoredRecord(value: unknown): value is StoredRecord {
  if (!isObject(value)) return false;
  const { name, dev, ino, size, mtimeMs, ctimeMs, skip, summary, late, resume } = value;
  if (!isText(name) || !SESSION_NAME.test(name) || !isText(dev) || !DECIMAL.test(dev) || !isText(ino) || !DECIMAL.test(ino)) return false;
  if (!isCount(size) || !Number.isFinite(mtimeMs) || !(ctimeMs === undefined || Number.isFinite(ctimeMs))) return false;
  if (skip !== undefined) return SKIPS.includes(skip as SkipCode) && summary === undefined && late === undefined && resume === undefined;
  if (!isObject(summary) || !isText(summary.id) || !isText(summary.cwd) || !isText(summary.allMessagesText)) return false;
  if (![summary.title, summary.shortSummary, summary.parentSession, summary.timestamp, summary.firstMessage].every(isOptionalText)) return false;
  if (!isCount(summary.version) || summary.version < 1 || !isCount(summary.messageCount) || !isCount(summary.parsedBytes)) return false;
  if (late !== undefined && !(isObject(late) && isOptionalText(late.title) && isOptionalText(late.cwd))) return false;
  if (resume === undefined) return true;
  return isObject(resume) && isCount(resume.offset) && isText(resume.boundary) && BASE64.test(resume.boundary) && isText(resume.prefixDigest);
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
    return { file, writable: stat.isDirectory() && stat.uid === process.geteuid() && (stat.mode & 0o077) === 0 && (stat.mode & 0o200) !== 0 };
  } catch {
    return { file, writable: false };
  }
}

/** The index of `dir`, or `undefined` when there is none that can be trusted. Never throws. */
export function readListingIndex(storage: SessionStorage, access: IndexAccess, dir: string): ListingIndex | undefined {
  if (access.file === undefined) return undefined;
  const bytes = readIndexBytes(storage, access.file);
  if (bytes === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString("utf8"));
  } catch {
    return undefined;
  }
  if (!isObject(parsed) || parsed.version !== VERSION || !Array.isArray(parsed.records)) return undefined;
  const records: ListingIndex = new Map();
  const prefix = path.join(dir, path.sep);
  for (const stored of parsed.records as unknown[]) {
    if (!isStoredRecord(stored) || records.has(stored.name)) return undefined;
    const record = fromStored(stored, prefix + stored.name);
    if (record === undefined) return undefined;
    records.set(stored.name, record);
  }
  return records;
}

/**
 * Publishes `records` as the index of the directory, newest files first, cut at
 * {@link MAX_LISTING_INDEX_BYTES}. Returns whether it was written; a failure (read-only
 * file system, a link planted at the name, a full disk) leaves the listing unaffected.
 */
export function writeListingIndex(storage: SessionStorage, access: IndexAccess, records: ListingIndex): boolean {
  if (access.file === undefined || !access.writable) return false;
  const ordered = [...records].sort(([nameA, a], [nameB, b]) => b.mtimeMs - a.mtimeMs || (nameA < nameB ? -1 : 1));
  const parts: string[] = [];
  let bytes = 64;
  for (const [name, record] of ordered) {
    // Only a prefix read's verdicts are remembered; any other skip is read again next time.
    if (record.outcome.kind === "skip" && !SKIPS.includes(record.outcome.code as SkipCode)) continue;
    const part = JSON.stringify(toStored(name, record));
    bytes += Buffer.byteLength(part) + 1;
    if (bytes > MAX_LISTING_INDEX_BYTES) break;
    parts.push(part);
  }
  try {
    storage.writeTextSync(access.file, `{"version":${VERSION},"records":[${parts.join(",")}]}\n`);
    return true;
  } catch {
    return false;
  }
}

function toStored(name: string, record: ListingRecord): StoredRecord {
  const { dev, ino, size, mtimeMs, ctimeMs, outcome, resume } = record;
  const stored: StoredRecord = { name, dev, ino, size, mtimeMs, ctimeMs };
  if (outcome.kind === "skip") return { ...stored, skip: outcome.code as SkipCode };
  const { kind: _kind, ...summary } = outcome.summary;
  stored.summary = summary;
  stored.late = outcome.late;
  if (resume !== undefined) stored.resume = { offset: resume.offset, boundary: resume.boundary.toString("base64"), prefixDigest: resume.prefixDigest };
  return stored;
}

/** The record `stored` describes for `file`, or `undefined` when its parts contradict each other. */
function fromStored(stored: StoredRecord, file: string): ListingRecord | undefined {
  const { dev, ino, size, mtimeMs, ctimeMs, skip, resume } = stored;
  const late: LatePatches = {};
  if (stored.late?.title !== undefined) late.title = stored.late.title;
  if (stored.late?.cwd !== undefined) late.cwd = stored.late.cwd;
  const record: ListingRecord = { dev, ino, size, mtimeMs, outcome: { kind: "skip", code: "empty" }, resume: undefined };
  if (ctimeMs !== undefined) record.ctimeMs = ctimeMs;
  if (skip !== undefined || stored.summary === undefined) {
    record.outcome = { kind: "skip", code: skip ?? "empty" };
    return record;
  }
  // Field by field: nothing but what a summary holds is carried from the file.
  const { id, cwd, title, shortSummary, parentSession, timestamp, version, messageCount, firstMessage, allMessagesText, parsedBytes } = stored.summary;
  const summary: PrefixSummary = { kind: "session", id, cwd, title, shortSummary, parentSession, timestamp, version, messageCount, firstMessage, allMessagesText, parsedBytes };
  record.outcome = { kind: "session", info: buildSessionInfo(file, summary, late, record), summary, late };
  if (resume === undefined) return record;
  const boundary = Buffer.from(resume.boundary, "base64");
  if (boundary.length === 0 || boundary.length > resume.offset) return undefined;
  record.resume = { offset: resume.offset, boundary, prefixDigest: resume.prefixDigest, summary, late };
  return record;
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
