/**
 * The persistent listing index ({@link LISTING_INDEX_FILE_NAME}, owner-only, one per session directory), so a fresh
 * process does not re-read files it knows. Version 3 is ASCII JSON on two lines: `{"version","crc","fields","records"`
 * (an array per file), then `,"texts":[...]}`, which records point into by span; only the first line is parsed. A hint:
 * used only when the sidecar checks pass, the first line validates whole and the second matches its CRC-32, each record
 * only while its file's live stat matches it.
 */
import path from "node:path";
import { crc32 } from "node:zlib";

import type { SessionStorage } from "../storage/index.js";
import { buildSessionInfo, type LatePatches, type ListingRecord, type PrefixRejection, type PrefixSummary } from "./session-info.js";
import { MAX_LISTING_INDEX_BYTES, readIndexBytes, type IndexAccess } from "./sidecar-files.js";

// 4: counts and first messages are the whole file's (3 held what the first 4 KiB showed).
const VERSION = 4;

/** The records of one directory's index, by file name. */
export type ListingIndex = Map<string, ListingRecord>;

// A record is an array (half the parse of named fields). A skip ends after `skip`; a session has
// every field, `null` for an absent one, its texts as [start, end) spans in the second line.
const FIELDS = [
  "name",
  "dev",
  "ino",
  "size",
  "mtimeMs",
  "ctimeMs",
  "skip",
  "id",
  "cwd",
  "title",
  "shortSummary",
  "parentSession",
  "timestamp",
  "version",
  "messageCount",
  "parsedBytes",
  "firstStart",
  "firstEnd",
  "allStart",
  "allEnd",
  "lateTitle",
  "lateCwd",
] as const;
const SKIP_FIELDS = FIELDS.indexOf("skip") + 1;

type Text = string | null;
type SkipCode = PrefixRejection["code"];
type StoredRecord =
  | [string, string, string, number, number, number | null, SkipCode]
  | [
      string,
      string,
      string,
      number,
      number,
      number | null,
      null,
      string,
      string,
      Text,
      Text,
      Text,
      Text,
      number,
      number,
      number,
      number | null,
      number | null,
      number,
      number,
      Text,
      Text,
    ];

const SKIPS: readonly SkipCode[] = ["empty", "invalid_header", "version_too_new", "invalid_version"];
const SESSION_NAME = /^[^./\\\0][^/\\\0]*\.jsonl$/;
const DECIMAL = /^\d{1,20}$/;
const TEXTS_OPEN = ',"texts":[';

// Checked by hand: a schema library costs several times the JSON parse of every record.
const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;
const isText = (value: unknown): value is Text => value === null || typeof value === "string";
const isId = (value: unknown): value is string => typeof value === "string" && DECIMAL.test(value);
const isSpan = (start: unknown, end: unknown): boolean => isCount(start) && isCount(end) && start + 2 <= end;

function isStoredRecord(value: unknown): value is StoredRecord {
  if (!Array.isArray(value) || (value.length !== SKIP_FIELDS && value.length !== FIELDS.length)) return false;
  const [
    name,
    dev,
    ino,
    size,
    mtimeMs,
    ctimeMs,
    skip,
    id,
    cwd,
    title,
    shortSummary,
    parentSession,
    timestamp,
    version,
    messageCount,
    parsedBytes,
    firstStart,
    firstEnd,
    allStart,
    allEnd,
    lateTitle,
    lateCwd,
  ] = value as unknown[];
  if (typeof name !== "string" || !SESSION_NAME.test(name) || !isId(dev) || !isId(ino)) return false;
  if (!isCount(size) || !Number.isFinite(mtimeMs) || !(ctimeMs === null || Number.isFinite(ctimeMs))) return false;
  if (value.length === SKIP_FIELDS) return SKIPS.includes(skip as SkipCode);
  if (skip !== null || typeof id !== "string" || typeof cwd !== "string" || !isText(title) || !isText(shortSummary) || !isText(parentSession)) return false;
  if (!isText(timestamp) || !isText(lateTitle) || !isText(lateCwd)) return false;
  const first = firstStart === null ? firstEnd === null : isSpan(firstStart, firstEnd);
  return first && isCount(version) && version >= 1 && isCount(messageCount) && isCount(parsedBytes) && isSpan(allStart, allEnd);
}

/** The index of `dir`, or `undefined` when there is none that can be trusted. Never throws. */
export function readListingIndex(storage: SessionStorage, access: IndexAccess, dir: string): ListingIndex | undefined {
  const bytes = access.file === undefined ? undefined : readIndexBytes(storage, access.file);
  const split = bytes?.indexOf(0x0a) ?? -1;
  if (bytes === undefined || split === -1) return undefined;
  try {
    // ASCII only: one-byte decodes, one-byte strings for the parser and the texts.
    const parsed = JSON.parse(`${bytes.toString("latin1", 0, split)}}`) as Record<string, unknown> | null;
    if (parsed?.version !== VERSION || !Array.isArray(parsed.records) || parsed.crc !== crc32(bytes.subarray(split + 1))) return undefined;
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

/** The text whose JSON string literal spans `start..end` of `texts`: a slice (sharing memory) unless it holds an escape. @throws SyntaxError for no string literal */
function textAt(texts: string, start: number, end: number): string {
  if (end > texts.length || texts.charCodeAt(start) !== 0x22 || texts.charCodeAt(end - 1) !== 0x22) throw new SyntaxError("not a text span");
  const inner = texts.slice(start + 1, end - 1);
  return inner.includes("\\") ? (JSON.parse(texts.slice(start, end)) as string) : inner;
}

/** Publishes `records` as the index `file`, newest files first, cut at {@link MAX_LISTING_INDEX_BYTES}; a failure (read-only file system, planted link, full disk) is ignored. */
export function writeListingIndex(storage: SessionStorage, file: string, records: ListingIndex): void {
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
    // Only a prefix read's verdicts are kept; any other skip is read again next time.
    if (record.outcome.kind === "skip" && !SKIPS.includes(record.outcome.code as SkipCode)) continue;
    const part = asciiJson(toStored(name, record, span));
    bytes += part.length + 1;
    if (bytes + at > MAX_LISTING_INDEX_BYTES) break; // ASCII: string length is byte length
    parts.push(part);
  }
  const rest = `${TEXTS_OPEN}${texts.join(",")}]}\n`;
  try {
    storage.writeTextSync(file, `{"version":${VERSION},"crc":${crc32(rest)},"fields":${JSON.stringify(FIELDS)},"records":[${parts.join(",")}]\n${rest}`);
  } catch {
    // The index is a hint: the listing it was written for stands without it.
  }
}

/** `value` as JSON with every UTF-16 unit past ASCII as a `\u` escape, which `JSON.parse` reads back exactly. */
function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(/[\u0080-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function toStored(name: string, record: ListingRecord, span: (text: string) => [number, number]): StoredRecord {
  const { dev, ino, size, mtimeMs, ctimeMs, outcome } = record;
  const identity = [name, dev, ino, size, mtimeMs, ctimeMs ?? null] as const;
  if (outcome.kind === "skip") return [...identity, outcome.code as SkipCode];
  const { id, cwd, title, shortSummary, parentSession, timestamp, version, messageCount, parsedBytes, firstMessage, allMessagesText } = outcome.summary;
  const first = firstMessage === undefined ? ([null, null] as const) : span(firstMessage);
  const late = [outcome.late.title ?? null, outcome.late.cwd ?? null] as const;
  return [
    ...identity,
    null,
    id,
    cwd,
    title ?? null,
    shortSummary ?? null,
    parentSession ?? null,
    timestamp ?? null,
    version,
    messageCount,
    parsedBytes,
    ...first,
    ...span(allMessagesText),
    ...late,
  ];
}

/** The record `stored` describes for `file`. @throws SyntaxError when a text span holds no string literal */
function fromStored(stored: StoredRecord, file: string, texts: string): ListingRecord {
  const [, dev, ino, size, mtimeMs, ctimeMs, skip] = stored;
  const record: ListingRecord = { dev, ino, size, mtimeMs, outcome: { kind: "skip", code: skip ?? "empty" }, resume: undefined };
  if (ctimeMs !== null) record.ctimeMs = ctimeMs;
  if (stored[6] !== null) return record;
  const [
    ,
    ,
    ,
    ,
    ,
    ,
    ,
    id,
    cwd,
    title,
    shortSummary,
    parentSession,
    timestamp,
    version,
    messageCount,
    parsedBytes,
    firstStart,
    firstEnd,
    allStart,
    allEnd,
    lateTitle,
    lateCwd,
  ] = stored;
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
