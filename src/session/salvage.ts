/**
 * Salvage of a line that failed `JSON.parse` (a torn record with the next append glued on, glued records, NUL runs a
 * crash left) into complete records and the text between, kept verbatim. NUL runs split the line into segments and are
 * dropped. In a segment records are taken from the left while each closes and parses, then from the right by matching
 * braces backwards (exact inside a complete object), then at `}` before `{` in what is left, within a work budget so a
 * hostile line stays linear. The right wins a disagreement (a torn record can close early inside the one behind it). A
 * piece not at a segment start must look like a record (known type or `parentId`): content blocks are objects too.
 */
import { PATCH_RECORD_TYPES, SESSION_ENTRY_TYPES } from "./schemas.js";

/** A JSON object with a string `type`: the smallest thing a session line may hold. */
export interface JsonRecord {
  type: string;
  [key: string]: unknown;
}

/** True for any object that is not `null` or an array. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** True for a parsed JSON value that is a record (a non-array object with a string `type`). */
export function isJsonRecord(value: unknown): value is JsonRecord {
  return isObject(value) && typeof value.type === "string";
}

/** One piece of a salvaged line, in line order. */
export type SalvagePiece = { kind: "record"; value: JsonRecord } | { kind: "text"; text: string };

const RECORD_TYPES: ReadonlySet<string> = new Set<string>(["session", ...SESSION_ENTRY_TYPES, ...PATCH_RECORD_TYPES]);

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

/** Index of the `}` closing the object opening at `from`, or -1; tracks strings and nesting only. */
function matchForward(text: string, from: number, to: number): number {
  let depth = 0;
  let inString = false;
  for (let i = from; i < to; i += 1) {
    const code = text.charCodeAt(i);
    if (inString) {
      if (code === BACKSLASH) i += 1;
      else if (code === QUOTE) inString = false;
    } else if (code === QUOTE) inString = true;
    else if (code === OPEN_BRACE || code === OPEN_BRACKET) depth += 1;
    else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
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

/** Characters backward matches may still scan, capping the middle search. */
type Budget = { left: number };

/** Index of the `{` that opens the object closing at `from`, or -1; scans no lower than `floor`. */
function matchBackward(text: string, from: number, floor: number, budget: Budget): number {
  let depth = 0;
  let inString = false;
  for (let i = from; i >= floor; i -= 1) {
    if (--budget.left < 0) return -1;
    const code = text.charCodeAt(i);
    if (inString) {
      if (code === QUOTE && !isEscaped(text, i, floor)) inString = false;
    } else if (code === QUOTE) inString = true;
    else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) depth += 1;
    else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      depth -= 1;
      if (depth <= 0) return depth === 0 && code === OPEN_BRACE ? i : -1;
    }
  }
  return -1;
}

type Found = { start: number; end: number; value: JsonRecord };

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

/** Records chained from the start of `[lo, hi)`, and where the chain broke (`hi` when it covers the range). */
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

/** Records in `[floor, hi)` found from the right: those ending the range, then those glued inside what is left. */
function salvageFromRight(text: string, floor: number, hi: number): Found[] {
  // The tail chain costs one pass; the budget limits the middle search's guesses, each failed parse charged as a long scan.
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
  return [...middle.reverse(), ...tail.reverse()];
}

/** Records in `[from, to)` of one NUL-free segment, in order. */
function salvageSegment(text: string, from: number, to: number): Found[] {
  const lo = skipSpace(text, from, to);
  const hi = skipSpaceBack(text, lo, to);
  const { head, pos } = salvageHead(text, lo, hi);
  if (pos >= hi) return head;

  // The chain's last record may be torn, closing at a `}` inside the one behind it: a record found from the right that
  // starts before its end proves the forward match wrong (a piece cut from inside a complete record has no `type`).
  const last = head.at(-1);
  const found = salvageFromRight(text, (last?.start ?? pos) + 1, hi);
  const first = found[0];
  if (last !== undefined && first !== undefined && first.start < last.end) head.pop();
  return [...head, ...found];
}

/** A failed line's records and non-blank leftover text in line order, NUL runs dropped; nothing recovered: the line itself. */
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
