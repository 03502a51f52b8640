/**
 * The storage contract the session layer is written against. Three implementations keep it:
 * `FileSessionStorage` (an explicit `--session-dir` on node:fs),
 * `ManagedSessionStorage` (owner-only, over `SecureDir` descriptors) and
 * `MemorySessionStorage` (in-memory sessions and tests). One contract test suite runs
 * against all three, so a caller can switch between them without changing behaviour.
 */

import type { StorageError } from "./errors.js";

/** Bytes handed to a whole-file write: text is written as UTF-8. */
export type WriteChunk = string | Uint8Array;

/** Metadata of one entry, never following a link. */
export interface StorageStat {
  kind: "file" | "directory" | "other";
  /** Size in bytes (0 for directories in memory storage). */
  size: number;
  /** Modification time in milliseconds since the epoch. */
  mtimeMs: number;
  /**
   * Device and inode as decimal strings (64-bit values do not fit a double). With `size`
   * and `mtimeMs` they form a cache key that changes whenever the file does.
   */
  dev: string;
  ino: string;
  /**
   * Status-change time in milliseconds, sub-millisecond digits kept, where the storage has
   * one (disk-backed storages do). Unlike the modification time no caller can set it, so a
   * same-size rewrite whose mtime was restored still changes it.
   */
  ctimeMs?: number;
}

/** Options of whole-file writes and renames. */
export interface ReplaceOptions {
  /**
   * Fail with `already_exists` instead of replacing an existing target. The check and the
   * publish are one atomic step (a link or no-replace rename), never check-then-write.
   */
  noReplace?: boolean;
}

/**
 * A regular file held open for reading: its metadata and every read come from the same
 * descriptor, so a listing pays one open for the identity, the prefix and any tail of a
 * file, and the bytes it reads belong to the object whose identity it reports.
 */
export interface SessionFileReader {
  /** The file this reader was opened at. */
  readonly path: string;
  /**
   * Metadata of the open file (taken from the descriptor when it was opened). The same
   * identity `statSync` would report, without a second lookup by name.
   */
  readonly stat: StorageStat;
  /**
   * Fills `buffer` from file offset `position`; returns how many bytes were read, fewer than
   * the buffer holds only at the end of the file (bytes appended after the open are read).
   * @throws StorageError `reader_closed` after {@link close}, `read_failed` on I/O errors
   */
  readSync(buffer: Uint8Array, position: number): number;
  /** Releases the descriptor. Idempotent. */
  close(): void;
}

/** Where a writer reports its first failure (once per writer). */
export interface StorageLogger {
  error(message: string, details: { path: string; code: string; errno?: string; cause: unknown }): void;
}

/**
 * A writer that appends newline-delimited records to one file and holds that file's
 * writer lock until it is closed.
 *
 * Bytes reach the kernel synchronously, in call order, inside {@link writeLine} (one write
 * call per line on a descriptor that stays open), so a killed process loses nothing it was
 * told was written. Durability is paid only at {@link flush}. The first failure is latched:
 * every later call rejects with that same error.
 */
export interface SessionStorageWriter {
  /** The file this writer appends to. */
  readonly path: string;
  /**
   * Appends `line` plus a line feed. The returned promise is already settled when this
   * returns; it never causes an unhandled rejection if ignored (check {@link getError}).
   * Rejects with `invalid_line` (nothing written, nothing latched) when `line` contains
   * `\n`, with `writer_closed` after {@link close}, and with the latched error after a
   * failure. While a {@link rewrite} is pending the line waits for it, so that it lands in
   * the new file, after the rewritten content.
   */
  writeLine(line: string): Promise<void>;
  /** `writeLine(JSON.stringify(record))`; a value JSON cannot encode is `invalid_line`. */
  write(record: unknown): Promise<void>;
  /**
   * Syncs the file (data and metadata) to stable storage. Synchronous when nothing is
   * queued; behind a pending rewrite, every flush requested before the sync starts shares
   * it. Call it after several appends to commit them as a group.
   */
  flush(): Promise<void>;
  /** The same as {@link flush}: writes are never buffered in user space, so there is nothing else to drain. */
  fsync(): Promise<void>;
  /**
   * Atomically replaces the whole file with `chunks` while keeping the writer lock: a
   * temporary file in the same directory is written and synced, renamed over the target,
   * the directory is synced, and later appends go to the new file. A crash at any moment
   * leaves either the old or the new content.
   */
  rewrite(chunks: Iterable<WriteChunk>): Promise<void>;
  /**
   * Waits for queued steps, closes the file and releases the lock. Idempotent. Rejects with
   * the latched error if the writer ever failed (the descriptor and lock are released anyway).
   */
  close(): Promise<void>;
  /**
   * {@link writeLine} for callers that cannot await: the line (no line feed) is in the kernel
   * when this returns. Returns the line's UTF-8 byte count (without the line feed), which the
   * write measured anyway.
   * @throws StorageError `invalid_line`, `writer_closed`, `writer_busy` while a rewrite is
   *   pending (the line would otherwise be written out of order), or the latched error
   */
  writeLineSync(line: string): number;
  /**
   * {@link close} for callers that cannot await; the lock is released when this returns.
   * @throws StorageError `writer_busy` while a rewrite or sync is still queued (nothing is
   *   closed then), or the latched error after releasing
   */
  closeSync(): void;
  /** The latched error, if any operation of this writer failed. */
  getError(): StorageError | undefined;
}

/**
 * File operations used by the session layer. Every path is absolute and must lie below
 * {@link root}; nothing below the root is reached through a symbolic link.
 */
export interface SessionStorage {
  /** The directory every path of this storage lies below. */
  readonly root: string;

  /** Creates `dir` and its missing parents below the root, each 0700 when created. */
  ensureDirSync(dir: string): void;
  /** Whether an entry exists at `path` (a link there is refused, not reported). */
  existsSync(path: string): boolean;
  /**
   * Atomically and durably replaces `path` with `data` (created 0600): temporary file,
   * sync, rename, directory sync. For standalone files; a session file with a live writer
   * is rewritten through {@link SessionStorageWriter.rewrite}, which keeps its lock.
   */
  writeTextSync(path: string, data: WriteChunk, options?: ReplaceOptions): void;
  /** Metadata of `path`; `not_found` when it is missing. */
  statSync(path: string): StorageStat;
  /**
   * Names (not paths) of the regular files directly in `dir`, sorted; with
   * `kind: "directory"`, of the directories instead. Hidden (dot) names are never listed.
   */
  listFilesSync(dir: string, options?: { kind?: "file" | "directory" }): string[];
  /**
   * {@link statSync} of each of `names` directly in `dir`, in order; an entry that cannot be
   * stated gets its error in its slot, a failure of the directory itself throws. Beyond the
   * spec because the in-process listing states every known file: one directory check per
   * batch instead of one walk per file keeps it at its floor.
   */
  statEntriesSync(dir: string, names: readonly string[]): (StorageStat | StorageError)[];
  /**
   * {@link rename}, synchronously. Beyond the spec because the one open path, which the
   * synchronous session calls share, moves a file without a usable header aside before returning.
   */
  renameSync(from: string, to: string, options?: ReplaceOptions): void;
  /**
   * Opens a regular file for bounded reads (no link followed, nothing but a regular file
   * accepted); the one way to read part of a file (chunked loads, listing prefixes and
   * tails). The caller closes it.
   */
  openReaderSync(path: string): SessionFileReader;

  /** Async {@link existsSync}. */
  exists(path: string): Promise<boolean>;
  /** The whole file as UTF-8 text. */
  readText(path: string): Promise<string>;
  /**
   * At most `maxBytes` from the start of the file, decoded as UTF-8; a character cut by the
   * bound is dropped rather than turned into U+FFFD.
   */
  readTextPrefix(path: string, maxBytes: number): Promise<string>;
  /** Async {@link writeTextSync}. */
  writeText(path: string, data: WriteChunk, options?: ReplaceOptions): Promise<void>;
  /**
   * Renames a regular file, then syncs the directories involved. Takes the source's writer
   * lock for its duration, so it fails with `session_busy` while a writer holds the file.
   */
  rename(from: string, to: string, options?: ReplaceOptions): Promise<void>;
  /** Removes a regular file, under its writer lock (`session_busy` while a writer holds it). */
  unlink(path: string): Promise<void>;
  /**
   * Opens `path` for appending (created 0600 if missing) and takes its writer lock; a
   * second writer of the same file, in any process, gets `session_busy`. Readers are never
   * blocked. Synchronous, as in GJC's storage interface: opening is a few system calls, and
   * the synchronous session calls (`createBranchedSession`) need the writer at once.
   */
  openWriter(path: string): SessionStorageWriter;
}

/**
 * What an implementation provides so that the shared writer can append to one file.
 * Internal to the storage layer: callers use {@link SessionStorageWriter}.
 */
export interface LineSink {
  readonly path: string;
  /**
   * Writes all of `data` at the end of the file, synchronously; throws on failure. Returns the
   * UTF-8 byte count written, which the writer hands on; a sink that returns nothing (as
   * before this count existed) has it measured instead.
   */
  appendSync(data: string): number | void;
  /** The file's last byte, or `undefined` when it is empty. Reads one byte at most. */
  lastByteSync(): number | undefined;
  /** Syncs the file's data and metadata to stable storage, synchronously. */
  syncSync(): void;
  /** Atomically replaces the file (see {@link SessionStorageWriter.rewrite}) and keeps appending to the new one. */
  replace(chunks: Iterable<WriteChunk>): Promise<void>;
  /** Closes the file and releases the writer lock, synchronously. */
  closeSync(): void;
}
