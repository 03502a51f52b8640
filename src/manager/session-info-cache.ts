/** The in-process cache of listing results: a picker opened again re-reads no unchanged file (an append changes size and mtime, an atomic rewrite the inode). */
import type { StorageStat } from "../storage/index.js";
import { SessionManagerError } from "./errors.js";
import type { DiscoverySkipCode, LatePatches, PrefixSummary, SessionInfo } from "./session-info.js";

/** What a listing learned about one file: its metadata (with what it was built from), or why it is left out. */
export type CachedOutcome =
  | { kind: "session"; info: SessionInfo; summary: PrefixSummary; late: LatePatches }
  | { kind: "skip"; code: DiscoverySkipCode };

/** The identity a stored outcome is valid for (`ctimeMs` where the storage reports it). */
type FileIdentity = Pick<StorageStat, "dev" | "ino" | "size" | "mtimeMs" | "ctimeMs">;

/** One file's stored listing result: the identity it was read with, the outcome, where to resume. */
export interface ListingRecord extends FileIdentity {
  outcome: CachedOutcome;
  resume: ResumePoint | undefined;
}

/** Where a later listing may resume scanning a v4/v5 file that only grew: what was found so far, and what must still hold (same prefix, same bytes before `offset`). */
export interface ResumePoint {
  /** end of the complete lines already scanned */
  offset: number;
  /** the last bytes before `offset`, as read */
  boundary: Buffer;
  /** SHA-256 of the prefix text, as read */
  prefixDigest: string;
  summary: PrefixSummary;
  late: LatePatches;
}

/** Listing results by path, valid while (dev, ino, size, mtimeMs, ctimeMs) holds, least recently used dropped first; an entry holds only what a bounded prefix produces. */
export class SessionInfoCache {
  /** How many entries it keeps at most. */
  readonly maxEntries: number;
  readonly #entries = new Map<string, ListingRecord>();
  #hits = 0;
  #misses = 0;

  /** @param maxEntries at least 1 (default 4096) @throws SessionManagerError `invalid_options` for anything else */
  constructor(maxEntries = 4096) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new SessionManagerError("invalid_options", "maxEntries must be a positive integer");
    this.maxEntries = maxEntries;
  }

  /** Whether anything is stored for `path` (whatever the file's identity now); not a lookup. */
  has(path: string): boolean {
    return this.#entries.has(path);
  }

  /** The outcome stored for `path` if the file still has the identity in `stat`. */
  get(path: string, stat: StorageStat): CachedOutcome | undefined {
    return this.lookup(path, stat)?.outcome;
  }

  /** The whole record stored for `path` if the file still has the identity in `stat`. */
  lookup(path: string, stat: StorageStat): ListingRecord | undefined {
    const entry = this.#entries.get(path);
    if (entry === undefined || !sameFile(entry, stat)) {
      this.#misses += 1;
      return undefined;
    }
    this.#hits += 1;
    // Re-insert: Map order is the recency order.
    this.#entries.delete(path);
    this.#entries.set(path, entry);
    return entry;
  }

  /** The resume point stored for `path` when the file is the same object (dev, ino), grown since; its old bytes are the caller's to check. */
  resumePoint(path: string, stat: StorageStat): ResumePoint | undefined {
    const entry = this.#entries.get(path);
    if (entry === undefined || entry.dev !== stat.dev || entry.ino !== stat.ino || stat.size <= entry.size) return undefined;
    return entry.resume;
  }

  /** Remembers `outcome` (and where to resume if the file grows) for `path` as read with the identity in `stat`. */
  set(path: string, stat: StorageStat, outcome: CachedOutcome, resume?: ResumePoint): void {
    this.store(path, recordOf(stat, outcome, resume));
  }

  /** Remembers a whole record (one read here, or one validated elsewhere) for `path`. */
  store(path: string, record: ListingRecord): void {
    this.#entries.delete(path);
    this.#entries.set(path, record);
    while (this.#entries.size > this.maxEntries) {
      const oldest = this.#entries.keys().next().value as string;
      this.#entries.delete(oldest);
    }
  }

  /** Forgets everything. */
  clear(): void {
    this.#entries.clear();
  }

  /** Number of files remembered. */
  get size(): number {
    return this.#entries.size;
  }

  /** Lookups answered from the cache and lookups that had to read, since construction. */
  get stats(): { hits: number; misses: number } {
    return { hits: this.#hits, misses: this.#misses };
  }
}

/** True when `stat` shows the object `identity` was read from, unchanged; the change time counts too (`utimes` can restore an mtime after a same-size rewrite, not a ctime). */
export function sameFile(identity: FileIdentity, stat: FileIdentity): boolean {
  return identity.dev === stat.dev && identity.ino === stat.ino && identity.size === stat.size && identity.mtimeMs === stat.mtimeMs && identity.ctimeMs === stat.ctimeMs;
}

/** The record of `outcome` read from a file with the identity in `stat`. */
export function recordOf(stat: StorageStat, outcome: CachedOutcome, resume?: ResumePoint): ListingRecord {
  const record: ListingRecord = { dev: stat.dev, ino: stat.ino, size: stat.size, mtimeMs: stat.mtimeMs, outcome, resume };
  if (stat.ctimeMs !== undefined) record.ctimeMs = stat.ctimeMs;
  return record;
}
