/**
 * The bounds an entry's value keeps so that every runtime can serialise and clone it: checked when a value
 * arrives (an `append*`), so a value past them is refused with a typed error before it enters the tree, and
 * when a stored record is read, so one past them is kept aside instead of breaking every later copy.
 */
import { MAX_PERSIST_CHARS, PersistSanitizeError, sanitizeForPersistence } from "./sanitize.js";
import { UNKNOWN_ENTRY, type FileEntry } from "./schemas.js";

/**
 * Deepest nesting of arrays and objects in one entry (the entry itself is level 1). `structuredClone`
 * and `JSON.stringify` recurse per level on the native stack; the shallowest runtime we support gives
 * out some 1,600 levels in, fewer on a deep caller's stack, so the bound stays far below that.
 */
export const MAX_ENTRY_DEPTH = 256;

/** Most UTF-8 bytes one entry's JSON line may take: half the longest string V8 holds, which every reader must decode whole. */
export const MAX_ENTRY_BYTES = 256 * 1024 * 1024;

// JSON of a string takes at least one byte per UTF-16 unit and at most six (`\u001f`), plus its quotes.
const MOST_BYTES_PER_UNIT = 6;
// Of a number, boolean or null: `-1.2345678901234567e-308` is the longest.
const MOST_SCALAR_BYTES = 24;

/** Where a walk stands: the value, its nesting level. */
interface Pending {
  readonly value: unknown;
  readonly depth: number;
}

/** What {@link measureValue} found: nesting past the bound, or the least and most bytes of its JSON. */
type Measure = { readonly tooDeep: true } | { readonly tooDeep: false; readonly least: number; readonly most: number };

/**
 * Walks `value` as `JSON.stringify` would (own enumerable keys, `toJSON` applied), without recursion,
 * counting strings as persistence cuts them; stops as soon as nesting passes {@link MAX_ENTRY_DEPTH}
 * (a cycle does too) or the least size passes {@link MAX_ENTRY_BYTES}, so the walk is linear in what
 * the line would hold and never longer than the bound.
 */
function measureValue(value: unknown): Measure {
  let least = 0;
  let most = 0;
  const pending: Pending[] = [{ value, depth: 1 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    let current = next.value;
    if (typeof current === "object" && current !== null && typeof (current as { toJSON?: unknown }).toJSON === "function") {
      current = (current as { toJSON: () => unknown }).toJSON();
    }
    if (typeof current === "string") {
      const units = Math.min(current.length, MAX_PERSIST_CHARS);
      least += units + 2;
      most += units * MOST_BYTES_PER_UNIT + 2;
    } else if (typeof current === "object" && current !== null) {
      if (next.depth > MAX_ENTRY_DEPTH) return { tooDeep: true };
      least += 2;
      most += 2;
      if (Array.isArray(current)) {
        for (const item of current) pending.push({ value: item, depth: next.depth + 1 });
        least += current.length;
        most += current.length * (MOST_SCALAR_BYTES + 1);
      } else {
        for (const key of Object.keys(current)) {
          least += key.length + 4;
          most += key.length * MOST_BYTES_PER_UNIT + 4;
          pending.push({ value: (current as Record<string, unknown>)[key], depth: next.depth + 1 });
        }
      }
    } else {
      least += 1;
      most += MOST_SCALAR_BYTES;
    }
    if (least > MAX_ENTRY_BYTES) break;
  }
  return { tooDeep: false, least, most };
}

/** The UTF-8 size of `value`'s JSON as persisted, or `undefined` when no string can hold it. */
function persistedBytes(value: unknown): number | undefined {
  try {
    const text = JSON.stringify(sanitizeForPersistence(value));
    return text === undefined ? 0 : Buffer.byteLength(text, "utf8");
  } catch (error) {
    if (error instanceof RangeError) return undefined;
    throw error;
  }
}

/** Why `value` cannot be an entry ({@link MAX_ENTRY_DEPTH}, {@link MAX_ENTRY_BYTES}), or `undefined` when it can. */
export function entryBoundsProblem(value: unknown): "nesting_too_deep" | "value_too_large" | undefined {
  const measure = measureValue(value);
  if (measure.tooDeep) return "nesting_too_deep";
  if (measure.most <= MAX_ENTRY_BYTES) return undefined;
  if (measure.least > MAX_ENTRY_BYTES) return "value_too_large";
  // Only a value near the bound pays for the exact answer.
  const bytes = persistedBytes(value);
  return bytes === undefined || bytes > MAX_ENTRY_BYTES ? "value_too_large" : undefined;
}

/**
 * Refuses a value no runtime could serialise and clone safely, naming `what` it is.
 * @throws {@link PersistSanitizeError} `nesting_too_deep` (deeper than {@link MAX_ENTRY_DEPTH}, or cyclic), `value_too_large`
 */
export function checkEntryBounds(value: unknown, what: string): void {
  const problem = entryBoundsProblem(value);
  if (problem === "nesting_too_deep") {
    throw new PersistSanitizeError(problem, `${what} nests deeper than ${MAX_ENTRY_DEPTH} levels (or is cyclic)`);
  }
  if (problem === "value_too_large") {
    throw new PersistSanitizeError(problem, `${what} would take more than ${MAX_ENTRY_BYTES} bytes as one JSON line`);
  }
}

/**
 * Whether `value` nests arrays and objects deeper than {@link MAX_ENTRY_DEPTH}. Recursion stops at
 * that bound, so the stack never holds more than {@link MAX_ENTRY_DEPTH} frames; it runs on every
 * entry an open reads, so it allocates nothing.
 */
export function nestsTooDeep(value: unknown): boolean {
  return deeperThanBound(value, 1);
}

function deeperThanBound(value: unknown, depth: number): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (depth > MAX_ENTRY_DEPTH) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const child: unknown = value[i];
      if (typeof child === "object" && child !== null && deeperThanBound(child, depth + 1)) return true;
    }
    return false;
  }
  const record = value as Record<string, unknown>;
  for (const key in record) {
    const child = record[key];
    if (typeof child === "object" && child !== null && Object.hasOwn(record, key) && deeperThanBound(child, depth + 1)) return true;
  }
  return false;
}

/** One array or object being written by {@link deepJson}. */
interface OpenContainer {
  readonly value: Record<string, unknown> | unknown[];
  readonly keys: readonly string[] | null;
  next: number;
  wrote: boolean;
}

/**
 * `JSON.stringify` of a parsed JSON value (plain objects, arrays, scalars) without recursion, for a
 * record read from disk that nests deeper than the runtime's stack lets `JSON.stringify` go: the same
 * text, so such a record is written back as it was read.
 */
export function deepJson(value: unknown): string {
  const out: string[] = [];
  const open: OpenContainer[] = [];
  const enter = (item: unknown): void => {
    if (typeof item !== "object" || item === null) {
      out.push(JSON.stringify(item) ?? "null");
      return;
    }
    const keys = Array.isArray(item) ? null : Object.keys(item).filter((key) => (item as Record<string, unknown>)[key] !== undefined);
    out.push(keys === null ? "[" : "{");
    open.push({ value: item as Record<string, unknown> | unknown[], keys, next: 0, wrote: false });
  };
  enter(value);
  for (let top = open[open.length - 1]; top !== undefined; top = open[open.length - 1]) {
    const length = top.keys === null ? (top.value as unknown[]).length : top.keys.length;
    if (top.next === length) {
      out.push(top.keys === null ? "]" : "}");
      open.pop();
      continue;
    }
    if (top.wrote) out.push(",");
    top.wrote = true;
    const position = top.next++;
    if (top.keys === null) {
      enter((top.value as unknown[])[position]);
    } else {
      const key = top.keys[position] as string;
      out.push(`${JSON.stringify(key)}:`);
      enter((top.value as Record<string, unknown>)[key]);
    }
  }
  return out.join("");
}

/** The JSON text of a record as kept: one read past {@link MAX_ENTRY_DEPTH} (an unknown entry flagged so) through {@link deepJson}. */
export function entryJson(entry: FileEntry | object): string {
  return (entry as { [UNKNOWN_ENTRY]?: unknown })[UNKNOWN_ENTRY] === "nesting_too_deep" ? deepJson(entry) : JSON.stringify(entry);
}
