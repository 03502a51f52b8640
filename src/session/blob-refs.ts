/**
 * Blob externalization for inline images. A base64 screenshot can be most of a session
 * file's bytes, and the same image is often repeated; moving it into a content-addressed
 * blob (named by the SHA-256 of its bytes) keeps lines short and stores each image once.
 *
 * This module only rewrites entries. Where the bytes live is the caller's business: it passes
 * a sink that stores them on write and a lookup that finds them on load. Inputs are never
 * mutated; an entry with nothing to rewrite comes back as the same reference.
 */

import { createHash } from "node:crypto";

/** Base64 images at least this long (in characters) are moved into blobs. */
export const BLOB_EXTERNALIZE_THRESHOLD = 1024;

/** Every blob reference starts with this, followed by 64 lowercase hex digits. */
export const BLOB_REF_PREFIX = "blob:sha256:";

const BLOB_REF = /^blob:sha256:([0-9a-f]{64})$/;

/** Stores the decoded bytes of an image under their SHA-256 digest (lowercase hex). */
export type BlobSink = (bytes: Buffer, sha256Hex: string) => void;

/** Returns the bytes stored under a digest, or `undefined`/`null` when there are none. */
export type BlobLookup = (sha256Hex: string) => Uint8Array | undefined | null;

/** Why a reference could not be turned back into image data. */
export type UnresolvedBlobReason =
  /** The lookup has no bytes for the digest. */
  | "missing"
  /** The lookup returned bytes whose SHA-256 is not the digest they were stored under. */
  | "digest_mismatch";

/** A blob reference left in place on load, with the reason. */
export interface UnresolvedBlobRef {
  /** The `id` of the entry holding the reference, if it has one. */
  entryId: string | undefined;
  sha256: string;
  reason: UnresolvedBlobReason;
}

/** Entries after resolution plus every reference that stayed a reference. */
export interface BlobResolution<E> {
  entries: E[];
  unresolved: UnresolvedBlobRef[];
}

/**
 * Parses the strict reference grammar `blob:sha256:<64 lowercase hex digits>`.
 *
 * @returns the digest, or `null` for anything else (upper-case hex, surrounding
 *   whitespace, a shorter or longer digest, a non-string), as the peer's helper does. Only
 *   an exact match is a reference; every other string is image data and is left alone.
 */
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

/**
 * Replaces every large inline image of a `message` or `custom_message` entry with a blob
 * reference, handing the decoded bytes to `sink` first.
 *
 * Only image blocks (`{ type: "image", data }`) directly inside the content array are
 * considered, and only when `data` is at least {@link BLOB_EXTERNALIZE_THRESHOLD} characters
 * of canonical base64. Non-canonical base64 (line breaks, missing padding, the URL-safe
 * alphabet) stays inline: decoding and re-encoding it would not give back the same text, and
 * the file must round-trip exactly.
 *
 * @returns `entry` itself when nothing was externalized, otherwise a copy.
 */
export function externalizeImageBlobs<E>(entry: E, sink: BlobSink): E {
  return rewriteImageData(entry, (data) => {
    if (data.length < BLOB_EXTERNALIZE_THRESHOLD) return data;
    const bytes = Buffer.from(data, "base64");
    if (bytes.toString("base64") !== data) return data;
    const digest = sha256Hex(bytes);
    sink(bytes, digest);
    return BLOB_REF_PREFIX + digest;
  });
}

/**
 * Turns blob references in the image blocks of each `message` / `custom_message` entry back
 * into base64 data.
 *
 * A reference whose blob is missing, or whose stored bytes no longer hash to the digest, is
 * kept as it is and reported: the entry stays loadable, and a later rewrite writes the
 * reference back rather than losing it.
 *
 * @returns new arrays; entries without references are the same objects as in `entries`.
 */
export function resolveBlobRefs<E>(entries: readonly E[], lookup: BlobLookup): BlobResolution<E> {
  const unresolved: UnresolvedBlobRef[] = [];
  const resolved = entries.map((entry) =>
    rewriteImageData(entry, (data) => {
      const digest = parseBlobRef(data);
      if (digest === null) return data;
      const bytes = lookup(digest);
      const entryId = idOf(entry);
      if (bytes === undefined || bytes === null) {
        unresolved.push({ entryId, sha256: digest, reason: "missing" });
        return data;
      }
      if (sha256Hex(bytes) !== digest) {
        unresolved.push({ entryId, sha256: digest, reason: "digest_mismatch" });
        return data;
      }
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
    }),
  );
  return { entries: resolved, unresolved };
}

type JsonRecord = Record<string, unknown>;

function isRecord(value: unknown): value is JsonRecord {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function idOf(entry: unknown): string | undefined {
  return isRecord(entry) && typeof entry.id === "string" ? entry.id : undefined;
}

/**
 * Applies `rewrite` to the `data` of every image block in the entry's content array and
 * copies only the objects on the way to a changed block.
 */
function rewriteImageData<E>(entry: E, rewrite: (data: string) => string): E {
  if (!isRecord(entry)) return entry;
  if (entry.type === "message" && isRecord(entry.message)) {
    const content = rewriteContent(entry.message.content, rewrite);
    if (content === entry.message.content) return entry;
    return { ...entry, message: { ...entry.message, content } } as E;
  }
  if (entry.type === "custom_message") {
    const content = rewriteContent(entry.content, rewrite);
    if (content === entry.content) return entry;
    return { ...entry, content } as E;
  }
  return entry;
}

function rewriteContent(content: unknown, rewrite: (data: string) => string): unknown {
  if (!Array.isArray(content)) return content;
  let copy: unknown[] | undefined;
  for (let i = 0; i < content.length; i++) {
    const block: unknown = content[i];
    if (!isRecord(block) || block.type !== "image" || typeof block.data !== "string") continue;
    const data = rewrite(block.data);
    if (data === block.data) continue;
    copy ??= content.slice();
    copy[i] = { ...block, data };
  }
  return copy ?? content;
}
