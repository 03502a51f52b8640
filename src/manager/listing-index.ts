/**
 * The persistent listing index: the on-disk form of {@link SessionInfoCache}, one file per
 * session directory ({@link LISTING_INDEX_FILE_NAME}), so a listing in a fresh process does
 * not re-read files it already knows. A hit costs one no-follow stat.
 *
 * Layout: one owner-only (0600) JSON object, in ASCII (other characters escaped), written as
 * two lines. The first, `{"version","crc","fields","records"`, holds per session file (by
 * name, one array whose fields `fields` names) the identity it was read with (dev, ino, size,
 * mtime, ctime) and its prefix summary and late patch values, or why it is skipped; the
 * second, `,"texts":[...]}`, holds the message texts, which a summary points at by span. Only the first line is parsed: most texts are taken as
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

/**
 * The fields of a stored record, in order: it is stored as an array (half the parse of named
 * fields), and the file names the fields once. A skipped file's record ends after `skip`; a
 * session's has every field, `null` for an absent one, and its texts as the start and end of
 * their JSON string literals in the second line.
 */
const FIELDS = ["name", "dev", "ino", "size", "mtimeMs", "ctimeMs", "skip", "id", "cwd", "title", "shortSummary", "parentSession", "timestamp", "version", "messageCount", "parsedBytes", "firstStart", "firstEnd", "allStart", "allEnd", "lateTitle", "lateCwd"] as const;
const SKIP_FIELDS = FIELDS.indexOf("skip") + 1;

type Optional = string | null;
type SkipRecord = [string, string, string, number, number, number | null, SkipCode];
type SessionRecord = [string, string, string, number, number, number | null, null, string, string, Optional, Optional, Optional, Optional, number, number, number, number | null, number | null, number, number, Optional, Optional];
type StoredRecord = SkipRecord | SessionRecord;

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
const isOptionalText = (value: unknown): value is Optional => value === null || typeof value === "string";
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
const isSpan = (start: unknown, end: unknown): boolean => isCount(start) && isCount(end) && start + 2 <= end;

function isStoredRecord(value: unknown): value is StoredRecord {
  if (!Array.isArray(value) || (value.length !== SKIP_FIELDS && value.length !== FIELDS.length)) return false;
  const [name, dev, ino, size, mtimeMs, ctimeMs, skip, id, cwd, title, shortSummary, parentSession, timestamp, version, messageCount, parsedBytes, firstStart, firstEnd, allStart, allEnd, lateTitle, lateCwd] = value as unknown[];
  if (!isText(name) || !SESSION_NAME.test(name) || !isText(dev) || !DECIMAL.test(dev) || !isText(ino) || !DECIMAL.test(ino)) return false;
  if (!isCount(size) || !Number.isFinite(mtimeMs) || !(ctimeMs === null || Number.isFinite(ctimeMs))) return false;
  if (value.length === SKIP_FIELDS) return SKIPS.includes(skip as SkipCode);
  if (skip !== null || !isText(id) || !isText(cwd) || !isOptionalText(title) || !isOptionalText(shortSummary) || !isOptionalText(parentSession)) return false;
  if (!isOptionalText(timestamp) || !isOptionalText(lateTitle) || !isOptionalText(lateCwd) || !isCount(version) || version < 1) return false;
  const first = firstStart === null ? firstEnd === null : isSpan(firstStart, firstEnd);
  return first && isCount(messageCount) && isCount(parsedBytes) && isSpan(allStart, allEnd);
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
    if (!Array.isArray(parsed.fields) || parsed.fields.length !== FIELDS.length || parsed.fields.some((field, at) => field !== FIELDS[at])) return undefined;
    const texts = bytes.toString("latin1", split + 1);
    if (!texts.startsWith(TEXTS_OPEN)) return undefined;
    const records: ListingIndex = new Map();
    const prefix = path.join(dir, path.sep);
    for (const stored of parsed.records as unknown[]) {
      if (!isStoredRecord(stored) || records.has(stored[0])) return undefined;
      records.set(stored[0], fromStored(stored, prefix + stored[0], texts));
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
function textAt(texts: string, start: number, end: number): string {
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
  const span = (text: string): [number, number] => {
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
    const fields = JSON.stringify(FIELDS);
    storage.writeTextSync(access.file, `{"version":${VERSION},"crc":${crc32(rest)},"fields":${fields},"records":[${parts.join(",")}]\n${rest}`);
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

function toStored(name: string, record: ListingRecord, span: (text: string) => [number, number]): StoredRecord {
  const { dev, ino, size, mtimeMs, ctimeMs, outcome } = record;
  const identity = [name, dev, ino, size, mtimeMs, ctimeMs ?? null] as const;
  if (outcome.kind === "skip") return [...identity, outcome.code as SkipCode];
  const { id, cwd, title, shortSummary, parentSession, timestamp, version, messageCount, parsedBytes, firstMessage, allMessagesText } = outcome.summary;
  const first = firstMessage === undefined ? [null, null] as const : span(firstMessage);
  const late = [outcome.late.title ?? null, outcome.late.cwd ?? null] as const;
  return [...identity, null, id, cwd, title ?? null, shortSummary ?? null, parentSession ?? null, timestamp ?? null, version, messageCount, parsedBytes, ...first, ...span(allMessagesText), ...late];
}

/**
 * The record `stored` describes for `file`, its texts taken from `texts`.
 * @throws SyntaxError when a text span holds no string literal
 */
function fromStored(stored: StoredRecord, file: string, texts: string): ListingRecord {
  const [, dev, ino, size, mtimeMs, ctimeMs, skip] = stored;
  const record: ListingRecord = { dev, ino, size, mtimeMs, outcome: { kind: "skip", code: skip ?? "empty" }, resume: undefined };
  if (ctimeMs !== null) record.ctimeMs = ctimeMs;
  if (stored[6] !== null) return record;
  const [, , , , , , , id, cwd, title, shortSummary, parentSession, timestamp, version, messageCount, parsedBytes, firstStart, firstEnd, allStart, allEnd, lateTitle, lateCwd] = stored;
  const late: LatePatches = {};
  if (lateTitle !== null) late.title = lateTitle;
  if (lateCwd !== null) late.cwd = lateCwd;
  const summary: PrefixSummary = {
    kind: "session",
    id,
    cwd,
    title: title ?? undefined,
    shortSummary: shortSummary ?? undefined,
    parentSession: parentSession ?? undefined,
    timestamp: timestamp ?? undefined,
    version,
    messageCount,
    firstMessage: firstStart === null || firstEnd === null ? undefined : textAt(texts, firstStart, firstEnd),
    allMessagesText: textAt(texts, allStart, allEnd),
    parsedBytes,
  };
  record.outcome = { kind: "session", info: buildSessionInfo(file, summary, late, record), summary, late };
  return record;
}
