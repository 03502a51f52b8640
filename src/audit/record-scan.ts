/**
 * A byte-level check that one JSONL line is a well-formed JSON record: an object whose
 * `type` is a string. It lets the audit skip decoding and parsing lines that need no
 * finding. It only ever answers `true` for lines `JSON.parse` accepts as a record; anything
 * it is unsure of (escaped keys, deep nesting, odd bytes) answers `false`, and the caller then
 * hands the file to the full session loader, which decides.
 */

// Deeper documents go to the real parser, which has its own limits.
const MAX_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const NEWLINE = 0x0a;
const ZERO = 0x30;
const NINE = 0x39;
// `type` as bytes, the one key the record test reads.
const T = 0x74;
const Y = 0x79;
const P = 0x70;
const E = 0x65;

// Scanner state shared by the helpers below; one line is checked at a time. `words` views
// the whole ArrayBuffer under `bytes` as aligned 32-bit words. It is kept from call to call,
// since callers scan line after line of the same memory (so the last memory scanned stays
// reachable until other memory is scanned).
let bytes: Uint8Array = Buffer.alloc(0);
let words: Int32Array = new Int32Array(0);
let wordsOf: Uint8Array | undefined;
let pos = 0;
let end = 0;

/** The byte at `at`, or -1 past the end of the line (the buffer may hold more lines). */
function byteAt(at: number): number {
  return at < end ? (bytes[at] as number) : -1;
}

// JSON whitespace except the newline: a record is one line, so a newline is never inside
// one. That lets a scan over many lines stop at each line's end by itself.
function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0d;
}

function skipSpace(): void {
  while (pos < end && isSpace(bytes[pos] as number)) pos++;
}

function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

function isHex(c: number): boolean {
  return isDigit(c) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
}

// Bytes a string body cannot simply step over: the closing quote, an escape, a control byte.
const STOPS = new Uint8Array(256);
STOPS[QUOTE] = 1;
STOPS[BACKSLASH] = 1;
for (let c = 0; c < 0x20; c++) STOPS[c] = 1;

/**
 * True when some byte of the 4-byte word `w` is a quote, a backslash or below 0x20. The
 * word tests have no false negatives, and a false positive only beside a true one.
 */
function wordStops(w: number): boolean {
  const q = w ^ 0x22222222;
  const s = w ^ 0x5c5c5c5c;
  return ((((w - 0x20202020) & ~w) | ((q - 0x01010101) & ~q) | ((s - 0x01010101) & ~s)) & 0x80808080) !== 0;
}

/** At an opening quote: moves past the closing one. False on a bad escape or control byte. */
function string(): boolean {
  // Locals: this loop runs over nearly every byte of a session file. Long runs of plain
  // text are stepped over four aligned bytes at a time.
  const b = bytes;
  const w = words;
  const base = b.byteOffset;
  const stop = end;
  const stops = STOPS;
  let i = pos + 1;
  for (;;) {
    while (i < stop && ((base + i) & 3) !== 0 && stops[b[i] as number] === 0) i++;
    if (((base + i) & 3) === 0) {
      while (i + 4 <= stop && !wordStops(w[(base + i) >>> 2] as number)) i += 4;
    }
    while (i < stop && stops[b[i] as number] === 0) i++;
    if (i >= stop) return false;
    const c = b[i] as number;
    if (c === QUOTE) {
      pos = i + 1;
      return true;
    }
    if (c !== BACKSLASH) return false; // a control byte
    const e = i + 1 < stop ? (b[i + 1] as number) : -1;
    if (e === 0x75) {
      if (i + 5 >= stop) return false;
      for (let k = 2; k <= 5; k++) if (!isHex(b[i + k] as number)) return false;
      i += 6;
    } else if (e === QUOTE || e === BACKSLASH || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
      i += 2;
    } else {
      return false;
    }
  }
}

function digits(): boolean {
  const start = pos;
  while (pos < end && isDigit(bytes[pos] as number)) pos++;
  return pos > start;
}

function number(): boolean {
  if (byteAt(pos) === MINUS) pos++;
  if (byteAt(pos) === ZERO) pos++;
  else if (!digits()) return false;
  if (byteAt(pos) === DOT) {
    pos++;
    if (!digits()) return false;
  }
  const c = byteAt(pos);
  if (c === E || c === 0x45) {
    pos++;
    if (byteAt(pos) === PLUS || byteAt(pos) === MINUS) pos++;
    if (!digits()) return false;
  }
  return true;
}

function literal(word: readonly number[]): boolean {
  if (pos + word.length > end) return false;
  for (let k = 0; k < word.length; k++) if (bytes[pos + k] !== word[k]) return false;
  pos += word.length;
  return true;
}

const TRUE = [0x74, 0x72, 0x75, 0x65];
const FALSE = [0x66, 0x61, 0x6c, 0x73, 0x65];
const NULL = [0x6e, 0x75, 0x6c, 0x6c];

/** One value at `pos` (after spaces); `depth` counts the containers around it. */
function value(depth: number): boolean {
  skipSpace();
  if (pos >= end) return false;
  const c = bytes[pos] as number;
  if (c === QUOTE) return string();
  if (c === LBRACE) return object(depth + 1) !== undefined;
  if (c === LBRACKET) return array(depth + 1);
  if (c === MINUS || isDigit(c)) return number();
  if (c === T) return literal(TRUE);
  if (c === 0x66) return literal(FALSE);
  if (c === 0x6e) return literal(NULL);
  return false;
}

function array(depth: number): boolean {
  if (depth > MAX_DEPTH) return false;
  pos++;
  skipSpace();
  if (byteAt(pos) === RBRACKET) {
    pos++;
    return true;
  }
  for (;;) {
    if (!value(depth)) return false;
    skipSpace();
    const c = byteAt(pos);
    pos++;
    if (c === RBRACKET) return true;
    if (c !== COMMA) return false;
  }
}

/**
 * At an opening brace: moves past the object. Returns whether its last `type` member holds a
 * string (what `JSON.parse` keeps of duplicate keys), or `undefined` when it is not valid or
 * a key is escaped (an escaped key might spell `type`).
 */
function object(depth: number): boolean | undefined {
  if (depth > MAX_DEPTH) return undefined;
  pos++;
  skipSpace();
  let typed = false;
  if (byteAt(pos) === RBRACE) {
    pos++;
    return typed;
  }
  for (;;) {
    skipSpace();
    if (byteAt(pos) !== QUOTE) return undefined;
    const keyStart = pos + 1;
    if (!string()) return undefined;
    const keyEnd = pos - 1;
    for (let k = keyStart; k < keyEnd; k++) if (bytes[k] === BACKSLASH) return undefined;
    const isType =
      keyEnd - keyStart === 4 && bytes[keyStart] === T && bytes[keyStart + 1] === Y && bytes[keyStart + 2] === P && bytes[keyStart + 3] === E;
    skipSpace();
    if (byteAt(pos) !== COLON) return undefined;
    pos++;
    skipSpace();
    if (isType) typed = byteAt(pos) === QUOTE;
    if (!value(depth)) return undefined;
    skipSpace();
    const c = byteAt(pos);
    pos++;
    if (c === RBRACE) return typed;
    if (c !== COMMA) return undefined;
  }
}

/**
 * True only when `line[from, to)` is, as `JSON.parse` reads it, one object whose `type` is a
 * string, with nothing but JSON whitespace around it. `false` means "not shown": parse it.
 */
export function isPlainRecordLine(line: Uint8Array, from: number, to: number): boolean {
  enter(line, from, to);
  try {
    return plainRecord() && pos === end;
  } finally {
    bytes = EMPTY;
  }
}

/**
 * True only when every line of `chunk` from `from` to its end (lines end at `\n`) is empty
 * or is a line {@link isPlainRecordLine} calls plain: the same answer as asking line by
 * line, in one pass over the bytes.
 */
export function arePlainRecordLines(chunk: Uint8Array, from: number): boolean {
  enter(chunk, from, chunk.length);
  try {
    while (pos < end) {
      if (bytes[pos] === NEWLINE) {
        pos++;
        continue;
      }
      if (!plainRecord()) return false;
      if (pos < end && bytes[pos++] !== NEWLINE) return false;
    }
    return true;
  } finally {
    bytes = EMPTY;
  }
}

function enter(buffer: Uint8Array, from: number, to: number): void {
  bytes = buffer;
  pos = from;
  end = to;
  // Comparing the view first: reading `.buffer` on every line costs more than the scan of a short one.
  if (buffer !== wordsOf) {
    wordsOf = buffer;
    if (words.buffer !== buffer.buffer) words = new Int32Array(buffer.buffer, 0, buffer.buffer.byteLength >>> 2);
  }
}

// At the start of a line: moves past spaces, a record and spaces; true when that is what
// was there. Stops at a newline (never part of a record) or the end.
function plainRecord(): boolean {
  skipSpace();
  if (byteAt(pos) !== LBRACE) return false;
  if (object(0) !== true) return false;
  skipSpace();
  return true;
}

// A Buffer like the lines themselves, so element reads stay of one kind.
const EMPTY: Uint8Array = Buffer.alloc(0);
