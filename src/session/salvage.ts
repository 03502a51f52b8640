/**
 * Salvage of a JSONL line that failed `JSON.parse`.
 *
 * How lines break in practice: a writer dies mid-record (a torn prefix) and the next writer
 * appends behind it without a newline; two records get glued with no newline between them; a
 * crash leaves runs of NUL bytes where the filesystem had reserved space. Salvage cuts the line
 * into pieces: complete records, and the text between them, which is kept verbatim.
 *
 * Runs of NUL are never JSON (a NUL inside a string is always escaped), so they split the line
 * into segments and are dropped as padding. In each segment:
 *
 * 1. From the left, records that start the segment are taken while each one closes and parses.
 * 2. From the right, records that end the segment are taken by matching braces backwards; inside
 *    a complete object the backward match is exact, wherever the torn text before it ends.
 * 3. Between the two, what is left starts with a torn record; records glued in its middle are
 *    looked for at `}` followed by `{`, within a work budget so a hostile line stays linear.
 * 4. Where the two disagree, the right wins: a torn record can close early inside the record
 *    glued behind it, so the left's last record is dropped when one found from the right starts
 *    inside it.
 *
 * A piece cut out anywhere but the start of a segment must look like a record (a known record
 * type, or a `parentId` field): the content blocks inside a torn message (`{"type":"text",...}`)
 * are complete objects too, and must not come back as records of their own.
 */
import { PATCH_RECORD_TYPES, SESSION_ENTRY_TYPES } from "./schemas.js";

/** A JSON object with a string `type`: the smallest thing a session line may hold. */
export interface JsonRecord {
  type: string;
  [key: string]: unknown;
}

/** True for a parsed JSON value that is a record (a non-array object with a string `type`). */
export function isJsonRecord(value: unknown): value is JsonRecord {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    typeof (value as { type?: unknown }).type === "string"
  );
}

/** One piece of a salvaged line, in line order. */
export type SalvagePiece =
  | { kind: "record"; value: JsonRecord }
  | { kind: "text"; text: string };

const RECORD_TYPES: ReadonlySet<string> = new Set<string>([
  "session",
  ...SESSION_ENTRY_TYPES,
  ...PATCH_RECORD_TYPES,
]);

function looksLikeRecord(value: unknown): value is JsonRecord {
  return isJsonRecord(value) && (RECORD_TYPES.has(value.type) || Object.hasOwn(value, "parentId"));
}

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const NUL = 0;

function isSpace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0d || code === 0x0a;
}

function tryParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Index of the `}` that closes the object opening at `from`, or -1. Tracks strings and nesting
 * only; `JSON.parse` checks the rest.
 */
function matchForward(text: string, from: number, to: number): number {
  let depth = 0;
  let inString = false;
  for (let i = from; i < to; i += 1) {
    const code = text.charCodeAt(i);
    if (inString) {
      if (code === BACKSLASH) i += 1;
      else if (code === QUOTE) inString = false;
    } else if (code === QUOTE) {
      inString = true;
    } else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      depth += 1;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
      depth -= 1;
      if (depth <= 0) return depth === 0 && code === CLOSE_BRACE ? i : -1;
    }
  }
  return -1;
}

/** True when the quote at `index` is escaped (preceded by an odd run of backslashes). */
function isEscaped(text: string, index: number, floor: number): boolean {
  let count = 0;
  for (let i = index - 1; i >= floor && text.charCodeAt(i) === BACKSLASH; i -= 1) count += 1;
  return count % 2 === 1;
}

/** What one parse attempt of the middle search costs, in scanned characters. */
const PARSE_COST = 1024;

/** Counts characters scanned by backward matches, to cap the middle search. */
interface Budget {
  left: number;
}

/** Index of the `{` that opens the object closing at `from`, or -1; scans no lower than `floor`. */
function matchBackward(text: string, from: number, floor: number, budget: Budget): number {
  let depth = 0;
  let inString = false;
  for (let i = from; i >= floor; i -= 1) {
    budget.left -= 1;
    if (budget.left < 0) return -1;
    const code = text.charCodeAt(i);
    if (inString) {
      if (code === QUOTE && !isEscaped(text, i, floor)) inString = false;
    } else if (code === QUOTE) {
      inString = true;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
      depth += 1;
    } else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      depth -= 1;
      if (depth <= 0) return depth === 0 && code === OPEN_BRACE ? i : -1;
    }
  }
  return -1;
}

interface Found {
  start: number;
  end: number;
  value: JsonRecord;
}

function skipSpace(text: string, from: number, to: number): number {
  let i = from;
  while (i < to && isSpace(text.charCodeAt(i))) i += 1;
  return i;
}

function skipSpaceBack(text: string, floor: number, to: number): number {
  let i = to;
  while (i > floor && isSpace(text.charCodeAt(i - 1))) i -= 1;
  return i;
}

/**
 * Records chained from the start of `[lo, hi)`, each opening where the one before closed. Returns
 * them and where the chain broke (`hi` when it covers the whole range).
 */
function salvageHead(text: string, lo: number, hi: number): { head: Found[]; pos: number } {
  const head: Found[] = [];
  let pos = lo;
  while (pos < hi && text.charCodeAt(pos) === OPEN_BRACE) {
    const close = matchForward(text, pos, hi);
    if (close < 0) break;
    // A torn record glued to the next one can close early into valid JSON (`{"type":"` + `{"}":1`
    // reads as `{"type":"{"}`); a real record is followed by another record or by nothing.
    const after = skipSpace(text, close + 1, hi);
    if (after < hi && text.charCodeAt(after) !== OPEN_BRACE) break;
    const value = tryParse(text.slice(pos, close + 1));
    if (!isJsonRecord(value)) break;
    head.push({ start: pos, end: close + 1, value });
    pos = after;
  }
  return { head, pos };
}

/**
 * Records in `[floor, hi)` found from the right: first those that end the range, matched
 * backwards, then those glued inside what is left, looked for at `}` followed by `{`.
 */
function salvageFromRight(text: string, floor: number, hi: number): Found[] {
  // Backward matching cannot start inside a complete object, so the tail chain costs one pass
  // over the records it returns; the budget only limits the guesses of the middle search, where
  // each failed `JSON.parse` (an exception) is charged as much as a long scan.
  const budget: Budget = { left: 2 * (hi - floor) + PARSE_COST * 16 };
  const tail: Found[] = [];
  let end = hi;
  while (end > floor && text.charCodeAt(end - 1) === CLOSE_BRACE) {
    const open = matchBackward(text, end - 1, floor, budget);
    if (open < 0) break;
    const value = tryParse(text.slice(open, end));
    if (!looksLikeRecord(value)) break;
    tail.push({ start: open, end, value });
    end = skipSpaceBack(text, floor - 1, open);
  }

  const middle: Found[] = [];
  for (let close = end - 1; close >= floor && budget.left > 0; close -= 1) {
    if (text.charCodeAt(close) !== CLOSE_BRACE) continue;
    const next = skipSpace(text, close + 1, hi);
    if (next < hi && text.charCodeAt(next) !== OPEN_BRACE) continue;
    const open = matchBackward(text, close, floor, budget);
    // Every record starts with a key; `{}` and the like are not worth a parse.
    if (open < 0 || text.charCodeAt(open + 1) !== QUOTE) continue;
    budget.left -= PARSE_COST;
    const value = tryParse(text.slice(open, close + 1));
    if (!looksLikeRecord(value)) continue;
    middle.push({ start: open, end: close + 1, value });
    close = open;
  }
  middle.reverse();
  tail.reverse();
  return [...middle, ...tail];
}

/** Records in `[from, to)` of one NUL-free segment, in order. */
function salvageSegment(text: string, from: number, to: number): Found[] {
  const lo = skipSpace(text, from, to);
  const hi = skipSpaceBack(text, lo, to);
  const { head, pos } = salvageHead(text, lo, hi);
  if (pos >= hi) return head;

  // The chain broke, so its last record may be a torn one that closed inside the record glued
  // behind it, at a `}` in one of that record's strings. Matching backwards is exact inside a
  // complete record, so the search from the right starts just inside the last chained record: a
  // record it finds that starts before that record's end proves the forward match wrong. (Nothing
  // it finds can lie wholly inside a complete record: a piece cut from inside one reads its
  // strings as structure and its structure as strings, so it has no `type` key.)
  const last = head.at(-1);
  const found = salvageFromRight(text, (last?.start ?? pos) + 1, hi);
  const first = found[0];
  if (last !== undefined && first !== undefined && first.start < last.end) head.pop();
  return [...head, ...found];
}

/**
 * Cuts a line that failed `JSON.parse` into records and leftover text, in line order. Leftover
 * text that is only whitespace is dropped; so are NUL runs. An empty result means the line held
 * only padding. When nothing is recovered and the line has no NUL, the single text piece is the
 * whole line, unchanged.
 */
export function salvageLine(text: string): SalvagePiece[] {
  const pieces: SalvagePiece[] = [];
  const pushText = (from: number, to: number): void => {
    if (skipSpace(text, from, to) < to) pieces.push({ kind: "text", text: text.slice(from, to) });
  };
  let segmentStart = 0;
  while (segmentStart <= text.length) {
    let segmentEnd = text.indexOf("\u0000", segmentStart);
    if (segmentEnd === -1) segmentEnd = text.length;
    let cursor = segmentStart;
    for (const found of salvageSegment(text, segmentStart, segmentEnd)) {
      pushText(cursor, found.start);
      pieces.push({ kind: "record", value: found.value });
      cursor = found.end;
    }
    pushText(cursor, segmentEnd);
    let next = segmentEnd;
    while (next < text.length && text.charCodeAt(next) === NUL) next += 1;
    if (next >= text.length) break;
    segmentStart = next;
  }
  return pieces;
}
