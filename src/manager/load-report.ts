/** What opening a session file found, as both the full load and the indexed open report it. */
import type { InvalidHeaderReason, UnresolvedBlobRef } from "../session/index.js";

/** A file moved aside because its header is unusable. */
export interface MovedAsideFile {
  from: string;
  /** the `<name>.invalid-<timestamp>` sibling that now holds its bytes, unchanged */
  to: string;
  reason: InvalidHeaderReason;
}

/** What opening a session file found; see {@link SessionManager.getLoadReport}. */
export interface SessionLoadReport {
  path: string;
  /** whether a non-empty session file was loaded (false: a fresh session starts at the path) */
  loaded: boolean;
  /** set when a file with an invalid header was moved aside before the fresh session started */
  movedAside: MovedAsideFile | undefined;
  /** lines or pieces of lines that hold no record; kept and written back verbatim */
  invalidLines: number;
  /** lines that failed to parse but gave up records to salvage */
  salvagedLines: number;
  /** the on-disk version when the file needs a migration rewrite on first persistence */
  migratedFrom: number | null;
  /** records kept verbatim because their type or fields are unknown */
  unknownEntries: number;
  patchesApplied: number;
  patchesSkipped: number;
  /** blob references that could not be resolved (kept as references) */
  unresolvedBlobs: UnresolvedBlobRef[];
  /**
   * How the open used the session's line index: `"used"`, or a note saying why none was used (none kept, or one that did not
   * fit the file and was ignored, so every line was read). Absent when the file was read by the full load.
   */
  lineIndex?: string;
}
