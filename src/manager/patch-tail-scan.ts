/**
 * Backward scan of a v4/v5 session file for its latest `header_patch` title and cwd (a rename
 * or move appends one anywhere after the listed prefix). Chunks are read from the end, searched
 * for the marker bytes, and only lines holding it parsed, until both values are known or the
 * prefix is reached. Memory stays one chunk plus one line: a longer line is no patch we honour.
 */
import { scanJsonl, schemaChecks, type HeaderPatchRecord, type JsonRecord } from "../session/index.js";
import type { SessionFileReader } from "../storage/index.js";
import type { LatePatches } from "./session-info.js";

/** Most bytes read per step of the backward scan. */
export const TAIL_CHUNK_BYTES = 64 * 1024;

/** Bytes of the first step (a patch is usually the last line); each later one doubles up to {@link TAIL_CHUNK_BYTES}. */
export const TAIL_FIRST_CHUNK_BYTES = 8 * 1024;

/** The one buffer every scan reads into: scans are synchronous, never nested, and copy out what outlives a step. */
const scratch = Buffer.allocUnsafe(TAIL_CHUNK_BYTES);

/** Longest line parsed: a title (at most 1000 characters) and a path stay far below it, even all escaped. */
export const MAX_PATCH_LINE_BYTES = 64 * 1024;

const MARKER = Buffer.from('"header_patch"');
const NEWLINE = 0x0a;
const EMPTY = Buffer.alloc(0);

/** Bytes kept before a resume offset. */
const RESUME_BOUNDARY_BYTES = 64;

/**
 * The latest `header_patch` title and cwd in bytes `stopAt..size` of the file open in `reader`
 * (`size` as the caller's stat saw it), only those a patch sets; and, unless the last chunk holds
 * no line feed, where a later scan of the file grown by appends may start (just past the last
 * feed), with the bytes before it for the caller to check.
 * @throws StorageError when a read fails (the caller decides whether that skips the file)
 */
export function scanLatePatches(reader: SessionFileReader, stopAt: number, size: number): { found: LatePatches; resume?: { offset: number; boundary: Buffer } } {
  const found: LatePatches = {};
  let resume: { offset: number; boundary: Buffer } | undefined;
  // The start of the line that continues into the chunk read before, completed by the next (earlier) one.
  let pending: Buffer = EMPTY;
  let insideLongLine = false;
  let end = size;
  let step = TAIL_FIRST_CHUNK_BYTES;
  while (found.title === undefined || found.cwd === undefined) {
    const limit = Math.min(step, end - stopAt);
    if (limit <= 0) break;
    step = Math.min(step * 2, TAIL_CHUNK_BYTES);
    const start = end - limit;
    const bytes = scratch.subarray(0, limit);
    // The file shrank since the stat: left to the next listing, with no resume point.
    if (reader.readSync(bytes, start) < limit) return { found };
    if (end === size) {
      // Only the last chunk of the file can end with a line that has no line feed yet.
      const lastNewline = bytes.lastIndexOf(NEWLINE);
      if (lastNewline !== -1) {
        const boundary = Buffer.from(bytes.subarray(Math.max(0, lastNewline + 1 - RESUME_BOUNDARY_BYTES), lastNewline + 1));
        resume = { offset: start + lastNewline + 1, boundary };
      }
    }
    end = start;
    const reachedStart = start <= stopAt;
    let window: Buffer;
    if (insideLongLine) {
      const lastNewline = bytes.lastIndexOf(NEWLINE);
      if (lastNewline === -1 && !reachedStart) continue;
      // Everything after this newline belongs to the over-long line: never parsed.
      window = bytes.subarray(0, lastNewline + 1);
      insideLongLine = false;
    } else {
      window = pending.length === 0 ? bytes : Buffer.concat([bytes, pending]);
    }
    // Bytes before the first newline belong to a line that began in an earlier chunk.
    const linesFrom = reachedStart ? 0 : window.indexOf(NEWLINE) + 1;
    if (linesFrom > 0 || reachedStart) collectPatches(window, linesFrom, found);
    // Copied: a slice would keep the whole chunk alive for the next round.
    pending = linesFrom === 0 && !reachedStart ? Buffer.from(window) : Buffer.from(window.subarray(0, linesFrom));
    if (pending.length > MAX_PATCH_LINE_BYTES) {
      pending = EMPTY;
      insideLongLine = true;
    }
    if (reachedStart) break;
  }
  return resume === undefined ? { found } : { found, resume };
}

/** Records into `found` the patch values on the complete lines of `window` from `from`, keeping those found (later lines); the last hit wins. */
function collectPatches(window: Buffer, from: number, found: LatePatches): void {
  const inWindow: LatePatches = {};
  for (let hit = window.indexOf(MARKER, from); hit !== -1; ) {
    const lineStart = window.lastIndexOf(NEWLINE, hit) + 1;
    const newline = window.indexOf(NEWLINE, hit);
    const lineEnd = newline === -1 ? window.length : newline;
    // The valid patches of one line in order (a glued line may hold several).
    if (lineEnd - lineStart <= MAX_PATCH_LINE_BYTES) scanJsonl(window.toString("utf8", lineStart, lineEnd), { record: (value) => applyPatch(value, inWindow), invalid() {} });
    hit = newline === -1 ? -1 : window.indexOf(MARKER, newline);
  }
  if (found.title === undefined && inWindow.title !== undefined) found.title = inWindow.title;
  if (found.cwd === undefined && inWindow.cwd !== undefined) found.cwd = inWindow.cwd;
}

function applyPatch(value: JsonRecord, into: LatePatches): void {
  if (value.type !== "header_patch" || !schemaChecks().HeaderPatchRecordSchema(value)) return;
  const { patch } = value as unknown as HeaderPatchRecord;
  if (patch.title !== undefined) into.title = patch.title;
  if (patch.cwd !== undefined) into.cwd = patch.cwd;
}
