/**
 * {@link SessionStorage} on node:fs for an explicit session directory (`--session-dir`).
 *
 * Directories are created 0700 and files 0600, forced by `fchmod` because the umask varies;
 * files are opened with `O_NOFOLLOW`; the root and every component below it are checked with
 * `lstat` and a link there is refused (links above the root, such as macOS `/tmp`, are fine).
 * No directory descriptors are held, so a directory swapped between check and open is outside
 * what this promises; the final component is never followed.
 */

import fs from "node:fs";
import path from "node:path";

import { SyncBackedStorage } from "./sync-backed.js";
import { guardStorage, pathError, toStorageError, type StorageError } from "./errors.js";
import { NdjsonFileWriter, consoleStorageLogger } from "./ndjson-writer.js";
import {
  DIRECTORY_MODE,
  checkDirectory,
  checkFileAt,
  fromNodeStat,
  fromPlainNodeStat,
  lstatOrUndefined,
  openForAppend,
  openReader,
  publish,
  removeOwnTemporaries,
  replaceFile,
  syncDirectory,
  tightenDirectory,
  writeAllSync,
} from "./node-file-ops.js";
import { isPlainEntryName, normalizeRoot, splitBelowRoot, splitFilePath } from "./paths.js";
import type {
  LineSink,
  ReplaceOptions,
  SessionFileReader,
  SessionStorage,
  SessionStorageWriter,
  StorageLogger,
  StorageStat,
  WriteChunk,
} from "./types.js";
import { lockWriter, withWriterLock, type HeldWriterLock } from "./writer-lock.js";

/** Options of {@link FileSessionStorage}. */
export interface FileSessionStorageOptions {
  /** Receives a writer's first failure. */
  logger?: StorageLogger;
}

/** A file below the root: its absolute path, directory and name. */
interface FileTarget {
  absolute: string;
  dir: string;
  name: string;
}

/** {@link SessionStorage} for an explicit directory on node:fs; see the module comment. */
export class FileSessionStorage extends SyncBackedStorage implements SessionStorage {
  /** {@inheritDoc SessionStorage.root} */
  readonly root: string;
  readonly #logger: StorageLogger;

  /**
   * @param root absolute path of the session directory; it need not exist yet. Omitted (as
   *   GJC calls it), the root is the file system root, so a link anywhere on a path (a
   *   symlinked home or temporary directory included) is refused; pass the session directory
   *   to accept links above it.
   */
  constructor(root: string = path.parse(process.cwd()).root, options: FileSessionStorageOptions = {}) {
    super();
    this.root = normalizeRoot(root);
    this.#logger = options.logger ?? consoleStorageLogger;
  }

  /** {@inheritDoc SessionStorage.ensureDirSync} */
  ensureDirSync(dir: string): void {
    const { names } = splitBelowRoot(this.root, dir);
    guardStorage("write", this.root, () => {
      if (checkDirectory(this.root, true) === "missing") {
        const created = fs.mkdirSync(this.root, { recursive: true, mode: DIRECTORY_MODE });
        if (created !== undefined) tightenDirectory(this.root);
      }
    });
    let current = this.root;
    for (const name of names) {
      const here = (current = path.join(current, name));
      guardStorage("write", here, () => {
        if (checkDirectory(here, true) === "ok") return;
        try {
          fs.mkdirSync(here, { mode: DIRECTORY_MODE });
          tightenDirectory(here);
        } catch (error) {
          // Lost a race with another creator: accept it only if it is a real directory.
          if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
          checkDirectory(here, false);
        }
      });
    }
  }

  /** {@inheritDoc SessionStorage.existsSync} */
  existsSync(target: string): boolean {
    const { absolute, names } = splitBelowRoot(this.root, target);
    return guardStorage("read", absolute, () => {
      if (names.length === 0) return checkDirectory(this.root, true) === "ok";
      try {
        this.#checkDirectories(names.slice(0, -1));
      } catch (error) {
        if ((error as { code?: string }).code === "not_found") return false;
        throw error;
      }
      const stat = lstatOrUndefined(absolute);
      if (stat?.isSymbolicLink() === true) throw pathError("symlink_refused", absolute);
      return stat !== undefined;
    });
  }

  /** {@inheritDoc SessionStorage.writeTextSync} */
  writeTextSync(target: string, data: WriteChunk, options: ReplaceOptions = {}): void {
    const file = this.#fileTarget(target);
    guardStorage("write", file.absolute, () => {
      checkFileAt(file.absolute, options);
      fs.closeSync(replaceFile(file.dir, file.name, [data], options));
    });
  }

  /** {@inheritDoc SessionStorage.statSync} */
  statSync(target: string): StorageStat {
    const { absolute, names } = splitBelowRoot(this.root, target);
    return guardStorage("read", absolute, () => {
      this.#checkDirectories(names.slice(0, -1));
      const stat = fs.lstatSync(absolute, { bigint: true });
      if (stat.isSymbolicLink()) throw pathError("symlink_refused", absolute);
      return fromNodeStat(stat);
    });
  }

  /** {@inheritDoc SessionStorage.listFilesSync} */
  listFilesSync(dir: string, options: { kind?: "file" | "directory" } = {}): string[] {
    const directories = options.kind === "directory";
    const { absolute, names } = splitBelowRoot(this.root, dir);
    return guardStorage("read", absolute, () => {
      this.#checkDirectories(names);
      const found: string[] = [];
      for (const entry of fs.readdirSync(absolute, { withFileTypes: true })) {
        // Temporary files and lock directories are ours, not data.
        if (!entry.name.startsWith(".") && (directories ? entry.isDirectory() : entry.isFile())) found.push(entry.name);
      }
      return found.sort();
    });
  }

  /** {@inheritDoc SessionStorage.statEntriesSync} */
  statEntriesSync(dir: string, names: readonly string[]): (StorageStat | StorageError)[] {
    const rooted = splitBelowRoot(this.root, dir);
    return guardStorage("read", rooted.absolute, () => {
      this.#checkDirectories(rooted.names);
      // Entry names, not paths: concatenation gives what path.join would, far cheaper per entry.
      const prefix = path.join(rooted.absolute, path.sep);
      return names.map((name) => {
        const target = prefix + name;
        if (!isPlainEntryName(name)) return pathError("invalid_path", target);
        try {
          const plain = fs.lstatSync(target);
          if (plain.isSymbolicLink()) return pathError("symlink_refused", target);
          return fromPlainNodeStat(plain) ?? fromNodeStat(fs.lstatSync(target, { bigint: true }));
        } catch (error) {
          return toStorageError(error, "read", target);
        }
      });
    });
  }

  /** {@inheritDoc SessionStorage.openReaderSync} */
  openReaderSync(target: string): SessionFileReader {
    const { absolute } = this.#fileTarget(target);
    return guardStorage("read", absolute, () => openReader(absolute));
  }

  /** {@inheritDoc SessionStorage.renameSync} */
  renameSync(from: string, to: string, options: ReplaceOptions = {}): void {
    const source = this.#fileTarget(from);
    const destination = this.#fileTarget(to);
    guardStorage("write", source.absolute, () => {
      checkFileAt(source.absolute);
      checkFileAt(destination.absolute, options);
      if (source.absolute === destination.absolute) return;
      withWriterLock(source.dir, source.name, () => {
        publish(source.absolute, destination.absolute, options);
        syncDirectory(destination.dir);
        if (source.dir !== destination.dir) syncDirectory(source.dir);
      });
    });
  }

  /** {@inheritDoc SessionStorage.unlink} */
  async unlink(target: string): Promise<void> {
    const file = this.#fileTarget(target);
    guardStorage("write", file.absolute, () => {
      checkFileAt(file.absolute);
      withWriterLock(file.dir, file.name, () => fs.unlinkSync(file.absolute));
    });
  }

  /** {@inheritDoc SessionStorage.openWriter} */
  openWriter(target: string): SessionStorageWriter {
    const file = this.#fileTarget(target);
    const lock = guardStorage("write", file.absolute, () => lockWriter(file.dir, file.name));
    try {
      // Holding the lock, every temporary of a rewrite of this file is a killed rewrite's.
      removeOwnTemporaries(file.dir, file.name);
      const fd = guardStorage("write", file.absolute, () => {
        const { fd, created } = openForAppend(file.absolute);
        // A new file's name must survive a power cut as surely as the records in it.
        if (created) syncDirectory(file.dir);
        return fd;
      });
      return new NdjsonFileWriter(new FileLineSink(file, fd, lock), this.#logger);
    } catch (error) {
      lock.release();
      throw error;
    }
  }

  /** Resolves a file path and checks that its parent directories exist and are real. */
  #fileTarget(target: string): FileTarget {
    const { absolute, names, name } = splitFilePath(this.root, target);
    guardStorage("read", absolute, () => this.#checkDirectories(names.slice(0, -1)));
    return { absolute, dir: path.dirname(absolute), name };
  }

  /**
   * Checks the root and each directory named by `names`, outermost first.
   * @throws not_found / symlink_refused / not_directory
   */
  #checkDirectories(names: readonly string[]): void {
    let current = this.root;
    for (const name of ["", ...names]) {
      current = path.join(current, name);
      if (checkDirectory(current, true) === "missing") throw pathError("not_found", current);
    }
  }
}

/** Appends through one held descriptor, which follows the file across renames. */
class FileLineSink implements LineSink {
  readonly path: string;
  readonly #file: FileTarget;
  readonly #lock: HeldWriterLock;
  #fd: number;
  #closed = false;
  readonly #oneByte = Buffer.alloc(1);

  constructor(file: FileTarget, fd: number, lock: HeldWriterLock) {
    this.path = file.absolute;
    this.#file = file;
    this.#fd = fd;
    this.#lock = lock;
  }

  appendSync(data: string): number {
    return writeAllSync(this.#fd, data);
  }

  lastByteSync(): number | undefined {
    const { size } = fs.fstatSync(this.#fd);
    if (size === 0) return undefined;
    fs.readSync(this.#fd, this.#oneByte, 0, 1, size - 1);
    return this.#oneByte[0];
  }

  syncSync(): void {
    fs.fsyncSync(this.#fd);
  }

  async replace(chunks: Iterable<WriteChunk>): Promise<void> {
    const fd = replaceFile(this.#file.dir, this.#file.name, chunks, {});
    const previous = this.#fd;
    this.#fd = fd;
    fs.closeSync(previous);
  }

  closeSync(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      fs.closeSync(this.#fd);
    } finally {
      this.#lock.release();
    }
  }
}
