/**
 * The persistent listing index: the on-disk form of {@link SessionInfoCache}, one file per
 * session directory, so a listing in a fresh process does not re-read files it already knows.
 *
 * File: `<sessionDir>/.gjc-listing-index.v1`, owner-only (0600), JSON lines. The first line
 * is a header (format name, version, entry count, SHA-256 of the rest); each later line is one
 * session file's record, keyed by its name: the identity it was read with (dev, ino, size,
 * mtime, ctime), the prefix summary and late patch values, and for a v4/v5 file its resume
 * point. Everything a listing shows is rebuilt from that, so a hit costs one no-follow stat.
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
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { FileSessionStorage, ManagedSessionStorage, type SessionStorage, type StorageStat } from "../storage/index.js";
import type { CachedOutcome, ListingRecord, ResumePoint } from "./session-info-cache.js";
import { buildSessionInfo, type DiscoverySkipCode, type LatePatches, type PrefixSummary } from "./session-info.js";

/** Name of the listing index kept in each session directory (peers ignore `.gjc-*` names). */
export const LISTING_INDEX_FILE_NAME = ".gjc-listing-index.v1";

/**
 * Largest index read or written. A record holds at most what a 4 KiB prefix and two late
 * patch values produce, so this covers tens of thousands of sessions per directory; when the
 * records would exceed it, the oldest files are left out of the index (they are read again).
 */
export const MAX_LISTING_INDEX_BYTES = 64 * 1024 * 1024;

const FORMAT = "gjc-listing-index";
const VERSION = 1;
const NEWLINE = 0x0a;

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

/** The index file's bytes: header line, then one record per line, newest first. */
export function encodeListingIndex(records: ListingIndex): Buffer {
  const ordered = [...records].sort(([nameA, a], [nameB, b]) => b.mtimeMs - a.mtimeMs || (nameA < nameB ? -1 : 1));
  const lines: string[] = [];
  let bytes = 0;
  for (const [name, record] of ordered) {
    const line = `${JSON.stringify(encodeRecord(name, record))}\n`;
    // Leave room for the header; an index that would not fit keeps the newest files only.
    bytes += Buffer.byteLength(line);
    if (bytes > MAX_LISTING_INDEX_BYTES - 4096) break;
    lines.push(line);
  }
  const body = Buffer.from(lines.join(""));
  const head = { format: FORMAT, version: VERSION, count: lines.length, sha256: createHash("sha256").update(body).digest("hex") };
  return Buffer.concat([Buffer.from(`${JSON.stringify(head)}\n`), body]);
}

/**
 * The records in `bytes` with their session paths below `dir`, or `undefined` when anything
 * about it is wrong: the header, the version, the checksum, the count, or any one record.
 */
export function decodeListingIndex(bytes: Buffer, dir: string): ListingIndex | undefined {
  const split = bytes.indexOf(NEWLINE);
  if (split === -1) return undefined;
  const head = parseJson(bytes.toString("utf8", 0, split));
  if (!isObject(head) || head.format !== FORMAT || head.version !== VERSION || typeof head.sha256 !== "string") return undefined;
  if (!isCount(head.count)) return undefined;
  const body = bytes.subarray(split + 1);
  if (createHash("sha256").update(body).digest("hex") !== head.sha256) return undefined;
  const index: ListingIndex = new Map();
  const text = body.toString("utf8");
  let start = 0;
  while (start < text.length) {
    const end = text.indexOf("\n", start);
    if (end === -1) return undefined;
    const decoded = decodeRecord(parseJson(text.slice(start, end)), dir);
    if (decoded === undefined || index.has(decoded.name)) return undefined;
    index.set(decoded.name, decoded.record);
    start = end + 1;
  }
  return index.size === head.count ? index : undefined;
}

function readIndexBytes(storage: SessionStorage, file: string): Buffer | undefined {
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
    if (stat.size > MAX_LISTING_INDEX_BYTES) return undefined;
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

// -------------------------------------------------------------------------------------------
// Records. Short keys: an index holds one line per session and is read whole.

interface EncodedRecord {
  n: string;
  d: string;
  i: string;
  s: number;
  m: number;
  c?: number;
  /** skip code, for a file left out of listings */
  x?: DiscoverySkipCode;
  /** prefix summary and late values, for a listed session */
  h?: Omit<PrefixSummary, "kind">;
  l?: LatePatches;
  /** resume point: offset, boundary bytes (base64), prefix digest */
  r?: { o: number; b: string; p: string };
}

function encodeRecord(name: string, record: ListingRecord): EncodedRecord {
  const out: EncodedRecord = { n: name, d: record.dev, i: record.ino, s: record.size, m: record.mtimeMs };
  if (record.ctimeMs !== undefined) out.c = record.ctimeMs;
  const { outcome } = record;
  if (outcome.kind === "skip") {
    out.x = outcome.code;
    return out;
  }
  const { kind: _kind, ...summary } = outcome.summary;
  out.h = summary;
  out.l = outcome.late;
  if (record.resume !== undefined) {
    out.r = { o: record.resume.offset, b: record.resume.boundary.toString("base64"), p: record.resume.prefixDigest };
  }
  return out;
}

/** Skip codes a prefix read can produce: the only ones a listing remembers. */
const STORED_SKIPS: ReadonlySet<string> = new Set(["empty", "invalid_header", "version_too_new", "invalid_version"]);

function decodeRecord(value: unknown, dir: string): { name: string; record: ListingRecord } | undefined {
  if (!isObject(value)) return undefined;
  const { n: name, d: dev, i: ino, s: size, m: mtimeMs, c: ctimeMs } = value;
  if (typeof name !== "string" || !isSessionName(name)) return undefined;
  if (typeof dev !== "string" || !/^\d+$/.test(dev) || typeof ino !== "string" || !/^\d+$/.test(ino)) return undefined;
  if (!isCount(size) || typeof mtimeMs !== "number" || !Number.isFinite(mtimeMs)) return undefined;
  if (ctimeMs !== undefined && (typeof ctimeMs !== "number" || !Number.isFinite(ctimeMs))) return undefined;
  const identity: StorageStat = { kind: "file", dev, ino, size, mtimeMs, ...(ctimeMs === undefined ? {} : { ctimeMs }) };
  let outcome: CachedOutcome;
  let resume: ResumePoint | undefined;
  if (value.x !== undefined) {
    if (typeof value.x !== "string" || !STORED_SKIPS.has(value.x) || value.h !== undefined) return undefined;
    outcome = { kind: "skip", code: value.x as DiscoverySkipCode };
  } else {
    const summary = decodeSummary(value.h);
    const late = decodeLate(value.l);
    if (summary === undefined || late === undefined) return undefined;
    outcome = { kind: "session", info: buildSessionInfo(path.join(dir, name), summary, late, identity), summary, late };
    if (value.r !== undefined) {
      resume = decodeResume(value.r, summary, late);
      if (resume === undefined) return undefined;
    }
  }
  const record: ListingRecord = { dev, ino, size, mtimeMs, outcome, resume };
  if (ctimeMs !== undefined) record.ctimeMs = ctimeMs;
  return { name, record };
}

function decodeSummary(value: unknown): PrefixSummary | undefined {
  if (!isObject(value)) return undefined;
  const { id, cwd, title, shortSummary, parentSession, timestamp, version, messageCount, firstMessage, allMessagesText, parsedBytes } = value;
  if (typeof id !== "string" || typeof cwd !== "string" || typeof allMessagesText !== "string") return undefined;
  if (!isOptionalString(title) || !isOptionalString(shortSummary) || !isOptionalString(parentSession)) return undefined;
  if (!isOptionalString(timestamp) || !isOptionalString(firstMessage)) return undefined;
  if (!isCount(version) || version < 1 || !isCount(messageCount) || !isCount(parsedBytes)) return undefined;
  return { kind: "session", id, cwd, title, shortSummary, parentSession, timestamp, version, messageCount, firstMessage, allMessagesText, parsedBytes };
}

function decodeLate(value: unknown): LatePatches | undefined {
  if (!isObject(value) || !isOptionalString(value.title) || !isOptionalString(value.cwd)) return undefined;
  const late: LatePatches = {};
  if (value.title !== undefined) late.title = value.title;
  if (value.cwd !== undefined) late.cwd = value.cwd;
  return late;
}

function decodeResume(value: unknown, summary: PrefixSummary, late: LatePatches): ResumePoint | undefined {
  if (!isObject(value) || !isCount(value.o) || typeof value.b !== "string" || typeof value.p !== "string") return undefined;
  const boundary = Buffer.from(value.b, "base64");
  // A round trip proves the text was canonical base64, not something the decoder tolerated.
  if (boundary.toString("base64") !== value.b || boundary.length === 0 || boundary.length > value.o) return undefined;
  return { offset: value.o, boundary, prefixDigest: value.p, summary, late };
}

function isSessionName(name: string): boolean {
  return name.endsWith(".jsonl") && !name.includes("/") && !name.includes("\\") && !name.includes("\0") && !name.startsWith(".");
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

function isOptionalString(value: unknown): value is string | undefined {
  return value === undefined || typeof value === "string";
}
