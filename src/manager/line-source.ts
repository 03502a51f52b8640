/**
 * Reading a session file's lines through its rows, each checked against its row (the bytes either side, CRC, kind, id
 * hash, parent), for the open through the line index and for the entries it leaves unread until asked for.
 */
import { isAscii } from "node:buffer";

import {
  decodeLine,
  F_BOM,
  F_CONT,
  F_ID,
  F_PARENT_NULL,
  F_PARENT_STRING,
  F_PIECE,
  idHash,
  isJsonRecord,
  keyFlags,
  KIND_BLANK,
  KIND_INVALID,
  kindOf,
  lineCrc,
  linePieces,
  lineRows,
  LineTable,
  SessionFormatError,
  type InvalidLine,
  type JsonRecord,
} from "../session/index.js";
import type { SessionFileReader, SessionStorage } from "../storage/index.js";
import { SessionManagerError } from "./errors.js";

/** A line did not hold what the index said: an internal signal, caught by the open (which then reads every line) or made `session_changed`, so no GjcError. */
export class IndexMismatch {
  constructor(readonly reason: string) {}
}

/** Lines closer than this are read with one call. */
const READ_GAP = 64 << 10;
const READ_SPAN = 8 << 20;
/** The longest line read: what one JavaScript string can hold as UTF-8 text, at least. */
export const MAX_LINE_BYTES = 0x1fffffe8;
const NEWLINE = 0x0a;

/** An {@link IndexMismatch} as the caller's `session_changed`; any other error as it is. */
export function changed(error: unknown, file: string, what: string): unknown {
  return error instanceof IndexMismatch ? new SessionManagerError("session_changed", `${file} ${what}`, { path: file, cause: error }) : error;
}

/** The session layer's own refusal of a line no string can hold (as a full load gives it). */
export function tooLarge(file: string): SessionFormatError {
  return new SessionFormatError("line_too_long", `${file} holds a line too long to load`);
}

/**
 * Closes the reader a read-only open kept when its manager is collected unclosed (pi's callers never close one). A
 * manager's `close` closes it at once.
 */
const heldReaders = new FinalizationRegistry<SessionFileReader>((reader) => {
  try {
    reader.close();
  } catch {
    // Nobody is left to tell: the descriptor goes with the process.
  }
});

/**
 * Reads lines by their rows, each checked against its row: through the open's reader (kept by a read-only open until
 * its manager closes), else a new one per batch checked to be the same file.
 */
export class LineSource {
  reader: SessionFileReader | undefined;
  readonly #storage: SessionStorage;
  readonly #file: string;
  readonly #opened: SessionFileReader["stat"];
  table = new LineTable();
  #scratch = Buffer.allocUnsafe(64 << 10);

  constructor(storage: SessionStorage, file: string, reader: SessionFileReader) {
    this.#storage = storage;
    this.#file = file;
    this.reader = reader;
    this.#opened = reader.stat;
  }

  /** Called once a line read after the open disagrees with its row, before the caller gets `session_changed`. */
  onMismatch: (() => void) | undefined;

  /** Refuses rows whose entries hold one id twice (they stand only for files whose ids are unique). */
  readonly repeated = (): never => this.mismatch(new IndexMismatch("two entries hold one id"));

  /** whether the open is still under way: a line that disagrees with its row then falls back on the full load */
  #opening = true;

  /**
   * Ends the open. A read-only open `keep`s its reader: the entries it left unread (behind the context) are read later
   * from the same file, even after a writer replaced the name with a rewrite. Otherwise the reader is about to be
   * closed, and later reads open the name again, refusing another file.
   */
  finishOpen(keep: boolean): void {
    this.#opening = false;
    if (!keep) this.reader = undefined;
    else if (this.reader !== undefined) heldReaders.register(this, this.reader, this);
  }

  /** Closes a kept reader (idempotent); later reads open the name again, refusing another file. */
  close(): void {
    const reader = this.reader;
    this.reader = undefined;
    if (reader === undefined || this.#opening) return;
    heldReaders.unregister(this);
    reader.close();
  }

  /**
   * Refuses a line that disagrees with its row: during the open a signal to fall back on the full load; after it
   * (entries read on demand) the caller's `session_changed`.
   */
  mismatch(error: unknown): never {
    if (this.#opening || !(error instanceof IndexMismatch)) throw error;
    this.onMismatch?.();
    this.onMismatch = undefined;
    throw changed(error, this.#file, "no longer holds the lines it was opened with");
  }

  /** The record of row `row`. @throws IndexMismatch when the line holds none */
  record(row: number): JsonRecord {
    const piece = this.read([row])[0];
    if (piece instanceof InvalidPiece || piece === BLANK) throw new IndexMismatch(`line ${this.table.lineOf(row)} holds no record`);
    return piece!;
  }

  /** The pieces of the lines of `rows` (ascending), each checked against its row. */
  read(rows: readonly number[]): LinePieceOf[] {
    if (rows.length === 0) return [];
    if (this.reader !== undefined) {
      try {
        return this.#readWith(this.reader, rows);
      } catch (error) {
        return this.mismatch(error);
      }
    }
    const reader = this.#storage.openReaderSync(this.#file);
    try {
      // Replaced by a rewrite: the lines are elsewhere now, and the index is not wrong.
      if (reader.stat.dev !== this.#opened.dev || reader.stat.ino !== this.#opened.ino) {
        throw changed(new IndexMismatch(`${this.#file} was replaced`), this.#file, "no longer holds the lines it was opened with");
      }
      return this.#readWith(reader, rows);
    } catch (error) {
      return this.mismatch(error);
    } finally {
      reader.close();
    }
  }

  #readWith(reader: SessionFileReader, rows: readonly number[]): LinePieceOf[] {
    const { table } = this;
    const out: LinePieceOf[] = [];
    let k = 0;
    while (k < rows.length) {
      const start = table.offset[rows[k]!]!;
      let last = k;
      let end = start + table.length(rows[k]!);
      while (last + 1 < rows.length) {
        const next = rows[last + 1]!;
        const nextEnd = table.offset[next]! + table.length(next);
        if (table.offset[next]! - end > READ_GAP || nextEnd - start > READ_SPAN) break;
        last += 1;
        end = Math.max(end, nextEnd);
      }
      // With the byte before and after: each line must sit between line feeds (or the file's ends).
      const from = Math.max(0, start - 3);
      const to = Math.min(end + 1, reader.stat.size);
      if (this.#scratch.length < to - from) this.#scratch = Buffer.allocUnsafe(to - from);
      const bytes = this.#scratch.subarray(0, to - from);
      if (reader.readSync(bytes, from) !== bytes.length) throw new IndexMismatch(`${this.#file} is shorter than its index`);
      const windows = new AsciiWindows(bytes);
      for (; k <= last; k++) {
        const row = rows[k]!;
        const at = table.offset[row]! - from;
        const after = at + table.length(row);
        if (after > bytes.length || (after < bytes.length && bytes[after] !== NEWLINE))
          throw new IndexMismatch(`line ${table.lineOf(row)} does not end where indexed`);
        if (!startsAt(table, row, bytes, at)) throw new IndexMismatch(`line ${table.lineOf(row)} does not start where indexed`);
        out.push(pieceOf(this.#file, table, row, bytes, at, after, windows.text(at, after)));
      }
    }
    return out;
  }
}

/** Bytes of one window of a read span taken as text at once. */
const ASCII_WINDOW = 32 << 10;

/**
 * Lines of a read span as slices of one string per window of it, when the window's bytes are all ASCII (each byte its
 * own character): a long flat path would otherwise pay a decode per line, a million times. Windows stay small so each
 * string is an ordinary one the collector frees young.
 */
class AsciiWindows {
  readonly #bytes: Buffer;
  #from = 0;
  #to = 0;
  #text: string | undefined;

  constructor(bytes: Buffer) {
    this.#bytes = bytes;
  }

  /** Bytes `from..to` as a string when they lie in an all-ASCII window; `undefined` for the caller to decode. */
  text(from: number, to: number): string | undefined {
    if (from < this.#from || to > this.#to) {
      this.#from = from;
      this.#to = Math.max(to, Math.min(this.#bytes.length, from + ASCII_WINDOW));
      const window = this.#bytes.subarray(this.#from, this.#to);
      this.#text = isAscii(window) ? window.toString("latin1") : undefined;
    }
    return this.#text?.slice(from - this.#from, to - this.#from);
  }
}

/** Whether the bytes before row `row`'s line, at `at` of `bytes`, are the file's start, its byte order mark, or a line feed. */
function startsAt(table: LineTable, row: number, bytes: Buffer, at: number): boolean {
  const offset = table.offset[row]!;
  if ((table.flags(row) & F_BOM) !== 0) return offset === 3 && at === 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
  return offset === 0 ? at === 0 : at > 0 && bytes[at - 1] === NEWLINE;
}

/** An invalid piece of a line as a read gives it. */
export class InvalidPiece {
  constructor(readonly invalid: InvalidLine) {}
}

/** What a blank line's row reads as. */
export const BLANK = Symbol("blank line");

/**
 * What one row's line gives: the record itself (no wrapper: a context read keeps a million of them
 * alive at once), an invalid piece, or a blank line.
 */
export type LinePieceOf = JsonRecord | InvalidPiece | typeof BLANK;

/**
 * The record, invalid piece or blank line row `row` names in its line (`from..to` of `bytes`), checked against
 * everything the row says; `ascii`, when given, is those bytes as a string (all of them ASCII).
 */
function pieceOf(file: string, table: LineTable, row: number, bytes: Buffer, from: number, to: number, ascii: string | undefined): LinePieceOf {
  const line = table.lineOf(row);
  const kind = table.kind(row);
  const flags = table.flags(row);
  if (to - from > MAX_LINE_BYTES) throw tooLarge(file);
  if (lineCrc(bytes, from, to, ascii) !== table.crc(row)) throw new IndexMismatch(`line ${line} is not the line indexed`);
  if (kind === KIND_BLANK) {
    if (to > from && linePieces(bytes, from, to, line).length > 0) throw new IndexMismatch(`line ${line} is not blank`);
    return BLANK;
  }
  let value: unknown;
  if ((flags & F_PIECE) === 0) {
    const text = ascii ?? decodeLine(bytes, from, to, line);
    try {
      value = JSON.parse(text);
    } catch {
      throw new IndexMismatch(`line ${line} does not parse`);
    }
  } else {
    const { pieces, whole } = lineRows(bytes, from, to, line);
    let first = row;
    while ((table.flags(first) & F_CONT) !== 0) first -= 1;
    let end = row + 1;
    while (end < table.size && (table.flags(end) & F_CONT) !== 0) end += 1;
    // Every piece of the line has its row, or a rewrite through the rows would drop one.
    if (whole || pieces.length !== end - first) throw new IndexMismatch(`line ${line} is not cut as indexed`);
    const cut = pieces[row - first]!;
    if (cut.kind === "invalid") {
      if (kind !== KIND_INVALID) throw new IndexMismatch(`line ${line} holds no record`);
      const { kind: _kind, ...invalid } = cut;
      return new InvalidPiece(invalid);
    }
    value = cut.value;
  }
  if (!isJsonRecord(value) || kindOf(value.type) !== kind) throw new IndexMismatch(`line ${line} is not the record indexed`);
  const { id, parentId } = value;
  const parent = table.parent(row);
  const sameId = (flags & (F_ID | F_PARENT_NULL | F_PARENT_STRING)) === keyFlags(id, parentId) && (typeof id !== "string" || idHash(id) === table.idHash(row));
  if (!sameId || (typeof parentId === "string" && parent >= 0 && idHash(parentId) !== table.idHash(parent))) {
    throw new IndexMismatch(`line ${line} has another id or parent than indexed`);
  }
  return value;
}
