/**
 * The manager's picture of a session file: every line in file order, so that a full rewrite
 * (first persistence, migration, `rewriteEntries`) writes back everything the file held.
 *
 * Rewrite rules (documented in the README):
 * - the header is written in its effective form (migrated to v5, header patches applied);
 * - each entry is written in its effective form (entry patches applied), after persistence
 *   sanitizing and blob externalization; records this version does not know (unknown types,
 *   invalid fields) are written exactly as read, unknown fields included;
 * - patch records that were applied are folded into the header or entry they changed and not
 *   written again; patch records that were skipped as invalid or without a target are
 *   written back verbatim at their position (they stay skipped, since the entries before them
 *   are the same); patch records that a pre-v4 file held are dropped, because in the v5 file
 *   they would suddenly take effect, and the count is reported;
 * - every invalid line (or unparseable piece of a salvaged line) is written back byte for
 *   byte at its position: after the record that preceded it in the original file and before
 *   the one that followed it. Lines appended since the load come after every original line.
 */
import {
  externalizeImageBlobs,
  isUnknownEntry,
  sanitizeForPersistence,
  serializeRecord,
  unchangedRawBytes,
  type RawEntryLine,
  type BlobSink,
  type FileEntry,
  type InvalidLine,
  type LoadedSession,
  type SessionHeader,
} from "../session/index.js";

type JsonRecord = Record<string, unknown>;

/** One line of the manager's view of a session file. */
export type ManagedLine =
  | { kind: "header" }
  | { kind: "entry"; entry: FileEntry; read?: ReadEntryLine }
  | { kind: "patch"; record: JsonRecord; state: PatchState }
  | { kind: "invalid"; invalid: InvalidLine };

/**
 * Marks an entry line that was read from the file: a rewrite writes it as read (no second
 * sanitizing or truncation, which is for entries being persisted), and an entry read from bytes
 * that were not valid UTF-8 as those very bytes while it is unchanged.
 */
export interface ReadEntryLine {
  readonly raw: RawEntryLine | undefined;
}

/** `applied`: folded on rewrite. `skipped`: kept verbatim. `inert`: held by a pre-v4 file; dropped on rewrite. */
export type PatchState = "applied" | "skipped" | "inert";

/**
 * Builds the line view of a loaded session. `entries` are the effective entries of `loaded`
 * (possibly with blob references resolved), one per entry line, in the same order.
 */
export function linesFromLoad(loaded: LoadedSession, entries: readonly FileEntry[]): ManagedLine[] {
  const skipped = new Map<unknown, string>();
  for (const skip of loaded.patchReport.skipped) skipped.set(skip.record, skip.code);
  const lines: ManagedLine[] = [];
  let next = 0;
  for (const item of loaded.lines) {
    if (item.kind === "header") lines.push({ kind: "header" });
    else if (item.kind === "entry") lines.push({ kind: "entry", entry: entries[next++]!, read: { raw: item.raw } });
    else if (item.kind === "patch") {
      const code = skipped.get(item.value);
      const state: PatchState = code === undefined ? "applied" : code === "version_below_4" ? "inert" : "skipped";
      lines.push({ kind: "patch", record: item.value, state });
    } else {
      const { kind: _kind, ...invalid } = item;
      lines.push({ kind: "invalid", invalid });
    }
  }
  return lines;
}

/**
 * The JSON text (without line feed) an entry is persisted as. Known entries are sanitized
 * (truncation, transient fields) and their large inline images handed to `sink` and replaced
 * by blob references; the sink must have made each blob durable before it returns, so the
 * line never refers to bytes that a crash could lose. Unknown records are written as read.
 */
export function persistedEntryText(entry: FileEntry, sink: BlobSink | undefined): string {
  if (isUnknownEntry(entry)) return JSON.stringify(entry);
  let value: unknown = sanitizeForPersistence(entry);
  if (sink !== undefined) value = externalizeImageBlobs(value, sink);
  return JSON.stringify(value);
}

/**
 * The JSON text a rewrite gives an entry read from the file: the record as read (it was
 * sanitized when it was first persisted, or a peer wrote it so), its inline images still
 * handed to `sink`, which keeps their bytes.
 */
function readEntryText(entry: FileEntry, sink: BlobSink | undefined): string {
  if (isUnknownEntry(entry) || sink === undefined) return JSON.stringify(entry);
  return JSON.stringify(externalizeImageBlobs(entry, sink));
}

/** The JSON text of an entry or patch line, as appended after the first full write. */
export function persistedLineText(line: Extract<ManagedLine, { kind: "entry" | "patch" }>, sink: BlobSink | undefined): string {
  return line.kind === "entry" ? persistedEntryText(line.entry, sink) : JSON.stringify(line.record);
}

/** What a full rewrite will write, and what it left out. */
export interface SerializedSession {
  bytes: Buffer;
  /** pre-v4 patch records that were not written (see the module comment) */
  droppedInertPatches: number;
}

/**
 * The bytes of a complete file for `header` and `lines`, following the module's rewrite rules.
 * Text is gathered in bounded pieces so a large session never becomes one giant string.
 */
export function serializeManagedLines(
  header: SessionHeader,
  lines: readonly ManagedLine[],
  sink: BlobSink | undefined,
): SerializedSession {
  let droppedInertPatches = 0;
  const chunks: Buffer[] = [];
  let pending = "";
  const push = (text: string): void => {
    pending += text;
    if (pending.length > PIECE_CHARS) {
      chunks.push(Buffer.from(pending, "utf8"));
      pending = "";
    }
  };
  for (const line of lines) {
    if (line.kind === "header") push(serializeRecord(header));
    else if (line.kind === "entry") {
      const raw = line.read === undefined ? undefined : unchangedRawBytes(line.entry, line.read.raw);
      if (raw !== undefined) {
        if (pending.length > 0) chunks.push(Buffer.from(pending, "utf8"));
        pending = "";
        chunks.push(raw, NEWLINE);
      } else {
        push((line.read === undefined ? persistedEntryText(line.entry, sink) : readEntryText(line.entry, sink)) + "\n");
      }
    }
    else if (line.kind === "patch") {
      if (line.state === "skipped") push(serializeRecord(line.record));
      else if (line.state === "inert") droppedInertPatches += 1;
    } else if (line.invalid.bytes !== undefined) {
      // Not valid UTF-8: the decoded text would not give the same bytes back.
      if (pending.length > 0) chunks.push(Buffer.from(pending, "utf8"));
      pending = "";
      chunks.push(line.invalid.bytes, NEWLINE);
    } else {
      push(line.invalid.text + "\n");
    }
  }
  if (pending.length > 0) chunks.push(Buffer.from(pending, "utf8"));
  return { bytes: Buffer.concat(chunks), droppedInertPatches };
}

const PIECE_CHARS = 1 << 20;
const NEWLINE = Buffer.from("\n");
