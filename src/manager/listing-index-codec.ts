/**
 * The bytes of a listing index file (see `listing-index.ts` for what it is and when it is
 * trusted). Binary, because a listing that hits the index pays for decoding every record:
 * reading fields at known offsets costs a fraction of parsing the same records as JSON.
 *
 * Layout (all integers little-endian):
 *   magic     16 bytes  "GJC-LISTING-IDX\n"
 *   version   u32       1
 *   count     u32       records that follow
 *   sha256    32 bytes  of everything after the header
 *   records   one after another:
 *     name, dev, ino        str
 *     size, mtimeMs         f64
 *     flags                 u8    1 = has ctime, 2 = session (else skip), 4 = has resume point
 *     ctimeMs               f64   (flag 1)
 *     skip code             u8    (not flag 2): index into STORED_SKIPS
 *     summary               (flag 2) id, cwd str; title, shortSummary, parentSession,
 *                           timestamp opt-str; version, messageCount f64; allMessagesText
 *                           str; firstMessage opt-str, or u32 0xfffffffe + u32 n when it is
 *                           the first n UTF-16 units of allMessagesText (the usual case: a
 *                           session opens with the user's message); parsedBytes f64
 *     late                  (flag 2) title, cwd opt-str
 *     resume                (flag 4) offset f64, boundary bytes, prefix digest str
 *   str = u32 byte length + UTF-8, the top bit of the length set when every byte is ASCII
 *   (decoded as Latin-1, which is much cheaper); opt-str = str, or u32 0xffffffff when
 *   absent; bytes = u32 length + raw bytes.
 *
 * Decoding checks every length against the buffer, every number for the range its field
 * allows, every name for what a session file may be called, and that the records end
 * exactly at the end: a damaged file is rejected as a whole, never half-used.
 */
import { createHash } from "node:crypto";
import path from "node:path";

import type { ListingRecord, ResumePoint } from "./session-info-cache.js";
import { buildSessionInfo, type DiscoverySkipCode, type LatePatches, type PrefixSummary } from "./session-info.js";

const MAGIC = Buffer.from("GJC-LISTING-IDX\n", "latin1");
/** Format version written into (and required of) every index file. */
export const LISTING_INDEX_VERSION = 1;
const HEADER_BYTES = MAGIC.length + 4 + 4 + 32;
const ABSENT = 0xffffffff;
const PREFIX_OF_ALL = 0xfffffffe;
const ASCII = 0x80000000;
const HAS_CTIME = 1;
const IS_SESSION = 2;
const HAS_RESUME = 4;

/** Skip codes a prefix read can produce: the only ones a listing remembers, by their byte. */
const STORED_SKIPS: readonly DiscoverySkipCode[] = ["empty", "invalid_header", "version_too_new", "invalid_version"];

/** A UTF-16 surrogate without its pair: UTF-8 would turn it into U+FFFD. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Thrown inside the decoder only, to abandon a damaged buffer in one step. */
class Damaged extends Error {}

/**
 * Encodes `records` (name → record) in the given order, stopping before the record that
 * would take the file past `maxBytes`. A record holding a string that UTF-8 cannot carry
 * unchanged (a lone surrogate) is left out: it could not come back equal.
 */
export function encodeIndex(records: Iterable<[string, ListingRecord]>, maxBytes: number): Buffer {
  const writer = new Writer();
  let count = 0;
  for (const [name, record] of records) {
    const mark = writer.length;
    if (!writeRecord(writer, name, record)) {
      writer.length = mark;
      continue;
    }
    if (HEADER_BYTES + writer.length > maxBytes) {
      writer.length = mark;
      break;
    }
    count += 1;
  }
  const body = writer.bytes();
  const header = Buffer.alloc(HEADER_BYTES);
  MAGIC.copy(header, 0);
  header.writeUInt32LE(LISTING_INDEX_VERSION, MAGIC.length);
  header.writeUInt32LE(count, MAGIC.length + 4);
  createHash("sha256").update(body).digest().copy(header, MAGIC.length + 8);
  return Buffer.concat([header, body]);
}

/**
 * The records in `bytes`, with session paths `prefix + name`, or `undefined` when the buffer
 * is not a complete, intact index of this version.
 */
export function decodeIndex(bytes: Buffer, prefix: string): Map<string, ListingRecord> | undefined {
  if (bytes.length < HEADER_BYTES || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
  if (bytes.readUInt32LE(MAGIC.length) !== LISTING_INDEX_VERSION) return undefined;
  const count = bytes.readUInt32LE(MAGIC.length + 4);
  const body = bytes.subarray(HEADER_BYTES);
  const digest = bytes.subarray(MAGIC.length + 8, HEADER_BYTES);
  if (!createHash("sha256").update(body).digest().equals(digest)) return undefined;
  const reader = new Reader(body);
  const records = new Map<string, ListingRecord>();
  try {
    for (let index = 0; index < count; index++) {
      const name = reader.str();
      if (!isSessionName(name) || records.has(name)) return undefined;
      records.set(name, readRecord(reader, prefix + name));
    }
  } catch (error) {
    if (error instanceof Damaged) return undefined;
    throw error;
  }
  return reader.atEnd() ? records : undefined;
}

function writeRecord(writer: Writer, name: string, record: ListingRecord): boolean {
  const { outcome, resume } = record;
  const strings = [name, record.dev, record.ino];
  if (outcome.kind === "session") {
    const { summary, late } = outcome;
    strings.push(summary.id, summary.cwd, summary.allMessagesText);
    for (const value of [summary.title, summary.shortSummary, summary.parentSession, summary.timestamp, summary.firstMessage, late.title, late.cwd]) {
      if (value !== undefined) strings.push(value);
    }
    if (resume !== undefined) strings.push(resume.prefixDigest);
  }
  if (strings.some((value) => LONE_SURROGATE.test(value))) return false;
  writer.str(name);
  writer.str(record.dev);
  writer.str(record.ino);
  writer.f64(record.size);
  writer.f64(record.mtimeMs);
  const session = outcome.kind === "session";
  let flags = session ? IS_SESSION : 0;
  if (record.ctimeMs !== undefined) flags |= HAS_CTIME;
  if (session && resume !== undefined) flags |= HAS_RESUME;
  writer.u8(flags);
  if (record.ctimeMs !== undefined) writer.f64(record.ctimeMs);
  if (outcome.kind === "skip") {
    writer.u8(STORED_SKIPS.indexOf(outcome.code));
    return STORED_SKIPS.includes(outcome.code);
  }
  const { summary, late } = outcome;
  writer.str(summary.id);
  writer.str(summary.cwd);
  writer.optStr(summary.title);
  writer.optStr(summary.shortSummary);
  writer.optStr(summary.parentSession);
  writer.optStr(summary.timestamp);
  writer.f64(summary.version);
  writer.f64(summary.messageCount);
  writer.str(summary.allMessagesText);
  if (summary.firstMessage !== undefined && summary.allMessagesText.startsWith(summary.firstMessage)) {
    writer.u32(PREFIX_OF_ALL);
    writer.u32(summary.firstMessage.length);
  } else {
    writer.optStr(summary.firstMessage);
  }
  writer.f64(summary.parsedBytes);
  writer.optStr(late.title);
  writer.optStr(late.cwd);
  if (resume !== undefined) {
    writer.f64(resume.offset);
    writer.raw(resume.boundary);
    writer.str(resume.prefixDigest);
  }
  return true;
}

function readRecord(reader: Reader, file: string): ListingRecord {
  const dev = reader.str();
  const ino = reader.str();
  if (!isDecimal(dev) || !isDecimal(ino)) throw new Damaged();
  const size = reader.count();
  const mtimeMs = reader.finite();
  const flags = reader.u8();
  if ((flags & ~(HAS_CTIME | IS_SESSION | HAS_RESUME)) !== 0) throw new Damaged();
  const ctimeMs = (flags & HAS_CTIME) !== 0 ? reader.finite() : undefined;
  const record: ListingRecord = { dev, ino, size, mtimeMs, outcome: { kind: "skip", code: "empty" }, resume: undefined };
  if (ctimeMs !== undefined) record.ctimeMs = ctimeMs;
  if ((flags & IS_SESSION) === 0) {
    const code = STORED_SKIPS[reader.u8()];
    if (code === undefined || (flags & HAS_RESUME) !== 0) throw new Damaged();
    record.outcome = { kind: "skip", code };
    return record;
  }
  const id = reader.str();
  const cwd = reader.str();
  const title = reader.optStr();
  const shortSummary = reader.optStr();
  const parentSession = reader.optStr();
  const timestamp = reader.optStr();
  const version = reader.count();
  const messageCount = reader.count();
  const allMessagesText = reader.str();
  const firstMessage = reader.optStrOrPrefixOf(allMessagesText);
  const parsedBytes = reader.count();
  const summary: PrefixSummary = {
    kind: "session",
    id,
    cwd,
    title,
    shortSummary,
    parentSession,
    timestamp,
    version,
    messageCount,
    firstMessage,
    allMessagesText,
    parsedBytes,
  };
  if (summary.version < 1) throw new Damaged();
  const late: LatePatches = {};
  const lateTitle = reader.optStr();
  const lateCwd = reader.optStr();
  if (lateTitle !== undefined) late.title = lateTitle;
  if (lateCwd !== undefined) late.cwd = lateCwd;
  record.outcome = { kind: "session", info: buildSessionInfo(file, summary, late, record), summary, late };
  if ((flags & HAS_RESUME) === 0) return record;
  // Checked now, built only when a grown file needs it: most records never resume, and the
  // boundary bytes and digest would otherwise cost three allocations per record per listing.
  const at = reader.position;
  const offset = reader.count();
  const boundaryLength = reader.skipRaw();
  reader.skipStr();
  if (boundaryLength === 0 || boundaryLength > offset) throw new Damaged();
  return new StoredRecord(record, reader.buffer, at);
}

/**
 * A decoded record whose resume point is read from the index bytes on first use. It keeps
 * those bytes (at most {@link MAX_LISTING_INDEX_BYTES}) alive until then.
 */
class StoredRecord implements ListingRecord {
  readonly dev: string;
  readonly ino: string;
  readonly size: number;
  readonly mtimeMs: number;
  readonly ctimeMs?: number;
  readonly outcome: ListingRecord["outcome"];
  #source: Buffer | undefined;
  #at: number;
  #resume: ResumePoint | undefined;

  constructor(record: ListingRecord, source: Buffer, at: number) {
    this.dev = record.dev;
    this.ino = record.ino;
    this.size = record.size;
    this.mtimeMs = record.mtimeMs;
    if (record.ctimeMs !== undefined) this.ctimeMs = record.ctimeMs;
    this.outcome = record.outcome;
    this.#source = source;
    this.#at = at;
  }

  get resume(): ResumePoint | undefined {
    if (this.#source !== undefined && this.outcome.kind === "session") {
      const reader = new Reader(this.#source, this.#at);
      this.#source = undefined;
      const { summary, late } = this.outcome;
      this.#resume = { offset: reader.count(), boundary: reader.raw(), prefixDigest: reader.str(), summary, late };
    }
    return this.#resume;
  }
}

/** What a session file in a listed directory may be called (the listing lists no other). */
function isSessionName(name: string): boolean {
  return name.length > 6 && name.endsWith(".jsonl") && !name.startsWith(".") && !name.includes("/") && !name.includes(path.sep) && !name.includes("\0");
}

function isDecimal(value: string): boolean {
  return value.length > 0 && value.length <= 20 && /^\d+$/.test(value);
}

/** Appends fields to a growing buffer. */
class Writer {
  #buffer = Buffer.allocUnsafe(64 * 1024);
  length = 0;

  u8(value: number): void {
    this.#reserve(1);
    this.#buffer[this.length++] = value;
  }

  f64(value: number): void {
    this.#reserve(8);
    this.#buffer.writeDoubleLE(value, this.length);
    this.length += 8;
  }

  u32(value: number): void {
    this.#reserve(4);
    this.#buffer.writeUInt32LE(value, this.length);
    this.length += 4;
  }

  str(value: string): void {
    const bytes = Buffer.byteLength(value, "utf8");
    this.#reserve(4 + bytes);
    // As many UTF-8 bytes as UTF-16 units only when every character is ASCII.
    this.#buffer.writeUInt32LE(bytes === value.length ? (bytes | ASCII) >>> 0 : bytes, this.length);
    this.#buffer.write(value, this.length + 4, "utf8");
    this.length += 4 + bytes;
  }

  optStr(value: string | undefined): void {
    if (value !== undefined) return this.str(value);
    this.#reserve(4);
    this.#buffer.writeUInt32LE(ABSENT, this.length);
    this.length += 4;
  }

  raw(value: Uint8Array): void {
    this.#reserve(4 + value.length);
    this.#buffer.writeUInt32LE(value.length, this.length);
    this.#buffer.set(value, this.length + 4);
    this.length += 4 + value.length;
  }

  bytes(): Buffer {
    return this.#buffer.subarray(0, this.length);
  }

  #reserve(more: number): void {
    if (this.length + more <= this.#buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.#buffer.length * 2, this.length + more));
    this.#buffer.copy(grown, 0, 0, this.length);
    this.#buffer = grown;
  }
}

/** Reads fields back, throwing {@link Damaged} on anything out of bounds or out of range. */
class Reader {
  readonly #buffer: Buffer;
  #at: number;

  constructor(buffer: Buffer, at = 0) {
    this.#buffer = buffer;
    this.#at = at;
  }

  get buffer(): Buffer {
    return this.#buffer;
  }

  get position(): number {
    return this.#at;
  }

  /** Steps over a `str`, checking only its bounds; returns its byte length. */
  skipStr(): number {
    this.#need(4);
    const word = this.#buffer.readUInt32LE(this.#at);
    if (word === ABSENT || word === PREFIX_OF_ALL) throw new Damaged();
    const length = (word & ~ASCII) >>> 0;
    this.#at += 4;
    this.#need(length);
    this.#at += length;
    return length;
  }

  /** Steps over `bytes`, checking only their bounds; returns their length. */
  skipRaw(): number {
    this.#need(4);
    const length = this.#buffer.readUInt32LE(this.#at);
    this.#at += 4;
    this.#need(length);
    this.#at += length;
    return length;
  }

  atEnd(): boolean {
    return this.#at === this.#buffer.length;
  }

  u8(): number {
    this.#need(1);
    return this.#buffer[this.#at++] as number;
  }

  finite(): number {
    this.#need(8);
    const value = this.#buffer.readDoubleLE(this.#at);
    this.#at += 8;
    if (!Number.isFinite(value)) throw new Damaged();
    return value;
  }

  /** A non-negative safe integer stored as f64. */
  count(): number {
    const value = this.finite();
    if (!Number.isSafeInteger(value) || value < 0) throw new Damaged();
    return value;
  }

  str(): string {
    const value = this.optStr();
    if (value === undefined) throw new Damaged();
    return value;
  }

  optStr(): string | undefined {
    this.#need(4);
    const word = this.#buffer.readUInt32LE(this.#at);
    this.#at += 4;
    if (word === ABSENT) return undefined;
    if (word === PREFIX_OF_ALL) throw new Damaged();
    const length = (word & ~ASCII) >>> 0;
    this.#need(length);
    const value = this.#buffer.toString(word === length ? "utf8" : "latin1", this.#at, this.#at + length);
    this.#at += length;
    return value;
  }

  /** An opt-str, or a reference to the first units of `whole` (see the layout). */
  optStrOrPrefixOf(whole: string): string | undefined {
    this.#need(4);
    if (this.#buffer.readUInt32LE(this.#at) !== PREFIX_OF_ALL) return this.optStr();
    this.#at += 4;
    this.#need(4);
    const units = this.#buffer.readUInt32LE(this.#at);
    this.#at += 4;
    if (units > whole.length) throw new Damaged();
    return whole.slice(0, units);
  }

  raw(): Buffer {
    this.#need(4);
    const length = this.#buffer.readUInt32LE(this.#at);
    this.#at += 4;
    this.#need(length);
    // Copied: the record outlives the file's buffer, which would otherwise stay alive whole.
    const value = Buffer.from(this.#buffer.subarray(this.#at, this.#at + length));
    this.#at += length;
    return value;
  }

  #need(bytes: number): void {
    if (this.#at + bytes > this.#buffer.length) throw new Damaged();
  }
}
