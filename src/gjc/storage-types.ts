/** The shapes of GJC's storage reads (what a stat and a snapshot of one descriptor give), and the main entry's stat in GJC's shape. */
import type { StorageStat } from "../storage/index.js";

/** Marks the face's storage classes, whose `statSync` answers in GJC's shape (see ./storage-view.ts). */
export const GJC_STAT_SHAPE: unique symbol = Symbol("gjc-session-store.gjc-stat-shape");

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

/** Nanoseconds of a time in (possibly fractional) milliseconds, exact for whole milliseconds. */
function nanoseconds(ms: number): bigint {
  const whole = Math.floor(ms);
  return BigInt(whole) * 1_000_000n + BigInt(Math.round((ms - whole) * 1e6));
}

/**
 * The main entry's stat in GJC's shape: device and inode as bigints, one link (a storage that is not the file system
 * has no others), times in nanoseconds from its milliseconds (the change time is the modification time where the
 * storage keeps none).
 */
export function gjcStatOf(stat: StorageStat): SessionStorageStat {
  const mtimeNs = nanoseconds(stat.mtimeMs);
  return {
    dev: BigInt(stat.dev),
    ino: BigInt(stat.ino),
    nlink: 1n,
    size: stat.size,
    mtimeMs: stat.mtimeMs,
    mtimeNs,
    ctimeNs: stat.ctimeMs === undefined ? mtimeNs : nanoseconds(stat.ctimeMs),
    mtime: new Date(stat.mtimeMs),
    isFile: stat.kind === "file",
  };
}
