/**
 * Persistence sanitizing: the last pure step before an entry is serialised to a session file.
 *
 * Every function here is copy-on-write. Objects are copied only along the path from the root
 * to something that actually changes, and an input that needs no change comes back as the
 * very same reference. That keeps the append hot path cheap (a normal entry is walked but not
 * copied) and lets callers detect "nothing changed" with `===`. The caller's objects are
 * never mutated, because the same entry object also lives in the in-memory tree.
 */

import { GjcError } from "../errors.js";

/** Longest string, in UTF-16 code units, that is written to a session file unchanged. */
export const MAX_PERSIST_CHARS = 500_000;

/** Marker appended to a string that was shortened for persistence. */
export const PERSIST_TRUNCATION_NOTICE = "[Session persistence truncated large content]";

/**
 * Deepest object/array nesting the sanitizer walks. Far beyond anything `JSON.stringify`
 * can serialise (it overflows the stack a few thousand levels down), so it only ever trips
 * on a cyclic object graph, which would otherwise make the walk run forever.
 */
export const MAX_SANITIZE_DEPTH = 100_000;

const TRUNCATION_SUFFIX = `\n\n${PERSIST_TRUNCATION_NOTICE}`;

/** A cut signature is useless to a provider (it fails verification), so it is emptied. */
const SIGNATURE_KEYS: ReadonlySet<string> = new Set(["thinkingSignature", "thoughtSignature", "textSignature"]);

/** Streaming scratch state that providers attach while a response is in flight. */
const TRANSIENT_KEYS: ReadonlySet<string> = new Set(["partialJson", "jsonlEvents"]);

/** Thrown by {@link sanitizeForPersistence} for a value it cannot walk. */
export class PersistSanitizeError extends GjcError<PersistSanitizeErrorCode> {}

/** Why a value could not be sanitized: it nests deeper than {@link MAX_SANITIZE_DEPTH}. */
export type PersistSanitizeErrorCode = "nesting_too_deep";

/**
 * Shortens `text` to at most {@link MAX_PERSIST_CHARS} code units, ending with a blank line
 * and {@link PERSIST_TRUNCATION_NOTICE}. Strings within the limit are returned unchanged.
 *
 * The result is never longer than the limit, so sanitizing is idempotent: a truncated string
 * is not truncated again on the next rewrite. A cut that would split a surrogate pair drops
 * the lone high surrogate instead of writing half a character.
 */
export function truncateForPersistence(text: string): string {
  if (text.length <= MAX_PERSIST_CHARS) return text;
  let keep = MAX_PERSIST_CHARS - TRUNCATION_SUFFIX.length;
  if (isHighSurrogate(text.charCodeAt(keep - 1))) keep -= 1;
  return text.slice(0, keep) + TRUNCATION_SUFFIX;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * Returns `value` made safe to persist:
 * - strings longer than {@link MAX_PERSIST_CHARS} are truncated (see
 *   {@link truncateForPersistence}), except signature fields (`thinkingSignature`,
 *   `thoughtSignature`, `textSignature`), which become `""`;
 * - `partialJson` and `jsonlEvents` properties are removed at any depth;
 * - an object whose string `content` was truncated and which has a numeric `lineCount` gets
 *   `lineCount` recomputed from the new content.
 *
 * Only arrays and plain objects are descended into; class instances (a `Buffer`, a `Date`)
 * are left as they are. The walk is iterative, so deeply nested data cannot overflow the
 * stack.
 *
 * @returns `value` itself when nothing needed to change, otherwise a copy that shares every
 *   unchanged subtree with `value`.
 * @throws {@link PersistSanitizeError} `nesting_too_deep` for a cyclic or absurdly deep value.
 */
export function sanitizeForPersistence<T>(value: T): T {
  if (!isContainer(value)) return sanitizeLeaf(value, undefined) as T;
  const stack: Frame[] = [openFrame(value)];
  for (;;) {
    const frame = stack[stack.length - 1]!;
    const position = frame.next;
    if (position === childCount(frame)) {
      stack.pop();
      const done = closeFrame(frame);
      const parent = stack[stack.length - 1];
      if (parent === undefined) return done as T;
      // The parent's cursor still points at the child that was just finished.
      record(parent, parent.next, done, false);
      parent.next += 1;
      continue;
    }
    const key = frame.keys === null ? undefined : frame.keys[position]!;
    if (key !== undefined && TRANSIENT_KEYS.has(key)) {
      record(frame, position, undefined, true);
      frame.next += 1;
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
    record(frame, position, sanitizeLeaf(child, key), false);
    frame.next += 1;
  }
}

type Container = Record<string, unknown> | unknown[];

/** One array or object being walked; `copy` stays null until one of its children changes. */
interface Frame {
  readonly source: Container;
  /** Own keys of an object, or null for an array (walked by index). */
  readonly keys: readonly string[] | null;
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
  return { source, keys: Array.isArray(source) ? null : Object.keys(source), next: 0, copy: null, contentChanged: false };
}

function childCount(frame: Frame): number {
  return frame.keys === null ? (frame.source as unknown[]).length : frame.keys.length;
}

function childAt(frame: Frame, position: number): unknown {
  return frame.keys === null
    ? (frame.source as unknown[])[position]
    : (frame.source as Record<string, unknown>)[frame.keys[position]!];
}

function sanitizeLeaf(value: unknown, key: string | undefined): unknown {
  if (typeof value !== "string" || value.length <= MAX_PERSIST_CHARS) return value;
  return key !== undefined && SIGNATURE_KEYS.has(key) ? "" : truncateForPersistence(value);
}

/**
 * Feeds the (possibly new) value of child `position` into its frame's copy. The copy is
 * started lazily at the first child that differs, seeded with the unchanged children before
 * it, so key order is preserved and unchanged containers are never copied.
 */
function record(frame: Frame, position: number, value: unknown, omit: boolean): void {
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
  if (frame.contentChanged) {
    const copy = frame.copy as Record<string, unknown>;
    if (typeof copy.content === "string" && typeof copy.lineCount === "number") {
      copy.lineCount = countLines(copy.content);
    }
  }
  return frame.copy;
}

/** Lines as `split("\n")` counts them (a trailing newline starts an empty last line). */
function countLines(text: string): number {
  let lines = 1;
  for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", at + 1)) lines += 1;
  return lines;
}

/**
 * Plain assignment of `__proto__` would change the copy's prototype instead of creating the
 * own property that `JSON.parse` produced, silently dropping the field on the next write.
 */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}
