/**
 * Opening a v5 session file through its line index (checked, caught up, or rebuilt by one byte
 * scan): only the header, patches, labels, lines whose rows cannot say what they hold and the
 * context at the leaf are parsed; other entries stay on disk until asked for, so an open costs the
 * path, not the file. Each line read is parsed by the loader's own step and checked against its
 * row; a disagreement during the open throws the index away and rescans. Older versions, unusable
 * headers and files whose tree rows cannot describe (an id held twice, a parent that comes later or
 * never) go to the full load.
 */
import path from "node:path";

import {
  buildContextOnPath,
  checkHeaderVersion,
  classifyRows,
  F_ID,
  findLastMessage,
  isUnknownEntry,
  KIND_BLANK,
  KIND_INVALID,
  kindOf,
  LineTable,
  markIfUnknown,
  replayPatches,
  resolveEntryBlobRefs,
  scanLines,
  schemaChecks,
  SessionTree,
  TableKeys,
  UsageAccumulator,
  type BlobLookup,
  type FileEntry,
  type JsonRecord,
  type ReplayItem,
  type RowClasses,
  type ScanCursor,
  type SessionHeader,
  type UnresolvedBlobRef,
} from "../session/index.js";
import type { SessionFileReader, SessionStorage, SessionStorageWriter, SidecarFile } from "../storage/index.js";
import { BLANK, changed, IndexMismatch, InvalidPiece, LineSource, MAX_LINE_BYTES, tooLarge, type LinePieceOf } from "./line-source.js";
import {
  closeQuietly,
  LineIndexAppender,
  readHeldLineIndex,
  readLineIndex,
  removeFormerLineIndexes,
  ScanLinks,
  startLineIndexUpkeep,
  type DecodedLineIndex,
} from "./line-index.js";
import { DeferredEntryLine, DeferredUsage, deferredLines } from "./deferred-lines.js";
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
  /**
   * Closes the file a read-only open keeps reading the entries it left unread from (a no-op for a writable open, which
   * reads by name); idempotent. Entries read after it come from the file the name then holds, if it is the same.
   */
  release: () => void;
}

const SCAN_CHUNK = 4 << 20;
/** Bytes read to find the header before a file is scanned. */
const HEADER_PEEK = 64 << 10;

/**
 * Opens `file` through its line index. Only a `writer` (this process holds the file's lock) writes the index: it
 * publishes a rebuilt one or appends the rows the open learnt, and keeps it up; a read-only open writes nothing.
 * Otherwise the full load must: `undefined` (no index kept here, an empty file, older than v5, no usable header), or
 * why rows cannot describe the file (a repeated id, a parent that comes later or never), for the load report.
 * @throws SessionFormatError `version_too_new` / `invalid_version` / `line_too_long`; storage errors
 */
export function openIndexed(
  storage: SessionStorage,
  file: string,
  lookup: BlobLookup,
  writer: SessionStorageWriter | undefined,
  now: () => Date,
): IndexedSession | string | undefined {
  const access = indexAccess(storage, path.dirname(file));
  if (access.file === undefined) return undefined;
  // A writer reads through its own descriptor: the very file it appends to, with no second open.
  const reader = writer?.openReaderSync?.() ?? storage.openReaderSync(file);
  let keptReader = false;
  // A writer that may keep the index opens it once, through its own held directory, for the read and the upkeep.
  let heldSidecar: SidecarFile | undefined;
  try {
    const { size, dev, ino } = reader.stat;
    if (size === 0) return undefined;
    const source = new LineSource(storage, file, reader);
    let stored: DecodedLineIndex | undefined;
    if (writer !== undefined && access.writable) ({ sidecar: heldSidecar, stored } = readHeldLineIndex(writer, file));
    else stored = readLineIndex(storage, file);
    let note = stored === undefined ? "no usable index" : undefined;
    /** rows the sidecar holds that stay as they are; -1 when it must be written again */
    let kept = -1;
    let session: BuiltSession | undefined;
    if (stored !== undefined && (stored.dev !== dev || stored.ino !== ino)) note = "index ignored: it names another file";
    else if (stored?.refused !== undefined) note = `index ignored: ${stored.refused}`;
    else if (stored !== undefined) {
      // Rows past the size this open sees describe lines appended since: read as the tail instead.
      const { table } = stored;
      let rows = table.size;
      while (rows > 0 && table.offset[rows - 1]! + table.length(rows - 1) + 1 > size) rows -= 1;
      if (stored.complete && rows === table.size) kept = rows;
      table.truncate(rows);
      try {
        const caught = catchUp(file, source, table, size, lookup, now);
        if (typeof caught !== "object") return caught;
        session = caught;
      } catch (error) {
        if (!(error instanceof IndexMismatch)) throw error;
        note = `index ignored: ${error.reason}`;
        kept = -1;
      }
    }
    if (session === undefined) {
      // An older file is migrated and rewritten by the full load: not worth a scan first.
      if (!startsAsCurrent(reader, size)) return undefined;
      const caught = catchUp(file, source, new LineTable(), size, lookup, now);
      if (typeof caught !== "object") return caught;
      session = caught;
    }
    const keep = writer === undefined;
    source.finishOpen(keep);
    keptReader = keep;
    const { keys, table, ...opened } = session;
    opened.report.lineIndex = note === undefined ? "used" : note;
    let appender: LineIndexAppender | undefined;
    if (writer !== undefined && access.writable && table.end <= size && endsWithNewline(reader, size)) {
      // What the open learnt goes back to the index (all of it when rebuilt, else the new rows); a
      // failure only costs the next open a scan. A last line without a line feed may still grow: no upkeep.
      if (kept === -1) removeFormerLineIndexes(storage, file);
      const rows = { from: Math.max(0, kept), to: table.size, publish: kept === -1, identity: { dev, ino } };
      appender = startLineIndexUpkeep(writer, file, table, rows, (id) => keys.rowOf(id), heldSidecar);
      heldSidecar = undefined;
      const upkeep = appender;
      if (upkeep !== undefined) source.onMismatch = () => upkeep.discard();
    }
    return { ...opened, appender, release: () => source.close() };
  } catch (error) {
    throw changed(error, file, "changed while it was being opened");
  } finally {
    if (!keptReader) reader.close();
    closeQuietly(heldSidecar);
  }
}

/**
 * Scans the lines past `table`'s rows, links them to the rows before, and builds the session;
 * `undefined` when the full load must open it.
 * @throws IndexMismatch when the rows are not the file's
 */
function catchUp(file: string, source: LineSource, table: LineTable, size: number, lookup: BlobLookup, now: () => Date): BuiltSession | string | undefined {
  source.table = table;
  const stored = table.size;
  let before: TableKeys | undefined;
  const earlier = (id: string): number => {
    if (before === undefined) {
      const classes = classified(table, stored);
      before = new TableKeys(table, classes.entryRows, classes.parents, (row) => source.record(row), source.repeated);
    }
    return before.rowOf(id);
  };
  const links = new ScanLinks(table, stored === 0 ? -1 : table.firstRecordRow(), earlier);
  scanFile(source.reader!, { offset: table.end, line: stored === 0 ? 1 : table.lineOf(stored - 1) + 1 }, table, size, links);
  if (links.refusal !== undefined) return `not indexed: ${links.refusal}`;
  // The last line the index covered is read: a sidecar of another content shows while the open can still fall back.
  return build(file, source, classified(table, table.size), stored, lookup, now);
}

/** The classes of the first `rows` rows. @throws IndexMismatch when their parent rows cannot be a tree's */
function classified(table: LineTable, rows: number): RowClasses {
  const classes = classifyRows(table, rows);
  if (typeof classes === "string") throw new IndexMismatch(classes);
  return classes;
}

/** False when the first record within the file's first bytes is not a v5 header (none so early: true). */
function startsAsCurrent(reader: SessionFileReader, size: number): boolean {
  const chunk = Buffer.allocUnsafe(Math.min(HEADER_PEEK, size));
  const count = reader.readSync(chunk, 0);
  let first: JsonRecord | undefined;
  scanLines(chunk.subarray(0, count), { offset: 0, line: 1 }, new LineTable(), count >= size, (_row, record) => {
    first ??= record;
  });
  if (first === undefined) return true;
  try {
    return first.type === "session" && checkHeaderVersion(first) === 5;
  } catch {
    return false;
  }
}

/** Scans `reader` from `cursor` to `size` into `table`, reading a bounded chunk at a time. */
function scanFile(reader: SessionFileReader, cursor: ScanCursor, table: LineTable, size: number, links: ScanLinks): void {
  let buffer = Buffer.allocUnsafe(Math.max(1, Math.min(SCAN_CHUNK, size - cursor.offset)));
  while (cursor.offset < size) {
    const want = Math.min(buffer.length, size - cursor.offset);
    const count = reader.readSync(buffer.subarray(0, want), cursor.offset);
    if (count === 0) break;
    const final = cursor.offset + count >= size || count < want;
    const consumed = scanLines(buffer.subarray(0, count), cursor, table, final, links.note);
    if (consumed === 0 && !final) {
      // One line longer than the buffer: read it whole, if a string can hold it.
      if (buffer.length > MAX_LINE_BYTES) throw tooLarge(reader.path);
      buffer = Buffer.allocUnsafe(Math.min(buffer.length * 2, MAX_LINE_BYTES + 1));
    }
  }
}

/** An opened session before its index upkeep, with its rows and their entries' keys (for the upkeep). */
type BuiltSession = Omit<IndexedSession, "appender" | "release"> & { keys: TableKeys; table: LineTable };

/**
 * The session the rows describe, or `undefined` when it is not a v5 session with a usable header. `stored` rows came
 * from the sidecar: the last of them is read now, with every row whose line its row cannot describe.
 */
function build(file: string, source: LineSource, classes: RowClasses, stored: number, lookup: BlobLookup, now: () => Date): BuiltSession | undefined {
  const { table } = source;
  const { headerRow, entryRows: rows, positionOfRow, patchRows, invalidLines, salvagedLines } = classes;
  if (headerRow === table.size || table.kind(headerRow) !== kindOf("session") || (table.flags(headerRow) & F_ID) === 0) return undefined;
  const rawHeader = source.record(headerRow);
  if (checkHeaderVersion(rawHeader) !== 5 || !schemaChecks().SessionHeaderSchema(rawHeader)) return undefined;

  const reading = [...classes.unknownRows];
  for (const row of [stored - 1, table.size - 1]) if (row > headerRow && !reading.includes(row)) reading.push(row);
  reading.sort((a, b) => a - b);
  const checked = new Map<number, LinePieceOf>(source.read(reading).map((piece, k) => [reading[k]!, piece]));
  // The lines read so far (the last rows, nearly always on the context's path) are not read again.
  const readAgain = rowsReader(source, checked);
  let tree: SessionTree | undefined;
  // Once the tree exists an id is confirmed through its entries, so a line read for a lookup is read once and kept,
  // and a lookup after the open reads the file only for an entry the open did not read.
  const keys = new TableKeys(
    table,
    rows,
    classes.parents,
    (row) =>
      tree === undefined ? (recordOf(checked.get(row)) ?? source.record(row)) : (tree.index.entriesAt([positionOfRow[row]!])[0] as unknown as JsonRecord),
    source.repeated,
  );
  const patchRecords = source.read(patchRows) as JsonRecord[];
  const { header, patched, states, applied, skipped } = replay(rawHeader as SessionHeader, table, keys, patchRows, patchRecords);

  const unresolved = new Map<number, UnresolvedBlobRef[]>();
  const load = (positions: readonly number[]): FileEntry[] => {
    const wanted = new Array<number>(positions.length);
    for (let k = 0; k < positions.length; k++) wanted[k] = rows[positions[k]!]!;
    const pieces = readAgain(wanted) as JsonRecord[];
    const entries = new Array<FileEntry>(pieces.length);
    const refs: UnresolvedBlobRef[] = [];
    for (let k = 0; k < pieces.length; k++) {
      const position = positions[k]!;
      // Rows name a parent by its id's hash; a parent read beside its child is compared whole.
      if (k > 0 && keys.parents[position] === positions[k - 1] && pieces[k]!.parentId !== pieces[k - 1]!.id) {
        source.mismatch(new IndexMismatch(`line ${table.lineOf(wanted[k]!)} has another parent than indexed`));
      }
      const message = patched.size === 0 ? undefined : patched.get(position);
      let entry = (message === undefined ? pieces[k]! : { ...pieces[k]!, message }) as FileEntry;
      markIfUnknown(entry as JsonRecord);
      if (!isUnknownEntry(entry)) {
        entry = resolveEntryBlobRefs(entry, lookup, refs);
        if (refs.length > 0) unresolved.set(position, refs.splice(0));
      }
      entries[k] = entry;
    }
    return entries;
  };
  tree = SessionTree.deferred({ keys, load }, { now });
  // Read now what a resume reads anyway, so a wrong row shows while the index can be rebuilt.
  buildContextOnPath(tree.pathView());

  // Blank lines are rows (so rows tile the file) but no line of the session.
  let blanks = 0;
  for (const row of classes.unknownRows) if (table.kind(row) === KIND_BLANK) blanks += 1;
  let lineRows: Int32Array | undefined;
  const rowOfLine = (i: number): number => {
    if (blanks === 0) return i;
    if (lineRows === undefined) {
      lineRows = new Int32Array(table.size - blanks);
      for (let row = 0, k = 0; row < table.size; row++) if (table.kind(row) !== KIND_BLANK) lineRows[k++] = row;
    }
    return lineRows[i]!;
  };
  const patchSlot = new Map(patchRows.map((row, k) => [row, k]));
  const lines = deferredLines(table.size - blanks, (i) => {
    const row = rowOfLine(i);
    if (row === headerRow) return { kind: "header" };
    // Read by the open already: a rewrite writes its text back.
    if (table.kind(row) === KIND_INVALID) return { kind: "invalid", invalid: (checked.get(row) as InvalidPiece).invalid };
    const patch = patchSlot.get(row);
    if (patch !== undefined) return { kind: "patch", record: patchRecords[patch]!, state: states[patch]! };
    return new DeferredEntryLine(tree, positionOfRow[row]!);
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
    table,
    header,
    tree,
    lines,
    // Read from the end: an assistant message is nearly always near it.
    hasAssistant:
      findLastMessage(
        tree.index.count,
        (i) => tree.index.typeAt(i),
        (positions) => tree.index.entriesAt(positions),
        (entry) => (isAssistantMessage(entry) ? true : undefined),
      ) === true,
    usage: new DeferredUsage(loadedEntries),
    report,
  };
}

/**
 * Replays the patch records: the effective header, and the patched messages by entry position. An entry patch's
 * target is the one entry holding its id (ids are unique here), when it comes before the patch.
 */
function replay(rawHeader: SessionHeader, table: LineTable, keys: TableKeys, patchRows: readonly number[], patchRecords: readonly JsonRecord[]) {
  const patched = new Map<number, unknown>();
  if (patchRows.length === 0) return { header: rawHeader, patched, states: [], applied: 0, skipped: 0 };
  /** key-only stand-ins for the targets: all a patch replay reads of them */
  const targets = new Map<number, JsonRecord>();
  patchRecords.forEach((record, k) => {
    const id = record.type === "entry_patch" ? record.entryId : undefined;
    const position = typeof id === "string" ? keys.positionOf(id) : -1;
    if (position !== -1 && keys.rowAt(position) < patchRows[k]! && !targets.has(position)) targets.set(position, { type: keys.typeAt(position), id });
  });
  const order = [...targets.keys()].sort((a, b) => a - b);
  const items: ReplayItem[] = [];
  let t = 0;
  patchRows.forEach((row, k) => {
    for (; t < order.length && keys.rowAt(order[t]!) < row; t++) items.push({ kind: "entry", value: targets.get(order[t]!)! });
    items.push({ kind: "patch", value: patchRecords[k]!, line: table.lineOf(row) });
  });
  const replayed = replayPatches(rawHeader, items, 5);
  replayed.entries.forEach((entry, k) => {
    if (entry !== targets.get(order[k]!)) patched.set(order[k]!, entry.message);
  });
  const states = patchRecords.map(patchStates(replayed.report));
  return { header: replayed.header, patched, states, applied: replayed.report.applied, skipped: replayed.report.skipped.length };
}

/** The record a line read gave, or `undefined` for an invalid piece, a blank line or a line not read. */
function recordOf(piece: LinePieceOf | undefined): JsonRecord | undefined {
  return piece === undefined || piece === BLANK || piece instanceof InvalidPiece ? undefined : piece;
}

/**
 * Reads the lines of ascending `rows` through `source`, taking those of `known` rows (read and checked already) from it:
 * one merge over the rows, so a path of a million lines pays no lookup per line.
 */
function rowsReader(source: LineSource, known: ReadonlyMap<number, LinePieceOf>): (rows: readonly number[]) => LinePieceOf[] {
  const held = [...known.keys()].sort((a, b) => a - b);
  return (rows) => {
    let hits = 0;
    for (let r = 0, h = 0; r < rows.length && h < held.length;) {
      if (rows[r]! < held[h]!) r += 1;
      else if (rows[r]! > held[h]!) h += 1;
      else [hits, r, h] = [hits + 1, r + 1, h + 1];
    }
    if (hits === 0) return source.read(rows);
    const fresh = source.read(rows.filter((row) => !known.has(row)));
    let next = 0;
    return rows.map((row) => known.get(row) ?? fresh[next++]!);
  };
}

/** Whether the byte before `size` is a line feed. */
function endsWithNewline(reader: SessionFileReader, size: number): boolean {
  const byte = Buffer.alloc(1);
  return reader.readSync(byte, size - 1) === 1 && byte[0] === 0x0a;
}
