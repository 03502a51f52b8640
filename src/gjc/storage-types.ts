/** The shapes of GJC's storage reads: what a stat and a snapshot of one descriptor give. */

/** One file's metadata as GJC reads it: identity as bigints, exact times. */
export interface SessionStorageStat {
  /** Device and inode: which file this is. */
  dev: bigint;
  ino: bigint;
  /** Link count. */
  nlink?: bigint;
  /** Size in bytes. */
  size: number;
  /** Modification time: whole milliseconds, nanoseconds, and as a date. */
  mtimeMs: number;
  mtimeNs: bigint;
  /** Status-change time in nanoseconds (no caller can set it). */
  ctimeNs: bigint;
  mtime: Date;
  /** Whether it is a regular file. */
  isFile: boolean;
}

/** A file's bytes and the metadata of the one descriptor they were read through. */
export interface SessionStorageSnapshot {
  bytes: Uint8Array;
  stat: SessionStorageStat;
}
