/**
 * Opening a v5 session file through its line index (checked, caught up, or rebuilt by one byte
 * scan): only the header, patches, labels and the context at the leaf are parsed; other entries
 * stay on disk until asked for, so an open costs the path, not the file. Each line read is parsed
 * by the loader's own step and checked against its row; a disagreement during the open throws the
 * index away and rescans strictly. Older versions and unusable headers go to the full load.
 */
import path from "node:path";

import {
  buildContextOnPath,
  decodeLine,
  checkHeaderVersion,
  findLastMessage,
  isJsonRecord,
  isUnknownEntry,
  lineCrc,
  lineRows,
  LineTable,
  startsWithBom,
  linePieces,
  NO_STRING,
  NULL_PARENT,
  TableKeys,
  markIfUnknown,
  replayPatches,
  resolveEntryBlobRefs,
  scanLines,
  SessionFormatError,
  schemaChecks,
  SessionTree,
  UsageAccumulator,
  WHOLE_LINE,
  type BlobLookup,
  type FileEntry,
  type InvalidLine,
  type JsonRecord,
  type ReplayItem,
  type ScanCursor,
  type SessionHeader,
  type UnresolvedBlobRef,
} from "../session/index.js";
import type { SessionFileReader, SessionStorage, SessionStorageWriter } from "../storage/index.js";
import { SessionManagerError } from "./errors.js";
import { classifyRows, LineIndexAppender, readLineIndex, removeFormerLineIndexes, startLineIndexUpkeep, type DecodedLineIndex } from "./line-index.js";
import { isAssistantMessage, patchStates, type ManagedLine } from "./lines.js";
import type { SessionLoadReport } from "./load-report.js";
import { indexAccess } from "./sidecar-files.js";

/** A session opened through its line index. */
export interface IndexedSession {
  header: SessionHeader;
  tree: SessionTree;
  lines: ManagedLine[];
  hasAssistant: boolean;
  /** usage totals, summed over the file the first time they are asked for */
  usage: UsageAccumulator;
  report: SessionLoadReport;
  /** keeps the index up with this process's appends (writable opens only) */
  appender: LineIndexAppender | undefined;
}

/** A line did not hold what the index said: an internal signal, always caught here, so no GjcError. */
class IndexMismatch {
  constructor(readonly reason: string) {}
}

const SCAN_CHUNK = 4 << 20;
/** Lines closer than this are read with one call. */
const READ_GAP = 64 << 10;
const READ_SPAN = 8 << 20;
/** Bytes read to find the header before a file is scanned. */
const HEADER_PEEK = 64 << 10;
/** The longest line read: what one JavaScript string can hold as UTF-8 text, at least. */
const MAX_LINE_BYTES = 0x1fffffe8;

/**
 * Opens `file` through its line index. Only a `writer` (this process holds the file's lock) writes the index: it
 * publishes a rebuilt one or appends the rows the open learnt, and keeps it up; a read-only open writes nothing.
 * `undefined` when the full load must (no index kept here, an empty file, older than v5, no usable header).
 * @throws SessionFormatError `version_too_new` / `invalid_version` / `line_too_long`; storage errors
 */
export function openIndexed(storage: SessionStorage, file: string, lookup: BlobLookup, writer: SessionStorageWriter | undefined, now: () => Date): IndexedSession | undefined {
  const access = indexAccess(storage, path.dirname(file));
  if (access.file === undefined) return undefined;
  const reader = storage.openReaderSync(file);
  try {
    const { size, dev, ino } = reader.stat;
    if (size === 0) return undefined;
    const stored = readLineIndex(storage, file);
    let table = new LineTable();
    /** rows the sidecar holds whole; -1 when it must be written again */
    let kept = -1;
    let cursor: ScanCursor = { offset: 0, line: 1 };
    let note = stored === undefined ? "no usable index" : undefined;
    if (stored !== undefined) {
      // Rows past the size this open sees describe lines appended since: they are read as the tail instead.
      const grown = stored.table.end > size;
      while (stored.table.size > 0 && stored.table.end > size) stored.table.truncate(lastLineStart(stored.table));
      const refusal = stored.dev !== dev || stored.ino !== ino ? "it names another file" : coveredPrefix(reader, stored);
      if (refusal === undefined) {
        table = stored.table;
        if (stored.complete && !grown) kept = table.size;
        if (table.size > 0) cursor = { offset: table.end, line: table.line[table.size - 1]! + 1 };
      } else note = `index ignored: ${refusal}`;
    }
    // An older file is migrated and rewritten by the full load: not worth a scan first.
    if (table.size === 0 && !startsAsCurrent(file, reader, size)) return undefined;
    scanFile(reader, cursor, table, size);
    const source = new LineSource(storage, file, reader, table);
    let session: BuiltSession | undefined;
    try {
      session = build(file, source, lookup, now);
    } catch (error) {
      if (!(error instanceof IndexMismatch)) throw error;
      // Something in the index is wrong: parse every line and build from that alone.
      note = `index ignored: ${error.reason}`;
      source.table = table = new LineTable();
      kept = -1;
      cursor = { offset: 0, line: 1 };
      scanFile(reader, cursor, table, size);
      session = build(file, source, lookup, now);
    }
    if (session === undefined) return undefined;
    source.release();
    const { keys, ...opened } = session;
    opened.report.lineIndex = note === undefined ? "used" : note;
    let appender: LineIndexAppender | undefined;
    if (writer !== undefined && access.writable) {
      // What the open learnt goes back to the index (all of it when rebuilt, else the new rows); a
      // failure only costs the next open a scan. A last line without a line feed may still grow: no row.
      let rows = table.size;
      while (rows > 0 && table.offset[rows - 1]! + table.length[rows - 1]! >= size) rows -= 1;
      if (rows === table.size && endsWithNewline(reader, size)) {
        if (kept === -1) removeFormerLineIndexes(storage, file);
        const publish = kept === -1 ? { dev, ino } : undefined;
        appender = startLineIndexUpkeep(writer, file, { size, nextLine: cursor.line }, table, { from: kept === -1 ? 0 : kept, to: rows, publish }, keys);
      }
    }
    return { ...opened, appender };
  } catch (error) {
    throw changed(error, file, "changed while it was being opened");
  } finally {
    reader.close();
  }
}

/** Why the rows of `stored` (cut to the size the open sees) cannot describe the start of the file `reader` reads, or `undefined` when they can. */
function coveredPrefix(reader: SessionFileReader, stored: DecodedLineIndex): string | undefined {
  const { table, gaps } = stored;
  if (table.size === 0) return undefined;
  const { end } = table;
  if (!endsWithNewline(reader, end)) return "its covered size does not end a line";
  for (const gap of gaps) {
    if (gap.to > end) break;
    const bytes = Buffer.allocUnsafe(gap.to - gap.from);
    if (reader.readSync(bytes, gap.from) !== bytes.length) return "the file is shorter than its index";
    if (!blankLines(bytes, gap.from === 0, gap.lines)) return `bytes ${gap.from}-${gap.to} between its rows are not ${gap.lines} blank lines`;
  }
  return undefined;
}

/** Whether `bytes` are exactly `lines` lines the loader skips as blank (`atStart`: after a byte order mark it skips too). */
function blankLines(bytes: Buffer, atStart: boolean, lines: number): boolean {
  let start = atStart && startsWithBom(bytes, 0, bytes.length) ? 3 : 0;
  if (lines === 0) return start === bytes.length;
  for (let k = 0; k < lines; k++) {
    const end = bytes.indexOf(0x0a, start);
    if (end === -1 || (end > start && linePieces(bytes, start, end, 0).length > 0)) return false;
    start = end + 1;
  }
  return start === bytes.length;
}

/** The first row of the last line `table` holds (the pieces of one line go together). */
function lastLineStart(table: LineTable): number {
  let row = table.size - 1;
  while (row > 0 && table.line[row - 1] === table.line[row]) row -= 1;
  return row;
}

/** An {@link IndexMismatch} as the caller's `session_changed`; any other error as it is. */
function changed(error: unknown, file: string, what: string): unknown {
  return error instanceof IndexMismatch ? new SessionManagerError("session_changed", `${file} ${what}`, { path: file, cause: error }) : error;
}

/** False when the first record within the file's first bytes is not a v5 header (none so early: true). */
function startsAsCurrent(file: string, reader: SessionFileReader, size: number): boolean {
  const chunk = Buffer.allocUnsafe(Math.min(HEADER_PEEK, size));
  const count = reader.readSync(chunk, 0);
  const table = new LineTable();
  scanLines(chunk.subarray(0, count), { offset: 0, line: 1 }, table, count >= size);
  const row = table.firstRecordRow();
  if (row === table.size) return true;
  if (table.typeAt(row) !== "session") return false;
  try {
    const piece = pieceOf(file, table, row, chunk, table.offset[row]!, table.offset[row]! + table.length[row]!);
    return !(piece instanceof InvalidPiece) && piece.version === 5;
  } catch {
    return false;
  }
}

/** Scans `reader` from `cursor` to `size` into `table`, reading a bounded chunk at a time. */
function scanFile(reader: SessionFileReader, cursor: ScanCursor, table: LineTable, size: number): void {
  let buffer = Buffer.allocUnsafe(Math.max(1, Math.min(SCAN_CHUNK, size - cursor.offset)));
  while (cursor.offset < size) {
    const want = Math.min(buffer.length, size - cursor.offset);
    const count = reader.readSync(buffer.subarray(0, want), cursor.offset);
    if (count === 0) break;
    const final = cursor.offset + count >= size || count < want;
    const consumed = scanLines(buffer.subarray(0, count), cursor, table, final);
    if (consumed === 0 && !final) {
      // One line longer than the buffer: read it whole, if a string can hold it.
      if (buffer.length > MAX_LINE_BYTES) throw tooLarge(reader.path);
      buffer = Buffer.allocUnsafe(Math.min(buffer.length * 2, MAX_LINE_BYTES + 1));
    }
  }
}

/** The session layer's own refusal of a line no string can hold (as a full load gives it). */
function tooLarge(file: string): SessionFormatError {
  return new SessionFormatError("line_too_long", `${file} holds a line too long to load`);
}

/** Reads lines by their rows, each checked against its row: through the open's reader, later a new one per batch checked to be the same file. */
class LineSource {
  #reader: SessionFileReader | undefined;
  readonly #storage: SessionStorage;
  readonly #file: string;
  readonly #opened: SessionFileReader["stat"];
  table: LineTable;
  #scratch = Buffer.allocUnsafe(64 << 10);

  constructor(storage: SessionStorage, file: string, reader: SessionFileReader, table: LineTable) {
    this.#storage = storage;
    this.#file = file;
    this.#reader = reader;
    this.#opened = reader.stat;
    this.table = table;
  }

  /** Stops using the open's reader (it is about to be closed). */
  release(): void {
    this.#reader = undefined;
  }

  /** The pieces of the lines of `rows` (ascending), each checked against its row. */
  read(rows: readonly number[]): LinePieceOf[] {
    if (rows.length === 0) return [];
    if (this.#reader !== undefined) return this.#readWith(this.#reader, rows);
    const reader = this.#storage.openReaderSync(this.#file);
    try {
      if (reader.stat.dev !== this.#opened.dev || reader.stat.ino !== this.#opened.ino) throw new IndexMismatch(`${this.#file} was replaced`);
      return this.#readWith(reader, rows);
    } catch (error) {
      throw changed(error, this.#file, "no longer holds the lines it was opened with");
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
      let end = start + table.length[rows[k]!]!;
      while (last + 1 < rows.length) {
        const next = rows[last + 1]!;
        const nextEnd = table.offset[next]! + table.length[next]!;
        if (table.offset[next]! - end > READ_GAP || nextEnd - start > READ_SPAN) break;
        last += 1;
        end = Math.max(end, nextEnd);
      }
      if (this.#scratch.length < end - start) this.#scratch = Buffer.allocUnsafe(end - start);
      const bytes = this.#scratch.subarray(0, end - start);
      if (reader.readSync(bytes, start) !== bytes.length) throw new IndexMismatch(`${this.#file} is shorter than its index`);
      for (; k <= last; k++) {
        const row = rows[k]!;
        const from = table.offset[row]! - start;
        out.push(pieceOf(this.#file, table, row, bytes, from, from + table.length[row]!));
      }
    }
    return out;
  }
}

/** An invalid piece of a line as a read gives it. */
class InvalidPiece {
  constructor(readonly invalid: InvalidLine) {}
}

/**
 * What one row's line gives: the record itself (no wrapper: a context read keeps a million of them
 * alive at once), or an invalid piece; a row with a type always gives a record.
 */
type LinePieceOf = JsonRecord | InvalidPiece;

/** The record or invalid piece row `row` names in its line (`from..to` of `bytes`), checked against everything the row says. */
function pieceOf(file: string, table: LineTable, row: number, bytes: Buffer, from: number, to: number): LinePieceOf {
  const piece = table.piece[row]!;
  let value: unknown;
  if (to - from > MAX_LINE_BYTES) throw tooLarge(file);
  if (lineCrc(bytes, from, to) !== table.crc[row]) throw new IndexMismatch(`line ${table.line[row]} is not the line indexed`);
  if (piece === WHOLE_LINE) {
    const text = decodeLine(bytes, from, to, table.line[row]!);
    try {
      value = JSON.parse(text);
    } catch {
      throw new IndexMismatch(`line ${table.line[row]} does not parse`);
    }
  } else {
    const { pieces, whole } = lineRows(bytes, from, to, table.line[row]!);
    // Every piece of the line has its row, or a rewrite through the rows would drop one.
    if (whole || pieces.length !== piecesIndexed(table, row)) throw new IndexMismatch(`line ${table.line[row]} is not cut as indexed`);
    const cut = pieces[piece]!;
    if (cut.kind === "invalid") {
      if (table.typeCode[row]! >= 0) throw new IndexMismatch(`line ${table.line[row]} holds no record`);
      const { kind: _kind, ...invalid } = cut;
      return new InvalidPiece(invalid);
    }
    value = cut.value;
  }
  if (!isJsonRecord(value) || table.typeCode[row]! < 0 || value.type !== table.typeAt(row)) throw new IndexMismatch(`line ${table.line[row]} is not the record indexed`);
  const { id, parentId: parent } = value;
  const sameId = typeof id === "string" ? table.idIs(row, id) : table.idLength[row] === NO_STRING;
  const parentLength = table.parentLength[row]!;
  const sameParent =
    typeof parent === "string" ? table.parentIs(row, parent) : parentLength === (parent === null ? NULL_PARENT : NO_STRING);
  if (!sameId || !sameParent) {
    throw new IndexMismatch(`line ${table.line[row]} has another id or parent than indexed`);
  }
  return value;
}

/** The number of rows of the line of row `row` (the pieces of one line are adjacent rows). */
function piecesIndexed(table: LineTable, row: number): number {
  let first = row;
  while (first > 0 && table.line[first - 1] === table.line[row]) first -= 1;
  let end = row + 1;
  while (end < table.size && table.line[end] === table.line[row]) end += 1;
  return end - first;
}

/**
 * A line view of `count` lines whose line `i` is made by `make(i)` when first reached, so lines
 * off the path cost nothing until a rewrite or a copy walks them. Every array operation works
 * on it (the lines are always present to `in`); lines pushed later are stored as they are.
 */
function deferredLines(count: number, make: (i: number) => ManagedLine): ManagedLine[] {
  const held: ManagedLine[] = [];
  held.length = count;
  const index = (key: string | symbol): number => {
    if (typeof key !== "string" || key.length === 0 || key.charCodeAt(0) < 0x30 || key.charCodeAt(0) > 0x39) return -1;
    const i = Number(key);
    return i < count && String(i) === key ? i : -1;
  };
  return new Proxy(held, {
    get(target, key, receiver) {
      const i = index(key);
      if (i !== -1 && target[i] === undefined) target[i] = make(i);
      return Reflect.get(target, key, receiver);
    },
    has(target, key) {
      return index(key) !== -1 || Reflect.has(target, key);
    },
  });
}

/** Usage totals over the loaded entries, summed when first asked for, plus every append. */
class DeferredUsage extends UsageAccumulator {
  #prime: (() => Iterable<FileEntry>) | undefined;

  constructor(prime: () => Iterable<FileEntry>) {
    super();
    this.#prime = prime;
  }

  override totals(): ReturnType<UsageAccumulator["totals"]> {
    this.#primed();
    return super.totals();
  }

  override get skipped(): number {
    this.#primed();
    return super.skipped;
  }

  #primed(): void {
    const entries = this.#prime?.() ?? [];
    this.#prime = undefined;
    for (const entry of entries) super.add(entry);
  }
}

/** An opened session before its index upkeep, with its entries' keys (for the upkeep). */
type BuiltSession = Omit<IndexedSession, "appender"> & { keys: TableKeys };

/** The session the rows describe, or `undefined` when it is not a v5 session with a usable header. */
function build(file: string, source: LineSource, lookup: BlobLookup, now: () => Date): BuiltSession | undefined {
  const { table } = source;
  const headerRow = table.firstRecordRow();
  if (headerRow === table.size || table.typeAt(headerRow) !== "session" || table.idLength[headerRow]! < 0) return undefined;
  const rawHeader = source.read([headerRow])[0] as JsonRecord;
  if (checkHeaderVersion(rawHeader) !== 5 || !schemaChecks().SessionHeaderSchema(rawHeader)) return undefined;

  const { patchCodes, entryRows: rows, patchRows, slotOfRow, invalidLines, salvagedLines } = classifyRows(table, headerRow);
  // A row that keeps its line out of the tree (no record, an entry without an id) and the last line covered are read now,
  // so a row hiding an entry or a sidecar of another content shows while the open can still fall back.
  const excluding: number[] = [];
  for (let i = 0; i < table.size; i++) if (table.typeCode[i]! < 0 || (i > headerRow && table.idLength[i]! < 0 && !patchCodes[table.typeCode[i]!])) excluding.push(i);
  if (table.size > 0 && excluding[excluding.length - 1] !== table.size - 1) excluding.push(table.size - 1);
  const checked = new Map(source.read(excluding).map((piece, k) => [excluding[k]!, piece]));
  const keys = new TableKeys(table, rows, storedParents(table, rows, slotOfRow, headerRow, patchCodes));
  const patchRecords = source.read(patchRows) as JsonRecord[];
  const { header, patched, states, applied, skipped } = replay(rawHeader as SessionHeader, table, rows, patchRows, patchRecords);

  const unresolved = new Map<number, UnresolvedBlobRef[]>();
  const load = (positions: readonly number[]): FileEntry[] => {
    const wanted = new Array<number>(positions.length);
    for (let k = 0; k < positions.length; k++) wanted[k] = rows[positions[k]!]!;
    const pieces = source.read(wanted);
    const entries = new Array<FileEntry>(pieces.length);
    const refs: UnresolvedBlobRef[] = [];
    for (let k = 0; k < pieces.length; k++) {
      const position = positions[k]!;
      const message = patched.size === 0 ? undefined : patched.get(position);
      const record = pieces[k] as JsonRecord;
      let entry = (message === undefined ? record : { ...record, message }) as FileEntry;
      markIfUnknown(entry as JsonRecord);
      if (!isUnknownEntry(entry)) {
        entry = resolveEntryBlobRefs(entry, lookup, refs);
        if (refs.length > 0) unresolved.set(position, refs.splice(0));
      }
      entries[k] = entry;
    }
    return entries;
  };
  const tree = SessionTree.deferred({ keys, load }, { now });
  // Read now what a resume reads anyway, so a wrong row shows while the index can be rebuilt.
  buildContextOnPath(tree.pathView());

  const lines = deferredLines(table.size, (i) => {
    const k = slotOfRow[i]!;
    if (i === headerRow) return { kind: "header" };
    if (table.typeCode[i]! < 0) {
      // Read by the open already: a rewrite writes its text back.
      return { kind: "invalid", invalid: (checked.get(i) as InvalidPiece).invalid };
    }
    if (patchCodes[table.typeCode[i]!] && i > headerRow) return { kind: "patch", record: patchRecords[k]!, state: states[k]! };
    return new DeferredEntryLine(tree, k);
  });

  const loadedEntries = (): FileEntry[] => tree.getEntries().slice(0, rows.length);
  const report: SessionLoadReport = {
    path: file,
    loaded: true,
    movedAside: undefined,
    invalidLines,
    salvagedLines,
    migratedFrom: null,
    get unknownEntries(): number {
      return loadedEntries().filter((entry) => isUnknownEntry(entry)).length;
    },
    patchesApplied: applied,
    patchesSkipped: skipped,
    get unresolvedBlobs(): UnresolvedBlobRef[] {
      loadedEntries();
      return [...unresolved.entries()].sort(([a], [b]) => a - b).flatMap(([, refs]) => refs);
    },
  };
  return {
    keys,
    header,
    tree,
    lines,
    // Read from the end: an assistant message is nearly always near it.
    hasAssistant: findLastMessage(tree.index.count, (i) => tree.index.typeAt(i), (positions) => tree.index.entriesAt(positions), (entry) => (isAssistantMessage(entry) ? true : undefined)) === true,
    usage: new DeferredUsage(loadedEntries),
    report,
  };
}

/**
 * The entries' parents by the stored parent rows, or `undefined` (every id is then hashed) when
 * an id repeats or a parent row is unknown or not an entry holding the parent id. Only "no id
 * repeats" is taken on the index's word; every line the open reads is checked against its row.
 */
function storedParents(table: LineTable, rows: Int32Array, slotOfRow: Int32Array, headerRow: number, patchCodes: readonly boolean[]): Int32Array | undefined {
  const { parentRow, repeats, parentLength, parentStart, idStart, idLength, typeCode, pool } = table;
  const parents = new Int32Array(rows.length);
  for (let p = 0; p < rows.length; p++) {
    const row = rows[p]!;
    const parent = parentRow[row]!;
    if (repeats[row] !== 0) return undefined;
    const length = parentLength[row]!;
    if (length < 0) {
      if (parent !== -1) return undefined;
      parents[p] = -1;
      continue;
    }
    if (parent < 0 || parent >= table.size || parent <= headerRow || typeCode[parent]! < 0 || patchCodes[typeCode[parent]!] || idLength[parent] !== length) return undefined;
    const from = parentStart[row]!;
    if (from !== idStart[parent] && pool.compare(pool, idStart[parent]!, idStart[parent]! + length, from, from + length) !== 0) return undefined;
    parents[p] = slotOfRow[parent]!;
  }
  return parents;
}

/** Replays the patch records over the entries' keys: the effective header, and the patched messages by entry position. */
function replay(rawHeader: SessionHeader, table: LineTable, entryRows: Int32Array, patchRows: readonly number[], patchRecords: readonly JsonRecord[]) {
  const patched = new Map<number, unknown>();
  if (patchRows.length === 0) return { header: rawHeader, patched, states: [], applied: 0, skipped: 0 };
  const needEntries = patchRecords.some((record) => record.type !== "header_patch");
  /** key-only stand-ins for the entries before each patch: all a patch replay reads of them */
  const keyRecords: JsonRecord[] = [];
  const items: ReplayItem[] = [];
  let e = 0;
  for (let p = 0; p < patchRows.length; p++) {
    const row = patchRows[p]!;
    for (; needEntries && e < entryRows.length && entryRows[e]! < row; e++) {
      const keyRecord: JsonRecord = { type: table.typeAt(entryRows[e]!)!, id: table.idAt(entryRows[e]!) };
      keyRecords.push(keyRecord);
      items.push({ kind: "entry", value: keyRecord });
    }
    items.push({ kind: "patch", value: patchRecords[p]!, line: table.line[row]! });
  }
  const replayed = replayPatches(rawHeader, items, 5);
  replayed.entries.forEach((entry, position) => {
    if (entry !== keyRecords[position]) patched.set(position, entry.message);
  });
  const states = patchRecords.map(patchStates(replayed.report));
  return { header: replayed.header, patched, states, applied: replayed.report.applied, skipped: replayed.report.skipped.length };
}

/** Whether the byte before `size` is a line feed. */
function endsWithNewline(reader: SessionFileReader, size: number): boolean {
  const byte = Buffer.alloc(1);
  return reader.readSync(byte, size - 1) === 1 && byte[0] === 0x0a;
}

/** An entry line whose entry is read when first needed; a class, not a getter literal, because a rewrite or copy builds one per line. */
class DeferredEntryLine {
  readonly kind = "entry";
  readonly #tree: SessionTree;
  readonly #position: number;

  constructor(tree: SessionTree, position: number) {
    this.#tree = tree;
    this.#position = position;
  }

  get entry(): FileEntry {
    return this.#tree.index.entriesAt([this.#position])[0]!;
  }
}
