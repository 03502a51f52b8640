/**
 * Inline images moved to blobs named by SHA-256 (short lines, each image stored once) and back: the decoded bytes of
 * image blocks, and provider image data URLs whole; on load, also the payloads GJC's compaction moved out (see
 * {@link restoreEvictedPayloads}). Entries are rewritten copy-on-write; the caller's sink and lookup hold the bytes.
 */
import { createHash } from "node:crypto";
import { isTransientKey } from "./sanitize.js";
import { isObject } from "./salvage.js";
import { entryBoundsProblem } from "./value-bounds.js";

/** Base64 images at least this long (in characters) are moved into blobs. */
export const BLOB_EXTERNALIZE_THRESHOLD = 1024;

/** Every blob reference starts with this, followed by 64 lowercase hex digits. */
export const BLOB_REF_PREFIX = "blob:sha256:";

const BLOB_REF = /^blob:sha256:([0-9a-f]{64})$/;

/** Where provider payloads carry an image as a data URL: the string under this key, or the `url` of an object there. */
const IMAGE_URL_KEY = "image_url";

/** Stores the bytes of an image (decoded base64, or a data URL's UTF-8) under their SHA-256 digest (lowercase hex). */
export type BlobSink = (bytes: Buffer, sha256Hex: string) => void;

/** Returns the bytes stored under a digest, or `undefined`/`null` when there are none. */
export type BlobLookup = (sha256Hex: string) => Uint8Array | undefined | null;

/** A blob reference left in place on load (no bytes, or bytes of another digest), by the `id` of its entry if any. */
export interface UnresolvedBlobRef {
  entryId: string | undefined;
  sha256: string;
  reason: "missing" | "digest_mismatch";
}

/** The digest of a strict `blob:sha256:<64 lowercase hex>` reference, else `null` (any other string is image data), as the peer's helper. */
export function parseBlobRef(value: unknown): string | null {
  // The length test first: image data is long, and a reference is exactly this long.
  if (typeof value !== "string" || value.length !== BLOB_REF_PREFIX.length + 64) return null;
  return BLOB_REF.exec(value)?.[1] ?? null;
}

/** Whether `value` is a strict `blob:sha256:<64 lowercase hex>` reference. */
export function isBlobRef(value: unknown): value is string {
  return parseBlobRef(value) !== null;
}

/** Lowercase hex SHA-256 of `bytes`: the name a blob is stored under. */
export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Whether `text` is an image data URL (`data:image/<type>;base64,<data>`), the form providers send images in. */
export function isImageDataUrl(text: string): boolean {
  return text.startsWith("data:image/") && text.includes(";base64,");
}

/**
 * Replaces with a reference, after `sink`: the `data` of each image block of a `message` or `custom_message` content
 * array that is canonical base64 of at least {@link BLOB_EXTERNALIZE_THRESHOLD} characters (other base64 would not
 * round-trip); and, at any depth, every image data URL under an `image_url` key or as the `url` of an object there,
 * whatever its length (the blob holds the URL's UTF-8, so it comes back as the same string).
 */
export function externalizeImageBlobs<E>(entry: E, sink: BlobSink): E {
  const store = (bytes: Buffer): string => {
    const digest = sha256Hex(bytes);
    sink(bytes, digest);
    return BLOB_REF_PREFIX + digest;
  };
  const blocks = rewriteImageData(entry, (data) => {
    if (data.length < BLOB_EXTERNALIZE_THRESHOLD) return data;
    const bytes = Buffer.from(data, "base64");
    return bytes.toString("base64") === data ? store(bytes) : data;
  });
  return rewriteImageUrls(blocks, (url) => (isImageDataUrl(url) ? store(Buffer.from(url, "utf8")) : url)) as E;
}

/** Turns blob references back into image blocks' base64, image data URLs and GJC's evicted payloads; a missing or mismatched blob leaves its reference, reported. */
export function resolveBlobRefs<E>(entries: readonly E[], lookup: BlobLookup): { entries: E[]; unresolved: UnresolvedBlobRef[] } {
  const unresolved: UnresolvedBlobRef[] = [];
  return { entries: entries.map((entry) => resolveEntryBlobRefs(entry, lookup, unresolved)), unresolved };
}

/** {@link resolveBlobRefs} of one entry, adding what it could not resolve to `unresolved`: the entry itself when it holds no reference. */
export function resolveEntryBlobRefs<E>(entry: E, lookup: BlobLookup, unresolved: UnresolvedBlobRef[]): E {
  const resolve = (text: string, encoding: "base64" | "utf8"): string => {
    const digest = parseBlobRef(text);
    if (digest === null) return text;
    const bytes = lookup(digest) ?? undefined;
    if (bytes !== undefined && sha256Hex(bytes) === digest) return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString(encoding);
    unresolved.push({ entryId: idOf(entry), sha256: digest, reason: bytes === undefined ? "missing" : "digest_mismatch" });
    return text;
  };
  const blocks = rewriteImageData(entry, (data) => resolve(data, "base64"));
  return restoreEvictedPayloads(rewriteImageUrls(blocks, (url) => resolve(url, "utf8")) as E, lookup, unresolved);
}

function idOf(entry: unknown): string | undefined {
  return isObject(entry) && typeof entry.id === "string" ? entry.id : undefined;
}

/** Applies `rewrite` to the `data` of every image block of the entry, copying only the path to a change. */
function rewriteImageData<E>(entry: E, rewrite: (data: string) => string): E {
  if (!isObject(entry)) return entry;
  const holder = entry.type === "message" ? entry.message : entry.type === "custom_message" ? entry : undefined;
  if (!isObject(holder)) return entry;
  const content = rewriteContent(holder.content, rewrite);
  if (content === holder.content) return entry;
  return (holder === entry ? { ...entry, content } : { ...entry, message: { ...holder, content } }) as E;
}

function rewriteContent(content: unknown, rewrite: (data: string) => string): unknown {
  if (!Array.isArray(content)) return content;
  let copy: unknown[] | undefined;
  for (let i = 0; i < content.length; i++) {
    const block: unknown = content[i];
    if (!isObject(block) || block.type !== "image" || typeof block.data !== "string") continue;
    const data = rewrite(block.data);
    if (data === block.data) continue;
    copy ??= content.slice();
    copy[i] = { ...block, data };
  }
  return copy ?? content;
}

/**
 * Applies `rewrite` to every string under an `image_url` key and to the string `url` of an object there, at any depth,
 * copying only the path to a change. Keys that persistence drops are not walked: nothing under them is ever written.
 * Entries nest no deeper than `MAX_ENTRY_DEPTH` (checked at the door and on load), which bounds the recursion.
 */
function rewriteImageUrls(value: unknown, rewrite: (url: string) => string, underImageUrl = false): unknown {
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (typeof item !== "object" || item === null) continue;
      const next = rewriteImageUrls(item, rewrite);
      if (next === item) continue;
      copy ??= value.slice();
      copy[i] = next;
    }
    return copy ?? value;
  }
  if (!isObject(value)) return value;
  let copy: Record<string, unknown> | undefined;
  // `for…in` allocates no key array; entries are JSON, plain objects with no inherited enumerable keys.
  for (const key in value) {
    const child = value[key];
    if (typeof child !== "object" || child === null) {
      if (typeof child !== "string" || (key !== IMAGE_URL_KEY && !(underImageUrl && key === "url"))) continue;
    } else if (isTransientKey(key)) continue;
    const next = typeof child === "string" ? rewrite(child) : rewriteImageUrls(child, rewrite, key === IMAGE_URL_KEY);
    if (next === child) continue;
    // A computed key defines an own property, so a `__proto__` key stays a plain field of the copy.
    copy = { ...(copy ?? value), [key]: next };
  }
  return copy ?? value;
}

// GJC's compacted-history eviction, read back: after a compaction GJC may replace large payloads of the entries it
// summarised (message text, thinking, tool-call arguments) with a notice and record in the entry's `evictedContent`
// marker where each payload went: `payloads` maps a dotted path (`message.content.0.text`, or `custom_message.content`
// for a custom message) to `{kind: "cold_spill", ref, encoding, sha256, ...}` naming a blob. This store never evicts;
// it puts such payloads back when it loads a GJC-written file, so the branch selector, exports and a context built
// after navigating before the compaction see what was said, as on GJC's own store.

/** The marker's `reason` for payloads moved out by a compaction. */
const COMPACTED_HISTORY = "compacted_history";

/** A path segment that would reach an object's prototype instead of its own data. */
const UNSAFE_SEGMENTS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);

/** Where an entry type's payload paths start: the name the paths begin with, and the value they walk from. */
function pathRoot(entry: Record<string, unknown>): { name: string; value: unknown } | undefined {
  if (entry.type === "message") return { name: "message", value: entry.message };
  if (entry.type === "custom_message") return { name: "custom_message", value: entry };
  return undefined;
}

/** The bytes a `cold_spill` payload record names, decoded as its encoding says; `undefined` with a reason when they cannot be had. */
function payloadValue(record: unknown, lookup: BlobLookup): { value: unknown } | { sha256: string; reason: UnresolvedBlobRef["reason"] } | undefined {
  if (!isObject(record) || record.kind !== "cold_spill" || (record.encoding !== "utf8" && record.encoding !== "json")) return undefined;
  const digest =
    typeof record.ref === "string" && record.ref.startsWith(BLOB_REF_PREFIX) ? parseBlobRef(record.ref) : parseBlobRef(BLOB_REF_PREFIX + String(record.sha256));
  if (digest === null) return undefined;
  if (record.sha256 !== undefined && record.sha256 !== digest) return { sha256: digest, reason: "digest_mismatch" };
  const bytes = lookup(digest) ?? undefined;
  if (bytes === undefined) return { sha256: digest, reason: "missing" };
  if (sha256Hex(bytes) !== digest) return { sha256: digest, reason: "digest_mismatch" };
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
  if (record.encoding === "utf8") return { value: text };
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    // The blob is the one named, but the marker called it JSON: the record is wrong, not the blob.
    return undefined;
  }
}

/** `container` with `value` at `segments` (copying only the path to it), or `undefined` when the path leads nowhere in it. */
function withValueAt(container: unknown, segments: readonly string[], value: unknown): unknown {
  const [head, ...rest] = segments;
  if (head === undefined) return value;
  if (UNSAFE_SEGMENTS.has(head)) return undefined;
  if (Array.isArray(container)) {
    const index = Number(head);
    if (!/^(0|[1-9][0-9]*)$/.test(head) || index >= container.length) return undefined;
    const next = withValueAt(container[index], rest, value);
    if (next === undefined) return undefined;
    const copy = container.slice();
    copy[index] = next;
    return copy;
  }
  if (!isObject(container) || !Object.prototype.hasOwnProperty.call(container, head)) return undefined;
  const next = withValueAt(container[head], rest, value);
  // A computed key defines an own property, so no segment reaches a prototype.
  return next === undefined ? undefined : { ...container, [head]: next };
}

/**
 * `entry` with the payloads its `evictedContent` marker names put back from their blobs, and the marker dropped once
 * every one is back (the entry then is what GJC had before the eviction). A payload whose blob is missing or holds other
 * bytes stays a notice, is added to `unresolved`, and the marker stays; so does the whole entry when the restored one
 * would pass the entry bounds. Returns `entry` itself when it carries no such marker.
 */
export function restoreEvictedPayloads<E>(entry: E, lookup: BlobLookup, unresolved: UnresolvedBlobRef[]): E {
  if (!isObject(entry)) return entry;
  const marker = entry.evictedContent;
  if (!isObject(marker) || marker.reason !== COMPACTED_HISTORY || !isObject(marker.payloads)) return entry;
  const root = pathRoot(entry);
  if (root === undefined) return entry;
  let value = root.value;
  let complete = true;
  for (const key of Object.keys(marker.payloads)) {
    const payload = payloadValue(marker.payloads[key], lookup);
    const segments = key.split(".");
    if (payload === undefined || segments[0] !== root.name) {
      complete = false;
      continue;
    }
    if (!("value" in payload)) {
      unresolved.push({ entryId: typeof entry.id === "string" ? entry.id : undefined, sha256: payload.sha256, reason: payload.reason });
      complete = false;
      continue;
    }
    const next = withValueAt(value, segments.slice(1), payload.value);
    if (next === undefined) complete = false;
    else value = next;
  }
  if (value === root.value) return entry;
  const restored: Record<string, unknown> = root.name === "message" ? { ...entry, message: value } : { ...(value as Record<string, unknown>) };
  if (complete) delete restored.evictedContent;
  return entryBoundsProblem(restored) === undefined ? (restored as E) : entry;
}
