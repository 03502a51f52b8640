/** SecureFile: an owner-only regular file, opened and verified by descriptor. */
import { decodeEvidence, native, type ExactStat, type NativeHandle, type SecureData, type VerifyEvidence } from "../native/index.js";
import { SecureFsError, requireArgument, unwrap } from "./errors.js";

/** Options of {@link SecureFile.read}. */
export interface ReadOptions {
  /** Where in `buffer` to start filling (default 0). */
  readonly offset?: number;
  /** How many bytes at most (default: the rest of `buffer`). */
  readonly length?: number;
  /** File position to read from. */
  readonly position: number;
}

/**
 * An open owner-only regular file, verified when opened (type, owner, 0600, one link, no ACL;
 * a read-only `source` by the legacy rules). Reads and writes do not re-check, so an append is
 * one `write`; {@link SecureFile.verify} checks again.
 */
export class SecureFile {
  readonly #handle: NativeHandle;
  /** The path this file was reached by, for messages only. */
  readonly path: string;

  /** @internal Use `SecureDir.openFile`. */
  constructor(handle: NativeHandle, path: string) {
    this.#handle = handle;
    this.path = path;
  }

  /** True once {@link SecureFile.close} ran. */
  get closed(): boolean {
    return !this.#handle.isOpen();
  }

  /** Reads into `buffer` at a file position; returns the byte count (0 at end of file). */
  read(buffer: Uint8Array, options: ReadOptions): number {
    const offset = options.offset ?? 0;
    const length = options.length ?? buffer.byteLength - offset;
    return unwrap(native.read(this.#handle, buffer, offset, length, options.position), "read", this.path);
  }

  /** Reads up to `length` bytes starting at `position` (fewer at end of file). */
  readAt(position: number, length: number): Buffer {
    requireArgument(Number.isSafeInteger(length) && length >= 0, "readAt", this.path);
    const buffer = Buffer.allocUnsafe(length);
    let filled = 0;
    while (filled < length) {
      const n = this.read(buffer, { offset: filled, length: length - filled, position: position + filled });
      if (n === 0) break;
      filled += n;
    }
    return buffer.subarray(0, filled);
  }

  /** The first `maxBytes` bytes of the file (fewer if it is shorter). */
  readPrefix(maxBytes: number): Buffer {
    return this.readAt(0, maxBytes);
  }

  /** The whole file, or `too_large` when it holds more than `maxBytes`. */
  readAll(options: { readonly maxBytes: number }): Buffer {
    const { maxBytes } = options;
    requireArgument(Number.isSafeInteger(maxBytes) && maxBytes >= 0, "readAll", this.path);
    // One byte past the bound tells a file at the limit from a bigger (or growing) one.
    const data = this.readAt(0, maxBytes + 1);
    if (data.byteLength > maxBytes) throw new SecureFsError("too_large", { operation: "readAll", path: this.path });
    return data;
  }

  /** Writes all of `data` at `position` (file opened with `write`). Returns the byte count. */
  write(data: SecureData, position: number): number {
    // The length is read here, before the addon could refuse a wrong type itself.
    requireArgument(typeof data === "string" || data instanceof Uint8Array, "write", this.path);
    const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
    return unwrap(native.write(this.#handle, bytes, 0, bytes.byteLength, position), "write", this.path);
  }

  /** Appends `data` at the end (file opened with `append`), one `write` normally. Returns the byte count. */
  append(data: SecureData): number {
    return unwrap(native.append(this.#handle, data), "append", this.path);
  }

  /** Flushes data and metadata to stable storage. */
  sync(): void {
    unwrap(native.sync(this.#handle), "sync", this.path);
  }

  /** {@link SecureFile.sync} on the libuv thread pool; a `close()` meanwhile takes effect when it is done. */
  async syncAsync(): Promise<void> {
    unwrap(await native.sync(this.#handle, { async: true }), "sync", this.path);
  }

  /** Metadata of the open file. */
  stat(): ExactStat {
    return unwrap(native.statHandle(this.#handle), "stat", this.path);
  }

  /** Sets access and modification times (nanoseconds since 1970) by descriptor, as a copy keeping its source's times does. */
  setTimes(atimeNs: bigint, mtimeNs: bigint): void {
    unwrap(native.setTimes(this.#handle, atimeNs, mtimeNs), "setTimes", this.path);
  }

  /** Checks the open file against the owner-only rules again; returns the evidence or throws. */
  verify(): VerifyEvidence {
    return decodeEvidence(unwrap(native.verify(this.#handle), "verify", this.path));
  }

  /** Owner-only apply: a file of the effective user with one link gets 0600 and no ACLs, then is verified; anything else is reported. */
  repair(): VerifyEvidence {
    return decodeEvidence(unwrap(native.verify(this.#handle, { repair: true }), "repair", this.path));
  }

  /** Closes the descriptor. Idempotent. */
  close(): void {
    native.close(this.#handle);
  }
}
