/**
 * {@link SessionStorage} over the secure fs layer: everything below a held, verified root is
 * reached by descriptor without following links and passes the owner-only checks each time it
 * is opened; a failing object is refused (`unsafe_entry`, fs-layer code in `detail`), never
 * repaired silently. Directory handles below the root are opened per operation, never cached
 * (a cached one would outlive a removed and recreated directory, and appends would land in the
 * orphan); a writer holds its own file and directory handles for its lifetime.
 */

import path from "node:path";

import { SecureDir, SecureFsError, type SecureDirEntry, type SecureFile, type SecureLock, type SecureStat } from "../fs/index.js";
import { SyncBackedStorage } from "./sync-backed.js";
import { positionalReader, concatChunks, readFileAt, type PositionalRead } from "./bytes.js";
import { guardStorage, pathError, requireSizeKept, requireStillNamed, toStorageError, type StorageError } from "./errors.js";
import { NdjsonFileWriter, consoleStorageLogger } from "./ndjson-writer.js";
import { SESSIONS_DIRECTORY, splitBelowRoot, splitFilePath } from "./paths.js";
import type {
  LineSink,
  ReplaceOptions,
  SessionFileReader,
  SessionStorage,
  SessionStorageWriter,
  SidecarFile,
  StorageLogger,
  StorageStat,
  WriteChunk,
} from "./types.js";
import { removeOwnStaging } from "./stale-staging.js";
import { lockWriter, withWriterLock } from "./writer-lock.js";

/** Options of {@link ManagedSessionStorage.open}. */
export interface ManagedSessionStorageOptions {
  /** Create the root (and missing ancestors) owner-only when it does not exist. */
  create?: boolean;
  /** Receives a writer's first failure. */
  logger?: StorageLogger;
}

/** Owner-only {@link SessionStorage} on held descriptors; see the module comment. */
export class ManagedSessionStorage extends SyncBackedStorage implements SessionStorage {
  /** {@inheritDoc SessionStorage.root} */
  readonly root: string;
  readonly #rootDir: SecureDir;
  readonly #logger: StorageLogger;
  #closed = false;
  /** Open writers of files directly in the root: they rewrite through the root's handle. */
  #rootWriters = 0;

  /** Wraps an open root, which the caller still closes (or {@link close} does). */
  constructor(rootDir: SecureDir, options: { logger?: StorageLogger } = {}) {
    super();
    this.#rootDir = rootDir;
    this.root = rootDir.path;
    this.#logger = options.logger ?? consoleStorageLogger;
  }

  /**
   * Opens (or with `create`, makes) the owner-only root at `rootPath` and returns a storage below it.
   * A root in the agent layout (`<agent>/sessions[/...]`) is reached from the agent directory: that
   * is opened as the trusted root (no link, owner-only, ancestors checked) and every name from it to
   * `rootPath` by descriptor, so a linked or loose agent directory or `sessions/` is refused as
   * every other entry point refuses it, never followed.
   */
  static open(rootPath: string, options: ManagedSessionStorageOptions = {}): ManagedSessionStorage {
    const create = options.create === true;
    const rootDir = guardStorage("read", rootPath, () => {
      const layout = agentLayoutOf(rootPath);
      if (layout === undefined) return SecureDir.openRoot(rootPath, { create });
      const agent = SecureDir.openRoot(layout.agentDir, { create });
      try {
        return agent.openDir(layout.names, { create });
      } finally {
        agent.close();
      }
    });
    return new ManagedSessionStorage(rootDir, options.logger === undefined ? {} : { logger: options.logger });
  }

  /**
   * Ends the storage (idempotent): its operations fail with `writer_closed` from now on. Its
   * writers work until closed; those in the root borrow its descriptor, closed with the last.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#rootWriters === 0) this.#rootDir.close();
  }

  #root(): SecureDir {
    if (this.#closed) throw new SecureFsError("closed", { path: this.root });
    return this.#rootDir;
  }

  /** {@inheritDoc SessionStorage.ensureDirSync} */
  ensureDirSync(dir: string): void {
    const { absolute, names } = splitBelowRoot(this.root, dir);
    guardStorage("write", absolute, () => this.#withDirectory(names, true, () => undefined));
  }

  /** {@inheritDoc SessionStorage.existsSync} */
  override existsSync(target: string): boolean {
    // The held root exists, even once this storage is closed.
    return splitBelowRoot(this.root, target).names.length === 0 || super.existsSync(target);
  }

  /** {@inheritDoc SessionStorage.writeTextSync} */
  writeTextSync(target: string, data: WriteChunk, options: ReplaceOptions = {}): void {
    const { absolute, names } = splitFilePath(this.root, target);
    guardStorage("write", absolute, () =>
      this.#withParent(names, (dir, name) => {
        refuseNonFile(dir, name, absolute, true);
        dir.writeFileAtomic(name, concatChunks([data]), options);
      }),
    );
  }

  /** {@inheritDoc SessionStorage.statSync} */
  statSync(target: string): StorageStat {
    const { absolute, names } = splitBelowRoot(this.root, target);
    return guardStorage("read", absolute, () => {
      if (names.length === 0) return fromSecureStat(this.#root().stat());
      return this.#withParent(names, (dir, name) => fromSecureStat(refuseLink(dir.stat(name), absolute)));
    });
  }

  /** {@inheritDoc SessionStorage.listFilesSync} */
  listFilesSync(dir: string, options: { kind?: "file" | "directory" } = {}): string[] {
    const kind = options.kind ?? "file";
    return this.listEntriesSync(dir)
      .filter((entry) => entry.type === kind)
      .map((entry) => entry.name)
      .sort();
  }

  /** {@inheritDoc SessionStorage.statEntriesSync} */
  statEntriesSync(dirPath: string, names: readonly string[]): (StorageStat | StorageError)[] {
    const { absolute, names: parts } = splitBelowRoot(this.root, dirPath);
    return guardStorage("read", absolute, () =>
      // One verified directory handle for the batch; each entry is one no-follow fstatat.
      this.#withDirectory(parts, false, (dir) =>
        names.map((name) => {
          const target = path.join(absolute, name);
          try {
            return fromSecureStat(refuseLink(dir.stat(name), target));
          } catch (error) {
            return toStorageError(error, "read", target);
          }
        }),
      ),
    );
  }

  /** Every entry of `dir` but dot names, typed (`unknown` resolved by a no-follow stat), nothing followed: for listings reporting skips. */
  listEntriesSync(dir: string): SecureDirEntry[] {
    const { absolute, names } = splitBelowRoot(this.root, dir);
    return guardStorage("read", absolute, () =>
      this.#withDirectory(names, false, (held) =>
        held
          .list()
          .filter((entry) => !entry.name.startsWith("."))
          .map((entry) => (entry.type === "unknown" ? { name: entry.name, type: held.stat(entry.name).type } : entry)),
      ),
    );
  }

  /** {@inheritDoc SessionStorage.openReaderSync} */
  openReaderSync(target: string): SessionFileReader {
    const { absolute, names } = splitFilePath(this.root, target);
    return guardStorage("read", absolute, () => {
      // One native call opens and verifies each directory on the way and the file.
      const file = this.#root().openFile(names);
      try {
        const read: PositionalRead = (into, offset, length, at) => file.read(into, { offset, length, position: at });
        return positionalReader(absolute, fromSecureStat(file.stat()), read, () => file.close());
      } catch (error) {
        file.close();
        throw error;
      }
    });
  }

  /**
   * {@inheritDoc SessionStorage.renameSync}
   *
   * Within one directory under `noReplace`, one no-replace publish. Otherwise (the secure layer
   * has no replacing or cross-directory rename) an atomic copy, then removal of `from`, under
   * the source's writer lock: a crash between leaves both names, never neither.
   */
  renameSync(from: string, to: string, options: ReplaceOptions = {}): void {
    const source = splitFilePath(this.root, from);
    const destination = splitFilePath(this.root, to);
    if (source.absolute === destination.absolute) {
      this.statSync(source.absolute);
      if (options.noReplace === true) throw pathError("already_exists", destination.absolute);
      return;
    }
    guardStorage("write", source.absolute, () =>
      this.#withParent(source.names, (sourceDir, sourceName) => {
        refuseNonFile(sourceDir, sourceName, source.absolute);
        withWriterLock(sourceDir, sourceName, () => {
          if (options.noReplace === true && source.parents.join("/") === destination.parents.join("/")) {
            sourceDir.publishNoReplace(sourceName, destination.name);
            return;
          }
          const data = readFileAt(sourceDir, sourceName);
          this.#withParent(destination.names, (destinationDir, destinationName) => {
            refuseNonFile(destinationDir, destinationName, destination.absolute, true);
            destinationDir.writeFileAtomic(destinationName, data, options);
          });
          sourceDir.unlink(sourceName);
          sourceDir.sync();
        });
      }),
    );
  }

  /** {@inheritDoc SessionStorage.unlink} */
  async unlink(target: string): Promise<void> {
    const { absolute, names } = splitFilePath(this.root, target);
    guardStorage("write", absolute, () =>
      this.#withParent(names, (dir, name) => {
        refuseNonFile(dir, name, absolute);
        withWriterLock(dir, name, () => dir.unlink(name));
      }),
    );
  }

  /** {@inheritDoc SessionStorage.openWriter} */
  openWriter(target: string): SessionStorageWriter {
    const { absolute, parents, name } = splitFilePath(this.root, target);
    return guardStorage("write", absolute, () => {
      const { dir, owned } = this.#openDirectory(parents, false);
      let lock: SecureLock | undefined;
      try {
        lock = lockWriter(dir, name);
        // Holding the lock, every temporary of a write to this file is a killed rewrite's.
        removeOwnStaging(dir, name);
        const sink = this.#sink(absolute, dir, owned, name, openOrCreateForAppend(dir, name), lock);
        if (!owned) this.#rootWriters += 1;
        return new NdjsonFileWriter(sink, this.#logger);
      } catch (error) {
        lock?.release();
        if (owned) dir.close();
        throw error;
      }
    });
  }

  /** Appends through a held, verified file; rewrites through the held directory, closed with the sink (a borrowed root: see {@link close}). */
  #sink(absolute: string, dir: SecureDir, owned: boolean, name: string, opened: SecureFile, lock: SecureLock): LineSink {
    let file = opened;
    let closed = false;
    const sidecars = new Set<SidecarFile>();
    // Every byte of the file comes through this sink while it holds the lock: any other size is someone else's doing.
    let size = file.stat().size;
    /** the file and its size at the last check that passed: rows of lines no later than that need no check of their own */
    let checked: { file: SecureFile; size: number } | undefined;
    // The name is looked up in the held directory (no link followed), never by path.
    const checkNamedSync = (): void => {
      const held = file.stat();
      requireStillNamed(absolute, held, namedEntry(dir, name));
      requireSizeKept(absolute, held.size, size);
      checked = { file, size };
    };
    return {
      path: absolute,
      appendSync(data) {
        const written = file.append(data);
        size += written;
        return written;
      },
      lastByteSync() {
        const { size } = file.stat();
        return size === 0 ? undefined : file.readAt(size - 1, 1)[0];
      },
      syncSync: () => file.sync(),
      checkNamedSync,
      openReaderSync() {
        // Borrowed: the sink closes the file; a rewrite's replacement is read by a reader made after it.
        const held = file;
        const read: PositionalRead = (into, offset, length, at) => {
          if (closed || file !== held) throw pathError("reader_closed", absolute);
          return held.read(into, { offset, length, position: at });
        };
        return positionalReader(absolute, fromSecureStat(held.stat()), read, () => undefined);
      },
      async replace(chunks) {
        dir.writeFileAtomic(name, concatChunks(chunks));
        const previous = file;
        file = dir.openFile(name, { append: true });
        size = file.stat().size;
        previous.close();
      },
      openSidecar(sidecar, options = {}) {
        let held: SecureFile;
        if (options.existing !== true) held = openOrCreateForAppend(dir, sidecar);
        else {
          try {
            // Opened verified owner-only, as every file here; anything else is no sidecar to trust.
            held = dir.openFile(sidecar, { append: true });
          } catch {
            return undefined;
          }
        }
        let open = true;
        const handle: SidecarFile = {
          appendSync(data) {
            // Rows of lines in a file nobody opens by its name would describe another file; a check since the last
            // line was appended (a flush's) already covers every line they can describe.
            if (checked?.file !== file || checked.size !== size) checkNamedSync();
            held.append(data);
          },
          replaceSync(data) {
            dir.writeFileAtomic(sidecar, data);
            const previous = held;
            held = dir.openFile(sidecar, { append: true });
            previous.close();
          },
          openReaderSync() {
            const reading = held;
            const read: PositionalRead = (into, offset, length, at) => {
              if (!open || held !== reading) throw pathError("reader_closed", path.join(dir.path, sidecar));
              return reading.read(into, { offset, length, position: at });
            };
            return positionalReader(path.join(dir.path, sidecar), fromSecureStat(reading.stat()), read, () => undefined);
          },
          closeSync() {
            if (!open) return;
            open = false;
            sidecars.delete(handle);
            held.close();
          },
        };
        sidecars.add(handle);
        return handle;
      },
      closeSync: () => {
        if (closed) return;
        closed = true;
        for (const sidecar of sidecars) sidecar.closeSync();
        try {
          file.close();
        } finally {
          lock.release();
          if (owned) dir.close();
          else if (--this.#rootWriters === 0 && this.#closed) this.#rootDir.close();
        }
      },
    };
  }

  /** The directory `names` below the root, each component verified (one native call); `owned`: the caller closes it (the root is shared). */
  #openDirectory(names: readonly string[], create: boolean): { dir: SecureDir; owned: boolean } {
    const root = this.#root();
    return names.length === 0 ? { dir: root, owned: false } : { dir: root.openDir(names, { create }), owned: true };
  }

  #withDirectory<T>(names: readonly string[], create: boolean, use: (dir: SecureDir) => T): T {
    const { dir, owned } = this.#openDirectory(names, create);
    try {
      return use(dir);
    } finally {
      if (owned) dir.close();
    }
  }

  #withParent<T>(names: readonly string[], use: (dir: SecureDir, name: string) => T): T {
    return this.#withDirectory(names.slice(0, -1), false, (dir) => use(dir, names[names.length - 1] as string));
  }
}

/**
 * Opens `name` for appending, creating it if missing; a creation syncs the directory so the name survives a power cut.
 * The file nearly always exists (a session opened again, its sidecar), so it is opened first and created only when absent.
 */
function openOrCreateForAppend(dir: SecureDir, name: string): SecureFile {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return dir.openFile(name, { append: true });
    } catch (error) {
      if (attempt > 0 || toStorageError(error, "write", dir.path).code !== "not_found") throw error;
    }
    let file: SecureFile;
    try {
      file = dir.openFile(name, { append: true, create: "exclusive" });
    } catch (error) {
      // Made by someone else since: open theirs, once.
      if (toStorageError(error, "write", dir.path).code !== "already_exists") throw error;
      continue;
    }
    try {
      dir.sync();
    } catch (error) {
      file.close();
      throw error;
    }
    return file;
  }
}

/**
 * `rootPath` split at its last `sessions` component: the agent directory above it and the names
 * from there down (lexical, after resolving `.` and `..`), or `undefined` outside that layout.
 */
function agentLayoutOf(rootPath: string): { agentDir: string; names: string[] } | undefined {
  if (typeof rootPath !== "string" || rootPath.length === 0) return undefined;
  const parts = path.resolve(rootPath).split(path.sep);
  const at = parts.lastIndexOf(SESSIONS_DIRECTORY);
  // parts[0] is the empty name before the leading separator: the agent directory needs a name.
  if (at < 2) return undefined;
  return { agentDir: parts.slice(0, at).join(path.sep), names: parts.slice(at) };
}

/** What entry `name` of `dir` is now (no link followed), `undefined` when nothing is there. */
function namedEntry(dir: SecureDir, name: string): SecureStat | undefined {
  try {
    return dir.stat(name);
  } catch (error) {
    if (error instanceof SecureFsError && error.code === "not_found") return undefined;
    throw error;
  }
}

function refuseLink(stat: SecureStat, absolute: string): SecureStat {
  if (stat.type === "symlink") throw pathError("symlink_refused", absolute);
  return stat;
}

/** Refuses a link or non-file at `name`; a missing entry passes only when `allowMissing`. */
function refuseNonFile(dir: SecureDir, name: string, absolute: string, allowMissing = false): void {
  let stat: SecureStat;
  try {
    stat = dir.stat(name);
  } catch (error) {
    if (allowMissing && toStorageError(error, "read", absolute).code === "not_found") return;
    throw error;
  }
  refuseLink(stat, absolute);
  if (stat.type !== "file") throw pathError("not_regular_file", absolute);
}

function fromSecureStat(stat: SecureStat): StorageStat {
  return {
    kind: stat.type === "file" ? "file" : stat.type === "directory" ? "directory" : "other",
    size: stat.size,
    mtimeMs: stat.mtimeMs,
    dev: stat.dev,
    ino: stat.ino,
    ctimeMs: stat.ctimeMs,
  };
}
