/**
 * Lenient JSONL: one JSON object per `\n`-terminated line, read without losing anything.
 *
 * The clean path is one `JSON.parse` per line and nothing else. Only a line that fails to parse
 * goes through salvage (see `salvage.ts`), which recovers every complete record the line still
 * holds and keeps the rest verbatim, so a later rewrite can write it back and an audit can show
 * it. Lines are split on `\n` only: U+2028/U+2029 are ordinary characters inside JSON strings,
 * and a `\r` before the `\n` is JSON whitespace, so CRLF files parse without special casing.
 */
import { isUtf8 } from "node:buffer";
import { SessionFormatError } from "./errors.js";
import { isJsonRecord, salvageLine, type JsonRecord } from "./salvage.js";

/** Why a piece of a line is not a record. */
export type InvalidLineReason =
  /** not JSON, and no complete record could be cut out of it */
  | "unparseable"
  /** valid JSON, but not an object with a string `type` (for example `[1]` or `{"a":1}`) */
  | "not_a_record";

/**
 * A line (or the unrecoverable part of a salvaged line) that holds no usable record. It is kept
 * so a rewrite writes it back unchanged instead of silently dropping it.
 */
export interface InvalidLine {
  /** 1-based physical line number */
  line: number;
  /** the text as read (without its `\n`; a CRLF line keeps its `\r`) */
  text: string;
  reason: InvalidLineReason;
  /**
   * The original bytes, present only when the whole line was kept and it is not valid UTF-8:
   * decoding replaced some bytes, so `text` alone would not write the line back exactly.
   */
  bytes?: Buffer;
}

/** Receives what {@link scanJsonl} finds, in file order. */
export interface JsonlVisitor {
  /** `raw`: the line's bytes, given only when they are not valid UTF-8 (valid only during the call) */
  record(value: JsonRecord, line: number, raw?: Buffer): void;
  invalid(invalid: InvalidLine): void;
}

/** Facts about the scanned text beyond its records. */
export interface JsonlStats {
  /** physical lines seen, counting a final line without `\n` */
  lines: number;
  /** lines holding only whitespace or NUL padding; they carry no data and are not kept */
  blankLines: number;
  /** lines that failed `JSON.parse` but gave up at least one record to salvage */
  salvagedLines: number[];
  /**
   * lines whose bytes are not valid UTF-8 (decoded with U+FFFD replacements); a record parsed
   * from such a line is kept, and its bytes are handed to the visitor with it so a rewrite can
   * write the line back as read
   */
  nonUtf8Lines: number[];
  /** false when the text ends without `\n` (a torn or unterminated last line) */
  endsWithNewline: boolean;
}

const NEWLINE = 0x0a;

/** Stats of nothing scanned yet, for {@link scanJsonlLine} callers. */
export function emptyJsonlStats(): JsonlStats {
  return { lines: 0, blankLines: 0, salvagedLines: [], nonUtf8Lines: [], endsWithNewline: true };
}

/**
 * Scans JSONL text or bytes and reports every record and every unusable piece to `visitor`, in
 * file order. Bytes are decoded one line at a time so no copy of the whole file as a string is
 * ever held. A UTF-8 byte order mark before the first line is skipped.
 *
 * @throws SessionFormatError `invalid_input` when `input` is neither a string nor bytes
 */
export function scanJsonl(input: string | Uint8Array, visitor: JsonlVisitor): JsonlStats {
  if (typeof input === "string") {
    const stats = emptyJsonlStats();
    scanString(input, visitor, stats);
    return stats;
  }
  if (!(input instanceof Uint8Array)) {
    throw new SessionFormatError("invalid_input", "JSONL input must be a string or bytes");
  }
  const scanner = new JsonlScanner(visitor);
  scanner.write(input);
  return scanner.end();
}

function scanString(text: string, visitor: JsonlVisitor, stats: JsonlStats): void {
  const length = text.length;
  let start = 0;
  while (start < length) {
    const newline = text.indexOf("\n", start);
    const end = newline === -1 ? length : newline;
    stats.lines += 1;
    const from = stats.lines === 1 && text.charCodeAt(start) === 0xfeff ? start + 1 : start;
    if (end > from) handleLine(text.slice(from, end), stats.lines, undefined, visitor, stats);
    else stats.blankLines += 1;
    if (newline === -1) break;
    start = newline + 1;
  }
  stats.endsWithNewline = length === 0 || text.charCodeAt(length - 1) === NEWLINE;
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Incremental JSONL scanning: feed the file in chunks of any size, as they are read, and the
 * records come out line by line. Peak memory is then the parsed records plus one chunk and one
 * line, not a second copy of the whole file. The result is the same as one {@link scanJsonl} over
 * the concatenated bytes, wherever the chunk boundaries fall (inside a line, a character or the
 * byte order mark).
 */
export class JsonlScanner {
  readonly #visitor: JsonlVisitor;
  readonly #stats = emptyJsonlStats();
  /** copies of the bytes of an unfinished line (the caller may reuse its chunk buffers) */
  #pending: Buffer[] = [];
  #lastByte = -1;
  #ended = false;

  constructor(visitor: JsonlVisitor) {
    this.#visitor = visitor;
  }

  /** Scans the complete lines in `chunk` and keeps its unfinished tail for the next one. */
  write(chunk: Uint8Array): void {
    if (this.#ended) throw new SessionFormatError("invalid_input", "JSONL scanner already ended");
    const bytes = asBuffer(chunk);
    if (bytes.length === 0) return;
    this.#lastByte = bytes[bytes.length - 1] as number;
    let start = 0;
    for (;;) {
      const newline = bytes.indexOf(NEWLINE, start);
      if (newline === -1) {
        if (start < bytes.length) this.#pending.push(Buffer.from(bytes.subarray(start)));
        return;
      }
      if (this.#pending.length > 0) {
        this.#pending.push(bytes.subarray(start, newline));
        this.#takePending();
      } else {
        this.#line(bytes, start, newline);
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

  #takePending(): void {
    const line = Buffer.concat(this.#pending);
    this.#pending = [];
    this.#line(line, 0, line.length);
  }

  #line(bytes: Buffer, from: number, to: number): void {
    const stats = this.#stats;
    stats.lines += 1;
    let start = from;
    if (stats.lines === 1 && to - from >= 3 && bytes[from] === 0xef && bytes[from + 1] === 0xbb && bytes[from + 2] === 0xbf) {
      start += 3;
    }
    if (to === start) {
      stats.blankLines += 1;
      return;
    }
    scanJsonlLine(bytes, start, to, stats.lines, this.#visitor, stats);
  }
}

/**
 * The text of one line. A line longer than the longest string the runtime can hold cannot be
 * parsed at all: a typed `line_too_long` (nothing is changed), never the runtime's RangeError.
 */
export function decodeLine(bytes: Buffer, start: number, to: number, line: number): string {
  try {
    return bytes.toString("utf8", start, to);
  } catch (error) {
    if ((error as { code?: unknown }).code !== "ERR_STRING_TOO_LONG") throw error;
    throw new SessionFormatError("line_too_long", `line ${line} is ${to - start} bytes, more than one string can hold`, { cause: error });
  }
}

/**
 * Scans the bytes `from..to` of one non-blank physical line (no line feed; a byte order mark
 * already skipped) exactly as {@link JsonlScanner} does at line number `line`: one
 * `JSON.parse`, salvage when it fails. For readers that find line boundaries themselves (the
 * manager's line index) and must still get what a full scan gets for that line.
 */
export function scanJsonlLine(bytes: Buffer, from: number, to: number, line: number, visitor: JsonlVisitor, stats: JsonlStats): void {
  let raw: Buffer | undefined;
  const slice = bytes.subarray(from, to);
  if (!isUtf8(slice)) {
    raw = slice;
    stats.nonUtf8Lines.push(line);
  }
  handleLine(decodeLine(bytes, from, to, line), line, raw, visitor, stats);
}

function handleLine(text: string, line: number, raw: Buffer | undefined, visitor: JsonlVisitor, stats: JsonlStats): void {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    const pieces = salvageLine(text);
    if (pieces.length === 0) stats.blankLines += 1;
    let recovered = false;
    for (const piece of pieces) {
      if (piece.kind === "record") {
        recovered = true;
        visitor.record(piece.value, line);
      } else {
        // Only a piece that is the whole line can be tied back to the original bytes.
        const whole = piece.text.length === text.length;
        visitor.invalid(invalidLine(line, piece.text, "unparseable", whole ? raw : undefined));
      }
    }
    if (recovered) stats.salvagedLines.push(line);
    return;
  }
  if (isJsonRecord(value)) visitor.record(value, line, raw);
  else visitor.invalid(invalidLine(line, text, "not_a_record", raw));
}

function invalidLine(line: number, text: string, reason: InvalidLineReason, raw: Buffer | undefined): InvalidLine {
  // Copy: a subarray would pin the whole file buffer for as long as the load result lives.
  return raw === undefined ? { line, text, reason } : { line, text, reason, bytes: Buffer.from(raw) };
}

/**
 * One record as a JSONL line: `JSON.stringify` plus `\n`. Fields whose value is `undefined` are
 * left out, as `JSON.stringify` does; U+2028/U+2029 stay raw, which is valid JSON.
 */
export function serializeRecord(value: object): string {
  return `${JSON.stringify(value)}\n`;
}
