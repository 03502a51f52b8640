/** Byte helpers of the storages: chunks batched into few writes, whole-file and positional reads, UTF-8-safe prefixes. */

import type { SecureDir } from "../fs/index.js";
import { StorageError, guardStorage, pathError } from "./errors.js";
import type { SessionFileReader, StorageStat, WriteChunk } from "./types.js";

/** Chunks are gathered into writes of about this many bytes: few syscalls, bounded memory. */
const BATCH_BYTES = 1 << 20;

/** Groups `chunks` into buffers of roughly {@link BATCH_BYTES}, in order. */
export function* batchChunks(chunks: Iterable<WriteChunk>): Generator<Buffer> {
  let texts: string[] = [];
  let pending = 0;
  for (const chunk of chunks) {
    if (typeof chunk !== "string") {
      if (texts.length > 0) yield Buffer.from(texts.join(""), "utf8");
      [texts, pending] = [[], 0];
      yield Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      continue;
    }
    texts.push(chunk);
    // UTF-16 length underestimates UTF-8 bytes by at most 3x: fine for a batching bound.
    pending += chunk.length;
    if (pending >= BATCH_BYTES) {
      yield Buffer.from(texts.join(""), "utf8");
      [texts, pending] = [[], 0];
    }
  }
  if (texts.length > 0) yield Buffer.from(texts.join(""), "utf8");
}

/** All chunks as one buffer (for backends that publish a whole file in one call). */
export function concatChunks(chunks: Iterable<WriteChunk>): Buffer {
  return Buffer.concat([...batchChunks(chunks)]);
}

/** A positional read into `buffer[offset..offset+length)`; returns the byte count, 0 at end of file. */
export type PositionalRead = (buffer: Uint8Array, offset: number, length: number, position: number) => number;

/** The {@link SessionFileReader} of every storage: positional reads of one open object, released once. */
export function positionalReader(path: string, stat: StorageStat, read: PositionalRead, release: () => void): SessionFileReader {
  let open = true;
  return {
    path,
    stat,
    readSync(buffer, position) {
      if (!open) throw pathError("reader_closed", path);
      return guardStorage("read", path, () => {
        checkByteCount(position, "position");
        // Short only at end of file.
        let filled = 0;
        while (filled < buffer.length) {
          const count = read(buffer, filled, buffer.length - filled, position + filled);
          if (count === 0) break;
          filled += count;
        }
        return filled;
      });
    },
    close() {
      if (!open) return;
      open = false;
      release();
    },
  };
}

/**
 * The whole file through `read` (sized by a stat of the same descriptor), with anything appended
 * since. The byte past `size` lets the final 0-byte read land without growing the buffer.
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

/** The whole owner-only file `name` of `dir` (see {@link readWholeSync}), opened and closed here. */
export function readFileAt(dir: SecureDir, name: string): Buffer {
  const file = dir.openFile(name);
  try {
    return readWholeSync(file.stat().size, (buffer, offset, length, position) => file.read(buffer, { offset, length, position }));
  } finally {
    file.close();
  }
}

/** Decodes a bounded prefix read, dropping a character the bound cut in half. */
export function decodeUtf8Prefix(bytes: Buffer): string {
  let end = bytes.length;
  // Only the last (at most four) bytes can belong to a cut sequence.
  for (let back = 1; back <= Math.min(4, bytes.length); back++) {
    const byte = bytes[bytes.length - back] as number;
    if ((byte & 0xc0) === 0x80) continue;
    const needed = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    if (needed > back) end -= back;
    break;
  }
  return bytes.toString("utf8", 0, end);
}

/** Checks a size or offset of a bounded read: `invalid_argument` unless a non-negative safe integer. */
export function checkByteCount(value: unknown, what: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new StorageError("invalid_argument", `${what} must be a non-negative integer, not ${String(value)}`);
  }
  return value;
}
