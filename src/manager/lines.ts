/**
 * The manager's picture of a session file: every line in file order, so a full rewrite
 * (first persistence, migration, `rewriteEntries`) writes back everything the file held.
 * Rewrite rules (see the README):
 * - header and entries in effective form (migrated, patches applied); entries being persisted
 *   have their large images and image data URLs externalized, then are sanitized; unknown
 *   records are written as read;
 * - applied patches are folded and not written again; skipped ones are written verbatim at
 *   their place (they stay skipped); a pre-v4 file's patches are dropped (in v5 they would
 *   take effect) and counted;
 * - invalid lines and unparseable pieces are written back byte for byte at their place.
 *   Lines appended since the load come after every original line.
 */
import {
  entryJson,
  externalizeImageBlobs,
  isUnknownEntry,
  joinLines,
  sanitizeForPersistence,
  serializeRecord,
  unchangedRawBytes,
  type AgentMessage,
  type RawEntryLine,
  type BlobSink,
  type FileEntry,
  type InvalidLine,
  type JsonRecord,
  type LoadedSession,
  type PatchReport,
  type SessionHeader,
} from "../session/index.js";

/** One line of the manager's view of a session file. */
export type ManagedLine =
  | { kind: "header" }
  | { kind: "entry"; entry: FileEntry; read?: ReadEntryLine }
  | { kind: "patch"; record: JsonRecord; state: PatchState }
  | { kind: "invalid"; invalid: InvalidLine };

/** Marks an entry line read from the file: a rewrite writes it as read (no second sanitizing), and while unchanged, non-UTF-8 bytes as they were. */
export interface ReadEntryLine {
  readonly raw: RawEntryLine | undefined;
}

/** `applied`: folded on rewrite. `skipped`: kept verbatim. `inert`: held by a pre-v4 file; dropped on rewrite. */
export type PatchState = "applied" | "skipped" | "inert";

/** Whether `entry` is an assistant message (the event that starts persistence). */
export function isAssistantMessage(entry: FileEntry): boolean {
  return entry.type === "message" && (entry as { message?: AgentMessage }).message?.role === "assistant";
}

/** The state of a patch record by `report` of its replay (one it does not list was applied). */
export function patchStates(report: PatchReport): (record: JsonRecord) => PatchState {
  const codes = new Map<unknown, string>();
  for (const skip of report.skipped) codes.set(skip.record, skip.code);
  return (record) => {
    const code = codes.get(record);
    return code === undefined ? "applied" : code === "version_below_4" ? "inert" : "skipped";
  };
}

/** The line view of `loaded`, whose effective entries (blob refs possibly resolved) are `entries`, in order. */
export function linesFromLoad(loaded: LoadedSession, entries: readonly FileEntry[]): ManagedLine[] {
  const stateOf = patchStates(loaded.patchReport);
  let next = 0;
  return loaded.lines.map((item): ManagedLine => {
    if (item.kind === "header") return { kind: "header" };
    if (item.kind === "entry") return { kind: "entry", entry: entries[next++]!, read: { raw: item.raw } };
    if (item.kind === "patch") return { kind: "patch", record: item.value, state: stateOf(item.value) };
    const { kind: _kind, ...invalid } = item;
    return { kind: "invalid", invalid };
  });
}

/**
 * The JSON text (no line feed) an entry is persisted as: unknown records as read; known ones with
 * their large images and image data URLs put to `sink`, which makes each blob durable before it
 * returns (no line refers to bytes a crash could lose), then sanitized (unless `read` from the file).
 * Images leave first: sanitizing cuts any string past its limit, and a cut image is lost.
 */
function entryText(entry: FileEntry, sink: BlobSink | undefined, read: boolean): string {
  if (isUnknownEntry(entry)) return entryJson(entry);
  const value = sink === undefined ? entry : externalizeImageBlobs(entry, sink);
  return JSON.stringify(read ? value : sanitizeForPersistence(value));
}

/** The JSON text of an entry or patch line, as appended after the first full write. */
export function persistedLineText(line: Extract<ManagedLine, { kind: "entry" | "patch" }>, sink: BlobSink | undefined): string {
  return line.kind === "entry" ? entryText(line.entry, sink, false) : JSON.stringify(line.record);
}

/** The bytes of a complete file for `header` and `lines` by the module's rules, and the count of pre-v4 patches left out. */
export function serializeManagedLines(
  header: SessionHeader,
  lines: readonly ManagedLine[],
  sink: BlobSink | undefined,
): { bytes: Buffer; droppedInertPatches: number } {
  let droppedInertPatches = 0;
  const bytes = joinLines(lines, (line) => {
    if (line.kind === "header") return serializeRecord(header);
    if (line.kind === "entry") {
      const raw = line.read === undefined ? undefined : unchangedRawBytes(line.entry, line.read.raw);
      return raw ?? entryText(line.entry, sink, line.read !== undefined) + "\n";
    }
    if (line.kind === "patch") {
      if (line.state === "inert") droppedInertPatches += 1;
      return line.state === "skipped" ? serializeRecord(line.record) : "";
    }
    // Not valid UTF-8: the decoded text would not give the same bytes back.
    return line.invalid.bytes ?? `${line.invalid.text}\n`;
  });
  return { bytes, droppedInertPatches };
}
