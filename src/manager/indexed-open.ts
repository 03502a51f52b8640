/**
 * Opening a v5 session file through its line index (checked, caught up, or rebuilt by one
 * byte-level scan): only the header, the patches and labels, and the context at the leaf are
 * read and parsed; every other entry stays on disk until asked for (`SessionTree.deferred`),
 * so an open costs the path, not the file.
 *
 * It loads what a full load gives: each line read is parsed by the loader's own step and
 * checked against its row, and a disagreement during the open throws the index away and
 * rescans strictly. Older versions, unusable headers and storages without an index go to the
 * full load.
 */
import path from "node:path";

import {
  buildContextOnPath,
  decodeLine,
  checkHeaderVersion,
  findLastMessage,
  isJsonRecord,
  isPatchRecordType,
  isUnknownEntry,
  LineTable,
  linePieces,
  NO_STRING,
  NULL_PARENT,
  TableKeys,
  markIfUnknown,
  replayPatches,
  resolveBlobRefs,
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
import type { SessionFileReader, SessionStorage } from "../storage/index.js";
import { SessionManagerError } from "./errors.js";
import { LineIndexAppender, publishLineIndex, readLineIndex, rowLookup, startLineIndexUpkeep } from "./line-index.js";
import { isAssistantMessage, patchStates, type ManagedLine, type PatchState } from "./lines.js";
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

/**
 * Opens `file` through its line index; `undefined` when the full load must (no index kept
 * here, an empty file, older than v5, no usable header).
 * @param writable whether this process holds the file's writer (the index is then kept up)
 * @throws SessionFormatError `version_too_new` / `invalid_version` / `line_too_long`; storage errors
 */
export function openIndexed(storage: SessionStorage, file: string, lookup: BlobLookup, writable: boolean, now: () => Date): IndexedSession | undefined {
  const access = indexAccess(storage, path.dirname(file));
  if (access.file === undefined) return undefined;
  const reader = storage.openReaderSync(file);
  try {
    const { size, dev, ino } = reader.stat;
    if (size === 0) return undefined;
    const stored = readLineIndex(storage, file);
    let table: LineTable;
    let kept: number;
    let cursor: ScanCursor = { offset: 0, line: 1 };
    if (stored !== undefined && stored.dev === dev && stored.ino === ino && coversPrefix(reader, stored.table, size)) {
      table = stored.table;
      kept = stored.complete ? table.size : -1;
      if (table.size > 0) cursor = { offset: table.end, line: table.line[table.size - 1]! + 1 };
    } else {
      table = new LineTable();
      kept = -1;
    }
    // An older file is migrated and rewritten by the full load: not worth a scan first.
    if (table.size === 0 && !startsAsCurrent(file, reader, size)) return undefined;
    scanFile(reader, cursor, table, size, false);
    const source = new LineSource(storage, file, reader, table);
    let session: BuiltSession | undefined;
    try {
      session = build(file, source, table, lookup, now);
    } catch (error) {
      if (!(error instanceof IndexMismatch)) throw error;
      // Something in the index (or a line the byte scan misread) is wrong: parse everything.
      table = new LineTable();
      kept = -1;
      cursor = { offset: 0, line: 1 };
      scanFile(reader, cursor, table, size, true);
      source.table = table;
      session = build(file, source, table, lookup, now);
    }
    if (session === undefined) return undefined;
    source.release();
    const { rowOf, ...opened } = session;
    const appender = access.writable ? keepIndex(storage, file, { dev, ino, size }, reader, table, kept, cursor.line, writable, rowOf) : undefined;
    return { ...opened, appender };
  } catch (error) {
    throw changed(error, file, "changed while it was being opened");
  } finally {
    reader.close();
  }
}

/** An {@link IndexMismatch} as the caller's `session_changed`; any other error as it is. */
function changed(error: unknown, file: string, what: string): unknown {
  return error instanceof IndexMismatch ? new SessionManagerError("session_changed", `${file} ${what}`, { path: file, cause: error }) : error;
}

/** Bytes read to find the header before a file is scanned. */
const HEADER_PEEK = 64 << 10;

/** False when the first record within the file's first bytes is not a v5 header (none so early: true). */
function startsAsCurrent(file: string, reader: SessionFileReader, size: number): boolean {
  const chunk = Buffer.allocUnsafe(Math.min(HEADER_PEEK, size));
  const count = reader.readSync(chunk, 0);
  const table = new LineTable();
  scanLines(chunk.subarray(0, count), { offset: 0, line: 1 }, table, count >= size, true);
  const row = table.firstRecordRow();
  if (row === table.size) return true;
  if (table.typeAt(row) !== "session") return false;
  try {
    const { record } = pieceOf(file, table, row, chunk, table.offset[row]!, table.offset[row]! + table.length[row]!);
    return record !== undefined && record.version === 5;
  } catch {
    return false;
  }
}

/** Whether the index's rows can describe the start of this file: it ends where a line ends. */
function coversPrefix(reader: SessionFileReader, table: LineTable, size: number): boolean {
  const end = table.end;
  if (end === 0) return true;
  return end <= size && endsWithNewline(reader, end);
}

/** Scans `reader` from `cursor` to `size` into `table`, reading a bounded chunk at a time. */
function scanFile(reader: SessionFileReader, cursor: ScanCursor, table: LineTable, size: number, strict: boolean): void {
  let buffer = Buffer.allocUnsafe(Math.max(1, Math.min(SCAN_CHUNK, size - cursor.offset)));
  while (cursor.offset < size) {
    const want = Math.min(buffer.length, size - cursor.offset);
    const count = reader.readSync(buffer.subarray(0, want), cursor.offset);
    if (count === 0) break;
    const final = cursor.offset + count >= size || count < want;
    const consumed = scanLines(buffer.subarray(0, count), cursor, table, final, strict);
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

/** The longest line read: what one JavaScript string can hold as UTF-8 text, at least. */
const MAX_LINE_BYTES = 0x1fffffe8;

/**
 * Reads lines by their rows, checking each against its row: with the open's reader while the
 * open runs, afterwards through a new reader per batch, checked to be the same file.
 */
class LineSource {
  #reader: SessionFileReader | undefined;
  readonly #storage: SessionStorage;
  readonly #file: string;
  readonly #dev: string;
  readonly #ino: string;
  table: LineTable;
  #scratch = Buffer.allocUnsafe(64 << 10);

  constructor(storage: SessionStorage, file: string, reader: SessionFileReader, table: LineTable) {
    this.#storage = storage;
    this.#file = file;
    this.#reader = reader;
    this.#dev = reader.stat.dev;
    this.#ino = reader.stat.ino;
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
      const { dev, ino } = reader.stat;
      if (dev !== this.#dev || ino !== this.#ino) throw new IndexMismatch(`${this.#file} was replaced`);
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

/** What one row's line gives: a record, or an invalid piece. */
type LinePieceOf = { record: JsonRecord; invalid?: undefined } | { record?: undefined; invalid: InvalidLine };

function pieceOf(file: string, table: LineTable, row: number, bytes: Buffer, from: number, to: number): LinePieceOf {
  const piece = table.piece[row]!;
  let value: unknown;
  if (to - from > MAX_LINE_BYTES) throw tooLarge(file);
  if (piece === WHOLE_LINE) {
    const text = decodeLine(bytes, from, to, table.line[row]!);
    try {
      value = JSON.parse(text);
    } catch {
      throw new IndexMismatch(`line ${table.line[row]} does not parse`);
    }
  } else {
    const cut = linePieces(bytes, from, to, table.line[row]!)[piece];
    if (cut === undefined) throw new IndexMismatch(`line ${table.line[row]} has no piece ${piece}`);
    if (cut.kind === "invalid") {
      if (table.typeCode[row]! >= 0) throw new IndexMismatch(`line ${table.line[row]} holds no record`);
      const { kind: _kind, ...invalid } = cut;
      return { invalid };
    }
    value = cut.value;
  }
  if (!isJsonRecord(value) || table.typeCode[row]! < 0 || value.type !== table.typeAt(row)) throw new IndexMismatch(`line ${table.line[row]} is not the record indexed`);
  const { id, parentId: parent } = value;
  const sameId = typeof id === "string" ? table.idIs(row, id) : table.idLength[row] === NO_STRING;
  const parentLength = table.parentLength[row]!;
  const sameParent =
    typeof parent === "string" ? parentLength >= 0 && table.parentIdAt(row) === parent : parentLength === (parent === null ? NULL_PARENT : NO_STRING);
  if (!sameId || !sameParent) {
    throw new IndexMismatch(`line ${table.line[row]} has another id or parent than indexed`);
  }
  return { record: value };
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

/** An entry line whose entry is read when first needed. */
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

/** An invalid line whose text is read when first needed (a rewrite writes it back). */
class DeferredInvalidLine {
  readonly kind = "invalid";
  readonly #source: LineSource;
  readonly #row: number;
  #invalid: InvalidLine | undefined;

  constructor(source: LineSource, row: number) {
    this.#source = source;
    this.#row = row;
  }

  get invalid(): InvalidLine {
    this.#invalid ??= this.#source.read([this.#row])[0]!.invalid!;
    return this.#invalid;
  }
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
    const prime = this.#prime;
    if (prime === undefined) return;
    this.#prime = undefined;
    for (const entry of prime()) super.add(entry);
  }
}

/** An opened session before its index upkeep, with the row of an entry by id (for the upkeep). */
type BuiltSession = Omit<IndexedSession, "appender"> & { rowOf(id: string): number };

/** The session the rows describe, or `undefined` when it is not a v5 session with a usable header. */
function build(file: string, source: LineSource, table: LineTable, lookup: BlobLookup, now: () => Date): BuiltSession | undefined {
  const headerRow = table.firstRecordRow();
  if (headerRow === table.size || table.typeAt(headerRow) !== "session" || table.idLength[headerRow]! < 0) return undefined;
  const rawHeader = source.read([headerRow])[0]!.record!;
  if (checkHeaderVersion(rawHeader) !== 5 || !schemaChecks().SessionHeaderSchema(rawHeader)) return undefined;

  const patchCodes = table.types.map(isPatchRecordType);
  const { size, typeCode, piece } = table;
  const entryRows = new Int32Array(size);
  let entryCount = 0;
  const patchRows: number[] = [];
  /** per row, the position of its entry or the index of its patch */
  const slotOfRow = new Int32Array(size);
  let invalidLines = 0;
  let salvagedLines = 0;
  for (let i = 0; i < size; i++) {
    const code = typeCode[i]!;
    if (code < 0) invalidLines += 1;
    // A line cut into pieces, one of them a record, is one that salvage recovered.
    else if (piece[i]! >= 0 && (i === 0 || table.line[i - 1] !== table.line[i] || !salvagedAt(table, i - 1))) salvagedLines += 1;
    if (code < 0 || i <= headerRow) continue;
    if (patchCodes[code]) slotOfRow[i] = patchRows.push(i) - 1;
    else {
      slotOfRow[i] = entryCount;
      entryRows[entryCount++] = i;
    }
  }
  const rows = entryRows.subarray(0, entryCount);
  const keys = new TableKeys(table, rows, storedParents(table, rows, slotOfRow, headerRow, patchCodes));
  const patchRecords = source.read(patchRows).map((piece) => piece.record!);
  const { header, patched, states, applied, skipped } = replay(rawHeader as SessionHeader, table, rows, patchRows, patchRecords);

  const unresolved = new Map<number, UnresolvedBlobRef[]>();
  const load = (positions: readonly number[]): FileEntry[] => {
    const pieces = source.read(positions.map((position) => entryRows[position]!));
    return pieces.map((piece, k) => {
      const position = positions[k]!;
      const message = patched.get(position);
      let entry = (message === undefined ? piece.record! : { ...piece.record!, message }) as FileEntry;
      markIfUnknown(entry as JsonRecord);
      if (!isUnknownEntry(entry)) {
        const resolved = resolveBlobRefs([entry], lookup);
        entry = resolved.entries[0]!;
        if (resolved.unresolved.length > 0) unresolved.set(position, resolved.unresolved);
      }
      return entry;
    });
  };
  const tree = SessionTree.deferred({ keys, load }, { now });
  // Read now what a resume reads anyway, so a wrong row shows while the index can be rebuilt.
  buildContextOnPath(tree.pathView());

  const lines = deferredLines(table.size, (i) => {
    if (i === headerRow) return { kind: "header" };
    if (table.typeCode[i]! < 0) return new DeferredInvalidLine(source, i);
    if (patchCodes[table.typeCode[i]!] && i > headerRow) {
      const k = slotOfRow[i]!;
      return { kind: "patch", record: patchRecords[k]!, state: states[k]! };
    }
    return new DeferredEntryLine(tree, slotOfRow[i]!);
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
    rowOf: rowLookup(keys, rows),
    header,
    tree,
    lines,
    hasAssistant: hasAssistantMessage(tree),
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

/** Whether rows of the line of row `i` up to `i` already hold a salvaged record. */
function salvagedAt(table: LineTable, i: number): boolean {
  for (let k = i; k >= 0 && table.line[k] === table.line[i]; k--) if (table.piece[k]! >= 0 && table.typeCode[k]! >= 0) return true;
  return false;
}

/** Whether any entry is an assistant message, reading messages from the end (it is nearly always near it). */
function hasAssistantMessage(tree: SessionTree): boolean {
  const { index } = tree;
  return findLastMessage(index.count, (i) => index.typeAt(i), (indices) => index.entriesAt(indices), (entry) => (isAssistantMessage(entry) ? true : undefined)) === true;
}

/** Replays the patch records over the entries' keys: the effective header, and the patched messages by entry position. */
function replay(
  rawHeader: SessionHeader,
  table: LineTable,
  entryRows: Int32Array,
  patchRows: readonly number[],
  patchRecords: readonly JsonRecord[],
): { header: SessionHeader; patched: Map<number, unknown>; states: PatchState[]; applied: number; skipped: number } {
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

/**
 * Writes what the open learnt back to the index (all of it when rebuilt or damaged, else the
 * new rows) and, for a writable open, returns its upkeep. Failures only cost the next open a scan.
 */
function keepIndex(
  storage: SessionStorage,
  file: string,
  identity: { dev: string; ino: string; size: number },
  reader: SessionFileReader,
  table: LineTable,
  kept: number,
  nextLine: number,
  writable: boolean,
  rowOf: (id: string) => number,
): LineIndexAppender | undefined {
  // Rows of a last line without a line feed are not stored: that line may still grow.
  let rows = table.size;
  while (rows > 0 && table.offset[rows - 1]! + table.length[rows - 1]! >= identity.size) rows -= 1;
  const terminated = rows === table.size && endsWithNewline(reader, identity.size);
  if (kept === -1 || !writable) {
    if (kept !== rows && !publishLineIndex(storage, file, identity.dev, identity.ino, table, rows)) return undefined;
    if (!writable) return undefined;
  }
  if (!terminated) return undefined;
  return startLineIndexUpkeep(storage, file, identity.size, nextLine, table, kept === -1 ? rows : kept, { rows, rowOf });
}

/** Whether the byte before `size` is a line feed. */
function endsWithNewline(reader: SessionFileReader, size: number): boolean {
  const byte = Buffer.alloc(1);
  return reader.readSync(byte, size - 1) === 1 && byte[0] === 0x0a;
}
