/** Reading a session file for the manager: the writer lock first (nothing is appended between the read and the first write), then a lenient load. */
import {
  SessionLoader,
  isUnknownEntry,
  resolveBlobRefs,
  type BlobLookup,
  type FileEntry,
  type LoadedSession,
  type SessionLoadResult,
} from "../session/index.js";
import { isStorageError, type SessionFileReader, type SessionStorage, type SessionStorageWriter } from "../storage/index.js";
import { SessionManagerError } from "./errors.js";
import { openIndexed, type IndexedSession } from "./indexed-open.js";
import { closeQuietly } from "./line-index.js";
import type { MovedAsideFile, SessionLoadReport } from "./load-report.js";

/**
 * What {@link openSessionFile} found: the load (when the file held a session) with its effective
 * entries, blob references resolved, or instead the open through the line index; and the held writer.
 */
interface OpenedSessionFile {
  report: SessionLoadReport;
  loaded: LoadedSession | undefined;
  entries: FileEntry[];
  writer: SessionStorageWriter | undefined;
  indexed?: IndexedSession | undefined;
}

/**
 * Opens `file` synchronously: the one load path of every open, switch and fork. A writable open
 * locks the file before the read. A missing file gives a fresh session; one of blank lines is kept
 * and rewritten on first persistence; a non-empty one without a usable header is moved aside first
 * (read-only: refused).
 * @throws StorageError `session_busy` (writable) and other storage codes (read-only: `not_found`);
 *   SessionFormatError `line_too_long`, `version_too_new` / `invalid_version` (file untouched);
 *   SessionManagerError `session_changed` (changed during an indexed open), `invalid_header` (read-only)
 */
export function openSessionFile(storage: SessionStorage, file: string, options: { readOnly: boolean; lookup: BlobLookup; now: () => Date }): OpenedSessionFile {
  if (!options.readOnly && !storage.existsSync(file)) return freshFile(file);
  const writer = options.readOnly ? undefined : storage.openWriter(file);
  try {
    const indexed = openIndexed(storage, file, options.lookup, writer, options.now);
    if (typeof indexed === "object") return { report: indexed.report, loaded: undefined, entries: [], writer, indexed };
    const result = streamLoad(writer?.openReaderSync?.() ?? storage.openReaderSync(file));
    if (result.kind === "empty") return freshFile(file, undefined, writer);
    if (result.kind === "invalid_header") {
      if (options.readOnly) throw new SessionManagerError("invalid_header", `${file} has no usable session header (${result.reason})`, { path: file });
      // The rename takes the writer lock itself; ours must be gone first.
      closeQuietly(writer);
      return freshFile(file, { from: file, to: moveAside(storage, file, options.now()), reason: result.reason });
    }
    // Blob references of known entries only: a record kept verbatim is written back as read.
    const resolved = resolveBlobRefs(
      result.entries.filter((entry) => !isUnknownEntry(entry)),
      options.lookup,
    );
    let k = 0;
    const report = {
      ...emptyReport(file),
      loaded: true,
      invalidLines: result.invalidLines.length,
      salvagedLines: result.stats.salvagedLines.length,
      migratedFrom: result.migratedFrom,
      unknownEntries: result.unknownEntries,
      patchesApplied: result.patchReport.applied,
      patchesSkipped: result.patchReport.skipped.length,
      unresolvedBlobs: resolved.unresolved,
      ...(indexed === undefined ? {} : { lineIndex: indexed }),
    };
    return { report, loaded: result, entries: result.entries.map((entry) => (isUnknownEntry(entry) ? entry : resolved.entries[k++]!)), writer };
  } catch (error) {
    // A failure after the lock was taken must not leave the session locked for this process.
    closeQuietly(writer);
    throw error;
  }
}

/** A fresh session at `file` (nothing loaded), keeping `writer` when one is held. */
function freshFile(file: string, movedAside?: MovedAsideFile, writer?: SessionStorageWriter): OpenedSessionFile {
  return { report: emptyReport(file, movedAside), loaded: undefined, entries: [], writer };
}

/** Bytes read per step when a session file is loaded. */
const LOAD_CHUNK_BYTES = 1 << 20;

/** Loads the file `reader` holds through the chunked loader, one reused buffer at a time (the bytes are never all in memory); closes the reader. */
function streamLoad(reader: SessionFileReader): SessionLoadResult {
  try {
    const loader = new SessionLoader();
    const chunk = Buffer.allocUnsafe(Math.min(LOAD_CHUNK_BYTES, reader.stat.size + 1));
    let position = 0;
    for (;;) {
      const count = reader.readSync(chunk, position);
      if (count === 0) break;
      loader.write(count === chunk.length ? chunk : chunk.subarray(0, count));
      position += count;
    }
    return loader.end();
  } finally {
    reader.close();
  }
}

/** A report for a session that starts empty at `file`. */
export function emptyReport(file: string, movedAside?: MovedAsideFile): SessionLoadReport {
  return {
    path: file,
    loaded: false,
    movedAside,
    invalidLines: 0,
    salvagedLines: 0,
    migratedFrom: null,
    unknownEntries: 0,
    patchesApplied: 0,
    patchesSkipped: 0,
    unresolvedBlobs: [],
  };
}

/** Renames `file` no-replace to a free `<name>.invalid-<timestamp>[-n]`: an earlier quarantined copy is never overwritten. */
function moveAside(storage: SessionStorage, file: string, now: Date): string {
  const stamp = now.toISOString().replace(/[:.]/g, "-");
  for (let attempt = 0; ; attempt += 1) {
    const to = attempt === 0 ? `${file}.invalid-${stamp}` : `${file}.invalid-${stamp}-${attempt}`;
    try {
      storage.renameSync(file, to, { noReplace: true });
      return to;
    } catch (error) {
      if (!isStorageError(error, "already_exists") || attempt >= 100) throw error;
    }
  }
}
