/**
 * node:fs steps of the explicit-directory storage, each refusing links and special files on
 * its own: no-follow opens, exact modes forced by descriptor, temporary-file publishing.
 */

import fs from "node:fs";
import path from "node:path";

import { batchChunks, fillFrom } from "./bytes.js";
import { guardStorage, pathError } from "./errors.js";
import { temporaryName } from "./paths.js";
import type { ReplaceOptions, SessionFileReader, StorageStat, WriteChunk } from "./types.js";

const { constants } = fs;

// O_NONBLOCK keeps a FIFO planted at a file's name from hanging the open; anything but a
// regular file is refused after fstat.
const OPEN_READ = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const OPEN_APPEND = constants.O_RDWR | constants.O_APPEND | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const CREATE_NEW = constants.O_CREAT | constants.O_EXCL;
const OPEN_DIRECTORY = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const FILE_MODE = 0o600;
/** The mode of every directory the storage creates. */
export const DIRECTORY_MODE = 0o700;

/** `lstat` of `target`, or `undefined` when nothing is there. */
export function lstatOrUndefined(target: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/**
 * Checks that `target` is a real directory, not a link to one (links above the root are the
 * caller's business); `"missing"` when nothing is there and `allowMissing`.
 */
export function checkDirectory(target: string, allowMissing: boolean): "ok" | "missing" {
  const stat = allowMissing ? lstatOrUndefined(target) : fs.lstatSync(target);
  if (stat === undefined) return "missing";
  if (stat.isSymbolicLink()) throw pathError("symlink_refused", target);
  if (!stat.isDirectory()) throw pathError("not_directory", target);
  return "ok";
}

/**
 * Refuses a link or non-file at `target`. Without `replace` it must exist; with it, `target`
 * is a destination: it may be missing, and exists only without `noReplace`.
 */
export function checkFileAt(target: string, replace?: ReplaceOptions): void {
  const stat = replace === undefined ? fs.lstatSync(target) : lstatOrUndefined(target);
  if (stat === undefined) return;
  if (stat.isSymbolicLink()) throw pathError("symlink_refused", target);
  if (!stat.isFile()) throw pathError("not_regular_file", target);
  if (replace?.noReplace === true) throw pathError("already_exists", target);
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

/** Forces 0700 on a directory we just created (the umask varies). */
export function tightenDirectory(target: string): void {
  onDirectory(target, (fd) => fs.fchmodSync(fd, DIRECTORY_MODE));
}

/** Syncs a directory's entries to stable storage. */
export function syncDirectory(dir: string): void {
  onDirectory(dir, (fd) => fs.fsyncSync(fd));
}

/** A {@link SessionFileReader} on a node:fs descriptor. */
class FdFileReader implements SessionFileReader {
  readonly path: string;
  readonly stat: StorageStat;
  #fd: number;

  constructor(path: string, fd: number, stat: StorageStat) {
    this.path = path;
    this.#fd = fd;
    this.stat = stat;
  }

  readSync(buffer: Uint8Array, position: number): number {
    if (this.#fd < 0) throw pathError("reader_closed", this.path);
    const fd = this.#fd;
    return guardStorage("read", this.path, () => fillFrom(buffer, position, (into, offset, length, at) => fs.readSync(fd, into, offset, length, at)));
  }

  close(): void {
    if (this.#fd < 0) return;
    const fd = this.#fd;
    this.#fd = -1;
    fs.closeSync(fd);
  }
}

/** Opens an existing regular file for reading, refusing a link (O_NOFOLLOW) and anything else. */
export function openReader(target: string): SessionFileReader {
  const fd = fs.openSync(target, OPEN_READ);
  try {
    const stat = fs.fstatSync(fd, { bigint: true });
    if (!stat.isFile()) throw pathError("not_regular_file", target);
    return new FdFileReader(target, fd, fromNodeStat(stat));
  } catch (error) {
    fs.closeSync(fd);
    throw error;
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
    // An older writer's file under a loose umask is tightened too: transcripts are never for others.
    if (created || (stat.mode & 0o777) !== FILE_MODE) fs.fchmodSync(fd, FILE_MODE);
    return { fd, created };
  } catch (error) {
    fs.closeSync(fd);
    throw error;
  }
}

/**
 * Removes the temporaries (`.<name>.<16 hex>.tmp`, see `temporaryName`) that killed rewrites
 * of `name` left in `dir`; the caller holds `name`'s writer lock, so none is in use. Only
 * regular files (no-follow `lstat`) are removed; best effort.
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
      if (fs.lstatSync(full).isFile()) fs.unlinkSync(full);
    } catch {
      // Gone meanwhile or refused: nothing of the session depends on it.
    }
  }
}

/**
 * Moves `from` to `to`. With `noReplace`, a hard link publishes only if `to` is free (the
 * kernel decides atomically), then the old name goes: a crash between leaves both names.
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
 * The one atomic whole-file write (standalone files and a writer's rewrite): `chunks` go to a
 * fresh 0600 temporary next to `name`, which is synced, published at `name` (see
 * {@link publish}) and its directory synced. Returns the temporary's descriptor, open for
 * appending to what is now the file.
 */
export function replaceFile(dir: string, name: string, chunks: Iterable<WriteChunk>, options: ReplaceOptions): number {
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
/** Reused encoding buffer: an append encodes once, straight into it, and allocates nothing. */
let scratch = new Uint8Array(1 << 16);
/** Lines longer than this get a buffer of their own instead of growing the shared one. */
const SCRATCH_LIMIT = 1 << 22;

/**
 * Writes all of `data` and returns its byte count, continuing after a short write. Text is
 * encoded once into a reused buffer, which also yields its exact byte count.
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
 * Milliseconds of a nanosecond time computed as node does for a plain stat (seconds * 1000
 * plus nanoseconds / 1e6, in doubles), so a plain stat compares equal to a bigint one.
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
 * A plain stat as the {@link StorageStat} {@link fromNodeStat} gives for the same object, or
 * `undefined` when the doubles may differ: a dev or inode above 2^53, or an mtime so near a
 * whole millisecond that rounding may have carried it. Plain stats allocate no bigints.
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
