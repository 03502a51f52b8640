/**
 * Reading an existing session file for the manager: take the writer lock first (so nothing
 * is appended between the read and the first write), load leniently, and decide what the
 * file is: a session, nothing yet, or something that must not be overwritten.
 */
import {
  SessionLoader,
  isUnknownEntry,
  resolveBlobRefs,
  type BlobLookup,
  type FileEntry,
  type LoadedSession,
  type SessionLoadResult,
  type UnresolvedBlobRef,
} from "../session/index.js";
import { isStorageError, type SessionStorage, type SessionStorageWriter } from "../storage/index.js";
import { SessionManagerError } from "./errors.js";
import { openIndexed, type IndexedSession } from "./indexed-open.js";
import type { MovedAsideFile, SessionLoadReport } from "./load-report.js";

export type { MovedAsideFile, SessionLoadReport } from "./load-report.js";

/** The outcome of {@link openSessionFile}. */
export interface OpenedSessionFile {
  report: SessionLoadReport;
  /** the load, when the file held a session */
  loaded: LoadedSession | undefined;
  /** the effective entries with blob references resolved (empty for a fresh session) */
  entries: FileEntry[];
  /** the held writer (writable opens of a file that exists at the path) */
  writer: SessionStorageWriter | undefined;
  /** set instead of `loaded` when the file was opened through its line index */
  indexed?: IndexedSession | undefined;
}

/** Options of {@link openSessionFile}. */
export interface OpenFileOptions {
  readOnly: boolean;
  lookup: BlobLookup;
  now: () => Date;
}

/**
 * Opens `file`, synchronously: the one load path behind every open, switch and fork, so the
 * synchronous calls and the async factories run the same checks. Writable: the writer is opened (locking the file) before the read. A missing
 * file gives a fresh session; a file holding only blank lines is kept and rewritten on first
 * persistence; a non-empty file without a usable header is moved aside first.
 *
 * @throws StorageError `session_busy` (writable, another writer holds the file), other storage
 *   codes for unreadable files (read-only: `not_found` for a missing one);
 *   SessionFormatError `line_too_long` (a line longer than one string can hold);
 *   SessionManagerError `session_changed` (the file changed while it was being read through its line index);
 *   SessionFormatError `version_too_new` / `invalid_version` (the file is left untouched);
 *   SessionManagerError `invalid_header` (read-only open of a file with an invalid header)
 */
export function openSessionFile(storage: SessionStorage, file: string, options: OpenFileOptions): OpenedSessionFile {
  if (!options.readOnly && !storage.existsSync(file)) return freshFile(file);
  const writer = options.readOnly ? undefined : storage.openWriter(file);
  try {
    return loadHeld(storage, file, options, writer);
  } catch (error) {
    // Whatever failed after the lock was taken (the read, a blob lookup, the move aside)
    // must not leave the session locked for the rest of this process.
    closeQuietly(writer);
    throw error;
  }
}

/** The rest of {@link openSessionFile} once the writer (if any) is held. */
function loadHeld(storage: SessionStorage, file: string, options: OpenFileOptions, writer: SessionStorageWriter | undefined): OpenedSessionFile {
  const indexed = openIndexed(storage, file, options.lookup, writer !== undefined, options.now);
  if (indexed !== undefined) return { report: indexed.report, loaded: undefined, entries: [], writer, indexed };
  const result = streamLoad(storage, file);
  if (result.kind === "empty") return freshFile(file, undefined, writer);
  if (result.kind === "invalid_header") {
    if (options.readOnly) {
      throw new SessionManagerError("invalid_header", `${file} has no usable session header (${result.reason})`, {
        path: file,
      });
    }
    // The rename takes the writer lock itself; ours must be gone first.
    closeQuietly(writer);
    const to = moveAside(storage, file, options.now());
    return freshFile(file, { from: file, to, reason: result.reason });
  }
  const entries = resolveTypedBlobs(result.entries, options.lookup);
  return {
    report: {
      path: file,
      loaded: true,
      movedAside: undefined,
      invalidLines: result.invalidLines.length,
      salvagedLines: result.stats.salvagedLines.length,
      migratedFrom: result.migratedFrom,
      unknownEntries: result.unknownEntries,
      patchesApplied: result.patchReport.applied,
      patchesSkipped: result.patchReport.skipped.length,
      unresolvedBlobs: entries.unresolved,
    },
    loaded: result,
    entries: entries.entries,
    writer,
  };
}

/** A fresh session at `file` (nothing loaded), keeping `writer` when one is held. */
function freshFile(file: string, movedAside?: MovedAsideFile, writer?: SessionStorageWriter): OpenedSessionFile {
  return { report: emptyReport(file, movedAside), loaded: undefined, entries: [], writer };
}

/** Bytes read per step when a session file is loaded. */
const LOAD_CHUNK_BYTES = 1 << 20;

/**
 * Loads `file` through the chunked loader, one reused buffer at a time: the file's bytes are
 * never all in memory at once (only the parsed records are kept), and a file whose header
 * disqualifies it is not read past its first chunk.
 */
function streamLoad(storage: SessionStorage, file: string): SessionLoadResult {
  const reader = storage.openReaderSync(file);
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

/**
 * Resolves blob references of known entries only: a record kept verbatim must be written back
 * exactly as read, so its references stay references.
 */
function resolveTypedBlobs(
  entries: readonly FileEntry[],
  lookup: BlobLookup,
): { entries: FileEntry[]; unresolved: UnresolvedBlobRef[] } {
  const positions: number[] = [];
  const typed: FileEntry[] = [];
  entries.forEach((entry, index) => {
    if (!isUnknownEntry(entry)) {
      positions.push(index);
      typed.push(entry);
    }
  });
  const resolved = resolveBlobRefs(typed, lookup);
  const out = entries.slice();
  resolved.entries.forEach((entry, k) => {
    out[positions[k]!] = entry;
  });
  return { entries: out, unresolved: resolved.unresolved };
}

/**
 * Renames `file` to a free `<name>.invalid-<timestamp>[-n]` sibling with a no-replace step,
 * so an earlier quarantined copy is never overwritten.
 */
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

function closeQuietly(writer: SessionStorageWriter | undefined): void {
  try {
    writer?.closeSync();
  } catch {
    // Nothing was written through it; the lock is released even when close reports an error.
  }
}
