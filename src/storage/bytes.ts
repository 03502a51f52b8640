/**
 * Byte helpers shared by the storage implementations: batching many small chunks into few
 * writes, reading a whole file in one allocation, and cutting a bounded read at a UTF-8
 * character boundary.
 */

import { StorageError } from "./errors.js";
import type { SessionFileReader, WriteChunk } from "./types.js";

/** Chunks are gathered into writes of about this many bytes: few syscalls, bounded memory. */
const BATCH_BYTES = 1 << 20;

/**
 * Groups `chunks` into buffers of roughly {@link BATCH_BYTES}, in order. A 100k-line
 * rewrite then costs about a hundred write calls instead of a hundred thousand.
 */
export function* batchChunks(chunks: Iterable<WriteChunk>): Generator<Buffer> {
  let texts: string[] = [];
  let pending = 0;
  for (const chunk of chunks) {
    if (typeof chunk === "string") {
      texts.push(chunk);
      // UTF-16 length underestimates UTF-8 bytes by at most 3x: fine for a batching bound.
      pending += chunk.length;
    } else {
      if (texts.length > 0) {
        yield Buffer.from(texts.join(""), "utf8");
        texts = [];
      }
      pending = 0;
      yield Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      continue;
    }
    if (pending >= BATCH_BYTES) {
      yield Buffer.from(texts.join(""), "utf8");
      texts = [];
      pending = 0;
    }
  }
  if (texts.length > 0) yield Buffer.from(texts.join(""), "utf8");
}

/** A positional read into `buffer[offset..offset+length)`; returns the byte count, 0 at end of file. */
export type PositionalRead = (buffer: Uint8Array, offset: number, length: number, position: number) => number;

/** Fills `buffer` from `position` through `read`, stopping early only at end of file; returns the count. */
export function fillFrom(buffer: Uint8Array, position: number, read: PositionalRead): number {
  checkByteCount(position, "position");
  let filled = 0;
  while (filled < buffer.length) {
    const count = read(buffer, filled, buffer.length - filled, position + filled);
    if (count === 0) break;
    filled += count;
  }
  return filled;
}

/**
 * The whole file through `read`, sized by `size` from a stat of the same descriptor, and
 * including anything appended since: one allocation and no copy unless the file grew. The
 * byte past the size lets the read that returns 0 land without growing the buffer; a file
 * that keeps growing doubles it, at amortized linear cost.
 */
export function readWholeSync(size: number, read: PositionalRead): Buffer {
  let buffer = Buffer.allocUnsafe(size + 1);
  let filled = 0;
  for (;;) {
    if (filled === buffer.length) {
      const bigger = Buffer.allocUnsafe(Math.max(buffer.length * 2, 1 << 16));
      buffer.copy(bigger, 0, 0, filled);
      buffer = bigger;
    }
    const count = read(buffer, filled, buffer.length - filled, filled);
    if (count === 0) return buffer.subarray(0, filled);
    filled += count;
  }
}

/** All chunks as one buffer (for backends that publish a whole file in one call). */
export function concatChunks(chunks: Iterable<WriteChunk>): Buffer {
  return Buffer.concat([...batchChunks(chunks)]);
}

/**
 * The length of the longest prefix of `bytes` that does not end inside a UTF-8 sequence.
 * Only the last (at most four) bytes are inspected.
 */
function completeUtf8Length(bytes: Uint8Array): number {
  const n = bytes.length;
  for (let back = 1; back <= Math.min(4, n); back++) {
    const byte = bytes[n - back] as number;
    if ((byte & 0xc0) === 0x80) continue;
    const needed = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return needed > back ? n - back : n;
  }
  return n;
}

/**
 * The whole file behind `reader` as UTF-8, anything appended since it was opened included;
 * closes the reader. Every storage's `readText` is this, so all three read alike.
 */
export function readAllText(reader: SessionFileReader): string {
  try {
    const read: PositionalRead = (buffer, offset, length, position) => reader.readSync(buffer.subarray(offset, offset + length), position);
    return readWholeSync(reader.stat.size, read).toString("utf8");
  } finally {
    reader.close();
  }
}

/** At most `maxBytes` (already checked) from the start of `reader`'s file, see {@link decodeUtf8Prefix}; closes the reader. */
export function readPrefixText(reader: SessionFileReader, maxBytes: number): string {
  try {
    const buffer = Buffer.allocUnsafe(Math.min(maxBytes, reader.stat.size));
    return decodeUtf8Prefix(buffer.subarray(0, reader.readSync(buffer, 0)));
  } finally {
    reader.close();
  }
}

/** Decodes a bounded prefix read, dropping a character the bound cut in half. */
export function decodeUtf8Prefix(bytes: Buffer): string {
  return bytes.toString("utf8", 0, completeUtf8Length(bytes));
}

/**
 * Checks a size or offset argument of a bounded read.
 * @throws StorageError `invalid_argument` unless it is a non-negative safe integer.
 */
export function checkByteCount(value: unknown, what: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new StorageError("invalid_argument", `${what} must be a non-negative integer, not ${String(value)}`);
  }
  return value;
}
