/**
 * The line index of a session file: a disposable, owner-only sidecar `.gjc-lines.<name>.v4` (a dot
 * name no walk or peer takes for a session) describing the transcript's lines up to a covered size.
 * Only the holder of the transcript's writer lock writes it, through the writer's held directory;
 * a reader never does. Layout: one text line `gjc-line-index 4 <LE|BE><TAB>dev<TAB>ino`, then binary
 * batches, each a 16-byte head (rows, type table bytes, id bytes, CRC-32 of the body) and the body:
 * the typed-array columns in host byte order, the batch's type names, its id bytes. Rows must tile
 * the covered prefix exactly: each line starts where the previous one ended, the only gap a run of
 * blank lines (one line feed each, checked on open), pieces of a salvaged line numbered from 0.
 * A torn or damaged batch ends the index there; the transcript is read from there. Nothing here is
 * trusted: the open checks identity, the tiling, every gap, and every line it reads against its row's
 * CRC, type, id and parent. v1-v3 sidecars are never read, only removed.
 */
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";

import { isPatchRecordType, LineTable, NO_STRING, NULL_PARENT, scanLines, TableKeys, UNKNOWN_ROW, WHOLE_LINE } from "../session/index.js";
import type { SessionStorage, SessionStorageWriter, SidecarFile } from "../storage/index.js";
import { indexAccess, readIndexSidecar, type SidecarRead } from "./sidecar-files.js";

/** Largest line index read; a bigger one is ignored and the transcript scanned instead. */
const MAX_LINE_INDEX_BYTES = 512 * 1024 * 1024;

const MAGIC = `gjc-line-index 4 ${os.endianness()}`;
/** Rows per batch of a complete index. */
const BATCH_ROWS = 4096;

/** The sidecar's name beside `file` (`version` of a former layout, to remove it). */
function lineIndexName(file: string, version = "v4"): string {
  return `.gjc-lines.${path.basename(file)}.${version}`;
}

function lineIndexFile(file: string, version?: string): string {
  return path.join(path.dirname(file), lineIndexName(file, version));
}

/** Sidecars of earlier layouts: never read, removed when the index is written whole or the session moves. */
const FORMER_VERSIONS = ["v1", "v2", "v3"];

/** A decoded index: whose transcript it describes, its rows, and the blank-line gaps between them that an open must check. */
export interface DecodedLineIndex {
  dev: string;
  ino: string;
  table: LineTable;
  /** byte ranges between rows that must hold exactly `lines` blank lines (at offset 0, a byte order mark first) */
  gaps: IndexGap[];
  /** false when a torn or malformed batch ended the decoding early */
  complete: boolean;
}

/** Bytes between two rows of an index (or before the first) that the open checks are blank lines. */
export interface IndexGap {
  from: number;
  to: number;
  lines: number;
}

/** Batch head: rows, type table bytes, pool bytes, checksum of the body. */
const HEAD = 16;
/** `parentLength` in a batch of a parent that is the id of the row before. */
const CHAINED = -3;
/** The columns of a batch, in order: three Float64 ones, then seven Int32 ones. */
const BATCH_COLUMNS = ["line", "offset", "length", "piece", "crc", "typeCode", "idLength", "parentLength", "parentRow", "repeats"] as const;

function columnBytes(rows: number): number {
  return rows * (3 * 8 + 7 * 4);
}

/** One batch (head and body) holding rows `from..to` of `table`. */
function encodeBatch(table: LineTable, from: number, to: number): Buffer {
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
  const batch = Buffer.allocUnsafe(HEAD + columnBytes(rows) + typeText.length + poolBytes);
  let at = HEAD;
  for (const name of BATCH_COLUMNS) {
    const column = name === "typeCode" ? type : name === "parentLength" ? parentLength : table[name].subarray(from, to);
    at += Buffer.from(column.buffer, column.byteOffset, column.byteLength).copy(batch, at);
  }
  at += typeText.copy(batch, at);
  // Ids are a few dozen bytes: a plain loop beats a copy call per id.
  for (let k = 0; k < rows; k++) {
    const row = from + k;
    for (let i = parentStart[row]!, end = i + Math.max(0, parentLength[k]!); i < end; i++) batch[at++] = pool[i]!;
    for (let i = idStart[row]!, end = i + Math.max(0, idLength[row]!); i < end; i++) batch[at++] = pool[i]!;
  }
  batch.writeUInt32LE(rows, 0);
  batch.writeUInt32LE(typeText.length, 4);
  batch.writeUInt32LE(poolBytes, 8);
  batch.writeUInt32LE(zlib.crc32(batch.subarray(HEAD)), 12);
  return batch;
}

/** A complete index file for rows `0..rows` of `table`, describing transcript `dev`/`ino`. */
export function encodeLineIndex(dev: string, ino: string, table: LineTable, rows: number): Buffer {
  const parts: Buffer[] = [Buffer.from(`${MAGIC}\t${dev}\t${ino}\n`, "utf8")];
  for (let from = 0; from < rows; from += BATCH_ROWS) parts.push(encodeBatch(table, from, Math.min(rows, from + BATCH_ROWS)));
  return Buffer.concat(parts);
}

/** The longest header line: the magic and two decimal numbers. */
const MAX_HEADER = 128;
const DECIMAL = /^(?:0|[1-9][0-9]{0,24})$/;

/** The index in the `size` bytes `read` gives (batches up to the first torn, malformed or out-of-order one); `undefined` when its header is not ours or it reads longer than `size`. */
export function decodeLineIndexFrom(read: SidecarRead, size: number): DecodedLineIndex | undefined {
  const readExactly = (length: number, position: number): Buffer | undefined => {
    const bytes = Buffer.allocUnsafe(length);
    return readInto(read, bytes, position) ? bytes : undefined;
  };
  const start = readExactly(Math.min(MAX_HEADER, size), 0);
  const feed = start?.indexOf(0x0a) ?? -1;
  if (start === undefined || feed === -1) return undefined;
  const header = start.toString("utf8", 0, feed).split("\t");
  if (header.length !== 3 || header[0] !== MAGIC || !DECIMAL.test(header[1]!) || !DECIMAL.test(header[2]!)) return undefined;
  const table = new LineTable();
  const gaps: IndexGap[] = [];
  table.reserve(Math.ceil(size / columnBytes(1)), 0);
  let position = feed + 1;
  let whole = true;
  while (position < size) {
    const head = position + HEAD <= size ? readExactly(HEAD, position) : undefined;
    const length = head === undefined ? -1 : HEAD + columnBytes(head.readUInt32LE(0)) + head.readUInt32LE(4) + head.readUInt32LE(8);
    if (head === undefined || length > size - position || !decodeBatch(read, head, position + HEAD, table, gaps)) {
      whole = false;
      break;
    }
    position += length;
  }
  // One byte more than the size shows a file still being written: nothing of it is trusted.
  if (read(Buffer.allocUnsafe(1), size) !== 0) return undefined;
  return { dev: header[1]!, ino: header[2]!, table, gaps, complete: whole };
}

/** Fills `bytes` from `position` on; false when the sidecar ends first. */
function readInto(read: SidecarRead, bytes: Buffer, position: number): boolean {
  let filled = 0;
  for (let count = -1; filled < bytes.length && count !== 0; filled += count) count = read(bytes.subarray(filled), position + filled);
  return filled === bytes.length;
}

/**
 * Decodes the batch whose head is `head` and whose body starts at `position` onto `table`; false, adding nothing, when it
 * is torn, damaged or does not continue the tiling. Columns and ids are read straight into the table's own arrays (past
 * its size until checked), so the index is never held twice.
 */
function decodeBatch(read: SidecarRead, head: Buffer, position: number, table: LineTable, gaps: IndexGap[]): boolean {
  const rows = head.readUInt32LE(0);
  const typeBytes = head.readUInt32LE(4);
  const poolBytes = head.readUInt32LE(8);
  if (rows === 0) return false;
  const start = table.size;
  const poolBase = table.poolSize;
  const gapCount = gaps.length;
  table.reserve(start + rows, poolBytes);
  let at = position;
  let crc = 0;
  for (const name of BATCH_COLUMNS) {
    const column = table[name];
    const width = column.BYTES_PER_ELEMENT;
    const into = Buffer.from(column.buffer, column.byteOffset + start * width, rows * width);
    if (!readInto(read, into, at)) return false;
    crc = zlib.crc32(into, crc);
    at += into.length;
  }
  const typeText = Buffer.allocUnsafe(typeBytes);
  const ids = table.pool.subarray(poolBase, poolBase + poolBytes);
  if (!readInto(read, typeText, at) || !readInto(read, ids, at + typeBytes)) return false;
  if (zlib.crc32(ids, zlib.crc32(typeText, crc)) !== head.readUInt32LE(12)) return false;
  let types: unknown;
  try {
    types = JSON.parse(typeText.toString("utf8"));
  } catch {
    return false;
  }
  if (!Array.isArray(types) || !types.every((type) => typeof type === "string")) return false;
  const codes = (types as string[]).map((type) => table.typeCodeOf(type));
  if (!checkRows(table, start, rows, codes, poolBase, poolBytes, gaps)) {
    gaps.length = gapCount;
    return false;
  }
  table.poolSize = poolBase + poolBytes;
  table.truncate(start + rows);
  return true;
}

/**
 * Checks rows just copied into `table` and makes them its own: type codes batch-local, pool ranges implied by the lengths,
 * and the tiling: a new line starts exactly after the previous one plus one byte per blank line between (noted in `gaps`),
 * and the pieces of one line share its place and checksum and count up from 0.
 */
function checkRows(table: LineTable, start: number, rows: number, codes: readonly number[], poolBase: number, poolBytes: number, gaps: IndexGap[]): boolean {
  const { line, offset, length, piece, crc, typeCode, idStart, idLength, parentStart, parentLength, parentRow, repeats } = table;
  let cursor = poolBase;
  const poolEnd = poolBase + poolBytes;
  for (let row = start; row < start + rows; row++) {
    const l = line[row]!;
    const o = offset[row]!;
    const n = length[row]!;
    const p = piece[row]!;
    if (!(Number.isSafeInteger(l) && l >= 1 && Number.isSafeInteger(o) && o >= 0 && Number.isSafeInteger(n) && n >= 1) || p < WHOLE_LINE) return false;
    const last = row - 1;
    if (last >= 0 && line[last] === l) {
      if (o !== offset[last] || n !== length[last] || crc[row] !== crc[last] || piece[last]! < 0 || p !== piece[last]! + 1) return false;
    } else {
      if (p !== WHOLE_LINE && p !== 0) return false;
      const previousEnd = last < 0 ? 0 : offset[last]! + length[last]! + 1;
      const blank = last < 0 ? l - 1 : l - line[last]! - 1;
      const skipped = o - previousEnd;
      // Between two lines only blank ones (a feed at least each); before line 1 at most a byte order mark.
      if (blank < 0 || (blank === 0 ? skipped !== 0 && !(last < 0 && skipped === 3) : skipped < blank)) return false;
      if (skipped > 0) gaps.push({ from: previousEnd, to: o, lines: blank });
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

/** Removes the index of `file` (a session moved away) and any of a former layout. Never throws. */
export async function removeLineIndex(storage: SessionStorage, file: string): Promise<void> {
  await Promise.all([undefined, ...FORMER_VERSIONS].map((version) => removeIfPresent(storage, lineIndexFile(file, version))));
}

/** Removes `sidecar` when it exists (an unlink takes the name's lock, which would leave a lock file for a name never used). */
async function removeIfPresent(storage: SessionStorage, sidecar: string): Promise<void> {
  try {
    if (await storage.exists(sidecar)) await storage.unlink(sidecar);
  } catch {
    // Not removable: a stray index names a transcript that is gone and is never trusted.
  }
}

/** Closes a disposable writer; its failure costs the session nothing. */
export function closeQuietly(writer: { closeSync(): void } | undefined): void {
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
  readonly #sidecar: SidecarFile;
  /** the entries of the rows the index held when the upkeep began */
  readonly #keys: TableKeys;
  readonly #table = new LineTable();
  /**
   * The rows of the ids appended since the upkeep began: in two lists until a parent other than the
   * last entry is asked for (nearly every append names the last one), then in a map.
   */
  #appendedIds: Map<string, number> | undefined;
  #appendedIdList: string[] = [];
  #appendedRowList: number[] = [];
  /** the entry appended last and its row: most appends name it as their parent */
  #lastId: string | undefined;
  #lastRow = -1;
  #row: number;
  /** the transcript's size as this process has written it */
  #size: number;
  #line: number;
  /** lines appended since the last batch */
  readonly #lengths: number[] = [];
  readonly #crcs: number[] = [];
  readonly #records: AppendedKeys[] = [];
  #done = false;

  /** Made by {@link startLineIndexUpkeep}; `sidecar` is held as long as the transcript's writer. */
  constructor(sidecar: SidecarFile, size: number, line: number, row: number, keys: TableKeys) {
    this.#sidecar = sidecar;
    this.#size = size;
    this.#line = line;
    this.#row = row;
    this.#keys = keys;
  }

  /** Records an appended line `text` of `length` bytes (no feed) holding `record`; rows are made per batch, touching the columns once. */
  appended(text: string, length: number, record: AppendedKeys): void {
    if (this.#done) return;
    this.#lengths.push(length);
    this.#crcs.push(zlib.crc32(text) | 0);
    this.#records.push(record);
    if (this.#records.length >= APPEND_BATCH_ROWS) this.flush();
  }

  /** Makes and writes the rows of the lines appended since the last batch; a line that cannot have a row ends the upkeep. */
  flush(): void {
    const records = this.#records;
    const table = this.#table;
    if (this.#done || records.length === 0) return;
    for (let i = 0; i < records.length; i++) {
      const { type, id, parentId: parent } = records[i]!;
      if (typeof type !== "string") return this.abandon();
      const length = this.#lengths[i]!;
      table.push(this.#line, this.#size, length, WHOLE_LINE, this.#crcs[i]!, type, typeof id === "string" ? id : undefined, typeof parent === "string" || parent === null ? parent : undefined);
      const k = table.size - 1;
      if (isPatchRecordType(type)) table.parentRow[k] = -1;
      else {
        // The repeat flag stays 0: the tree gives each appended entry a new id, and the writer
        // lock keeps every other writer out.
        if (typeof id === "string") this.#noteAppended(id, this.#row);
        table.parentRow[k] = typeof parent !== "string" ? -1 : parent === this.#lastId ? this.#lastRow : (this.#appendedRow(parent) ?? this.#keys.rowOf(parent));
        if (typeof id === "string") [this.#lastId, this.#lastRow] = [id, this.#row];
      }
      this.#row += 1;
      this.#size += length + 1;
      this.#line += 1;
    }
    this.#lengths.length = 0;
    this.#crcs.length = 0;
    records.length = 0;
    try {
      this.#sidecar.appendSync(encodeBatch(table, 0, table.size));
      table.truncate(0);
    } catch {
      this.abandon();
    }
  }

  #noteAppended(id: string, row: number): void {
    if (this.#appendedIds !== undefined) this.#appendedIds.set(id, row);
    else {
      this.#appendedIdList.push(id);
      this.#appendedRowList.push(row);
    }
  }

  /** The row of the last appended entry holding `id`. */
  #appendedRow(id: string): number | undefined {
    if (this.#appendedIds === undefined) {
      this.#appendedIds = new Map();
      for (let k = 0; k < this.#appendedIdList.length; k++) this.#appendedIds.set(this.#appendedIdList[k]!, this.#appendedRowList[k]!);
      this.#appendedIdList = [];
      this.#appendedRowList = [];
    }
    return this.#appendedIds.get(id);
  }

  /** Stops keeping the index (the transcript is being written in a way rows cannot follow). */
  abandon(): void {
    if (this.#done) return;
    this.#done = true;
    closeQuietly(this.#sidecar);
  }

  /** Writes the buffered rows and releases the index file. */
  close(): void {
    this.flush();
    this.abandon();
  }
}

/**
 * Starts the upkeep of `file`'s index through its `writer` (this process holds the transcript's lock). With `publish`, the
 * sidecar is first replaced by rows `0..rows` of `table` for transcript `dev`/`ino`;
 * otherwise it already holds rows `0..from` and rows `from..rows` are appended. Then each line appended past `size`
 * gets its row, line `nextLine` first; `keys` are the entries of the `rows`. `undefined` when the sidecar cannot be written.
 */
export function startLineIndexUpkeep(
  writer: SessionStorageWriter,
  file: string,
  at: { size: number; nextLine: number },
  table: LineTable,
  rows: { from: number; to: number; publish?: { dev: string; ino: string } },
  keys: TableKeys,
): LineIndexAppender | undefined {
  let sidecar: SidecarFile | undefined;
  try {
    sidecar = writer.openSidecar?.(lineIndexName(file));
    if (sidecar === undefined) return undefined;
    if (rows.publish !== undefined) {
      sidecar.replaceSync(encodeLineIndex(rows.publish.dev, rows.publish.ino, table, rows.to));
    } else if (rows.to > rows.from) sidecar.appendSync(encodeBatch(table, rows.from, rows.to));
    return new LineIndexAppender(sidecar, at.size, at.nextLine, rows.to, keys);
  } catch {
    closeQuietly(sidecar);
    return undefined;
  }
}

/** Removes the sidecars of former layouts beside `file` in the background; they are never read, so nothing waits for it. */
export function removeFormerLineIndexes(storage: SessionStorage, file: string): void {
  for (const version of FORMER_VERSIONS) void removeIfPresent(storage, lineIndexFile(file, version));
}

/**
 * Indexes `bytes`, just written as the whole of `file` through `writer`, publishes the index and starts its upkeep, so a
 * session this process wrote resumes through its index. The identity is stated after the write: a file replaced in
 * between gets an index its next open finds wrong. `undefined` on any failure; never throws.
 */
export function indexWrittenFile(storage: SessionStorage, writer: SessionStorageWriter, file: string, bytes: Buffer): LineIndexAppender | undefined {
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
    if (size !== bytes.length) return undefined;
    removeFormerLineIndexes(storage, file);
    return startLineIndexUpkeep(writer, file, { size, nextLine: cursor.line }, table, { from: 0, to: table.size, publish: { dev, ino } }, keys);
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
