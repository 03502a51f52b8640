/**
 * GJC's `MemorySessionStorage`: the main entry's map-backed storage with the two things GJC's
 * callers rely on. GJC's memory storage is a map from path to bytes with no directories, so a
 * file can be written at any absolute path and its parents are implied; here a write, a writer
 * or a rename creates the parents first, as `ensureDirSync` would. And GJC reads and deletes
 * through synchronous calls (`readTextSync`, `readBytesSync`, `unlinkSync`).
 * Everything else (one writer per file, files and directories never mixing, `noReplace`) keeps
 * the main entry's rules. The deletes GJC's callers make (with artifacts, verified) run the
 * file storage's checks on the map; a map has no crash between steps, so each is one call.
 */
import { createHash } from "node:crypto";
import path from "node:path";

import { MemorySessionStorage as EngineMemoryStorage, isStorageError, type MemorySessionStorageOptions, type StorageStat } from "../storage/index.js";
import { readWholeSync, type PositionalRead } from "../storage/bytes.js";
import type { ReplaceOptions, SessionStorageWriter, WriteChunk } from "../storage/index.js";
import { parseHeaderPrefix } from "../migration/session-file.js";
import { GJC_STAT_SHAPE, gjcStatOf, type SessionStorageSnapshot, type SessionStorageStat } from "./storage-types.js";
import { listingOrNone, matchingPaths } from "./strict-inventory.js";
import {
  SessionDeleteVerificationError,
  checkAuthorisedTranscript,
  contained,
  type VerifiedSessionDeleteResult,
  type VerifiedSessionDeleteTarget,
} from "./verified-delete.js";

/** The main entry's memory storage as this class's base: everything but `statSync`, which answers GJC's way here. */
interface EngineMemoryBase extends Omit<EngineMemoryStorage, "statSync" | "writeTextSync" | "openWriter" | "renameSync" | "listFilesSync"> {
  writeTextSync(target: string, data: WriteChunk, options?: ReplaceOptions): void;
  openWriter(target: string): SessionStorageWriter;
  renameSync(from: string, to: string, options?: ReplaceOptions): void;
  listFilesSync(dir: string, options?: { kind?: "file" | "directory" }): string[];
}
const EngineMemoryBase: new (options?: MemorySessionStorageOptions) => EngineMemoryBase = EngineMemoryStorage;
const engineStat = EngineMemoryStorage.prototype.statSync;

/**
 * The main entry's {@link EngineMemoryStorage} with GJC's implied parent directories, synchronous reads and stat shape;
 * see the module comment. The engine reads it through `engineStorage` (./storage-view.ts).
 */
export class MemorySessionStorage extends EngineMemoryBase {
  /** Stats in GJC's shape: the engine reads this storage through its view. */
  get [GJC_STAT_SHAPE](): true {
    return true;
  }

  /**
   * The metadata of `target` in GJC's shape (device 0, one link, times from the map's millisecond clock).
   * @throws StorageError `not_found`, `not_directory`, `invalid_path`
   */
  statSync(target: string): SessionStorageStat {
    return gjcStatOf(this.#engineStat(target));
  }

  /** Writes `target` whole, creating its parent directories first. */
  override writeTextSync(target: string, data: WriteChunk, options: ReplaceOptions = {}): void {
    this.#parents(target);
    super.writeTextSync(target, data, options);
  }

  /** Opens the one writer of `target`, creating its parent directories first. */
  override openWriter(target: string): SessionStorageWriter {
    this.#parents(target);
    return super.openWriter(target);
  }

  /** Moves file `from` to `to`, creating the parent directories of `to` first. */
  override renameSync(from: string, to: string, options: ReplaceOptions = {}): void {
    this.#parents(to);
    super.renameSync(from, to, options);
  }

  /**
   * The whole of file `target` as bytes.
   * @throws StorageError `not_found`, `not_regular_file`, `not_directory`
   */
  readBytesSync(target: string): Uint8Array {
    const reader = this.openReaderSync(target);
    try {
      const read: PositionalRead = (buffer, offset, length, position) => reader.readSync(buffer.subarray(offset, offset + length), position);
      return readWholeSync(reader.stat.size, read);
    } finally {
      reader.close();
    }
  }

  /**
   * The whole of file `target` decoded as UTF-8.
   * @throws StorageError as {@link readBytesSync}
   */
  readTextSync(target: string): string {
    return Buffer.from(this.readBytesSync(target)).toString("utf8");
  }

  /**
   * The bytes of file `target` and its metadata in GJC's form (device 0, one link, times from the map's millisecond clock).
   * @throws StorageError as {@link readBytesSync}
   */
  readSnapshotSync(target: string): SessionStorageSnapshot {
    const stat = this.statSync(target);
    return { bytes: this.readBytesSync(target), stat };
  }

  /**
   * The main entry's listing (sorted names), or, given a glob `pattern` as GJC's callers pass, the matching paths as
   * {@link listFilesStrictSync} finds them, a missing directory listing nothing.
   */
  override listFilesSync(dir: string, options?: { kind?: "file" | "directory" } | string): string[] {
    if (typeof options !== "string") return super.listFilesSync(dir, options);
    return listingOrNone(() => this.listFilesStrictSync(dir, options));
  }

  /** GJC's strict scan: see the file storage's `listFilesStrictSync`. @throws StorageError as `listFilesSync` */
  listFilesStrictSync(dir: string, pattern: string): string[] {
    return matchingPaths(path.resolve(this.root, dir), this.listFilesSync(dir), pattern);
  }

  /** Deletes session `sessionPath` (a missing one is fine; a live writer's is `session_busy`) and its artifacts directory. */
  async deleteSessionWithArtifacts(sessionPath: string): Promise<void> {
    this.#removeIfThere(() => this.unlinkSync(sessionPath));
    if (sessionPath.endsWith(".jsonl")) this.#removeIfThere(() => this.removeTreeSync(sessionPath.slice(0, -".jsonl".length)));
  }

  /**
   * The verified delete with the file storage's checks (containment, the authorised version, header id and cwd, an
   * artifacts entry that is a directory and was there when authorised), then artifacts and transcript in one call.
   * @returns `deleted` @throws SessionDeleteVerificationError having removed nothing
   */
  async deleteSessionVerified(target: VerifiedSessionDeleteTarget): Promise<VerifiedSessionDeleteResult> {
    contained(target);
    const transcript = path.resolve(target.transcriptPath);
    let snapshot: SessionStorageSnapshot;
    try {
      snapshot = this.readSnapshotSync(transcript);
    } catch (error) {
      throw new SessionDeleteVerificationError("stat", "the transcript could not be read", { cause: error });
    }
    const { stat, bytes } = snapshot;
    const found = { dev: stat.dev, ino: stat.ino, nlink: 1n, size: stat.size, mtimeNs: stat.mtimeNs, sha256: createHash("sha256").update(bytes).digest("hex") };
    checkAuthorisedTranscript(found, parseHeaderPrefix(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)), target);
    const artifacts = transcript.slice(0, -".jsonl".length);
    const kind = this.existsSync(artifacts) ? this.#engineStat(artifacts).kind : undefined;
    if (kind !== undefined && kind !== "directory") throw new SessionDeleteVerificationError("artifacts", "the artifacts entry is not a directory");
    if (kind !== undefined && target.artifactsAbsentAtAuthorization === true)
      throw new SessionDeleteVerificationError("artifacts", "an artifacts directory appeared after the delete was authorised");
    if (kind !== undefined) this.removeTreeSync(artifacts);
    this.unlinkSync(transcript);
    return { kind: "deleted" };
  }

  #removeIfThere(remove: () => void): void {
    try {
      remove();
    } catch (error) {
      if (!isStorageError(error, "not_found")) throw error;
    }
  }

  #engineStat(target: string): StorageStat {
    return engineStat.call(this as unknown as EngineMemoryStorage, target);
  }

  #parents(target: string): void {
    this.ensureDirSync(path.dirname(path.resolve(this.root, target)));
  }
}
