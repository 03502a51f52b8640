/**
 * Content-addressed, immutable blobs (`<agent>/blobs/<sha256>`), kept through any
 * {@link SessionStorage}: on disk with the explicit or managed storage (files 0600 in a
 * 0700 directory), in memory for in-memory sessions. The name of a blob is the lowercase
 * hex SHA-256 of its bytes, so a name can only ever hold one content: a put never rewrites
 * an intact blob, and every read checks the bytes against the name.
 */

import path from "node:path";

import { BLOB_REF_PREFIX, parseBlobRef, sha256Hex, type BlobLookup } from "../session/blob-refs.js";
import { StorageError, isStorageError } from "./errors.js";
import type { SessionStorage } from "./types.js";

/** What a put did. */
export type BlobPutStatus =
  /** The blob was written (and synced) now. */
  | "created"
  /** An intact blob with this content was already there; nothing was written. */
  | "existing"
  /** A blob of this name was there but its bytes did not match; it was replaced atomically. */
  | "repaired";

/** The result of {@link BlobStore.put}. */
export interface BlobPutResult {
  /** Lowercase hex SHA-256 of the bytes. */
  digest: string;
  /** `blob:sha256:<digest>`: the string stored in session entries. */
  ref: string;
  status: BlobPutStatus;
}

/** The state of one blob, as {@link BlobStore.verify} finds it. */
export type BlobState = "intact" | "missing" | "corrupt";

/** Content-addressed blob store; see the module comment. */
export class BlobStore {
  /** The directory that holds the blobs. */
  readonly dir: string;
  readonly #storage: SessionStorage;

  /**
   * @param storage where the blobs live; `dir` must lie below its root.
   * @param dir the blob directory, conventionally `<agent>/blobs`; created 0700 on first put.
   */
  constructor(storage: SessionStorage, dir: string) {
    this.#storage = storage;
    this.dir = path.resolve(dir);
  }

  /**
   * Stores `bytes` and returns their reference. When this resolves the blob is durable
   * (file and directory synced), so a line that references it may be written next.
   */
  async put(bytes: Uint8Array): Promise<BlobPutResult> {
    return this.putSync(bytes);
  }

  /**
   * Synchronous {@link put}, for the session layer's synchronous blob sink. Blobs are
   * published with a no-replace step, so two writers of the same content never clobber
   * each other: the second finds the first's blob and verifies it.
   */
  putSync(bytes: Uint8Array): BlobPutResult {
    const digest = sha256Hex(bytes);
    const ref = BLOB_REF_PREFIX + digest;
    const file = path.join(this.dir, digest);
    this.#storage.ensureDirSync(this.dir);
    try {
      this.#storage.writeTextSync(file, bytes, { noReplace: true });
      return { digest, ref, status: "created" };
    } catch (error) {
      if (!isStorageError(error, "already_exists")) throw error;
    }
    if (sha256Hex(this.#storage.readBytesSync(file)) === digest) return { digest, ref, status: "existing" };
    // The name fixes the content, and these bytes are that content: replacing the damaged
    // copy loses nothing, while keeping it would leave the reference unresolvable.
    this.#storage.writeTextSync(file, bytes);
    return { digest, ref, status: "repaired" };
  }

  /**
   * The bytes of the blob `ref` refers to.
   * @throws StorageError `invalid_blob_ref` (not a strict reference), `not_found`, or
   *   `blob_corrupt` (the stored bytes do not hash to the digest).
   */
  async get(ref: string): Promise<Buffer> {
    return this.getSync(ref);
  }

  /** Synchronous {@link get}. */
  getSync(ref: string): Buffer {
    const digest = digestOf(ref);
    const bytes = this.#storage.readBytesSync(path.join(this.dir, digest));
    if (sha256Hex(bytes) !== digest) {
      throw new StorageError("blob_corrupt", `blob ${digest} does not match its digest`, {
        path: path.join(this.dir, digest),
      });
    }
    return bytes;
  }

  /** Whether the blob exists, is intact, or is corrupt. Reads and hashes it. */
  async verify(ref: string): Promise<BlobState> {
    try {
      this.getSync(ref);
      return "intact";
    } catch (error) {
      if (isStorageError(error, "not_found")) return "missing";
      if (isStorageError(error, "blob_corrupt")) return "corrupt";
      throw error;
    }
  }

  /**
   * A lookup for the session layer's `resolveBlobRefs`: the stored bytes of a digest, or
   * `undefined` when there are none. The bytes are returned as stored; the session layer
   * hashes them and reports a mismatch itself, so it can tell "missing" from "corrupt".
   */
  lookup(): BlobLookup {
    return (digest) => {
      try {
        return this.#storage.readBytesSync(path.join(this.dir, digestOf(BLOB_REF_PREFIX + digest)));
      } catch (error) {
        if (isStorageError(error, "not_found")) return undefined;
        throw error;
      }
    };
  }
}

/**
 * The digest of a strict `blob:sha256:<64 lowercase hex>` reference.
 * @throws StorageError `invalid_blob_ref` for anything else.
 */
export function digestOf(ref: string): string {
  const digest = parseBlobRef(ref);
  if (digest === undefined) {
    throw new StorageError("invalid_blob_ref", "not a blob:sha256:<64 lowercase hex> reference");
  }
  return digest;
}
