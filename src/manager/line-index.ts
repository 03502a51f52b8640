/**
 * The line index of a session file: a disposable, owner-only sidecar `.gjc-lines.<file>.v6` (a dot
 * name no walk or peer takes for a session) holding one fixed-width row per line of the transcript's
 * start (see {@link LineTable}). Layout: a 32-byte head (magic, the byte order of the rows, the
 * transcript's device and inode), then rows. Only the holder of the transcript's writer lock writes
 * it, through the writer's held directory: whole after a full read or a rewrite, else row by row
 * after the lines it appends. A row of zeros or a torn row ends the index there. Nothing here is
 * trusted: the open checks identity and every line it reads against its row; see `docs/design.md`.
 * v1-v5 sidecars are never read, only removed.
 */
import path from "node:path";
import zlib from "node:zlib";

import {
  F_CONT,
  idHash,
  isPatchRecordType,
  KIND_INVALID,
  keyFlags,
  kindOf,
  LineTable,
  linePieces,
  ROW_WORDS,
  rowSeed,
  classifyRows,
  scanLines,
  TableKeys,
  type JsonRecord,
  type ScanCursor,
} from "../session/index.js";
import type { SessionFileReader, SessionStorage, SessionStorageWriter, SidecarFile } from "../storage/index.js";
import { indexAccess, readIndexSidecar, type SidecarRead } from "./sidecar-files.js";

/** Largest line index read; a bigger one is ignored and the transcript scanned instead. */
const MAX_LINE_INDEX_BYTES = 512 * 1024 * 1024;
const HEAD_BYTES = 32;
const ROW_BYTES = ROW_WORDS * 4;
const MAGIC = "gjc-li6\n";
/** Written in host order: a sidecar of another byte order reads as another number. */
const BYTE_ORDER = 0x01020304;

/** The sidecar's name beside `file` (`version` of a former layout, to remove it). */
function lineIndexName(file: string, version = "v6"): string {
  return `.gjc-lines.${path.basename(file)}.${version}`;
}

function lineIndexFile(file: string, version?: string): string {
  return path.join(path.dirname(file), lineIndexName(file, version));
}

/** Sidecars of earlier layouts (v5: rows without check words): never read, removed when the index is written whole or the session moves. */
const FORMER_VERSIONS = ["v1", "v2", "v3", "v4", "v5"];

/** A decoded index: whose transcript it describes, and its rows. */
export interface DecodedLineIndex {
  dev: string;
  ino: string;
  table: LineTable;
  /** false when a torn row ended the decoding early */
  complete: boolean;
  /** why no row of it can be used: a row that fails its check word or is malformed (edited, or of another file) */
  refused?: string;
}

/** The 32-byte head of an index of transcript `dev`/`ino`. */
export function encodeHead(dev: string, ino: string): Buffer {
  const head = Buffer.alloc(HEAD_BYTES);
  head.write(MAGIC, 0, "latin1");
  new Uint32Array(head.buffer, head.byteOffset + 8, 1)[0] = BYTE_ORDER;
  head.writeUInt32LE(ROW_BYTES, 12);
  head.writeBigUInt64LE(BigInt(dev), 16);
  head.writeBigUInt64LE(BigInt(ino), 24);
  return head;
}

/** A complete index of rows `0..rows` of `table`, describing transcript `dev`/`ino`. */
export function encodeLineIndex(dev: string, ino: string, table: LineTable, rows: number): Buffer {
  return Buffer.concat([encodeHead(dev, ino), table.sealed(0, rows, rowSeed(dev, ino))]);
}

/** The index in the `size` bytes `read` gives; `undefined` when its head is not ours or it reads longer than `size`. */
export function decodeLineIndexFrom(read: SidecarRead, size: number): DecodedLineIndex | undefined {
  if (size < HEAD_BYTES) return undefined;
  // A buffer of its own, so the rows are an aligned view of it and never copied.
  const bytes = Buffer.from(new ArrayBuffer(size + 1));
  let filled = 0;
  for (let count = -1; filled <= size && count !== 0; filled += count) count = read(bytes.subarray(filled), filled);
  // One byte more than the size shows a file still being written: nothing of it is trusted.
  if (filled !== size || bytes.toString("latin1", 0, 8) !== MAGIC) return undefined;
  if (new Uint32Array(bytes.buffer, 8, 1)[0] !== BYTE_ORDER || bytes.readUInt32LE(12) !== ROW_BYTES) return undefined;
  const rows = Math.floor((size - HEAD_BYTES) / ROW_BYTES);
  const table = new LineTable(new Int32Array(bytes.buffer, HEAD_BYTES, rows * ROW_WORDS), rows);
  const dev = bytes.readBigUInt64LE(16).toString();
  const ino = bytes.readBigUInt64LE(24).toString();
  const taken = table.adopt(rows, rowSeed(dev, ino));
  if (typeof taken === "string") {
    table.truncate(0);
    return { dev, ino, table, complete: false, refused: taken };
  }
  return { dev, ino, table, complete: taken === rows && size === HEAD_BYTES + rows * ROW_BYTES };
}

/** Reads and decodes the index of `file`; `undefined` when there is none to trust. Never throws. */
export function readLineIndex(storage: SessionStorage, file: string): DecodedLineIndex | undefined {
  return readIndexSidecar(storage, lineIndexFile(file), MAX_LINE_INDEX_BYTES, decodeLineIndexFrom);
}

/**
 * The index of `file` as a writer holds it: its sidecar opened through the writer (only if already there and trusted),
 * read through that descriptor and kept open for the upkeep. `undefined` sidecar when there is none; never throws.
 */
export function readHeldLineIndex(writer: SessionStorageWriter, file: string): { sidecar: SidecarFile | undefined; stored: DecodedLineIndex | undefined } {
  let sidecar: SidecarFile | undefined;
  let reader: SessionFileReader | undefined;
  try {
    sidecar = writer.openSidecar?.(lineIndexName(file), { existing: true });
    if (sidecar === undefined) return { sidecar, stored: undefined };
    reader = sidecar.openReaderSync();
    const { size } = reader.stat;
    const stored = size > MAX_LINE_INDEX_BYTES ? undefined : decodeLineIndexFrom(reader.readSync.bind(reader), size);
    return { sidecar, stored };
  } catch {
    return { sidecar, stored: undefined };
  } finally {
    reader?.close();
  }
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

/** Removes the sidecars of former layouts beside `file` in the background; they are never read, so nothing waits for it. */
export function removeFormerLineIndexes(storage: SessionStorage, file: string): void {
  for (const version of FORMER_VERSIONS) void removeIfPresent(storage, lineIndexFile(file, version));
}

/** Closes a disposable writer; its failure costs the session nothing. */
export function closeQuietly(writer: { closeSync(): void } | undefined): void {
  try {
    writer?.closeSync();
  } catch {
    // Released even when close reports an error.
  }
}

/**
 * The links of the records a scan adds to a table: each entry's parent row, resolved against the
 * entries scanned before it and, through `earlier`, those of the rows the table already held. A file
 * whose entries hold an id twice, or name a parent that comes later or never, is not described by
 * rows (its tree needs the ids themselves): {@link refusal} then says why, and the full load opens it.
 */
export class ScanLinks {
  refusal: string | undefined;
  #headerRow: number;
  readonly #ids = new Map<string, number>();
  readonly #table: LineTable;
  readonly #earlier: (id: string) => number;

  /** `headerRow`: the row of the table's first record, -1 when it holds none yet. */
  constructor(table: LineTable, headerRow: number, earlier: (id: string) => number = () => -1) {
    this.#table = table;
    this.#headerRow = headerRow;
    this.#earlier = earlier;
  }

  /** The hook a scan calls with each record. */
  readonly note = (row: number, record: JsonRecord): void => {
    if (this.#headerRow === -1) {
      this.#headerRow = row;
      return;
    }
    if (this.refusal !== undefined || isPatchRecordType(record.type)) return;
    const { id, parentId } = record;
    if (typeof parentId === "string") {
      const parent = this.#ids.get(parentId) ?? this.#earlier(parentId);
      if (parent === -1) this.refusal = "an entry names a parent that no earlier entry holds";
      else this.#table.setParent(row, parent);
    }
    if (typeof id === "string") {
      if (this.#ids.has(id) || this.#earlier(id) !== -1) this.refusal = "two entries hold one id";
      this.#ids.set(id, row);
    }
  };
}

/** Scans `bytes` (a whole file) into a new table, links resolved; `undefined` when rows cannot describe it. */
export function scanWhole(bytes: Buffer): LineTable | undefined {
  const table = new LineTable();
  const links = new ScanLinks(table, -1);
  const cursor: ScanCursor = { offset: 0, line: 1 };
  scanLines(bytes, cursor, table, true, links.note);
  return links.refusal === undefined ? table : undefined;
}

/** The record of row `row` of `table`, read from `file` (an entry's row: its piece holds one); throws when unreadable. */
function recordAt(storage: SessionStorage, file: string, table: LineTable, row: number): JsonRecord {
  let first = row;
  while ((table.flags(first) & F_CONT) !== 0) first -= 1;
  const reader = storage.openReaderSync(file);
  try {
    const line = Buffer.allocUnsafe(table.length(row));
    const piece = reader.readSync(line, table.offset[row]!) === line.length ? linePieces(line, 0, line.length, table.lineOf(row))[row - first] : undefined;
    // Anything but the record the scan gave this row is a line of another file, which holds no id.
    return piece?.kind === "record" ? piece.value : { type: "" };
  } finally {
    reader.close();
  }
}

/** The keys of an appended line's record that its row holds. */
export interface AppendedKeys {
  type?: unknown;
  id?: unknown;
  parentId?: unknown;
}

/**
 * Rows buffered before they are written while appending (a flush writes them too). Each write first checks that the
 * transcript still has its name, which costs more than the rows; a crash loses at most this many rows, whose lines the
 * next open parses past the covered size.
 */
const APPEND_BATCH_ROWS = 1024;

/**
 * Keeps the index of a file this process appends to up to date, buffering rows and writing them
 * a batch at a time, unsynced: a crash loses only buffered rows, whose lines the next open finds
 * past the covered size. Any failure, or a line a row cannot describe, ends the upkeep for good.
 */
export class LineIndexAppender {
  readonly #sidecar: SidecarFile;
  /** the table row of an entry id the file held when the upkeep began; -1 for none */
  readonly #rowOf: (id: string) => number;
  readonly #rows = new LineTable();
  /** the ids appended since the upkeep began and their rows, at the same places (see {@link #appendedRow}) */
  readonly #appendedIds: string[] = [];
  readonly #appendedRows: number[] = [];
  /** the entry appended last and its row: most appends name it as their parent */
  #lastId: string | undefined;
  #lastRow = -1;
  #row: number;
  /** the seed of the rows' check words (the transcript's identity) */
  readonly #seed: number;
  #done = false;

  /** Made by {@link startLineIndexUpkeep}; `sidecar` is held as long as the transcript's writer. */
  constructor(sidecar: SidecarFile, row: number, seed: number, rowOf: (id: string) => number) {
    this.#sidecar = sidecar;
    this.#row = row;
    this.#seed = seed;
    this.#rowOf = rowOf;
  }

  /** Records an appended line `text` of `length` bytes (no feed) holding `record`. */
  appended(text: string, length: number, record: AppendedKeys): void {
    if (this.#done) return;
    const { type, id, parentId } = record;
    const kind = kindOf(type);
    if (kind === KIND_INVALID || type === "session") return this.abandon();
    const entry = !isPatchRecordType(type);
    let parent = -1;
    try {
      if (typeof parentId === "string" && entry) {
        parent = parentId === this.#lastId ? this.#lastRow : this.#appendedRow(parentId);
        if (parent === -1) parent = this.#rowOf(parentId);
        if (parent === -1) return this.abandon();
      }
      // Rows describe files whose ids are unique (an open finds entries by their ids' hashes). The tree gives each
      // appended entry an id no entry holds, so only the file's own ids are asked about (the tree has just asked too).
      if (typeof id === "string" && entry && this.#rowOf(id) !== -1) return this.abandon();
    } catch {
      // A lookup that cannot read the file leaves the row unknown: the upkeep ends, the append stands.
      return this.abandon();
    }
    const row = this.#row++;
    this.#rows.push(0, { length, parent, crc: zlib.crc32(text) | 0, idHash: typeof id === "string" ? idHash(id) : 0, kind, flags: keyFlags(id, parentId) });
    if (typeof id === "string" && entry) {
      // Two pushes, not a map set: most appends name the last one as parent, and only a branch looks further back.
      this.#appendedIds.push(id);
      this.#appendedRows.push(row);
      this.#lastId = id;
      this.#lastRow = row;
    }
    if (this.#rows.size >= APPEND_BATCH_ROWS) this.flush();
  }

  /** The row of the last appended entry holding `id`; -1 for none. Only a branch asks: a walk back. */
  #appendedRow(id: string): number {
    const at = this.#appendedIds.lastIndexOf(id);
    return at === -1 ? -1 : this.#appendedRows[at]!;
  }

  /** Writes the rows buffered since the last batch. */
  flush(): void {
    if (this.#done || this.#rows.size === 0) return;
    try {
      const count = this.#rows.size;
      this.#sidecar.appendSync(this.#rows.sealed(0, count, this.#seed, this.#row - count));
      this.#rows.truncate(0);
    } catch {
      this.abandon();
    }
  }

  /** Stops keeping the index (the transcript is being written in a way rows cannot follow). */
  abandon(): void {
    if (this.#done) return;
    this.#done = true;
    closeQuietly(this.#sidecar);
  }

  /** Empties the index (a line disagreed with its row), so the next open scans the transcript and writes it again. */
  discard(): void {
    if (this.#done) return;
    this.#rows.truncate(0);
    try {
      this.#sidecar.replaceSync(Buffer.alloc(0));
    } catch {
      // An index that cannot be emptied is still checked line by line on every read.
    }
    this.abandon();
  }

  /** Writes the buffered rows and releases the index file. */
  close(): void {
    this.flush();
    this.abandon();
  }
}

/**
 * Starts the upkeep of `file`'s index through its `writer` (this process holds the transcript's lock); `identity` is
 * the transcript's. With `publish`, the sidecar is first replaced by rows `0..to` of `table`; otherwise it already
 * holds rows `0..from` and rows `from..to` are appended. Then each appended line gets its row; `rowOf` finds the row of
 * an entry id among the `to` rows. `undefined` when the sidecar cannot be written.
 */
export function startLineIndexUpkeep(
  writer: SessionStorageWriter,
  file: string,
  table: LineTable,
  rows: { from: number; to: number; publish: boolean; identity: { dev: string; ino: string } },
  rowOf: (id: string) => number,
  held?: SidecarFile,
): LineIndexAppender | undefined {
  let sidecar: SidecarFile | undefined = held;
  const { dev, ino } = rows.identity;
  try {
    sidecar ??= writer.openSidecar?.(lineIndexName(file));
    if (sidecar === undefined) return undefined;
    if (rows.publish) sidecar.replaceSync(encodeLineIndex(dev, ino, table, rows.to));
    else if (rows.to > rows.from) sidecar.appendSync(table.sealed(rows.from, rows.to, rowSeed(dev, ino)));
    return new LineIndexAppender(sidecar, rows.to, rowSeed(dev, ino), rowOf);
  } catch {
    closeQuietly(sidecar);
    return undefined;
  }
}

/**
 * Indexes `bytes`, just written as the whole of `file` through `writer`, publishes the index and starts its upkeep, so a
 * session this process wrote resumes through its index. The identity is stated after the write: a file replaced in
 * between gets an index its next open finds wrong. `undefined` on any failure; never throws.
 */
export function indexWrittenFile(storage: SessionStorage, writer: SessionStorageWriter, file: string, bytes: Buffer): LineIndexAppender | undefined {
  try {
    if (!indexAccess(storage, path.dirname(file)).writable || bytes.length === 0 || bytes[bytes.length - 1] !== 0x0a) return undefined;
    const table = scanWhole(bytes);
    if (table === undefined) return undefined;
    const { dev, ino, size } = storage.statSync(file);
    if (size !== bytes.length) return undefined;
    const classes = classifyRows(table);
    if (typeof classes === "string") return undefined;
    removeFormerLineIndexes(storage, file);
    // Asked for a parent off the appended chain (a branch) and whether an appended id is new: read from the file written.
    const keys = new TableKeys(table, classes.entryRows, classes.parents, (row) => recordAt(storage, file, table, row));
    return startLineIndexUpkeep(writer, file, table, { from: 0, to: table.size, publish: true, identity: { dev, ino } }, (id) => keys.rowOf(id));
  } catch {
    return undefined;
  }
}
