/**
 * The scan that fills a session file's {@link LineTable} with what a full load finds, keeping no
 * parsed record: every line goes through the loader's own {@link scanJsonlLine}, so a row holds
 * exactly the keys `JSON.parse` gives and salvage cuts the same pieces. Each row also carries the
 * CRC-32 of its line, which every later read of the line is checked against.
 */
import { crc32 } from "node:zlib";

import { emptyJsonlStats, scanJsonlLine, type InvalidLine, type JsonlStats } from "./jsonl.js";
import type { JsonRecord } from "./salvage.js";
import { F_BOM, F_CONT, F_PIECE, idHash, KIND_BLANK, KIND_INVALID, kindOf, keyFlags, type LineTable } from "./line-table.js";

/** What one line gives: its records and invalid pieces, in order. */
export type LinePiece = { kind: "record"; value: JsonRecord } | ({ kind: "invalid" } & InvalidLine);

/** The pieces of line `line` (`from..to` of `bytes`, no line feed) exactly as the loader cuts them, noted in `stats`. */
export function linePieces(bytes: Buffer, from: number, to: number, line: number, stats: JsonlStats = emptyJsonlStats()): LinePiece[] {
  const pieces: LinePiece[] = [];
  scanJsonlLine(
    bytes,
    from,
    to,
    line,
    {
      record: (value) => pieces.push({ kind: "record", value }),
      invalid: (invalid) => pieces.push({ kind: "invalid", ...invalid }),
    },
    stats,
  );
  return pieces;
}

/**
 * The CRC-32 of `bytes[from..to]` as a row stores it (signed 32-bit). `ascii`, when given, is those bytes as a string
 * (all of them ASCII, so its UTF-8 is the same bytes): read from the string, no view of the bytes is made.
 */
export function lineCrc(bytes: Uint8Array, from: number, to: number, ascii?: string): number {
  return crc32(ascii ?? bytes.subarray(from, to)) | 0;
}

/** Whether line 1 starts with a UTF-8 byte order mark at `start` (the loader skips it). */
export function startsWithBom(bytes: Uint8Array, start: number, end: number): boolean {
  return end - start >= 3 && bytes[start] === 0xef && bytes[start + 1] === 0xbb && bytes[start + 2] === 0xbf;
}

const NEWLINE = 0x0a;

/** Where a scan of a region of a file stands; see {@link scanLines}. */
export interface ScanCursor {
  /** file offset of the next unscanned byte (always the start of a line) */
  offset: number;
  /** physical line number of the line starting at {@link offset} */
  line: number;
}

/**
 * Scans the lines of `chunk` (from the cursor's line start) into `table`, advancing the cursor;
 * `final` takes a last line without a line feed. A blank line gets a row of its own kind, so rows tile the file;
 * `onRecord` sees each record with its row (the table does not keep it).
 * @returns the bytes consumed (the rest is an unfinished line to read again)
 */
export function scanLines(chunk: Buffer, cursor: ScanCursor, table: LineTable, final: boolean, onRecord?: RecordHook): number {
  const stats = emptyJsonlStats();
  let start = 0;
  while (start < chunk.length) {
    let end = chunk.indexOf(NEWLINE, start);
    if (end === -1) {
      if (!final) break;
      end = chunk.length;
    }
    const bom = cursor.line === 1 && cursor.offset === 0 && startsWithBom(chunk, start, end);
    const from = bom ? start + 3 : start;
    scanLine(chunk, from, end, { line: cursor.line, offset: cursor.offset + (from - start), bom }, table, stats, onRecord);
    cursor.line += 1;
    cursor.offset += end - start + (end < chunk.length ? 1 : 0);
    start = end + 1;
  }
  return Math.min(start, chunk.length);
}

/**
 * The pieces of a line as the loader cuts them, and whether it is one record parsed whole (no salvage): a row then says
 * {@link WHOLE_LINE} and a reader may parse it with one `JSON.parse`; otherwise each piece has a row numbered from 0.
 */
export function lineRows(
  bytes: Buffer,
  from: number,
  to: number,
  line: number,
  stats: JsonlStats = emptyJsonlStats(),
): { pieces: LinePiece[]; whole: boolean } {
  const salvaged = stats.salvagedLines.length;
  const pieces = linePieces(bytes, from, to, line, stats);
  return { pieces, whole: pieces.length === 1 && pieces[0]!.kind === "record" && stats.salvagedLines.length === salvaged };
}

/** Called with each record a scan finds and the row it got. */
export type RecordHook = (row: number, record: JsonRecord) => void;

function scanLine(
  chunk: Buffer,
  from: number,
  end: number,
  at: { line: number; offset: number; bom: boolean },
  table: LineTable,
  stats: JsonlStats,
  onRecord?: RecordHook,
): void {
  const length = end - from;
  const crc = lineCrc(chunk, from, end);
  const first = at.bom ? F_BOM : 0;
  const { pieces, whole } = end > from ? lineRows(chunk, from, end, at.line, stats) : { pieces: [], whole: false };
  if (pieces.length === 0) {
    table.push(at.offset, { length, parent: -1, crc, idHash: 0, kind: KIND_BLANK, flags: first });
    return;
  }
  pieces.forEach((piece, k) => {
    const place = (k > 0 ? F_CONT : first) | (whole ? 0 : F_PIECE);
    if (piece.kind === "invalid") {
      table.push(at.offset, { length, parent: -1, crc, idHash: 0, kind: KIND_INVALID, flags: place });
      return;
    }
    const { type, id, parentId } = piece.value;
    table.push(at.offset, {
      length,
      parent: -1,
      crc,
      idHash: typeof id === "string" ? idHash(id) : 0,
      kind: kindOf(type),
      flags: place | keyFlags(id, parentId),
    });
    onRecord?.(table.size - 1, piece.value);
  });
}
