/**
 * The file the content checks read: either an open `SecureFile`, or one the directory
 * batch already opened owner-only and read whole, served from memory.
 */
import { SecureFsError, type DirectoryBatch, type SecureStat } from "../fs/index.js";

/** What the content checks use of a file that passed the owner-only open. */
export interface AuditFile {
  /** The whole content when the walk already read it; `undefined` for an open file. */
  readonly content?: Buffer | undefined;
  /** Its metadata (of the descriptor that passed the owner-only check). */
  stat(): Pick<SecureStat, "dev" | "ino" | "size">;
  /** Reads into `buffer` from `position`; returns the count, 0 at the end. */
  read(buffer: Uint8Array, options: { readonly position: number }): number;
  /** The whole file, or `too_large` when it holds more than `maxBytes`. */
  readAll(options: { readonly maxBytes: number }): Buffer;
}

/** A file the directory batch read whole. */
export class HeldFile implements AuditFile {
  readonly content: Buffer;
  readonly #batch: DirectoryBatch;
  readonly #index: number;
  readonly #rel: string;

  /** `content` is entry `index` of `batch`; `rel` names it in errors. */
  constructor(batch: DirectoryBatch, index: number, content: Buffer, rel: string) {
    this.#batch = batch;
    this.#index = index;
    this.content = content;
    this.#rel = rel;
  }

  stat(): Pick<SecureStat, "dev" | "ino" | "size"> {
    // A `read` entry always carries the stat of the handle it was read through.
    return this.#batch.stat(this.#index) as SecureStat;
  }

  read(buffer: Uint8Array, options: { readonly position: number }): number {
    const { position } = options;
    if (position >= this.content.length) return 0;
    return this.content.copy(buffer, 0, position);
  }

  readAll(options: { readonly maxBytes: number }): Buffer {
    if (this.content.length > options.maxBytes) throw new SecureFsError("too_large", { operation: "readAll", path: this.#rel });
    return this.content;
  }
}
