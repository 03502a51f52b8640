/**
 * The line index of a session file: a disposable, owner-only sidecar (`.gjc-lines.<name>.v1`
 * beside `<name>`; the dot name and the suffix keep every listing, discovery, migration and
 * audit walk, and both peers, from taking it for a session) holding the file's
 * {@link LineTable} up to the last line it covers, and the identity (device, inode) of the
 * transcript it describes.
 *
 * Layout: one header line `gjc-line-index 1<TAB>dev<TAB>ino`, then batches, one per line:
 * `B<payload length><TAB><payload>`, the payload being rows separated by U+001E, each row
 * `line offset length piece type id parentId` separated by tabs (a line or offset that
 * follows the row before, and the piece of a whole line, left empty; strings as JSON string
 * contents, which never hold a raw control character; a leading `=` marks a present string,
 * `~` a null parent). A batch is written by one system call; one that a crash cut short fails
 * its length and ends the index there, and the transcript past that point is scanned again.
 *
 * Nothing here is trusted: the reader checks the identity, the covered size and, through the
 * loader, every line it reads against its row. The transcript stays the only source of truth.
 */
import path from "node:path";

import { LineTable } from "../session/index.js";
import type { SessionStorage, SessionStorageWriter } from "../storage/index.js";
import { indexAccess, readIndexBytes } from "./sidecar-files.js";

/** Largest line index read; a bigger one is ignored and the transcript scanned instead. */
export const MAX_LINE_INDEX_BYTES = 512 * 1024 * 1024;

const MAGIC = "gjc-line-index 1";
const ROW_SEPARATOR = "\u001e";
/** Rows per batch line of a complete index. */
const BATCH_ROWS = 4096;

/** The sidecar path of the line index of session file `file`. */
export function lineIndexFile(file: string): string {
  return path.join(path.dirname(file), `.gjc-lines.${path.basename(file)}.v1`);
}

/** Whether `name` is a line index sidecar's name. */
export function isLineIndexName(name: string): boolean {
  return name.startsWith(".gjc-lines.") && name.endsWith(".v1");
}

/** Whether `storage` keeps line indexes for files in `dir`, and may write them. */
export function lineIndexAccess(storage: SessionStorage, dir: string): { kept: boolean; writable: boolean } {
  const access = indexAccess(storage, dir);
  return { kept: access.file !== undefined, writable: access.writable };
}

/** A decoded index: whose transcript it describes, and its rows. */
export interface DecodedLineIndex {
  dev: string;
  ino: string;
  table: LineTable;
  /** false when a torn or malformed batch ended the decoding early */
  complete: boolean;
}

function field(value: string | undefined): string {
  if (value === undefined) return "";
  return `=${/["\\\u0000-\u001f\u007f-\uffff]/.test(value) ? JSON.stringify(value).slice(1, -1) : value}`;
}

function unfield(text: string): string | undefined | false {
  if (text === "") return undefined;
  if (text.charCodeAt(0) !== 0x3d) return false;
  const body = text.slice(1);
  if (!body.includes("\\")) return body;
  try {
    return JSON.parse(`"${body}"`) as string;
  } catch {
    return false;
  }
}

/**
 * One batch line (without line feed) holding rows `from..to` of `table`. A parent that is the
 * id of the row just before (a chain, nearly every row) is written as `^`.
 */
export function encodeBatch(table: LineTable, from: number, to: number): string {
  const rows: string[] = [];
  for (let i = from; i < to; i++) {
    const parent = table.parentId[i];
    const chained = i > from;
    const parentText = parent === null ? "~" : chained && parent !== undefined && parent === table.id[i - 1] ? "^" : field(parent);
    // The usual row follows the one before (next line, next byte) and is a whole line: those fields stay empty.
    const line = chained && table.line[i] === table.line[i - 1]! + 1 ? "" : String(table.line[i]);
    const offset = chained && table.offset[i] === table.offset[i - 1]! + table.length[i - 1]! + 1 ? "" : String(table.offset[i]);
    const piece = table.piece[i] === -1 ? "" : String(table.piece[i]);
    rows.push(`${line}\t${offset}\t${table.length[i]}\t${piece}\t${field(table.type[i])}\t${field(table.id[i])}\t${parentText}`);
  }
  const payload = rows.join(ROW_SEPARATOR);
  return `B${payload.length}\t${payload}`;
}

/** A complete index file for rows `0..rows` of `table`, describing transcript `dev`/`ino`. */
export function encodeLineIndex(dev: string, ino: string, table: LineTable, rows: number): string {
  const parts = [`${MAGIC}\t${dev}\t${ino}\n`];
  for (let from = 0; from < rows; from += BATCH_ROWS) parts.push(`${encodeBatch(table, from, Math.min(rows, from + BATCH_ROWS))}\n`);
  return parts.join("");
}

const DECIMAL = /^(?:0|[1-9][0-9]{0,24})$/;

/**
 * The index in `bytes`, or `undefined` when its header is not ours. Batches are taken up to
 * the first that is torn or malformed, or whose rows do not follow the ones before in file
 * order; the rest is left to a scan of the transcript.
 */
export function decodeLineIndex(bytes: Buffer): DecodedLineIndex | undefined {
  const text = bytes.toString("utf8");
  const headerEnd = text.indexOf("\n");
  if (headerEnd === -1) return undefined;
  const header = text.slice(0, headerEnd).split("\t");
  if (header.length !== 3 || header[0] !== MAGIC || !DECIMAL.test(header[1]!) || !DECIMAL.test(header[2]!)) return undefined;
  const table = new LineTable();
  const types = new Map<string, string | undefined | false>();
  let at = headerEnd + 1;
  while (at < text.length) {
    const end = text.indexOf("\n", at);
    if (end === -1 || !decodeBatch(text, at, end, table, types)) break;
    at = end + 1;
  }
  return { dev: header[1]!, ino: header[2]!, table, complete: at === text.length };
}

/** Decodes one batch line (`from..to` of `text`) onto `table`; false, adding nothing, when it is torn or malformed. */
function decodeBatch(text: string, from: number, to: number, table: LineTable, types: Map<string, string | undefined | false>): boolean {
  const tab = text.indexOf("\t", from);
  if (text.charCodeAt(from) !== 0x42 || tab === -1 || tab >= to) return false;
  if (count(text.slice(from + 1, tab)) !== to - tab - 1) return false;
  const start = table.size;
  if (!new RowReader(text, tab + 1, to).readAll(table, types)) {
    table.truncate(start);
    return false;
  }
  return true;
}

/** A non-negative integer written in decimal, or -1. */
function count(text: string): number {
  const value = Number(text);
  return text.length > 0 && text.length <= 16 && Number.isSafeInteger(value) && value >= 0 && text.charCodeAt(0) !== 0x2b ? value : -1;
}

/** Reads the rows of one batch payload field by field, without splitting it into pieces. */
class RowReader {
  #at: number;

  constructor(
    readonly text: string,
    from: number,
    readonly end: number,
  ) {
    this.#at = from;
  }

  readAll(table: LineTable, types: Map<string, string | undefined | false>): boolean {
    let previousId: string | undefined;
    let lastTypeText: string | undefined;
    let first = true;
    for (;;) {
      const last = table.size - 1;
      const line = this.#number(TAB, first ? -1 : table.line[last]! + 1);
      const offset = this.#number(TAB, first ? -1 : table.offset[last]! + table.length[last]! + 1);
      const length = this.#number(TAB, -1);
      const piece = this.#number(TAB, WHOLE);
      if (line < 1 || offset < 0 || length < 0 || piece < -1) return false;
      // Most rows repeat the type of the row before: compare in place instead of cutting it out.
      let typeText: string | undefined;
      if (lastTypeText !== undefined && this.text.startsWith(lastTypeText, this.#at) && this.text.charCodeAt(this.#at + lastTypeText.length) === TAB) {
        typeText = lastTypeText;
        this.#at += lastTypeText.length + 1;
      } else typeText = this.#field(TAB);
      const idText = this.#field(TAB);
      let parentText: string | undefined;
      if (this.text.charCodeAt(this.#at) === 0x5e && (this.#at + 1 === this.end || this.text.charCodeAt(this.#at + 1) === ROW)) {
        parentText = "^";
        this.#at = Math.min(this.#at + 2, this.end);
      } else parentText = this.#field(ROW);
      if (typeText === undefined || idText === undefined || parentText === undefined) return false;
      lastTypeText = typeText;
      let type = types.get(typeText);
      if (type === undefined && !types.has(typeText)) {
        type = unfield(typeText);
        types.set(typeText, type);
      }
      const id = unfield(idText);
      const parent = parentText === "~" ? null : parentText === "^" ? (first ? false : (previousId ?? false)) : unfield(parentText);
      if (type === false || id === false || parent === false) return false;
      if (last >= 0) {
        if (table.line[last] === line) {
          if (offset !== table.offset[last] || length !== table.length[last] || piece <= table.piece[last]! || piece < 0) return false;
        } else if (line < table.line[last]! || offset < table.end) return false;
      }
      table.push(line, offset, length, piece, type, id, parent);
      previousId = id;
      first = false;
      if (this.#at >= this.end) return this.#at === this.end;
    }
  }

  /** Digits up to `stop` (consumed), `implied` for none, or -1 (also for -1 itself). */
  #number(stop: number, implied: number): number {
    const { text } = this;
    let value = 0;
    let digits = 0;
    for (; this.#at < this.end; this.#at++) {
      const code = text.charCodeAt(this.#at);
      if (code === stop) {
        this.#at += 1;
        if (digits === 0) return implied;
        return digits <= 15 ? value : -1;
      }
      if (code < 0x30 || code > 0x39) return -1;
      value = value * 10 + (code - 0x30);
      digits += 1;
    }
    return -1;
  }

  /** The text up to `stop` (or the end, for a row's last field), consumed with its separator. */
  #field(stop: number): string | undefined {
    const { text } = this;
    let to = text.indexOf(String.fromCharCode(stop), this.#at);
    if (to === -1 || to > this.end) {
      if (stop !== ROW) return undefined;
      to = this.end;
    }
    const value = text.slice(this.#at, to);
    this.#at = to + 1;
    if (to === this.end) this.#at = this.end;
    return value;
  }
}

const TAB = 0x09;
const ROW = 0x1e;
/** `piece` of a whole-line row (an empty field in the file). */
const WHOLE = -1;

/** Reads and decodes the index of `file`; `undefined` when there is none to trust. Never throws. */
export function readLineIndex(storage: SessionStorage, file: string): DecodedLineIndex | undefined {
  try {
    const bytes = readIndexBytes(storage, lineIndexFile(file), MAX_LINE_INDEX_BYTES);
    return bytes === undefined ? undefined : decodeLineIndex(bytes);
  } catch {
    return undefined;
  }
}

/**
 * Publishes the complete index of `file` (atomic replace, owner-only). A failure is silent:
 * the index only saves time.
 * @returns whether it was written
 */
export function publishLineIndex(storage: SessionStorage, file: string, dev: string, ino: string, table: LineTable, rows: number): boolean {
  try {
    storage.writeTextSync(lineIndexFile(file), encodeLineIndex(dev, ino, table, rows));
    return true;
  } catch {
    return false;
  }
}

/** Removes the index of `file` (a session moved away), if there is one. Never throws. */
export function removeLineIndex(storage: SessionStorage, file: string): void {
  try {
    storage.unlinkSync(lineIndexFile(file));
  } catch {
    // Missing, or not removable: a stray index names a transcript that is gone and is never trusted.
  }
}

/** Rows buffered before a batch is written while appending. */
const APPEND_BATCH_ROWS = 64;

/**
 * Keeps the index of a session file that this process appends to up to date, one row per
 * appended line. Rows are buffered and written a batch at a time, with no sync: a crash
 * loses at most the buffered rows, whose lines the next open finds past the covered size.
 * Any failure, or any write to the transcript this cannot follow (a full rewrite), ends the
 * upkeep for good; the next open then scans from wherever the index stops.
 */
export class LineIndexAppender {
  readonly #writer: SessionStorageWriter;
  readonly #table = new LineTable();
  /** the transcript's size as this process has written it */
  #size: number;
  #line: number;
  #written = 0;
  #done = false;

  /**
   * @param writer the index file's writer, held for as long as the transcript's
   * @param size the transcript's size, ending with a line feed
   * @param line the physical line number the next appended line gets
   */
  constructor(writer: SessionStorageWriter, size: number, line: number) {
    this.#writer = writer;
    this.#size = size;
    this.#line = line;
  }

  /** Records that the line `text` (no line feed) was appended to the transcript. */
  appended(text: string, record: { type?: unknown; id?: unknown; parentId?: unknown }): void {
    if (this.#done) return;
    if (typeof record.type !== "string") {
      this.#stop();
      return;
    }
    const length = Buffer.byteLength(text, "utf8");
    const parent = record.parentId;
    this.#table.push(
      this.#line,
      this.#size,
      length,
      -1,
      record.type,
      typeof record.id === "string" ? record.id : undefined,
      typeof parent === "string" || parent === null ? parent : undefined,
    );
    this.#size += length + 1;
    this.#line += 1;
    if (this.#table.size - this.#written >= APPEND_BATCH_ROWS) this.flush();
  }

  /** Writes the buffered rows. */
  flush(): void {
    if (this.#done || this.#table.size === this.#written) return;
    try {
      this.#writer.writeLineSync(encodeBatch(this.#table, this.#written, this.#table.size));
      this.#table.truncate(0);
      this.#written = 0;
    } catch {
      this.#stop();
    }
  }

  /** Stops keeping the index (the transcript is being written in a way rows cannot follow). */
  abandon(): void {
    this.#stop();
  }

  /** Writes the buffered rows and releases the index file. */
  close(): void {
    this.flush();
    this.#stop();
  }

  #stop(): void {
    if (this.#done) return;
    this.#done = true;
    try {
      this.#writer.closeSync();
    } catch {
      // The index is disposable; its writer's failure costs the session nothing.
    }
  }
}
