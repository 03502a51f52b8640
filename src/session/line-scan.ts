/**
 * The scan that fills a session file's {@link LineTable} with what a full load would find,
 * keeping no parsed record. An entry line in the written key order (`{"type":…,"id":…,"parentId":…`)
 * is read from its first bytes, after checking it is one balanced object (so a torn or glued
 * line is never taken for a record); every other line goes through the loader's own
 * {@link scanJsonlLine}, so salvage cuts the same pieces.
 */
import { emptyJsonlStats, scanJsonlLine, type InvalidLine, type JsonlStats } from "./jsonl.js";
import type { JsonRecord } from "./salvage.js";
import { LineTable, WHOLE_LINE } from "./line-table.js";
import { isPatchRecordType } from "./schemas.js";

/** What one line gives: its records and invalid pieces, in order. */
export type LinePiece = { kind: "record"; value: JsonRecord } | ({ kind: "invalid" } & InvalidLine);

/** The pieces of line `line` (`from..to` of `bytes`, no line feed) exactly as the loader cuts them, noted in `stats`. */
export function linePieces(bytes: Buffer, from: number, to: number, line: number, stats: JsonlStats = emptyJsonlStats()): LinePiece[] {
  const pieces: LinePiece[] = [];
  scanJsonlLine(bytes, from, to, line, {
    record: (value) => pieces.push({ kind: "record", value }),
    invalid: (invalid) => pieces.push({ kind: "invalid", ...invalid }),
  }, stats);
  return pieces;
}

const NEWLINE = 0x0a;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const TYPE_PREFIX = Buffer.from('{"type":"');
const ID_KEY = Buffer.from(',"id":"');
const PARENT_KEY = Buffer.from(',"parentId":');
const NULL = Buffer.from("null");

/** Where a scan of a region of a file stands; see {@link scanLines}. */
export interface ScanCursor {
  /** file offset of the next unscanned byte (always the start of a line) */
  offset: number;
  /** physical line number of the line starting at {@link offset} */
  line: number;
}

/**
 * Scans the lines of `chunk` (from the cursor's line start) into `table`, advancing the cursor;
 * `final` takes a last line without a line feed, `strict` parses every line with the loader's step.
 * @returns the bytes consumed (the rest is an unfinished line to read again)
 */
export function scanLines(chunk: Buffer, cursor: ScanCursor, table: LineTable, final: boolean, strict = false): number {
  const stats = emptyJsonlStats();
  let start = 0;
  while (start < chunk.length) {
    let end = chunk.indexOf(NEWLINE, start);
    if (end === -1) {
      if (!final) break;
      end = chunk.length;
    }
    const bom = cursor.line === 1 && cursor.offset === 0 && end - start >= 3 && chunk[start] === 0xef && chunk[start + 1] === 0xbb && chunk[start + 2] === 0xbf;
    const from = bom ? start + 3 : start;
    const base = cursor.offset + (from - start);
    if (end > from && (strict || !fastLine(chunk, from, end, cursor.line, base, table))) {
      slowLine(chunk, from, end, cursor.line, base, table, stats);
    }
    cursor.line += 1;
    cursor.offset += end - start + (end < chunk.length ? 1 : 0);
    start = end + 1;
  }
  return Math.min(start, chunk.length);
}

function slowLine(chunk: Buffer, from: number, end: number, line: number, base: number, table: LineTable, stats: JsonlStats): void {
  const salvaged = stats.salvagedLines.length;
  const pieces = linePieces(chunk, from, end, line, stats);
  // One record and no salvage: the line parsed whole, and a reader may parse it the same way.
  const whole = pieces.length === 1 && pieces[0]!.kind === "record" && stats.salvagedLines.length === salvaged;
  pieces.forEach((piece, k) => {
    if (piece.kind === "invalid") {
      table.push(line, base, end - from, k, undefined, undefined, undefined);
      return;
    }
    const { type, id, parentId } = piece.value;
    const parent = typeof parentId === "string" || parentId === null ? parentId : undefined;
    table.push(line, base, end - from, whole ? WHOLE_LINE : k, type, typeof id === "string" ? id : undefined, parent);
  });
}

/** Whether `bytes` at `at` starts with `expected`. */
function startsWith(bytes: Buffer, at: number, end: number, expected: Buffer): boolean {
  if (at + expected.length > end) return false;
  for (let i = 0; i < expected.length; i++) if (bytes[at + i] !== expected[i]) return false;
  return true;
}

/** The index of the quote closing the JSON string whose content starts at `at`, or -1 when it does not close before `end`. */
function stringEnd(bytes: Buffer, at: number, end: number): number {
  for (let quote = bytes.indexOf(QUOTE, at); quote !== -1 && quote < end; quote = bytes.indexOf(QUOTE, quote + 1)) {
    let slashes = 0;
    while (quote - 1 - slashes >= at && bytes[quote - 1 - slashes] === BACKSLASH) slashes += 1;
    if (slashes % 2 === 0) return quote;
  }
  return -1;
}

/** A short string token (a type or id) as text, or undefined when it holds raw control bytes. */
function token(bytes: Buffer, from: number, to: number): string | undefined {
  let escaped = false;
  for (let i = from; i < to; i++) {
    const byte = bytes[i]!;
    if (byte < 0x20) return undefined;
    if (byte === BACKSLASH) escaped = true;
  }
  const text = bytes.toString("utf8", from, to);
  if (!escaped) return text;
  try {
    return JSON.parse(`"${text}"`) as string;
  } catch {
    return undefined;
  }
}

/** Whether `from..to` of `bytes` is printable ASCII without a backslash: the id's bytes are then its UTF-8 text. */
function plainAscii(bytes: Buffer, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const byte = bytes[i]!;
    if (byte < 0x20 || byte >= 0x80 || byte === BACKSLASH) return false;
  }
  return true;
}

/** The last type token read, to spare a string per line (nearly every line repeats a type). */
let lastType = { bytes: Buffer.alloc(0), text: "" };

function typeToken(bytes: Buffer, from: number, to: number): string | undefined {
  const cached = lastType.bytes;
  if (cached.length === to - from && bytes.compare(cached, 0, cached.length, from, to) === 0) return lastType.text;
  const text = token(bytes, from, to);
  if (text !== undefined) lastType = { bytes: Buffer.from(bytes.subarray(from, to)), text };
  return text;
}

/** Reads an entry line from its first bytes when it has the written key order and is one balanced object; false otherwise. */
function fastLine(bytes: Buffer, from: number, end: number, line: number, base: number, table: LineTable): boolean {
  if (!startsWith(bytes, from, end, TYPE_PREFIX)) return false;
  let at = from + TYPE_PREFIX.length;
  const typeEnd = stringEnd(bytes, at, end);
  if (typeEnd === -1) return false;
  const type = typeToken(bytes, at, typeEnd);
  if (type === undefined || type === "session" || isPatchRecordType(type)) return false;
  at = typeEnd + 1;
  if (!startsWith(bytes, at, end, ID_KEY)) return false;
  at += ID_KEY.length;
  const idFrom = at;
  const idEnd = stringEnd(bytes, at, end);
  if (idEnd === -1) return false;
  at = idEnd + 1;
  if (!startsWith(bytes, at, end, PARENT_KEY)) return false;
  at += PARENT_KEY.length;
  let parentFrom = -1;
  let parentEnd: number | null = null;
  if (startsWith(bytes, at, end, NULL)) at += NULL.length;
  else {
    if (bytes[at] !== QUOTE) return false;
    parentFrom = at + 1;
    parentEnd = stringEnd(bytes, parentFrom, end);
    if (parentEnd === -1) return false;
    at = parentEnd + 1;
  }
  if (bytes[at] !== 0x2c && bytes[at] !== 0x7d) return false;
  if (!balancedTail(bytes, at, end)) return false;
  if (plainAscii(bytes, idFrom, idEnd) && (parentEnd === null || plainAscii(bytes, parentFrom, parentEnd))) {
    table.pushBytes(line, base, end - from, type, bytes, idFrom, idEnd, parentFrom, parentEnd);
    return true;
  }
  const id = token(bytes, idFrom, idEnd);
  const parentId = parentEnd === null ? null : token(bytes, parentFrom, parentEnd);
  if (id === undefined || parentId === undefined) return false;
  table.push(line, base, end - from, WHOLE_LINE, type, id, parentId);
  return true;
}

/** Bytes JSON allows outside strings; a torn record read with its quotes out of step fails this. */
const OUTSIDE_STRING = (() => {
  const allowed = new Uint8Array(256);
  for (const char of "{}[]:,0123456789-+.eE \t\rtruefalsn") allowed[char.charCodeAt(0)] = 1;
  return allowed;
})();

/**
 * Whether the object resuming at `at` (depth 1, outside strings) closes once, at the line's last
 * non-blank byte, with every string closed and no raw NUL (left by torn writes, never valid JSON).
 */
function balancedTail(bytes: Buffer, at: number, end: number): boolean {
  if (bytes.subarray(at, end).indexOf(0) !== -1) return false;
  let depth = 1;
  let i = at;
  while (i < end) {
    const byte = bytes[i]!;
    if (byte === QUOTE) {
      const close = stringEnd(bytes, i + 1, end);
      if (close === -1) return false;
      i = close + 1;
      continue;
    }
    if (OUTSIDE_STRING[byte] !== 1) return false;
    if (byte === 0x7b || byte === 0x5b) depth += 1;
    else if (byte === 0x7d || byte === 0x5d) {
      depth -= 1;
      if (depth === 0) {
        for (let j = i + 1; j < end; j++) {
          const rest = bytes[j]!;
          if (rest !== 0x20 && rest !== 0x09 && rest !== 0x0d) return false;
        }
        return true;
      }
    }
    i += 1;
  }
  return false;
}
