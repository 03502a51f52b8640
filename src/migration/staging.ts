/**
 * What a migration has written into staging and making it durable before it is published;
 * reading files back for their hashes.
 */
import { createHash } from "node:crypto";

import type { SecureDir, SecureFile } from "../fs/index.js";
import { MigrationError } from "./errors.js";

/** Most bytes read per call when copying or hashing. */
export const CHUNK_BYTES = 4 << 20;

/** A read buffer for a file of `size` bytes: the whole file in one read, up to {@link CHUNK_BYTES}. */
export function chunkBuffer(size: number): Buffer {
  return Buffer.allocUnsafe(Math.min(CHUNK_BYTES, Math.max(size, 1)));
}

/** SHA-256 and size of the owner-only file `name` in `dir`. */
export function hashManagedFile(dir: SecureDir, name: string): { size: number; sha256: string } {
  const file = dir.openFile(name);
  try {
    return hashOpenFile(file, chunkBuffer(file.stat().size));
  } finally {
    file.close();
  }
}

/**
 * SHA-256 and size of everything in the open `file`, read from its start in chunks into
 * `buffer`; each chunk is handed to `onChunk` (with its offset) before the buffer is reused.
 */
export function hashOpenFile(file: SecureFile, buffer: Buffer, onChunk?: (chunk: Buffer, position: number) => void): { size: number; sha256: string } {
  const hash = createHash("sha256");
  let position = 0;
  for (;;) {
    const n = file.read(buffer, { position });
    if (n === 0) break;
    const chunk = buffer.subarray(0, n);
    onChunk?.(chunk, position);
    hash.update(chunk);
    position += n;
  }
  return { size: position, sha256: hash.digest("hex") };
}

/**
 * The directories one attempt staged entries in (the ones it opened are closed by
 * {@link StagedSet.close}). Every staged file is fsynced as it is copied; the entries
 * naming them become durable when {@link StagedSet.makeDurable} syncs these directories.
 */
export class StagedSet {
  readonly #dirs: SecureDir[] = [];
  readonly #owned = new Set<SecureDir>();

  /** Records a directory entries were staged in; with `own`, {@link StagedSet.close} closes it. */
  holdDir(dir: SecureDir, options: { readonly own: boolean }): void {
    this.#dirs.push(dir);
    if (options.own) this.#owned.add(dir);
  }

  /** Syncs every held directory (each sync makes the entries staged in it durable). */
  async makeDurable(): Promise<void> {
    for (const dir of this.#dirs) await dir.syncAsync();
  }

  /** Closes the directories this set opened. Idempotent. */
  close(): void {
    for (const dir of this.#owned) dir.close();
    this.#owned.clear();
  }
}

/**
 * Writes `data` as the new owner-only file `name` of `dir` (created exclusively), fsyncs it
 * and reads it back: other bytes than written are `durability_failed` (`verify_mismatch`).
 */
export async function writeStagedFile(dir: SecureDir, name: string, data: Buffer): Promise<void> {
  const file = dir.openFile(name, { write: true, create: "exclusive" });
  try {
    file.write(data, 0);
    await file.syncAsync();
    if (!file.readAt(0, data.byteLength + 1).equals(data)) throw verifyMismatch();
  } finally {
    file.close();
  }
}

/** The error for a staged file that does not read back as written. */
export function verifyMismatch(): MigrationError {
  return new MigrationError("durability_failed", "verify_mismatch", "a copied file does not read back as written");
}
