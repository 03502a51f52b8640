/**
 * Persistence sanitizing, the last pure step before a write. Copy-on-write: only the path to a change is copied, an
 * unchanged input comes back as itself (`===` tells "nothing changed"), the caller's objects are never mutated.
 */
import { GjcError } from "../errors.js";

/** Longest string, in UTF-16 code units, that is written to a session file unchanged. */
export const MAX_PERSIST_CHARS = 500_000;

/** Marker appended to a string that was shortened for persistence. */
export const PERSIST_TRUNCATION_NOTICE = "[Session persistence truncated large content]";

/** Deepest nesting the sanitizer walks: far beyond what `JSON.stringify` serialises, so it trips only on a cycle. */
export const MAX_SANITIZE_DEPTH = 100_000;

const TRUNCATION_SUFFIX = `\n\n${PERSIST_TRUNCATION_NOTICE}`;

/** A cut signature is useless to a provider (it fails verification), so it is emptied. */
const SIGNATURE_KEYS: ReadonlySet<string> = new Set(["thinkingSignature", "thoughtSignature", "textSignature"]);

/** Streaming scratch state that providers attach while a response is in flight. */
const TRANSIENT_KEYS: ReadonlySet<string> = new Set(["partialJson", "jsonlEvents"]);

/**
 * Thrown for a value that cannot be persisted: by {@link sanitizeForPersistence} for one nesting deeper than
 * {@link MAX_SANITIZE_DEPTH}, and by `checkEntryBounds` for one past an entry's depth or size bound.
 */
export class PersistSanitizeError extends GjcError<"nesting_too_deep" | "value_too_large"> {}

/** Whether persistence drops the field `key` (streaming scratch state) wherever it occurs. */
export function isTransientKey(key: string): boolean {
  return TRANSIENT_KEYS.has(key);
}

/** Cuts `text` to {@link MAX_PERSIST_CHARS} units ending in {@link PERSIST_TRUNCATION_NOTICE}: idempotent, no half surrogate pair. */
export function truncateForPersistence(text: string): string {
  if (text.length <= MAX_PERSIST_CHARS) return text;
  let keep = MAX_PERSIST_CHARS - TRUNCATION_SUFFIX.length;
  const last = text.charCodeAt(keep - 1);
  if (last >= 0xd800 && last <= 0xdbff) keep -= 1;
  return text.slice(0, keep) + TRUNCATION_SUFFIX;
}

/**
 * `value` safe to persist: strings over {@link MAX_PERSIST_CHARS} truncated (signatures emptied), `partialJson` and
 * `jsonlEvents` removed at any depth, `lineCount` recomputed beside a truncated `content`; arrays and plain objects are
 * walked iteratively, unchanged subtrees shared. @throws {@link PersistSanitizeError} `nesting_too_deep` (a cycle)
 */
export function sanitizeForPersistence<T>(value: T): T {
  if (!isContainer(value)) return sanitizeLeaf(value, undefined) as T;
  const stack: Frame[] = [openFrame(value)];
  for (;;) {
    const frame = stack[stack.length - 1]!;
    const position = frame.next;
    if (position === frame.length) {
      stack.pop();
      const done = closeFrame(frame);
      const parent = stack[stack.length - 1];
      if (parent === undefined) return done as T;
      // The parent's cursor still points at the child that was just finished.
      record(parent, done, false);
      continue;
    }
    const key = frame.keys === null ? undefined : frame.keys[position]!;
    if (key !== undefined && isTransientKey(key)) {
      record(frame, undefined, true);
      continue;
    }
    const child = childAt(frame, position);
    if (isContainer(child)) {
      if (stack.length >= MAX_SANITIZE_DEPTH) {
        throw new PersistSanitizeError("nesting_too_deep", `value nests deeper than ${MAX_SANITIZE_DEPTH} levels or contains a cycle`);
      }
      stack.push(openFrame(child));
      continue;
    }
    record(frame, sanitizeLeaf(child, key), false);
  }
}

type Container = Record<string, unknown> | unknown[];

/** One array or object being walked; `copy` stays null until one of its children changes. */
interface Frame {
  readonly source: Container;
  /** Own keys of an object, or null for an array (walked by index). */
  readonly keys: readonly string[] | null;
  readonly length: number;
  next: number;
  copy: Container | null;
  contentChanged: boolean;
}

function isContainer(value: unknown): value is Container {
  if (typeof value !== "object" || value === null) return false;
  if (Array.isArray(value)) return true;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function openFrame(source: Container): Frame {
  const keys = Array.isArray(source) ? null : Object.keys(source);
  return { source, keys, length: keys === null ? (source as unknown[]).length : keys.length, next: 0, copy: null, contentChanged: false };
}

function childAt(frame: Frame, position: number): unknown {
  return frame.keys === null ? (frame.source as unknown[])[position] : (frame.source as Record<string, unknown>)[frame.keys[position]!];
}

function sanitizeLeaf(value: unknown, key: string | undefined): unknown {
  if (typeof value !== "string" || value.length <= MAX_PERSIST_CHARS) return value;
  return key !== undefined && SIGNATURE_KEYS.has(key) ? "" : truncateForPersistence(value);
}

/** Feeds the child under the cursor's (possibly new) value into the frame's copy, started at the first change, and moves on. */
function record(frame: Frame, value: unknown, omit: boolean): void {
  const position = frame.next++;
  if (frame.copy === null) {
    if (!omit && value === childAt(frame, position)) return;
    frame.copy = startCopy(frame, position);
  }
  if (omit) return;
  if (frame.keys === null) {
    (frame.copy as unknown[]).push(value);
    return;
  }
  const key = frame.keys[position]!;
  setOwn(frame.copy as Record<string, unknown>, key, value);
  if (key === "content" && value !== childAt(frame, position)) frame.contentChanged = true;
}

function startCopy(frame: Frame, upTo: number): Container {
  if (frame.keys === null) return (frame.source as unknown[]).slice(0, upTo);
  const source = frame.source as Record<string, unknown>;
  const copy: Record<string, unknown> = {};
  for (let i = 0; i < upTo; i++) {
    const key = frame.keys[i]!;
    setOwn(copy, key, source[key]);
  }
  return copy;
}

function closeFrame(frame: Frame): unknown {
  if (frame.copy === null) return frame.source;
  const copy = frame.copy as Record<string, unknown>;
  if (frame.contentChanged && typeof copy.content === "string" && typeof copy.lineCount === "number") copy.lineCount = countLines(copy.content);
  return copy;
}

/** Lines as `split("\n")` counts them (a trailing newline starts an empty last line). */
function countLines(text: string): number {
  let lines = 1;
  for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", at + 1)) lines += 1;
  return lines;
}

/** Assigning `__proto__` would set the copy's prototype, dropping the own field `JSON.parse` made. */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}
