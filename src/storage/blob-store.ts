/**
 * Content-addressed, immutable blobs (conventionally `<agent>/blobs/<sha256>`) in the peer's
 * shape. The directory (owner-only, made on the first put) is opened once by descriptor and
 * held, so swapping a component of `dir` later cannot redirect a read or a write.
 */
import path from "node:path";

import { SecureDir, SecureFsError } from "../fs/index.js";
import { BLOB_REF_PREFIX, sha256Hex, type BlobLookup } from "../session/blob-refs.js";
import { readFileAt } from "./bytes.js";
import { StorageError, guardStorage, toStorageError } from "./errors.js";

/** What a put returns. */
export interface BlobPutResult {
  /** Lowercase hex SHA-256 of the bytes: the blob's name. */
  hash: string;
  /** Absolute path of the blob file (for messages; this store never reopens it by path). */
  path: string;
  /** `blob:sha256:<hash>`: the string stored in session entries. */
  readonly ref: string;
}

const HASH = /^[0-9a-f]{64}$/;

/** Content-addressed blob store; see the module comment. */
export class BlobStore {
  /** The directory that holds the blobs. */
  readonly dir: string;
  /** Opens the blob directory: by path, or as an entry of a held directory. */
  #openDir = (create: boolean): SecureDir => SecureDir.openRoot(this.dir, { create });
  /** The owner of the blob directory, for the message of a refusal; known only below a held directory. */
  #ownerOf = (): number | undefined => undefined;
  #held: SecureDir | undefined;

  /** @param dir the blob directory, conventionally `<agent>/blobs`; created 0700 on the first put. */
  constructor(dir: string) {
    if (typeof dir !== "string" || dir === "") throw new StorageError("invalid_argument", "BlobStore: dir must be a non-empty path");
    this.dir = path.resolve(dir);
  }

  /**
   * @internal A store whose directory is entry `name` of `parent`, a directory already opened
   * and verified by descriptor (the pinned agent root), so the blob directory is never reached
   * by path. `parent` must stay open until the store first reaches its directory.
   */
  static inDirectory(parent: SecureDir, name = "blobs"): BlobStore {
    const store = new BlobStore(path.join(parent.path, name));
    store.#openDir = (create) => parent.openDir(name, { create });
    store.#ownerOf = () => {
      try {
        return parent.stat(name).uid;
      } catch {
        return undefined;
      }
    };
    return store;
  }

  /**
   * Stores `data` and returns its reference, durable (file and directory synced) on return, so a
   * line referencing it may be written next. An intact blob is left alone, a damaged one replaced.
   */
  async put(data: Uint8Array): Promise<BlobPutResult> {
    const hash = sha256Hex(data);
    const dir = this.#open(true);
    try {
      await dir.writeFileAtomicAsync(hash, data, { noReplace: true });
    } catch (error) {
      this.#replaceDamaged(error, dir, hash, data);
    }
    return this.#result(hash);
  }

  /** Synchronous {@link BlobStore.put}, for the session layer's synchronous blob sink. */
  putSync(data: Uint8Array): BlobPutResult {
    const hash = sha256Hex(data);
    const dir = this.#open(true);
    try {
      dir.writeFileAtomic(hash, data, { noReplace: true });
    } catch (error) {
      this.#replaceDamaged(error, dir, hash, data);
    }
    return this.#result(hash);
  }

  /**
   * The stored bytes of blob `hash` (64 lowercase hex digits), unverified ({@link BlobStore.getChecked}
   * verifies), or `null` when there is none.
   * @throws StorageError `invalid_blob_ref`, `unsafe_entry` (fails the owner-only rules), `symlink_refused`, `read_failed`
   */
  async get(hash: string): Promise<Buffer | null> {
    return this.getSync(hash);
  }

  /** Synchronous {@link BlobStore.get}. */
  getSync(hash: string): Buffer | null {
    checkHash(hash);
    const dir = this.#open(false);
    return dir === undefined ? null : this.#read(dir, hash);
  }

  /** Whether blob `hash` exists (without reading or hashing it). */
  async has(hash: string): Promise<boolean> {
    checkHash(hash);
    const dir = this.#open(false);
    if (dir === undefined) return false;
    try {
      dir.stat(hash);
      return true;
    } catch (error) {
      if (isCode(error, "not_found")) return false;
      throw this.#error(error, "read", hash);
    }
  }

  /** {@link BlobStore.get}, then the bytes are hashed: `blob_corrupt` when they do not hash to `hash`. */
  async getChecked(hash: string): Promise<Buffer | null> {
    return this.getCheckedSync(hash);
  }

  /** Synchronous {@link BlobStore.getChecked}. */
  getCheckedSync(hash: string): Buffer | null {
    const bytes = this.getSync(hash);
    if (bytes !== null && sha256Hex(bytes) !== hash) {
      throw new StorageError("blob_corrupt", `blob ${hash} does not match its digest`, { path: path.join(this.dir, hash) });
    }
    return bytes;
  }

  /** A lookup for the session layer's `resolveBlobRefs`: stored bytes, unverified (it hashes them to tell "missing" from "corrupt"). */
  lookup(): BlobLookup {
    return (digest) => this.getSync(digest) ?? undefined;
  }

  /** Releases the held directory descriptor; the next call opens it again. */
  close(): void {
    this.#held?.close();
    this.#held = undefined;
  }

  /** The held directory, opened (and with `create`, made) on first need; undefined if missing. */
  #open(create: true): SecureDir;
  #open(create: false): SecureDir | undefined;
  #open(create: boolean): SecureDir | undefined {
    if (this.#held !== undefined) return this.#held;
    try {
      this.#held = this.#openDir(create);
    } catch (error) {
      if (!create && isCode(error, "not_found")) return undefined;
      if (error instanceof SecureFsError && error.code === "owner_mismatch") throw this.#foreign(error);
      throw this.#error(error, create ? "write" : "read");
    }
    return this.#held;
  }

  /** A blob directory another user owns (left from a once-loose agent directory): named, with the command that moves it aside. */
  #foreign(error: SecureFsError): StorageError {
    const owner = this.#ownerOf();
    const whose = owner === undefined ? "another user" : `uid ${owner}`;
    return new StorageError(
      "unsafe_entry",
      `the blob directory ${this.dir} belongs to ${whose}, so no image can be stored or read there; move it aside and a new one is made: ${moveAsideCommand(this.dir, owner)}`,
      { path: this.dir, detail: error.code, cause: error },
    );
  }

  #result(hash: string): BlobPutResult {
    return { hash, path: path.join(this.dir, hash), ref: BLOB_REF_PREFIX + hash };
  }

  /** The bytes of `hash` in `dir`, or null when missing. */
  #read(dir: SecureDir, hash: string): Buffer | null {
    try {
      return readFileAt(dir, hash);
    } catch (error) {
      if (isCode(error, "not_found")) return null;
      throw this.#error(error, "read", hash);
    }
  }

  /**
   * After a no-replace put failed with `error` (anything but a taken name throws): replaces the
   * blob there if it is damaged or gone. Rare, so synchronous in both forms of put.
   */
  #replaceDamaged(error: unknown, dir: SecureDir, hash: string, data: Uint8Array): void {
    if (!isCode(error, "already_exists")) throw this.#error(error, "write", hash);
    const bytes = this.#read(dir, hash);
    if (bytes === null || sha256Hex(bytes) !== hash) guardStorage("write", path.join(this.dir, hash), () => dir.writeFileAtomic(hash, data));
  }

  #error(error: unknown, direction: "read" | "write", hash?: string): StorageError {
    return toStorageError(error, direction, hash === undefined ? this.dir : path.join(this.dir, hash));
  }
}

/**
 * The POSIX shell command that renames a blob directory another user owns out of the way (to `<dir>.foreign-uid<N>`),
 * each path single-quoted. A rename within the agent directory needs no rights on the directory itself.
 */
export function moveAsideCommand(dir: string, owner: number | undefined): string {
  const aside = `${dir}.foreign${owner === undefined ? "" : `-uid${owner}`}`;
  return `mv -- ${shellQuoted(dir)} ${shellQuoted(aside)}`;
}

function shellQuoted(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

function isCode(error: unknown, code: "already_exists" | "not_found"): boolean {
  return error instanceof SecureFsError && error.code === code;
}

function checkHash(hash: unknown): asserts hash is string {
  if (typeof hash !== "string" || !HASH.test(hash)) {
    throw new StorageError("invalid_blob_ref", "not a blob hash (64 lowercase hex digits)");
  }
}
