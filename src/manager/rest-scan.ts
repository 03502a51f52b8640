/**
 * Forward scan of a session file past its listed prefix, so a listing's message count and first
 * user message are exact whatever the prefix held (a first prompt of a pasted file fills it alone),
 * and, in v4/v5, the latest `header_patch` title and cwd (a rename or move appends one anywhere).
 * Chunks are searched for the `"message"` and `"header_patch"` bytes (inside a JSON string they are
 * escaped, `\"message\"`, so tool output quoting them does not match) and only lines holding one are
 * parsed. Memory is one chunk plus the longest line holding a message; a patch line longer than
 * {@link MAX_PATCH_LINE_BYTES} is no patch we honour.
 */
import { scanJsonl, schemaChecks, type HeaderPatchRecord, type JsonRecord } from "../session/index.js";
import type { SessionFileReader } from "../storage/index.js";
import type { LatePatches, MessageCollector } from "./session-info.js";

/** Bytes read per step. */
export const REST_CHUNK_BYTES = 256 * 1024;

/** Longest line parsed for a patch: a title (at most 1000 characters) and a path stay far below it, even all escaped. */
export const MAX_PATCH_LINE_BYTES = 64 * 1024;

/** Bytes kept before a resume offset. */
const RESUME_BOUNDARY_BYTES = 64;
const MESSAGE_MARKER = Buffer.from('"message"');
const PATCH_MARKER = Buffer.from('"header_patch"');
const NEWLINE = 0x0a;

/** The one buffer every scan reads into: scans are synchronous and never nested. */
const scratch = Buffer.allocUnsafe(REST_CHUNK_BYTES);

/** What a scan collected: messages always, patches only when asked. */
export interface RestFindings {
  messages: MessageCollector;
  /** `undefined`: the file's version has no patches */
  late: LatePatches | undefined;
}

/** The outcome of {@link scanRest}. */
export interface RestScan {
  /** false when the file ended before `size` (it shrank since the stat): the count is a lower bound */
  complete: boolean;
  /** unless no line feed was read: the end of the last complete line, the bytes before it for the caller to check, and what was found up to it */
  resume?: { offset: number; boundary: Buffer; atBoundary: RestFindings };
}

/**
 * Adds to `found` the `message` entries (and patches) in bytes `from..size` of the file open in `reader`; a last line with no
 * feed counts, as a full load reads it, but is left out of the resume point.
 * @throws StorageError when a read fails
 */
export function scanRest(reader: SessionFileReader, from: number, size: number, found: RestFindings): RestScan {
  // Pieces of the line that continues into the next chunk.
  let pending: Buffer[] = [];
  let lastFeed = -1;
  let position = from;
  while (position < size) {
    const want = Math.min(REST_CHUNK_BYTES, size - position);
    const got = reader.readSync(scratch.subarray(0, want), position);
    const bytes = scratch.subarray(0, got);
    let lineStart = 0;
    for (let feed = bytes.indexOf(NEWLINE); feed !== -1; feed = bytes.indexOf(NEWLINE, lineStart)) {
      const piece = bytes.subarray(lineStart, feed);
      if (pending.length === 0) collect(piece, found);
      else {
        pending.push(piece);
        collect(Buffer.concat(pending), found);
        pending = [];
      }
      lastFeed = position + feed;
      lineStart = feed + 1;
    }
    // Copied: the scratch buffer is read into again.
    if (lineStart < got) pending.push(Buffer.from(bytes.subarray(lineStart)));
    position += got;
    if (got < want) break;
  }
  const complete = position >= size;
  let resume: RestScan["resume"];
  if (lastFeed >= 0) {
    const atBoundary = { messages: found.messages.copy(), late: found.late === undefined ? undefined : { ...found.late } };
    resume = { offset: lastFeed + 1, boundary: boundaryBefore(reader, lastFeed + 1, from), atBoundary };
  }
  if (pending.length > 0) collect(Buffer.concat(pending), found);
  return resume === undefined ? { complete } : { complete, resume };
}

/** Parses `line` when it may hold a message or a patch, and takes what it holds. */
function collect(line: Buffer, found: RestFindings): void {
  const patch = found.late !== undefined && line.length <= MAX_PATCH_LINE_BYTES && line.includes(PATCH_MARKER);
  if (!patch && !line.includes(MESSAGE_MARKER)) return;
  scanJsonl(line, {
    record(value) {
      if (value.type === "message") found.messages.addBeyondPrefix(value.message);
      else if (patch && found.late !== undefined) applyPatch(value, found.late);
    },
    invalid() {},
  });
}

/** Takes the values a valid `header_patch` sets; a later one wins. */
function applyPatch(value: JsonRecord, into: LatePatches): void {
  if (value.type !== "header_patch" || !schemaChecks().HeaderPatchRecordSchema(value)) return;
  const { patch } = value as unknown as HeaderPatchRecord;
  if (patch.title !== undefined) into.title = patch.title;
  if (patch.cwd !== undefined) into.cwd = patch.cwd;
}

/** The bytes just before `offset`, no earlier than `from`, read back. */
function boundaryBefore(reader: SessionFileReader, offset: number, from: number): Buffer {
  const start = Math.max(from, offset - RESUME_BOUNDARY_BYTES);
  const out = Buffer.allocUnsafe(offset - start);
  return out.subarray(0, reader.readSync(out, start));
}
