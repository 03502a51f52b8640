/** The storage contract of the session layer, kept by the file, managed and memory storages (one contract suite tests all three). */

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
  /** Device (and `ino`, inode) as decimal strings: 64-bit values do not fit a double. */
  dev: string;
  ino: string;
  /** Status-change time in ms where the storage has one: no caller can set it, so a rewrite restoring mtime still shows. */
  ctimeMs?: number;
}

/** Options of whole-file writes and renames. */
export interface ReplaceOptions {
  /** Fail with `already_exists` instead of replacing: one atomic step, never check-then-write. */
  noReplace?: boolean;
}

/** A regular file held open for reading: metadata and reads come from one descriptor, so the bytes belong to the identity reported. */
export interface SessionFileReader {
  /** The file this reader was opened at. */
  readonly path: string;
  /** Metadata of the open file, taken from the descriptor when it was opened. */
  readonly stat: StorageStat;
  /**
   * Fills `buffer` from file offset `position`; returns the byte count, short only at the end
   * of the file (appends after the open included). Throws `reader_closed` or `read_failed`.
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
 * Appends newline-delimited records to one file, holding its writer lock until closed. Each
 * line reaches the kernel synchronously, in call order, so a killed process loses nothing it
 * was told was written; durability is paid at {@link flush}. The first failure is latched.
 */
export interface SessionStorageWriter {
  /** The file this writer appends to. */
  readonly path: string;
  /**
   * Appends `line` plus a line feed (a line already ending in one line feed is written as it
   * is); the promise is settled on return (behind a pending {@link rewrite} it waits) and never
   * an unhandled rejection. Rejects with `invalid_line` (nothing written or latched) for a line
   * holding any other `\n`, `writer_closed`, or the latched error.
   */
  writeLine(line: string): Promise<void>;
  /** `writeLine(JSON.stringify(record))`; a value JSON cannot encode is `invalid_line`. */
  write(record: unknown): Promise<void>;
  /**
   * Syncs the file to stable storage; behind a pending rewrite, flushes requested before the sync starts share it.
   * Then checks that {@link path} still names the file synced (where the storage holds a descriptor): a file removed, or
   * another renamed over its name, fails with `unsafe_entry` (`detail`: `identity_changed`), latched, since the bytes
   * made durable are no longer the session anyone opens.
   */
  flush(): Promise<void>;
  /** The same as {@link flush}: nothing is buffered in user space. */
  fsync(): Promise<void>;
  /**
   * Atomically replaces the file with `chunks`, keeping the lock (a crash leaves old or new); later appends go to the new
   * file. Refused like {@link flush} (nothing published) when {@link path} no longer names the file held.
   */
  rewrite(chunks: Iterable<WriteChunk>): Promise<void>;
  /**
   * Waits for queued steps, checks the name as {@link flush} does, closes and unlocks (idempotent); rejects (throws, in
   * the sync form) with a latched error, releasing anyway.
   */
  close(): Promise<void>;
  /**
   * {@link writeLine} for callers that cannot await; returns the line's UTF-8 byte count (no
   * line feed). Throws as it rejects, or `writer_busy` while a rewrite is pending.
   */
  writeLineSync(line: string): number;
  /** {@link close} for callers that cannot await: `writer_busy` (nothing closed) while a rewrite or sync is queued. */
  closeSync(): void;
  /** The latched error, if any operation of this writer failed. */
  getError(): StorageError | undefined;
  /**
   * Where closing stands: `open`; `close_failed_retryable` after a close that failed before the
   * descriptor was closed (`close_not_dispatched`: nothing written any more, close again);
   * `close_unknown` after a close that failed once the descriptor close was dispatched (never
   * dispatched again: the number may already name another file); `closed`.
   */
  getCloseState(): WriterCloseState;
  /** The error of the last failed close, while {@link getCloseState} is `close_failed_retryable` or `close_unknown`. */
  getCloseError(): StorageError | undefined;
  /**
   * Opens the disposable sidecar `name` beside the file through the writer's held directory, without a lock of its own:
   * only the holder of this writer's lock writes it. `undefined` (or no such method) where the storage keeps no sidecars.
   */
  openSidecar?(name: string, options?: SidecarOpenOptions): SidecarFile | undefined;
  /**
   * A reader of the file this writer holds, through the writer's own descriptor (so it reads exactly the file appended
   * to, with no second open by name); closing the reader leaves the writer open. `undefined` (or no such method) where
   * the storage has no such descriptor. Throws as {@link openSidecar} does once the writer failed or closed.
   */
  openReaderSync?(): SessionFileReader | undefined;
}

/** See {@link SessionStorageWriter.getCloseState}. */
export type WriterCloseState = "open" | "close_failed_retryable" | "close_unknown" | "closed";

/** Options of {@link SessionStorage.openWriter}. */
export interface WriterOpenOptions {
  /**
   * Closes the writer's descriptor in place of `fs.closeSync` (where the storage holds one). A
   * hook that fails before closing it throws a `close_not_dispatched` {@link StorageError}, and
   * the writer keeps the descriptor and its lock for a later close; anything else it throws
   * counts as a dispatched close (`close_unknown`).
   */
  closeDescriptor?: (fd: number) => void;
}

/** A sidecar held open by the writer of the file it describes; see {@link SessionStorageWriter.openSidecar}. */
export interface SidecarFile {
  /** Appends all of `data` at the end. */
  appendSync(data: Uint8Array): void;
  /** Atomically replaces the sidecar with `data` (owner-only); later appends go to the new file. */
  replaceSync(data: Uint8Array): void;
  /**
   * A reader of the sidecar as it is now, through its held descriptor (reads are short only at its end); closing the
   * reader leaves the sidecar open, and a {@link replaceSync} or {@link closeSync} ends it (`reader_closed`).
   */
  openReaderSync(): SessionFileReader;
  /** Closes it (idempotent). */
  closeSync(): void;
}

/** Options of {@link SessionStorageWriter.openSidecar}. */
export interface SidecarOpenOptions {
  /**
   * Open only a sidecar that is already there and may be trusted (a regular file of the effective user, 0600, one link;
   * a managed storage verifies it owner-only): `undefined` otherwise, nothing created or changed.
   */
  readonly existing?: boolean;
}

/** File operations of the session layer: every path is absolute and below {@link root}, and nothing below it is reached by a link. */
export interface SessionStorage {
  /** The directory every path of this storage lies below. */
  readonly root: string;

  /** Creates `dir` and its missing parents below the root, each 0700. */
  ensureDirSync(dir: string): void;
  /** Whether an entry exists at `path` (a link there is refused, not reported). */
  existsSync(path: string): boolean;
  /** Atomically and durably replaces `path` with `data` (0600); a file with a live writer uses {@link SessionStorageWriter.rewrite}. */
  writeTextSync(path: string, data: WriteChunk, options?: ReplaceOptions): void;
  /** Metadata of `path`; `not_found` when it is missing. */
  statSync(path: string): StorageStat;
  /** Sorted names of the regular files (or with `kind: "directory"`, directories) in `dir`, dot names never. */
  listFilesSync(dir: string, options?: { kind?: "file" | "directory" }): string[];
  /** {@link statSync} of each of `names` in `dir`, a failing entry's error in its slot; one directory check per batch keeps listing cheap. */
  statEntriesSync(dir: string, names: readonly string[]): (StorageStat | StorageError)[];
  /** {@link rename}, synchronously, for the open path shared with the synchronous session calls. */
  renameSync(from: string, to: string, options?: ReplaceOptions): void;
  /** Opens a regular file (no link followed) for bounded reads: chunked loads, listing prefixes and tails. The caller closes it. */
  openReaderSync(path: string): SessionFileReader;

  /** Async {@link existsSync}. */
  exists(path: string): Promise<boolean>;
  /** The whole file as UTF-8 text. */
  readText(path: string): Promise<string>;
  /** At most `maxBytes` from the start of the file as UTF-8, dropping a character the bound cut. */
  readTextPrefix(path: string, maxBytes: number): Promise<string>;
  /** Async {@link writeTextSync}. */
  writeText(path: string, data: WriteChunk, options?: ReplaceOptions): Promise<void>;
  /** Renames a regular file and syncs the directories, under its writer lock (`session_busy`). */
  rename(from: string, to: string, options?: ReplaceOptions): Promise<void>;
  /** Removes a regular file, under its writer lock (`session_busy` while a writer holds it). */
  unlink(path: string): Promise<void>;
  /**
   * Opens `path` for appending (created 0600) and takes its writer lock: a second writer in any
   * process gets `session_busy`; readers are never blocked. Synchronous, as in GJC.
   */
  openWriter(path: string, options?: WriterOpenOptions): SessionStorageWriter;
}

/** How the shared writer reaches one file; internal to the storage layer. */
export interface LineSink {
  readonly path: string;
  /** Writes all of `data` at the end of the file; returns its UTF-8 byte count (measured by the writer when void). */
  appendSync(data: string): number | void;
  /** The file's last byte, or `undefined` when it is empty. */
  lastByteSync(): number | undefined;
  /** Syncs the file's data and metadata to stable storage. */
  syncSync(): void;
  /**
   * Throws `unsafe_entry` (`detail`: `identity_changed`) when {@link path} no longer names the file appended to (removed,
   * or another file renamed over it); absent where no other process can reach the file. Run at syncs, rewrites and
   * close, never per append.
   */
  checkNamedSync?(): void;
  /** Atomically replaces the file (see {@link SessionStorageWriter.rewrite}) and appends to the new one. */
  replace(chunks: Iterable<WriteChunk>): Promise<void>;
  /**
   * Closes the file and releases the writer lock; after a `close_not_dispatched` failure it is
   * still open and locked, and may be closed again.
   */
  closeSync(): void;
  /** See {@link SessionStorageWriter.openSidecar}; the sink closes what it opened when it closes, and an append to it is refused as {@link checkNamedSync} refuses. */
  openSidecar?(name: string, options?: SidecarOpenOptions): SidecarFile | undefined;
  /** See {@link SessionStorageWriter.openReaderSync}: a reader of the file held now, its stat taken from that descriptor. */
  openReaderSync?(): SessionFileReader;
}
