/**
 * The persistent listing index: the on-disk form of {@link SessionInfoCache}, one file per
 * session directory ({@link LISTING_INDEX_FILE_NAME}), so a listing in a fresh process does
 * not re-read files it already knows. A hit costs one no-follow stat.
 *
 * Layout: one owner-only (0600) JSON object, in ASCII (other characters escaped), written as
 * two lines. The first, `{"version","crc","records"`, holds per session file (by name) the
 * identity it was read with (dev, ino, size, mtime, ctime) and its prefix summary and late
 * patch values, or why it is skipped; the second, `,"texts":[...]}`, holds the message texts,
 * which a summary points at by span. Only the first line is parsed: most texts are taken as
 * slices of the second, which costs neither a parse nor a copy. Resume points stay in the
 * process: a file that grew is scanned again in full by a fresh process.
 *
 * Trust: the index is a hint, never an authority. It is read only when it is a regular file
 * of ours, mode 0600, one link, at most {@link MAX_LISTING_INDEX_BYTES}, its first line
 * parses and validates as a whole, the second matches the CRC-32 the first gives, and every
 * span holds a string literal; anything else is ignored. A record is used only while the
 * live stat of its file matches its identity exactly.
 *
 * Writes: only where {@link indexAccess} allows, only when something changed, through the
 * storage's atomic temp + fsync + rename publish. A failed write is silent: the listing
 * never depends on it.
 */
import path from "node:path";
import { crc32 } from "node:zlib";

import type { SessionStorage } from "../storage/index.js";
import type { ListingRecord } from "./session-info-cache.js";
import { buildSessionInfo, type LatePatches, type PrefixRejection, type PrefixSummary } from "./session-info.js";
import { MAX_LISTING_INDEX_BYTES, readIndexBytes, type IndexAccess } from "./sidecar-files.js";

/** Format version written into (and required of) every index file. */
const VERSION = 3;

/** The records of one directory's index, by file name. */
export type ListingIndex = Map<string, ListingRecord>;

/** Where a message text is in the second line: the start and end of its JSON string literal. */
type Span = [number, number];

/** A summary as stored: the message texts as spans of the second line. */
type StoredSummary = Omit<PrefixSummary, "kind" | "firstMessage" | "allMessagesText"> & { first?: Span; all: Span };

/** A record as stored: {@link ListingRecord} with its name and a summary whose texts are spans, without a resume point. */
interface StoredRecord {
  name: string;
  dev: string;
  ino: string;
  size: number;
  mtimeMs: number;
  ctimeMs?: number;
  skip?: SkipCode;
  summary?: StoredSummary;
  late?: LatePatches;
}

type SkipCode = PrefixRejection["code"];
const SKIPS: readonly SkipCode[] = ["empty", "invalid_header", "version_too_new", "invalid_version"];
const SESSION_NAME = /^[^./\\\0][^/\\\0]*\.jsonl$/;
const DECIMAL = /^\d{1,20}$/;
const NEWLINE = 0x0a;
const QUOTE = 0x22;
const TEXTS_OPEN = ',"texts":[';

// Checked by hand rather than with a schema: a fresh process checks every record of every
// listed directory, and a schema library costs several times the JSON parse itself.
const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;
const isText = (value: unknown): value is string => typeof value === "string";
const isOptionalText = (value: unknown): boolean => value === undefined || typeof value === "string";
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
const isSpan = (value: unknown): value is Span => Array.isArray(value) && value.length === 2 && isCount(value[0]) && isCount(value[1]) && value[0] + 2 <= value[1];

function isStoredRecord(value: unknown): value is StoredRecord {
  if (!isObject(value)) return false;
  const { name, dev, ino, size, mtimeMs, ctimeMs, skip, summary, late } = value;
  if (!isText(name) || !SESSION_NAME.test(name) || !isText(dev) || !DECIMAL.test(dev) || !isText(ino) || !DECIMAL.test(ino)) return false;
  if (!isCount(size) || !Number.isFinite(mtimeMs) || !(ctimeMs === undefined || Number.isFinite(ctimeMs))) return false;
  if (skip !== undefined) return SKIPS.includes(skip as SkipCode) && summary === undefined && late === undefined;
  if (!isObject(summary) || !isText(summary.id) || !isText(summary.cwd) || !isSpan(summary.all) || !(summary.first === undefined || isSpan(summary.first))) return false;
  if (![summary.title, summary.shortSummary, summary.parentSession, summary.timestamp].every(isOptionalText)) return false;
  if (!isCount(summary.version) || summary.version < 1 || !isCount(summary.messageCount) || !isCount(summary.parsedBytes)) return false;
  return late === undefined || (isObject(late) && isOptionalText(late.title) && isOptionalText(late.cwd));
}

/** The index of `dir`, or `undefined` when there is none that can be trusted. Never throws. */
export function readListingIndex(storage: SessionStorage, access: IndexAccess, dir: string): ListingIndex | undefined {
  if (access.file === undefined) return undefined;
  const bytes = readIndexBytes(storage, access.file);
  const split = bytes?.indexOf(NEWLINE) ?? -1;
  if (bytes === undefined || split === -1) return undefined;
  try {
    // Written as ASCII only: one-byte decodes, one-byte strings for the parser and the texts.
    const parsed: unknown = JSON.parse(`${bytes.toString("latin1", 0, split)}}`);
    if (!isObject(parsed) || parsed.version !== VERSION || !Array.isArray(parsed.records) || parsed.crc !== crc32(bytes.subarray(split + 1))) return undefined;
    const texts = bytes.toString("latin1", split + 1);
    if (!texts.startsWith(TEXTS_OPEN)) return undefined;
    const records: ListingIndex = new Map();
    const prefix = path.join(dir, path.sep);
    for (const stored of parsed.records as unknown[]) {
      if (!isStoredRecord(stored) || records.has(stored.name)) return undefined;
      records.set(stored.name, fromStored(stored, prefix + stored.name, texts));
    }
    return records;
  } catch {
    return undefined;
  }
}

/**
 * The text whose JSON string literal is at `span` of `texts`. Most texts need no escape, and
 * are then taken as a slice of `texts` (which shares its memory) rather than copied by a parse.
 * @throws SyntaxError when the span holds no string literal
 */
function textAt(texts: string, [start, end]: Span): string {
  if (end > texts.length || texts.charCodeAt(start) !== QUOTE || texts.charCodeAt(end - 1) !== QUOTE) throw new SyntaxError("not a text span");
  const inner = texts.slice(start + 1, end - 1);
  return inner.includes("\\") ? (JSON.parse(texts.slice(start, end)) as string) : inner;
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
  const texts: string[] = [];
  let at = TEXTS_OPEN.length;
  let bytes = 64;
  const span = (text: string): Span => {
    const literal = asciiJson(text);
    texts.push(literal);
    at += literal.length + 1;
    return [at - literal.length - 1, at - 1];
  };
  for (const [name, record] of ordered) {
    // Only a prefix read's verdicts are remembered; any other skip is read again next time.
    if (record.outcome.kind === "skip" && !SKIPS.includes(record.outcome.code as SkipCode)) continue;
    const part = asciiJson(toStored(name, record, span));
    bytes += part.length + 1;
    // Both lines are ASCII: string length is byte length.
    if (bytes + at > MAX_LISTING_INDEX_BYTES) break;
    parts.push(part);
  }
  const rest = `${TEXTS_OPEN}${texts.join(",")}]}\n`;
  try {
    storage.writeTextSync(access.file, `{"version":${VERSION},"crc":${crc32(rest)},"records":[${parts.join(",")}]\n${rest}`);
    return true;
  } catch {
    return false;
  }
}

const NON_ASCII = /[\u0080-\uffff]/g;

/** `value` as JSON with every UTF-16 unit past ASCII written as a `\u` escape, which `JSON.parse` reads back exactly. */
function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(NON_ASCII, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function toStored(name: string, record: ListingRecord, span: (text: string) => Span): StoredRecord {
  const { dev, ino, size, mtimeMs, ctimeMs, outcome } = record;
  const stored: StoredRecord = { name, dev, ino, size, mtimeMs, ctimeMs };
  if (outcome.kind === "skip") return { ...stored, skip: outcome.code as SkipCode };
  const { kind: _kind, firstMessage, allMessagesText, ...summary } = outcome.summary;
  stored.summary = { ...summary, ...(firstMessage === undefined ? {} : { first: span(firstMessage) }), all: span(allMessagesText) };
  stored.late = outcome.late;
  return stored;
}

/**
 * The record `stored` describes for `file`, its texts taken from `texts`.
 * @throws SyntaxError when a text span holds no string literal
 */
function fromStored(stored: StoredRecord, file: string, texts: string): ListingRecord {
  const { dev, ino, size, mtimeMs, ctimeMs, skip } = stored;
  const record: ListingRecord = { dev, ino, size, mtimeMs, outcome: { kind: "skip", code: skip ?? "empty" }, resume: undefined };
  if (ctimeMs !== undefined) record.ctimeMs = ctimeMs;
  if (stored.summary === undefined) return record;
  const late: LatePatches = {};
  if (stored.late?.title !== undefined) late.title = stored.late.title;
  if (stored.late?.cwd !== undefined) late.cwd = stored.late.cwd;
  // Field by field: nothing but what a summary holds is carried from the file.
  const { id, cwd, title, shortSummary, parentSession, timestamp, version, messageCount, first, all, parsedBytes } = stored.summary;
  const firstMessage = first === undefined ? undefined : textAt(texts, first);
  const summary: PrefixSummary = { kind: "session", id, cwd, title, shortSummary, parentSession, timestamp, version, messageCount, firstMessage, allMessagesText: textAt(texts, all), parsedBytes };
  record.outcome = { kind: "session", info: buildSessionInfo(file, summary, late, record), summary, late };
  return record;
}
