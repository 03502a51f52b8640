/**
 * {@link SessionStorage} on node:fs for an explicit session directory (`--session-dir`).
 * Directories are made 0700 and files 0600 (forced by `fchmod`: the umask varies); the root
 * and every component below it are checked with `lstat` and a link there is refused (links
 * above the root, such as macOS `/tmp`, are fine). No directory descriptors are held, so a
 * directory swapped between check and open is outside what this promises; files are opened
 * `O_NOFOLLOW`.
 */

import fs from "node:fs";
import path from "node:path";

import type { SecureLock } from "../fs/index.js";
import { positionalReader, batchChunks, type PositionalRead } from "./bytes.js";
import { SyncBackedStorage } from "./sync-backed.js";
import { StorageError, guardStorage, isStorageError, pathError, requireSizeKept, requireStillNamed, toStorageError } from "./errors.js";
import { NdjsonFileWriter, consoleStorageLogger } from "./ndjson-writer.js";
import { isPlainEntryName, normalizeRoot, splitBelowRoot, splitFilePath, temporaryName } from "./paths.js";
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
  WriterOpenOptions,
} from "./types.js";
import { lockWriter, withWriterLock } from "./writer-lock.js";

const { constants } = fs;

// O_NONBLOCK keeps a FIFO planted at a file's name from hanging the open; anything but a
// regular file is refused after fstat.
const OPEN_READ = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const OPEN_APPEND = constants.O_RDWR | constants.O_APPEND | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const CREATE_NEW = constants.O_CREAT | constants.O_EXCL;
const OPEN_DIRECTORY = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const FILE_MODE = 0o600;
const DIRECTORY_MODE = 0o700;

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
   * @param root absolute path of the session directory; it need not exist yet. Omitted (as GJC
   *   calls it), it is the file system root, so a link anywhere on a path is refused.
   */
  constructor(root: string = path.parse(process.cwd()).root, options: FileSessionStorageOptions = {}) {
    super();
    this.root = normalizeRoot(root);
    this.#logger = options.logger ?? consoleStorageLogger;
  }

  /** {@inheritDoc SessionStorage.ensureDirSync} */
  ensureDirSync(dir: string): void {
    let current = this.root;
    for (const name of ["", ...splitBelowRoot(this.root, dir).names]) {
      const here = (current = path.join(current, name));
      guardStorage("write", here, () => {
        if (checkEntry(here, "directory", true)) return;
        try {
          // The root's missing ancestors are made with it; each directory below is made alone.
          const created = fs.mkdirSync(here, { recursive: name === "", mode: DIRECTORY_MODE });
          if (name !== "" || created !== undefined) onDirectory(here, (fd) => fs.fchmodSync(fd, DIRECTORY_MODE));
        } catch (error) {
          // Lost a race with another creator: accept it only if it is a real directory.
          if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
          checkEntry(here, "directory", false);
        }
      });
    }
  }

  /** {@inheritDoc SessionStorage.writeTextSync} */
  writeTextSync(target: string, data: WriteChunk, options: ReplaceOptions = {}): void {
    const file = this.#fileTarget(target);
    guardStorage("write", file.absolute, () => {
      checkDestination(file.absolute, options);
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
      checkEntry(source.absolute, "file", false);
      checkDestination(destination.absolute, options);
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
      checkEntry(file.absolute, "file", false);
      withWriterLock(file.dir, file.name, () => fs.unlinkSync(file.absolute));
    });
  }

  /** {@inheritDoc SessionStorage.openWriter} */
  openWriter(target: string, options: WriterOpenOptions = {}): SessionStorageWriter {
    const file = this.#fileTarget(target);
    const lock = guardStorage("write", file.absolute, () => lockWriter(file.dir, file.name));
    try {
      // Holding the lock, every temporary of a rewrite of this file is a killed rewrite's.
      removeOwnTemporaries(file.dir, file.name);
      const fd = guardStorage("write", file.absolute, () => openForAppend(file));
      return new NdjsonFileWriter(fileSink(file, fd, lock, options.closeDescriptor ?? closeDescriptor), this.#logger);
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

  /** Checks the root and each directory named by `names`, outermost first: `not_found`, `symlink_refused`, `not_directory`. */
  #checkDirectories(names: readonly string[]): void {
    let current = this.root;
    for (const name of ["", ...names]) {
      current = path.join(current, name);
      if (!checkEntry(current, "directory", true)) throw pathError("not_found", current);
    }
  }
}

/**
 * Appends through one held descriptor. No directory is held here, so the check that the path still names that file
 * looks the name up by path (a link at it counts as another file).
 */
function fileSink(file: FileTarget, opened: number, lock: SecureLock, closeFd: (fd: number) => void): LineSink {
  let fd = opened;
  let closed = false;
  const oneByte = Buffer.alloc(1);
  const sidecars = new Set<SidecarFile>();
  // Every byte of the file comes through this sink while it holds the lock: any other size is someone else's doing.
  let size = fs.fstatSync(fd).size;
  /** the descriptor and its size at the last check that passed: rows of lines no later than that need no check of their own */
  let checked: { fd: number; size: number } | undefined;
  const checkNamedSync = (): void => {
    const held = fs.fstatSync(fd, { bigint: true });
    requireStillNamed(file.absolute, identityOf(held), namedAt(file.absolute));
    requireSizeKept(file.absolute, Number(held.size), size);
    checked = { fd, size };
  };
  return {
    path: file.absolute,
    appendSync(data) {
      const written = writeAllSync(fd, data);
      size += written;
      return written;
    },
    lastByteSync() {
      const { size } = fs.fstatSync(fd);
      if (size === 0) return undefined;
      fs.readSync(fd, oneByte, 0, 1, size - 1);
      return oneByte[0];
    },
    syncSync: () => fs.fsyncSync(fd),
    checkNamedSync,
    openReaderSync() {
      // Borrowed: the sink closes the descriptor; a rewrite's replacement is read by a reader made after it.
      const held = fd;
      const read: PositionalRead = (into, offset, length, at) => {
        // A descriptor number closed by a rewrite or close may already name another file: never read through it.
        if (closed || fd !== held) throw pathError("reader_closed", file.absolute);
        return fs.readSync(held, into, offset, length, at);
      };
      return positionalReader(file.absolute, fromNodeStat(fs.fstatSync(held, { bigint: true })), read, () => undefined);
    },
    async replace(chunks) {
      const previous = fd;
      fd = replaceFile(file.dir, file.name, chunks, {});
      size = fs.fstatSync(fd).size;
      fs.closeSync(previous);
    },
    openSidecar(name, options = {}) {
      const target: FileTarget = { absolute: path.join(file.dir, name), dir: file.dir, name };
      const found = options.existing === true ? openTrustedForAppend(target.absolute) : openForAppend(target);
      if (found === undefined) return undefined;
      let held = found;
      let open = true;
      const handle: SidecarFile = {
        appendSync(data) {
          // Rows of lines in a file nobody opens by its name would describe another file; a check since the last
          // line was appended (a flush's) already covers every line they can describe.
          if (checked?.fd !== fd || checked.size !== size) checkNamedSync();
          writeAllSync(held, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
        },
        replaceSync(data) {
          const previous = held;
          held = replaceFile(file.dir, name, [data], {});
          fs.closeSync(previous);
        },
        openReaderSync() {
          const reading = held;
          const read: PositionalRead = (into, offset, length, at) => {
            // A descriptor number closed by a replace or close may already name another file: never read through it.
            if (!open || held !== reading) throw pathError("reader_closed", target.absolute);
            return fs.readSync(reading, into, offset, length, at);
          };
          return positionalReader(target.absolute, fromNodeStat(fs.fstatSync(reading, { bigint: true })), read, () => undefined);
        },
        closeSync() {
          if (!open) return;
          open = false;
          sidecars.delete(handle);
          fs.closeSync(held);
        },
      };
      sidecars.add(handle);
      return handle;
    },
    closeSync() {
      if (closed) return;
      for (const sidecar of sidecars) sidecar.closeSync();
      try {
        closeFd(fd);
      } catch (error) {
        // Not dispatched: the descriptor is still ours, so keep it and the lock for another close.
        if (isStorageError(error, "close_not_dispatched")) throw error;
        closed = true;
        lock.release();
        throw error;
      }
      closed = true;
      lock.release();
    },
  };
}

/** What `target` names now (no link followed), `undefined` when nothing is there. */
function namedAt(target: string): { dev: string; ino: string } | undefined {
  try {
    return identityOf(fs.lstatSync(target, { bigint: true }));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

function identityOf(stat: fs.BigIntStats): { dev: string; ino: string } {
  return { dev: stat.dev.toString(), ino: stat.ino.toString() };
}

/** The default {@link WriterOpenOptions.closeDescriptor}. */
function closeDescriptor(fd: number): void {
  fs.closeSync(fd);
}

/**
 * Refuses a link (links above the root are the caller's business) or an entry not of `kind` at
 * `target`; `false` when nothing is there and `mayBeMissing`, else the `lstat` error.
 */
function checkEntry(target: string, kind: "file" | "directory", mayBeMissing: boolean): boolean {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(target);
  } catch (error) {
    if (mayBeMissing && (error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
  if (stat.isSymbolicLink()) throw pathError("symlink_refused", target);
  if (kind === "file" ? !stat.isFile() : !stat.isDirectory()) throw pathError(kind === "file" ? "not_regular_file" : "not_directory", target);
  return true;
}

/** Refuses a destination that is a link or non-file, or exists under `noReplace`. */
function checkDestination(target: string, options: ReplaceOptions): void {
  if (checkEntry(target, "file", true) && options.noReplace === true) throw pathError("already_exists", target);
}

/** Runs `step` on a no-follow descriptor of directory `dir`. */
function onDirectory(dir: string, step: (fd: number) => void): void {
  const fd = fs.openSync(dir, OPEN_DIRECTORY);
  try {
    step(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Syncs a directory's entries to stable storage. */
function syncDirectory(dir: string): void {
  onDirectory(dir, (fd) => fs.fsyncSync(fd));
}

/** Opens an existing regular file for reading, refusing a link (O_NOFOLLOW) and anything else. */
function openReader(target: string): SessionFileReader {
  const fd = fs.openSync(target, OPEN_READ);
  try {
    const stat = fs.fstatSync(fd, { bigint: true });
    if (!stat.isFile()) throw pathError("not_regular_file", target);
    const read: PositionalRead = (into, offset, length, at) => fs.readSync(fd, into, offset, length, at);
    return positionalReader(target, fromNodeStat(stat), read, () => fs.closeSync(fd));
  } catch (error) {
    fs.closeSync(fd);
    throw error;
  }
}

/**
 * Opens (creating 0600 if missing) a file for appending and tightens a loose mode; a creation
 * syncs the directory, so the name survives a power cut as surely as the records in it.
 */
function openForAppend(file: FileTarget): number {
  let fd: number;
  let created = true;
  try {
    fd = fs.openSync(file.absolute, OPEN_APPEND | CREATE_NEW, FILE_MODE);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    created = false;
    fd = fs.openSync(file.absolute, OPEN_APPEND);
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) throw pathError("not_regular_file", file.absolute);
    // An older writer's file under a loose umask is tightened too: transcripts are never for others.
    if (created || (stat.mode & 0o777) !== FILE_MODE) fs.fchmodSync(fd, FILE_MODE);
    if (created) syncDirectory(file.dir);
    return fd;
  } catch (error) {
    fs.closeSync(fd);
    throw error;
  }
}

/**
 * Whether a sidecar beside a session in an explicit directory may be trusted: a regular file of the effective user, 0600,
 * one link (this storage checks no owner or mode elsewhere, so whoever reads a sidecar here checks this).
 */
export function isTrustedSidecar(stat: fs.Stats | fs.BigIntStats): boolean {
  return stat.isFile() && Number(stat.uid) === process.geteuid?.() && (Number(stat.mode) & 0o7777) === FILE_MODE && Number(stat.nlink) === 1;
}

/** Opens an existing sidecar for appending only when {@link isTrustedSidecar}, changing nothing; `undefined` for anything else or nothing. */
function openTrustedForAppend(target: string): number | undefined {
  let fd: number;
  try {
    fd = fs.openSync(target, OPEN_APPEND);
  } catch {
    return undefined;
  }
  try {
    if (isTrustedSidecar(fs.fstatSync(fd))) return fd;
  } catch {
    // Unreadable metadata: not a sidecar to trust.
  }
  fs.closeSync(fd);
  return undefined;
}

/**
 * Removes the temporaries (`.<name>.<16 hex>.tmp`, see `temporaryName`) killed rewrites of
 * `name` left in `dir`, regular files only; the caller holds `name`'s writer lock. Best effort.
 */
function removeOwnTemporaries(dir: string, name: string): void {
  const prefix = `.${name}.`;
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const entry of names) {
    if (!entry.startsWith(prefix) || !/^[0-9a-f]{16}\.tmp$/.test(entry.slice(prefix.length))) continue;
    const full = path.join(dir, entry);
    try {
      if (fs.lstatSync(full).isFile()) fs.unlinkSync(full);
    } catch {
      // Gone meanwhile or refused: nothing of the session depends on it.
    }
  }
}

/** Moves `from` to `to`; with `noReplace` a hard link publishes only if `to` is free (atomic), then the old name goes (a crash leaves both). */
function publish(from: string, to: string, options: ReplaceOptions): void {
  if (options.noReplace === true) {
    fs.linkSync(from, to);
    fs.unlinkSync(from);
  } else {
    fs.renameSync(from, to);
  }
}

/**
 * The one atomic whole-file write (standalone files and a writer's rewrite): `chunks` go to a
 * fresh synced 0600 temporary, {@link publish}ed at `name`, and the directory is synced.
 * Returns the temporary's descriptor, open for appending to what is now the file.
 */
function replaceFile(dir: string, name: string, chunks: Iterable<WriteChunk>, options: ReplaceOptions): number {
  const temporary = path.join(dir, temporaryName(name));
  const fd = fs.openSync(temporary, OPEN_APPEND | CREATE_NEW, FILE_MODE);
  try {
    fs.fchmodSync(fd, FILE_MODE);
    for (const batch of batchChunks(chunks)) writeAllSync(fd, batch);
    fs.fsyncSync(fd);
    publish(temporary, path.join(dir, name), options);
    syncDirectory(dir);
    return fd;
  } catch (error) {
    // Best effort: the failure that brought us here is what the caller needs.
    try {
      fs.closeSync(fd);
    } catch {}
    try {
      fs.unlinkSync(temporary);
    } catch {}
    throw error;
  }
}

const encoder = new TextEncoder();
/** The most bytes handed to one `fs.writeSync`. */
const MAX_WRITE_BYTES = 1 << 30;
/** Reused encoding buffer: an append encodes once, straight into it, and allocates nothing. */
let scratch = new Uint8Array(1 << 16);
/** Lines longer than this get a buffer of their own instead of growing the shared one. */
const SCRATCH_LIMIT = 1 << 22;

/** Writes all of `data` (continuing after a short write) and returns its byte count; text is encoded once into a reused buffer. */
function writeAllSync(fd: number, data: string | Buffer): number {
  let bytes: Uint8Array = data as Buffer;
  let total = bytes.length;
  if (typeof data === "string") {
    // UTF-8 needs at most 3 bytes per UTF-16 unit, so this always holds the whole line.
    const needed = data.length * 3;
    if (needed > scratch.length && needed <= SCRATCH_LIMIT) scratch = new Uint8Array(needed);
    bytes = needed <= scratch.length ? scratch : new Uint8Array(needed);
    total = encoder.encodeInto(data, bytes).written;
  }
  let offset = 0;
  // One write call takes at most 2^31-1 bytes in Node; a session of any size goes through in pieces.
  while (offset < total) offset += fs.writeSync(fd, bytes, offset, Math.min(total - offset, MAX_WRITE_BYTES));
  return total;
}

/** A node:fs bigint stat as a {@link StorageStat}. */
function fromNodeStat(stat: fs.BigIntStats): StorageStat {
  return {
    kind: stat.isFile() ? "file" : stat.isDirectory() ? "directory" : "other",
    size: Number(stat.size),
    mtimeMs: Number(stat.mtimeMs),
    dev: stat.dev.toString(),
    ino: stat.ino.toString(),
    ctimeMs: timespecMs(stat.ctimeNs),
  };
}

/** Milliseconds of a nanosecond time as node computes a plain stat's (in doubles), so a plain stat compares equal to a bigint one. */
function timespecMs(ns: bigint): number {
  let seconds = ns / 1_000_000_000n;
  let nanos = ns % 1_000_000_000n;
  if (nanos < 0n) {
    seconds -= 1n;
    nanos += 1_000_000_000n;
  }
  return Number(seconds) * 1e3 + Number(nanos) / 1e6;
}

// How close to a whole millisecond a plain stat's mtime may be before its floor is in doubt.
const WHOLE_MS_DOUBT = 1e-3;

/**
 * A plain stat as the {@link StorageStat} {@link fromNodeStat} gives for the same object, or
 * `undefined` when the doubles may differ: a dev or inode above 2^53, or an mtime so near a
 * whole millisecond that rounding may have carried it. Plain stats allocate no bigints.
 */
function fromPlainNodeStat(stat: fs.Stats): StorageStat | undefined {
  if (!Number.isSafeInteger(stat.dev) || !Number.isSafeInteger(stat.ino)) return undefined;
  const whole = Math.floor(stat.mtimeMs);
  const fraction = stat.mtimeMs - whole;
  if (fraction < WHOLE_MS_DOUBT || fraction > 1 - WHOLE_MS_DOUBT) return undefined;
  return {
    kind: stat.isFile() ? "file" : stat.isDirectory() ? "directory" : "other",
    size: stat.size,
    mtimeMs: whole,
    dev: String(stat.dev),
    ino: String(stat.ino),
    ctimeMs: stat.ctimeMs,
  };
}
