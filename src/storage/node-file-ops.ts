/**
 * node:fs steps of the explicit-directory storage, each one refusing links and special
 * files on its own: no-follow opens, exact modes forced by descriptor, temporary-file
 * publishing, and reads that cope with a file growing under them.
 */

import fs from "node:fs";
import path from "node:path";

import { batchChunks, fillFrom } from "./bytes.js";
import { guardStorage, pathError } from "./errors.js";
import { temporaryName } from "./paths.js";
import type { ReplaceOptions, SessionFileReader, StorageStat, WriteChunk } from "./types.js";
import { lockWriterAt } from "./writer-lock.js";

const { constants } = fs;

// O_NONBLOCK keeps a FIFO planted at a file's name from hanging the open; it changes
// nothing for regular files, and anything that is not a regular file is refused after fstat.
/** Flags of a read-only open that refuses a final link and never blocks on a FIFO. */
export const OPEN_READ = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const OPEN_APPEND = constants.O_RDWR | constants.O_APPEND | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const CREATE_NEW = constants.O_CREAT | constants.O_EXCL;
const OPEN_DIRECTORY = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const FILE_MODE = 0o600;
/** The mode of every directory the storage creates. */
export const DIRECTORY_MODE = 0o700;

/** A temporary file being written: its path and open descriptor. */
interface Temporary {
  path: string;
  fd: number;
}

/** `lstat` of `target`, or `undefined` when nothing is there. */
export function lstatOrUndefined(target: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** Whether a real directory (not a link to one) is at `target`; `false` when nothing is. */
export function isDirectoryAt(target: string): boolean {
  return checkDirectory(target, true) === "ok";
}

/**
 * Checks that `target` is a real directory, not a link to one. Links above the root are
 * the caller's business; the root itself and everything below it must not be links.
 */
export function checkDirectory(target: string, allowMissing: boolean): "ok" | "missing" {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(target);
  } catch (error) {
    if (allowMissing && (error as NodeJS.ErrnoException).code === "ENOENT") return "missing";
    throw error;
  }
  if (stat.isSymbolicLink()) throw pathError("symlink_refused", target);
  if (!stat.isDirectory()) throw pathError("not_directory", target);
  return "ok";
}

/** Forces 0700 on a directory we just created, through a descriptor that did not follow a link. */
export function tightenDirectory(target: string): void {
  const fd = fs.openSync(target, OPEN_DIRECTORY);
  try {
    fs.fchmodSync(fd, DIRECTORY_MODE);
  } finally {
    fs.closeSync(fd);
  }
}

/** Syncs a directory's entries to stable storage. */
export function syncDirectory(dir: string): void {
  const fd = fs.openSync(dir, OPEN_DIRECTORY);
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Opens an existing regular file, refusing links (O_NOFOLLOW) and anything else; returns the descriptor and its stat. */
export function openRegularWithStat(target: string, flags: number): { fd: number; stat: fs.BigIntStats } {
  const fd = fs.openSync(target, flags);
  try {
    const stat = fs.fstatSync(fd, { bigint: true });
    if (!stat.isFile()) throw pathError("not_regular_file", target);
    return { fd, stat };
  } catch (error) {
    fs.closeSync(fd);
    throw error;
  }
}

/** A {@link SessionFileReader} on a node:fs descriptor. */
export class FdFileReader implements SessionFileReader {
  readonly path: string;
  readonly stat: StorageStat;
  #fd: number;

  /** Takes ownership of `fd`, a regular file opened for reading. */
  constructor(path: string, fd: number, stat: StorageStat) {
    this.path = path;
    this.#fd = fd;
    this.stat = stat;
  }

  /** {@inheritDoc SessionFileReader.readSync} */
  readSync(buffer: Uint8Array, position: number): number {
    if (this.#fd < 0) throw pathError("reader_closed", this.path);
    const fd = this.#fd;
    return guardStorage("read", this.path, () => fillFrom(buffer, position, (into, offset, length, at) => fs.readSync(fd, into, offset, length, at)));
  }

  /** {@inheritDoc SessionFileReader.close} */
  close(): void {
    if (this.#fd < 0) return;
    const fd = this.#fd;
    this.#fd = -1;
    fs.closeSync(fd);
  }
}

/** Opens (creating 0600 if missing) a file for appending and tightens a loose mode. */
export function openForAppend(target: string): { fd: number; created: boolean } {
  let fd: number;
  let created = true;
  try {
    fd = fs.openSync(target, OPEN_APPEND | CREATE_NEW, FILE_MODE);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    created = false;
    fd = fs.openSync(target, OPEN_APPEND);
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) throw pathError("not_regular_file", target);
    // A file created by an older writer under a loose umask is tightened too: session
    // transcripts are never meant to be readable by others.
    if (created || (stat.mode & 0o777) !== FILE_MODE) fs.fchmodSync(fd, FILE_MODE);
    return { fd, created };
  } catch (error) {
    fs.closeSync(fd);
    throw error;
  }
}

/** Runs `step` holding the writer lock of `name` in `dir` (`session_busy` if a writer has it). */
export function withWriterLock<T>(dir: string, name: string, step: () => T): T {
  const lock = lockWriterAt(dir, name);
  try {
    return step();
  } finally {
    lock.release();
  }
}

/** Refuses anything at `target` but an existing regular file. */
export function checkRegularFile(target: string): void {
  const stat = fs.lstatSync(target);
  if (stat.isSymbolicLink()) throw pathError("symlink_refused", target);
  if (!stat.isFile()) throw pathError("not_regular_file", target);
}

/** Refuses a target that is a link or a directory, or that exists when `noReplace` is set. */
export function checkReplaceable(target: string, options: ReplaceOptions): void {
  const stat = lstatOrUndefined(target);
  if (stat === undefined) return;
  if (stat.isSymbolicLink()) throw pathError("symlink_refused", target);
  if (!stat.isFile()) throw pathError("not_regular_file", target);
  if (options.noReplace === true) throw pathError("already_exists", target);
}

/** Creates a fresh 0600 temporary next to `name`, open for appending. */
function createTemporary(dir: string, name: string): Temporary {
  const temporaryPath = path.join(dir, temporaryName(name));
  const fd = fs.openSync(temporaryPath, OPEN_APPEND | CREATE_NEW, FILE_MODE);
  const temporary = { path: temporaryPath, fd };
  try {
    fs.fchmodSync(fd, FILE_MODE);
  } catch (error) {
    discardTemporary(temporary);
    throw error;
  }
  return temporary;
}

/**
 * Removes the temporaries ({@link createTemporary}: `.<name>.<16 hex>.tmp`) that killed
 * rewrites of `name` left in `dir`; the caller holds `name`'s writer lock, so none is in use.
 * Only regular files (no-follow `lstat`) are removed; best effort.
 */
export function removeOwnTemporaries(dir: string, name: string): void {
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
      if (!fs.lstatSync(full).isFile()) continue;
      fs.unlinkSync(full);
    } catch {
      // Gone meanwhile or refused: nothing of the session depends on it.
    }
  }
}

/** Closes and removes a temporary after a failure, best effort. */
function discardTemporary(temporary: Temporary): void {
  try {
    fs.closeSync(temporary.fd);
  } catch {
    // The descriptor is gone either way; the failure that brought us here is what matters.
  }
  try {
    fs.unlinkSync(temporary.path);
  } catch {
    // Already gone, or the directory is unwritable: nothing more we can do for a temp file.
  }
}

/**
 * Moves `from` to `to`. With `noReplace`, a hard link publishes only if `to` is free (the
 * kernel decides atomically), then the old name goes: a crash between the two leaves both
 * names, never neither.
 */
export function publish(from: string, to: string, options: ReplaceOptions): void {
  if (options.noReplace === true) {
    fs.linkSync(from, to);
    fs.unlinkSync(from);
  } else {
    fs.renameSync(from, to);
  }
}

/**
 * Writes `chunks` to a fresh temporary next to `name`, syncs it, publishes it at `name` (see
 * {@link publish}), syncs the directory, and returns the still-open descriptor (opened for
 * appending) of what is now the file. The one atomic whole-file write: standalone files and
 * a writer's rewrite both go through it.
 */
export function replaceFile(dir: string, name: string, chunks: Iterable<WriteChunk>, options: ReplaceOptions): number {
  const temporary = createTemporary(dir, name);
  try {
    for (const batch of batchChunks(chunks)) writeAllSync(temporary.fd, batch);
    fs.fsyncSync(temporary.fd);
    publish(temporary.path, path.join(dir, name), options);
    syncDirectory(dir);
    return temporary.fd;
  } catch (error) {
    discardTemporary(temporary);
    throw error;
  }
}

const encoder = new TextEncoder();
/** Reused encoding buffer: an append encodes once, straight into it, and allocates nothing. */
let scratch = new Uint8Array(1 << 16);
/** Lines longer than this get a buffer of their own instead of growing the shared one. */
const SCRATCH_LIMIT = 1 << 22;

/**
 * Writes all of `data` and returns its byte count; a short write (rare, e.g. a nearly full
 * disk) continues where it stopped. Text is encoded once into a reused buffer, which also
 * yields its exact byte count, so completeness is checked without a second pass over the string.
 */
export function writeAllSync(fd: number, data: string | Buffer): number {
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
  while (offset < total) offset += fs.writeSync(fd, bytes, offset, total - offset);
  return total;
}

/** A node:fs bigint stat as a {@link StorageStat}. */
export function fromNodeStat(stat: fs.BigIntStats): StorageStat {
  return {
    kind: stat.isFile() ? "file" : stat.isDirectory() ? "directory" : "other",
    size: Number(stat.size),
    mtimeMs: Number(stat.mtimeMs),
    dev: stat.dev.toString(),
    ino: stat.ino.toString(),
    ctimeMs: timespecMs(stat.ctimeNs),
  };
}

/**
 * Milliseconds of a nanosecond time as node computes them for a plain (non-bigint) stat:
 * whole seconds times 1000 plus nanoseconds over 1e6, in doubles. Computing both kinds of
 * stat the same way lets a cheap plain stat be compared with a descriptor's bigint one.
 */
function timespecMs(ns: bigint): number {
  let seconds = ns / 1_000_000_000n;
  let nanos = ns % 1_000_000_000n;
  if (nanos < 0n) {
    seconds -= 1n;
    nanos += 1_000_000_000n;
  }
  return Number(seconds) * 1e3 + Number(nanos) / 1e6;
}

/** How close to a whole millisecond a plain stat's mtime may be before its floor is in doubt. */
const WHOLE_MS_DOUBT = 1e-3;

/**
 * A plain node:fs stat as the {@link StorageStat} {@link fromNodeStat} gives for the same
 * object, or `undefined` when the doubles cannot be trusted to say the same: a dev or inode
 * above 2^53, or an mtime so close to a whole millisecond that rounding may have carried it
 * over. A plain stat allocates no bigints, which is most of a stat's cost in a listing.
 */
export function fromPlainNodeStat(stat: fs.Stats): StorageStat | undefined {
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
