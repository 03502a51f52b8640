/**
 * The line index of a session file: a disposable, owner-only sidecar `.gjc-lines.<name>.v3` (a dot
 * name no walk or peer takes for a session) holding the file's {@link LineTable} up to the last line
 * it covers and the (device, inode) of the transcript. Layout: `gjc-line-index 3 <LE|BE><TAB>dev<TAB>ino`,
 * then one batch per line, `C` and the base64 of the typed-array columns in host byte order (decoding
 * is a copy and one check). Each batch is one write; a torn, damaged or out-of-order one ends the
 * index there and the rest of the transcript is scanned again. Entry rows also hold their parent's
 * row and whether their id repeats, so an open where no id repeats hashes no ids. Nothing here is
 * trusted: the open checks the identity, the covered size and every line it reads. v1/v2 sidecars
 * are never read, only removed.
 */
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";

import { isPatchRecordType, LineTable, NO_STRING, NULL_PARENT, scanLines, TableKeys, UNKNOWN_ROW, WHOLE_LINE } from "../session/index.js";
import type { SessionStorage, SessionStorageWriter } from "../storage/index.js";
import { indexAccess, readIndexSidecar, type SidecarRead } from "./sidecar-files.js";

/** Largest line index read; a bigger one is ignored and the transcript scanned instead. */
const MAX_LINE_INDEX_BYTES = 512 * 1024 * 1024;

const MAGIC = `gjc-line-index 3 ${os.endianness()}`;
/** Rows per batch line of a complete index. */
const BATCH_ROWS = 4096;

function lineIndexFile(file: string, version = "v3"): string {
  return path.join(path.dirname(file), `.gjc-lines.${path.basename(file)}.${version}`);
}

/** Sidecars of earlier versions: never read, removed on rebuild or move. */
const formerLineIndexFiles = (file: string): string[] => ["v1", "v2"].map((version) => lineIndexFile(file, version));

/** A decoded index: whose transcript it describes, and its rows. */
export interface DecodedLineIndex {
  dev: string;
  ino: string;
  table: LineTable;
  /** false when a torn or malformed batch ended the decoding early */
  complete: boolean;
}

/** Batch head: rows, type table bytes, pool bytes, checksum of everything after the head. */
const HEAD = 16;
/** `parentLength` in a batch of a parent that is the id of the row before. */
const CHAINED = -3;
/** The columns of a batch, in order: three Float64 ones, then six Int32 ones. */
const BATCH_COLUMNS = ["line", "offset", "length", "piece", "typeCode", "idLength", "parentLength", "parentRow", "repeats"] as const;

function columnBytes(rows: number): number {
  return rows * (3 * 8 + 6 * 4);
}

/** One batch line (without line feed) holding rows `from..to` of `table`. */
function encodeBatch(table: LineTable, from: number, to: number): string {
  const rows = to - from;
  const codes = new Map<number, number>();
  const types: string[] = [];
  // Type codes are made batch-local, and a parent sharing the previous row's id range is marked.
  const type = new Int32Array(rows);
  const parentLength = new Int32Array(rows);
  const { pool, parentStart, idStart, idLength } = table;
  let poolBytes = 0;
  for (let k = 0; k < rows; k++) {
    const row = from + k;
    const code = table.typeCode[row]!;
    if (code >= 0 && !codes.has(code)) codes.set(code, types.push(table.types[code]!) - 1);
    type[k] = code < 0 ? -1 : codes.get(code)!;
    const chained = k > 0 && table.parentLength[row]! >= 0 && parentStart[row] === idStart[row - 1] && table.parentLength[row] === idLength[row - 1];
    parentLength[k] = chained ? CHAINED : table.parentLength[row]!;
    poolBytes += Math.max(0, idLength[row]!) + Math.max(0, parentLength[k]!);
  }
  const typeText = Buffer.from(JSON.stringify(types), "utf8");
  const body = Buffer.allocUnsafe(columnBytes(rows) + typeText.length + poolBytes);
  let at = 0;
  const put = (column: Float64Array | Int32Array): void => {
    const bytes = Buffer.from(column.buffer, column.byteOffset, column.byteLength);
    at += bytes.copy(body, at);
  };
  for (const name of BATCH_COLUMNS) put(name === "typeCode" ? type : name === "parentLength" ? parentLength : table[name].subarray(from, to));
  at += typeText.copy(body, at);
  // Ids are a few dozen bytes: a plain loop beats a copy call per id.
  for (let k = 0; k < rows; k++) {
    const row = from + k;
    for (let i = parentStart[row]!, end = i + Math.max(0, parentLength[k]!); i < end; i++) body[at++] = pool[i]!;
    for (let i = idStart[row]!, end = i + Math.max(0, idLength[row]!); i < end; i++) body[at++] = pool[i]!;
  }
  const head = Buffer.allocUnsafe(HEAD);
  head.writeUInt32LE(rows, 0);
  head.writeUInt32LE(typeText.length, 4);
  head.writeUInt32LE(poolBytes, 8);
  head.writeUInt32LE(zlib.crc32(body), 12);
  return `C${Buffer.concat([head, body]).toString("base64")}`;
}

/** A complete index file for rows `0..rows` of `table`, describing transcript `dev`/`ino`. */
export function encodeLineIndex(dev: string, ino: string, table: LineTable, rows: number): string {
  const parts = [`${MAGIC}\t${dev}\t${ino}\n`];
  for (let from = 0; from < rows; from += BATCH_ROWS) parts.push(`${encodeBatch(table, from, Math.min(rows, from + BATCH_ROWS))}\n`);
  return parts.join("");
}

/** Base64 characters decoded at once: a multiple of 4, so every slice decodes on its own. */
const BASE64_SLICE = 32 << 10;
/** Bytes of the sidecar read at once: a batch line of a complete index fits, a longer one grows the buffer. */
const READ_CHUNK = 1 << 20;

const DECIMAL = /^(?:0|[1-9][0-9]{0,24})$/;

/** The lines of a sidecar of `size` bytes, read a chunk at a time into one buffer so a large index never sits in memory whole. */
class SidecarLines {
  readonly #read: SidecarRead;
  readonly #size: number;
  #buffer: Buffer;
  #start = 0;
  #end = 0;
  #position = 0;
  /** set when the file reads longer than its stat: it is still being written, and nothing of it is trusted */
  overrun = false;

  constructor(read: SidecarRead, size: number) {
    this.#read = read;
    this.#size = size;
    this.#buffer = Buffer.allocUnsafe(Math.min(READ_CHUNK, size + 1));
  }

  /** The next line without its feed, valid until the next call; `undefined` at the end. */
  next(): Buffer | undefined {
    for (;;) {
      const feed = this.#buffer.subarray(this.#start, this.#end).indexOf(0x0a);
      if (feed !== -1) {
        const line = this.#buffer.subarray(this.#start, this.#start + feed);
        this.#start += feed + 1;
        return line;
      }
      if (this.#start > 0) {
        this.#end = this.#buffer.copy(this.#buffer, 0, this.#start, this.#end);
        this.#start = 0;
      }
      if (this.#end === this.#buffer.length) {
        const bigger = Buffer.allocUnsafe(this.#buffer.length * 2);
        this.#buffer.copy(bigger, 0, 0, this.#end);
        this.#buffer = bigger;
      }
      const count = this.#read(this.#buffer.subarray(this.#end), this.#position);
      this.#position += count;
      if (count === 0 || this.#position > this.#size) {
        this.overrun = this.#position > this.#size;
        return undefined;
      }
      this.#end += count;
    }
  }

  /** Whether every byte up to the size was read, as whole lines, and nothing more. */
  get complete(): boolean {
    return !this.overrun && this.#position === this.#size && this.#start === this.#end;
  }
}

/** The index in the `size` bytes `read` gives (batches up to the first torn, malformed or out-of-order one); `undefined` when its header is not ours or it reads longer than `size`. */
export function decodeLineIndexFrom(read: SidecarRead, size: number): DecodedLineIndex | undefined {
  const lines = new SidecarLines(read, size);
  const first = lines.next();
  if (first === undefined) return undefined;
  const header = first.toString("utf8").split("\t");
  if (header.length !== 3 || header[0] !== MAGIC || !DECIMAL.test(header[1]!) || !DECIMAL.test(header[2]!)) return undefined;
  const table = new LineTable();
  // A row takes at least its columns, in base64 a third more: room for every row up front.
  table.reserve(Math.ceil((size * 3) / 4 / columnBytes(1)), 0);
  // Decoded a base64 slice at a time into one reused buffer: short slices are young strings
  // freed by the next scavenge, where a whole batch's text would wait for a full collection.
  let scratch = Buffer.allocUnsafe(0);
  let whole = true;
  for (let line = lines.next(); line !== undefined; line = lines.next()) {
    if (line[0] !== 0x43 || line.length < 2) {
      whole = false;
      break;
    }
    const decodedMax = Math.ceil(((line.length - 1) * 3) / 4);
    if (scratch.length < decodedMax) scratch = Buffer.allocUnsafe(decodedMax);
    let written = 0;
    for (let from = 1; from < line.length; from += BASE64_SLICE) written += scratch.write(line.toString("latin1", from, Math.min(line.length, from + BASE64_SLICE)), written, "base64");
    if (!decodeBatch(scratch.subarray(0, written), table)) {
      whole = false;
      break;
    }
  }
  if (lines.overrun) return undefined;
  return { dev: header[1]!, ino: header[2]!, table, complete: whole && lines.complete };
}

/** Decodes one binary batch onto `table`; false, adding nothing, when it is torn, damaged or out of order. */
function decodeBatch(batch: Buffer, table: LineTable): boolean {
  if (batch.length < HEAD) return false;
  const rows = batch.readUInt32LE(0);
  const typeBytes = batch.readUInt32LE(4);
  const poolBytes = batch.readUInt32LE(8);
  const body = batch.subarray(HEAD);
  if (rows === 0 || body.length !== columnBytes(rows) + typeBytes + poolBytes || zlib.crc32(body) !== batch.readUInt32LE(12)) return false;
  let types: unknown;
  try {
    types = JSON.parse(body.toString("utf8", columnBytes(rows), columnBytes(rows) + typeBytes));
  } catch {
    return false;
  }
  if (!Array.isArray(types) || !types.every((type) => typeof type === "string")) return false;
  const codes = (types as string[]).map((type) => table.typeCodeOf(type));
  const start = table.size;
  const poolBase = table.poolSize;
  table.reserve(start + rows, poolBytes);
  let at = 0;
  const take = (column: Float64Array | Int32Array): void => {
    const width = column.BYTES_PER_ELEMENT;
    new Uint8Array(column.buffer, column.byteOffset + start * width, rows * width).set(body.subarray(at, at + rows * width));
    at += rows * width;
  };
  for (const name of BATCH_COLUMNS) take(table[name]);
  body.copy(table.pool, poolBase, columnBytes(rows) + typeBytes);
  if (!checkRows(table, start, rows, codes, poolBase, poolBytes)) return false;
  table.poolSize = poolBase + poolBytes;
  table.truncate(start + rows);
  return true;
}

/** Checks rows just copied into `table` (type codes batch-local, pool ranges implied by lengths) and makes them its own. */
function checkRows(table: LineTable, start: number, rows: number, codes: readonly number[], poolBase: number, poolBytes: number): boolean {
  const { line, offset, length, piece, typeCode, idStart, idLength, parentStart, parentLength, parentRow, repeats } = table;
  let cursor = poolBase;
  const poolEnd = poolBase + poolBytes;
  for (let row = start; row < start + rows; row++) {
    const l = line[row]!;
    const o = offset[row]!;
    const n = length[row]!;
    const p = piece[row]!;
    if (!(Number.isSafeInteger(l) && l >= 1 && Number.isSafeInteger(o) && o >= 0 && Number.isSafeInteger(n) && n >= 0) || p < WHOLE_LINE) return false;
    if (row > 0) {
      const last = row - 1;
      if (line[last] === l) {
        if (o !== offset[last] || n !== length[last] || p <= piece[last]! || p < 0) return false;
      } else if (l < line[last]! || o < offset[last]! + length[last]! + 1) return false;
    }
    const code = typeCode[row]!;
    if (code < -1 || code >= codes.length) return false;
    typeCode[row] = code < 0 ? -1 : codes[code]!;
    const parent = parentLength[row]!;
    if (parent === CHAINED) {
      if (row === start || idLength[row - 1]! < 0) return false;
      parentStart[row] = idStart[row - 1]!;
      parentLength[row] = idLength[row - 1]!;
    } else if (parent >= 0) {
      parentStart[row] = cursor;
      cursor += parent;
    } else if (parent !== NO_STRING && parent !== NULL_PARENT) return false;
    const id = idLength[row]!;
    if (id >= 0) {
      idStart[row] = cursor;
      cursor += id;
    } else if (id !== NO_STRING) return false;
    if (cursor > poolEnd || (code < 0 && (id >= 0 || parent !== NO_STRING))) return false;
    if (parentRow[row]! < UNKNOWN_ROW || (repeats[row] !== 0 && repeats[row] !== 1)) return false;
  }
  return cursor === poolEnd;
}

/** Reads and decodes the index of `file`; `undefined` when there is none to trust. Never throws. */
export function readLineIndex(storage: SessionStorage, file: string): DecodedLineIndex | undefined {
  return readIndexSidecar(storage, lineIndexFile(file), MAX_LINE_INDEX_BYTES, decodeLineIndexFrom);
}

/** Publishes the complete index of `file` (atomic replace, owner-only); false, silently, on failure. */
export function publishLineIndex(storage: SessionStorage, file: string, dev: string, ino: string, table: LineTable, rows: number): boolean {
  try {
    storage.writeTextSync(lineIndexFile(file), encodeLineIndex(dev, ino, table, rows));
    // Removing older sidecars never throws, so no one waits for it.
    for (const former of formerLineIndexFiles(file)) void removeQuietly(storage, former);
    return true;
  } catch {
    return false;
  }
}

/** Removes the index of `file` (a session moved away), if there is one. Never throws. */
export async function removeLineIndex(storage: SessionStorage, file: string): Promise<void> {
  await removeQuietly(storage, lineIndexFile(file));
  for (const former of formerLineIndexFiles(file)) await removeQuietly(storage, former);
}

async function removeQuietly(storage: SessionStorage, sidecar: string): Promise<void> {
  try {
    await storage.unlink(sidecar);
  } catch {
    // Missing, or not removable: a stray index names a transcript that is gone and is never trusted.
  }
}

/** Closes a disposable writer; its failure costs the session nothing. */
export function closeQuietly(writer: SessionStorageWriter | undefined): void {
  try {
    writer?.closeSync();
  } catch {
    // Released even when close reports an error.
  }
}

/** The keys of an appended line's record that its row holds. */
export interface AppendedKeys {
  type?: unknown;
  id?: unknown;
  parentId?: unknown;
}

/** Rows buffered before a batch is written while appending. */
const APPEND_BATCH_ROWS = 64;

/**
 * Keeps the index of a file this process appends to up to date, buffering rows and writing a
 * batch at a time, unsynced: a crash loses only buffered rows, whose lines the next open finds
 * past the covered size. Any failure, or a write rows cannot follow, ends the upkeep for good.
 */
export class LineIndexAppender {
  readonly #writer: SessionStorageWriter;
  /** the entries of the rows the index held when the upkeep began */
  readonly #keys: TableKeys;
  readonly #table = new LineTable();
  readonly #appendedIds = new Map<string, number>();
  /** the entry appended last and its row: most appends name it as their parent */
  #lastId: string | undefined;
  #lastRow = -1;
  #row: number;
  /** the transcript's size as this process has written it */
  #size: number;
  #line: number;
  /** lines appended since the last batch */
  readonly #lengths: number[] = [];
  readonly #records: AppendedKeys[] = [];
  #done = false;

  /** Made by {@link startLineIndexUpkeep}; `writer` is the index file's, held as long as the transcript's. */
  constructor(writer: SessionStorageWriter, size: number, line: number, row: number, keys: TableKeys) {
    this.#writer = writer;
    this.#size = size;
    this.#line = line;
    this.#row = row;
    this.#keys = keys;
  }

  /** Records an appended line of `length` bytes (no feed) holding `record`; rows are made per batch, touching the columns once. */
  appended(length: number, record: AppendedKeys): void {
    if (this.#done) return;
    this.#lengths.push(length);
    this.#records.push(record);
    if (this.#records.length >= APPEND_BATCH_ROWS) this.flush();
  }

  /** Makes and writes the rows of the lines appended since the last batch; a line that cannot have a row ends the upkeep. */
  flush(): void {
    const lengths = this.#lengths;
    const records = this.#records;
    const table = this.#table;
    if (this.#done || records.length === 0) return;
    for (let i = 0; i < records.length; i++) {
      const { type, id, parentId: parent } = records[i]!;
      if (typeof type !== "string") return this.abandon();
      const length = lengths[i]!;
      table.push(this.#line, this.#size, length, -1, type, typeof id === "string" ? id : undefined, typeof parent === "string" || parent === null ? parent : undefined);
      const k = table.size - 1;
      if (isPatchRecordType(type)) table.parentRow[k] = -1;
      else {
        // The repeat flag stays 0: the tree gives each appended entry a new id, and the writer
        // lock keeps every other writer out.
        if (typeof id === "string") this.#appendedIds.set(id, this.#row);
        table.parentRow[k] = typeof parent !== "string" ? -1 : parent === this.#lastId ? this.#lastRow : (this.#appendedIds.get(parent) ?? this.#keys.rowOf(parent));
        if (typeof id === "string") [this.#lastId, this.#lastRow] = [id, this.#row];
      }
      this.#row += 1;
      this.#size += length + 1;
      this.#line += 1;
    }
    lengths.length = 0;
    records.length = 0;
    try {
      this.#writer.writeLineSync(encodeBatch(table, 0, table.size));
      table.truncate(0);
    } catch {
      this.abandon();
    }
  }

  /** Stops keeping the index (the transcript is being written in a way rows cannot follow). */
  abandon(): void {
    if (this.#done) return;
    this.#done = true;
    closeQuietly(this.#writer);
  }

  /** Writes the buffered rows and releases the index file. */
  close(): void {
    this.flush();
    this.abandon();
  }
}

/**
 * Starts the upkeep of `file`'s index, whose sidecar holds rows `0..from` of `table`: rows `from..rows`
 * are written as one batch, then each line appended past `size` (ending with a line feed) gets its
 * row, line `nextLine` first; `keys` are the entries of the `rows`. `undefined` when the sidecar cannot be written.
 */
export function startLineIndexUpkeep(storage: SessionStorage, file: string, size: number, nextLine: number, table: LineTable, from: number, rows: number, keys: TableKeys): LineIndexAppender | undefined {
  let writer: SessionStorageWriter | undefined;
  try {
    writer = storage.openWriter(lineIndexFile(file));
    if (rows > from) writer.writeLineSync(encodeBatch(table, from, rows));
    return new LineIndexAppender(writer, size, nextLine, rows, keys);
  } catch {
    closeQuietly(writer);
    return undefined;
  }
}

/**
 * Indexes `bytes`, just written as the whole of `file`, publishes the index and starts its upkeep, so
 * a session this process wrote resumes through its index. The identity is stated after the write: a
 * file replaced in between gets an index its next open finds wrong. `undefined` on any failure; never throws.
 */
export function indexWrittenFile(storage: SessionStorage, file: string, bytes: Buffer): LineIndexAppender | undefined {
  try {
    if (!indexAccess(storage, path.dirname(file)).writable || bytes.length === 0 || bytes[bytes.length - 1] !== 0x0a) return undefined;
    const table = new LineTable();
    const cursor = { offset: 0, line: 1 };
    scanLines(bytes, cursor, table, true);
    const header = table.firstRecordRow();
    if (header === table.size || table.typeAt(header) !== "session") return undefined;
    // Hashing every entry id also fills the parent rows and repeat flags the index stores.
    const keys = new TableKeys(table, classifyRows(table, header).entryRows);
    const { dev, ino, size } = storage.statSync(file);
    if (size !== bytes.length || !publishLineIndex(storage, file, dev, ino, table, table.size)) return undefined;
    return startLineIndexUpkeep(storage, file, size, cursor.line, table, table.size, table.size, keys);
  } catch {
    return undefined;
  }
}

/** The entry rows (records after the header at `headerRow` but patches), the patch rows, each row's slot among its kind, and the report's counts. */
export function classifyRows(table: LineTable, headerRow: number) {
  const patchCodes = table.types.map(isPatchRecordType);
  const { size, typeCode, piece, line } = table;
  const entryRows = new Int32Array(size);
  let entryCount = 0;
  const patchRows: number[] = [];
  const slotOfRow = new Int32Array(size);
  let invalidLines = 0;
  let salvagedLines = 0;
  for (let i = 0; i < size; i++) {
    const code = typeCode[i]!;
    if (code < 0) invalidLines += 1;
    // A line cut into pieces, one of them a record, is one that salvage recovered.
    else if (piece[i]! >= 0 && (i === 0 || line[i - 1] !== line[i] || !salvagedAt(table, i - 1))) salvagedLines += 1;
    if (code < 0 || i <= headerRow) continue;
    if (patchCodes[code]) slotOfRow[i] = patchRows.push(i) - 1;
    else {
      slotOfRow[i] = entryCount;
      entryRows[entryCount++] = i;
    }
  }
  return { patchCodes, entryRows: entryRows.subarray(0, entryCount), patchRows, slotOfRow, invalidLines, salvagedLines };
}

/** Whether rows of the line of row `i` up to `i` already hold a salvaged record. */
function salvagedAt(table: LineTable, i: number): boolean {
  for (let k = i; k >= 0 && table.line[k] === table.line[i]; k--) if (table.piece[k]! >= 0 && table.typeCode[k]! >= 0) return true;
  return false;
}
