/**
 * Lenient JSONL: one `JSON.parse` per line, salvage (`salvage.ts`) for a line that fails. Lines split on `\n` only:
 * U+2028/U+2029 are ordinary in JSON strings, and the `\r` of a CRLF line is JSON whitespace.
 */
import { isUtf8 } from "node:buffer";
import { SessionFormatError } from "./errors.js";
import { isJsonRecord, salvageLine, type JsonRecord } from "./salvage.js";

/**
 * A line (1-based), or the unrecoverable part of a salvaged one, without a usable record, kept for a rewrite: its text
 * without `\n` (a CRLF line keeps its `\r`), and its bytes when the whole line was kept and is not valid UTF-8.
 */
export interface InvalidLine {
  line: number;
  text: string;
  /** not JSON and nothing salvaged, or JSON but not an object with a string `type` */
  reason: "unparseable" | "not_a_record";
  bytes?: Buffer;
}

/** Receives what {@link scanJsonl} finds, in file order. */
export interface JsonlVisitor {
  /** `raw`: the line's bytes, given only when they are not valid UTF-8 (valid only during the call) */
  record(value: JsonRecord, line: number, raw?: Buffer): void;
  invalid(invalid: InvalidLine): void;
}

/** Facts about the scanned text beyond its records; blank lines (whitespace or NUL padding only) are not kept. */
export interface JsonlStats {
  /** physical lines, counting a final line without `\n` */
  lines: number;
  blankLines: number;
  /** lines that failed `JSON.parse` but gave salvage at least one record */
  salvagedLines: number[];
  /** lines not valid UTF-8 (decoded with U+FFFD, bytes given to the visitor) */
  nonUtf8Lines: number[];
  endsWithNewline: boolean;
}

const NEWLINE = 0x0a;

/**
 * Most bytes one line may take: V8's longest string in UTF-16 units, so a line past it can never be decoded
 * whole; a scanner stops holding a line at this size, which bounds its memory and time on any file.
 */
export const MAX_LINE_BYTES = 0x1fffffe8;

/** Stats of nothing scanned yet, for {@link scanJsonlLine} callers. */
export function emptyJsonlStats(): JsonlStats {
  return { lines: 0, blankLines: 0, salvagedLines: [], nonUtf8Lines: [], endsWithNewline: true };
}

/**
 * Reports every record and unusable piece of JSONL text or bytes to `visitor` in file order (bytes decoded a line at a
 * time, a leading byte order mark skipped). @throws SessionFormatError `invalid_input` for neither a string nor bytes
 */
export function scanJsonl(input: string | Uint8Array, visitor: JsonlVisitor): JsonlStats {
  if (typeof input !== "string") {
    if (!(input instanceof Uint8Array)) throw new SessionFormatError("invalid_input", "JSONL input must be a string or bytes");
    const scanner = new JsonlScanner(visitor);
    scanner.write(input);
    return scanner.end();
  }
  const stats = emptyJsonlStats();
  const length = input.length;
  let start = 0;
  while (start < length) {
    const newline = input.indexOf("\n", start);
    const end = newline === -1 ? length : newline;
    stats.lines += 1;
    const from = stats.lines === 1 && input.charCodeAt(start) === 0xfeff ? start + 1 : start;
    if (end > from) handleLine(input.slice(from, end), stats.lines, undefined, visitor, stats);
    else stats.blankLines += 1;
    if (newline === -1) break;
    start = newline + 1;
  }
  stats.endsWithNewline = length === 0 || input.charCodeAt(length - 1) === NEWLINE;
  return stats;
}

/** {@link scanJsonl} fed in chunks of any size (one chunk and one line held), wherever the chunks split. */
export class JsonlScanner {
  readonly #visitor: JsonlVisitor;
  readonly #stats = emptyJsonlStats();
  /** copies of the bytes of an unfinished line (the caller may reuse its chunk buffers) */
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #lastByte = -1;
  #ended = false;

  constructor(visitor: JsonlVisitor) {
    this.#visitor = visitor;
  }

  /** Scans the complete lines in `chunk` and keeps its unfinished tail for the next one. */
  write(chunk: Uint8Array): void {
    if (this.#ended) throw new SessionFormatError("invalid_input", "JSONL scanner already ended");
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (bytes.length === 0) return;
    this.#lastByte = bytes[bytes.length - 1] as number;
    let start = 0;
    for (;;) {
      const newline = bytes.indexOf(NEWLINE, start);
      const end = newline === -1 ? bytes.length : newline;
      // Refused as soon as it is known, so a line of any length costs at most one bound's bytes.
      if (this.#pendingBytes + end - start > MAX_LINE_BYTES) throw this.#tooLong(this.#pendingBytes + end - start);
      if (newline === -1) {
        if (start < bytes.length) this.#pending.push(Buffer.from(bytes.subarray(start)));
        this.#pendingBytes += bytes.length - start;
        return;
      }
      if (this.#pending.length === 0) this.#line(bytes, start, newline);
      else {
        this.#pending.push(bytes.subarray(start, newline));
        this.#takePending();
      }
      start = newline + 1;
    }
  }

  /** Scans a final line that has no newline and returns the totals. */
  end(): JsonlStats {
    if (!this.#ended) {
      this.#ended = true;
      if (this.#pending.length > 0) this.#takePending();
      this.#stats.endsWithNewline = this.#lastByte === -1 || this.#lastByte === NEWLINE;
    }
    return this.#stats;
  }

  #tooLong(atLeast: number): SessionFormatError {
    const line = this.#stats.lines + 1;
    return new SessionFormatError("line_too_long", `line ${line} is at least ${atLeast} bytes, more than one string can hold`);
  }

  #takePending(): void {
    const line = Buffer.concat(this.#pending);
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#line(line, 0, line.length);
  }

  #line(bytes: Buffer, from: number, to: number): void {
    const stats = this.#stats;
    stats.lines += 1;
    const start = stats.lines === 1 && to - from >= 3 && bytes[from] === 0xef && bytes[from + 1] === 0xbb && bytes[from + 2] === 0xbf ? from + 3 : from;
    if (to === start) stats.blankLines += 1;
    else scanJsonlLine(bytes, start, to, stats.lines, this.#visitor, stats);
  }
}

/** The text of one line; one longer than the runtime's longest string is a typed `line_too_long`, not a RangeError. */
export function decodeLine(bytes: Buffer, start: number, to: number, line: number): string {
  if (to - start > MAX_LINE_BYTES) throw new SessionFormatError("line_too_long", `line ${line} is ${to - start} bytes, more than one string can hold`);
  try {
    return bytes.toString("utf8", start, to);
  } catch (error) {
    if ((error as { code?: unknown }).code !== "ERR_STRING_TOO_LONG") throw error;
    throw new SessionFormatError("line_too_long", `line ${line} is ${to - start} bytes, more than one string can hold`, { cause: error });
  }
}

/** Scans bytes `from..to` of one non-blank line (no line feed or byte order mark) as {@link JsonlScanner} does. */
export function scanJsonlLine(bytes: Buffer, from: number, to: number, line: number, visitor: JsonlVisitor, stats: JsonlStats): void {
  const slice = bytes.subarray(from, to);
  const raw = isUtf8(slice) ? undefined : slice;
  if (raw !== undefined) stats.nonUtf8Lines.push(line);
  handleLine(decodeLine(bytes, from, to, line), line, raw, visitor, stats);
}

function handleLine(text: string, line: number, raw: Buffer | undefined, visitor: JsonlVisitor, stats: JsonlStats): void {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    const pieces = salvageLine(text);
    if (pieces.length === 0) stats.blankLines += 1;
    for (const piece of pieces) {
      if (piece.kind === "record") visitor.record(piece.value, line);
      // Only a piece that is the whole line can be tied back to the original bytes.
      else visitor.invalid(invalidLine(line, piece.text, "unparseable", piece.text.length === text.length ? raw : undefined));
    }
    if (pieces.some((piece) => piece.kind === "record")) stats.salvagedLines.push(line);
    return;
  }
  if (isJsonRecord(value)) visitor.record(value, line, raw);
  else visitor.invalid(invalidLine(line, text, "not_a_record", raw));
}

function invalidLine(line: number, text: string, reason: InvalidLine["reason"], raw: Buffer | undefined): InvalidLine {
  // Copy: a subarray would pin the whole file buffer for as long as the load result lives.
  return raw === undefined ? { line, text, reason } : { line, text, reason, bytes: Buffer.from(raw) };
}

/** One record as a JSONL line: `JSON.stringify` (U+2028/U+2029 stay raw, valid JSON) plus `\n`. */
export function serializeRecord(value: object): string {
  return `${JSON.stringify(value)}\n`;
}

/** Joins a file's lines into one buffer, each as text with its line feed or as one line's raw bytes; text goes in bounded pieces. */
export function joinLines<T>(items: Iterable<T>, line: (item: T) => string | Buffer): Buffer {
  const chunks: Buffer[] = [];
  let pending = "";
  for (const item of items) {
    const piece = line(item);
    if (typeof piece === "string") {
      pending += piece;
      if (pending.length <= PIECE_CHARS) continue;
    }
    if (pending.length > 0) chunks.push(Buffer.from(pending, "utf8"));
    pending = "";
    if (typeof piece !== "string") chunks.push(piece, NEWLINE_BYTES);
  }
  if (pending.length > 0) chunks.push(Buffer.from(pending, "utf8"));
  return Buffer.concat(chunks);
}

const PIECE_CHARS = 1 << 20;
const NEWLINE_BYTES = Buffer.from("\n");
