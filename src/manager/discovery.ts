/**
 * Session discovery: the session files of a directory (or of every scope under a sessions
 * root) with what a picker shows, newest first. Per file: one open, a bounded prefix read and,
 * for a longer file, a forward scan of the rest for its messages (counts and first message are
 * exact) and in v4/v5 a backward scan for late `header_patch` records; a file the cache or
 * the directory's index (`listing-index.ts`) knows costs one batched stat while unchanged.
 * A file that cannot be listed is reported in `skipped` with a code, never fails the listing.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import {
  FileSessionStorage,
  ManagedSessionStorage,
  StorageError,
  decodeUtf8Prefix,
  type SessionFileReader,
  type SessionStorage,
  type StorageErrorCode,
  type StorageStat,
} from "../storage/index.js";
import { FIRST_PATCH_VERSION } from "../session/index.js";
import { SessionManagerError } from "./errors.js";
import { readListingIndex, writeListingIndex, type ListingIndex } from "./listing-index.js";
import { indexAccess, type IndexAccess } from "./sidecar-files.js";
import { scanRest } from "./rest-scan.js";
import {
  MessageCollector,
  SESSION_LIST_PREFIX_BYTES,
  buildSessionInfo,
  skipOf,
  summarizePrefix,
  type CachedOutcome,
  type LatePatches,
  type ListingRecord,
  type PrefixSummary,
  type ResumePoint,
  type SessionInfo,
  type SkippedSession,
} from "./session-info.js";

const SESSION_FILE_SUFFIX = ".jsonl";
const DEFAULT_DISCOVERY_CONCURRENCY = 64;

/** Options shared by every discovery function. */
export interface DiscoveryOptions {
  /** Where the files are read; default a {@link FileSessionStorage} rooted at the listed directory. */
  storage?: SessionStorage;
  /** Earlier results: default one cache per storage (one shared without a storage); `false` reads every file. */
  cache?: SessionInfoCache | false;
  /** Files examined between two yields to the event loop (default {@link DEFAULT_DISCOVERY_CONCURRENCY}). */
  concurrency?: number;
  /** Read each directory's listing index ({@link LISTING_INDEX_FILE_NAME}), written back when it changed and the directory is safe to write; `false` touches none. */
  persistentIndex?: boolean;
}

/** The result of a listing: sessions newest first (ties by path), and what was left out. */
export interface SessionListing {
  sessions: SessionInfo[];
  skipped: SkippedSession[];
}

/**
 * Lists the session files directly in `sessionDir`, newest first by mtime, ties by path; a missing directory lists as empty, one that cannot be listed is reported in `skipped`.
 * @throws StorageError `invalid_path` for a relative directory, `outside_root` for one not below the given storage's root
 */
export async function listSessions(sessionDir: string, options: DiscoveryOptions = {}): Promise<SessionListing> {
  return listDirectories(contextFor(sessionDir, options), [sessionDir], []);
}

/** Lists the session files of every directory directly below `sessionsRoot` (one per scope) as {@link listSessions} does, in one order; links and other non-directories there are skipped. */
export async function listAll(sessionsRoot: string, options: DiscoveryOptions = {}): Promise<SessionListing> {
  const context = contextFor(sessionsRoot, options);
  const skipped: SkippedSession[] = [];
  const dirs = listNames(context.storage, sessionsRoot, "directory", skipped);
  return listDirectories(
    context,
    dirs.map((name) => path.join(sessionsRoot, name)),
    skipped,
  );
}

/**
 * The `limit` newest sessions of `sessionDir`, mtime descending, ties by path (prefixes read from the newest stat down
 * until found); `skipped` holds the files passed over on the way and every link or non-regular entry.
 */
export async function listRecentSessions(sessionDir: string, limit = 20, options: DiscoveryOptions = {}): Promise<SessionListing> {
  if (!Number.isInteger(limit) || limit < 0) throw new SessionManagerError("invalid_options", "limit must be a non-negative integer");
  const context = contextFor(sessionDir, options);
  const into: SessionListing = { sessions: [], skipped: [] };
  const state = openDirectory(context, sessionDir, into.skipped);
  const stated: Required<Candidate>[] = [];
  for (const [index, stat] of statAll(context, sessionDir, state.names).entries()) {
    const name = state.names[index]!;
    if ("code" in stat) into.skipped.push(stat);
    else stated.push({ name, file: state.prefix + name, stat });
  }
  stated.sort((a, b) => newestFirst(a.name, a.stat.mtimeMs, b.name, b.stat.mtimeMs));
  // Each file gives at most one session, so a batch of the sessions still missing never overshoots.
  let next = 0;
  while (into.sessions.length < limit && next < stated.length) {
    const batch = stated.slice(next, next + limit - into.sessions.length);
    next += batch.length;
    await examineAll(context, state, batch, into);
  }
  closeDirectory(context, state);
  into.skipped.sort(byPath);
  return into;
}

/**
 * GJC's `getRecentSessions`: the sessions of {@link listRecentSessions}, as our {@link SessionInfo} rows.
 * @throws SessionManagerError `invalid_options` for a negative or fractional limit; StorageError for a bad directory path
 */
export async function getRecentSessions(
  sessionDir: string,
  limit = 20,
  storage?: SessionStorage,
  options: Omit<DiscoveryOptions, "storage"> = {},
): Promise<SessionInfo[]> {
  return (await listRecentSessions(sessionDir, limit, storage === undefined ? options : { ...options, storage })).sessions;
}

/** The path of the newest valid session of `sessionDir` by mtime, or `null` when there is none. */
export async function findMostRecentSession(
  sessionDir: string,
  storage?: SessionStorage,
  options: Omit<DiscoveryOptions, "storage"> = {},
): Promise<string | null> {
  return (await getRecentSessions(sessionDir, 1, storage, options))[0]?.path ?? null;
}

/**
 * The in-process cache of listing results by path, so a picker opened again re-reads no unchanged file: an entry holds while
 * (dev, ino, size, mtimeMs, ctimeMs) does (an append changes size and mtime, an atomic rewrite the inode); least recently used goes first.
 */
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

/** The identity a stored outcome is valid for. */
type FileIdentity = Pick<StorageStat, "dev" | "ino" | "size" | "mtimeMs" | "ctimeMs">;

/** True when `stat` shows the object `identity` was read from, unchanged; the change time counts too (`utimes` can restore an mtime after a same-size rewrite, not a ctime). */
function sameFile(identity: FileIdentity, stat: FileIdentity): boolean {
  return (
    identity.dev === stat.dev &&
    identity.ino === stat.ino &&
    identity.size === stat.size &&
    identity.mtimeMs === stat.mtimeMs &&
    identity.ctimeMs === stat.ctimeMs
  );
}

/** The record of `outcome` read from a file with the identity in `stat`. */
function recordOf(stat: StorageStat, outcome: CachedOutcome, resume?: ResumePoint): ListingRecord {
  const record: ListingRecord = { dev: stat.dev, ino: stat.ino, size: stat.size, mtimeMs: stat.mtimeMs, outcome, resume };
  if (stat.ctimeMs !== undefined) record.ctimeMs = stat.ctimeMs;
  return record;
}

interface Context {
  storage: SessionStorage;
  cache: SessionInfoCache | undefined;
  concurrency: number;
  persistentIndex: boolean;
}

/** One file to examine; `stat` when the caller stated it already. */
interface Candidate {
  name: string;
  /** its path, built once (one string per file keeps cache lookups cheap) */
  file: string;
  stat?: StorageStat;
}

/** One directory being listed: its session file names, its index as read, and the records seen now. */
interface DirectoryState {
  dir: string;
  /** `dir` and a separator: file paths are built by one concatenation */
  prefix: string;
  names: string[];
  access: IndexAccess;
  stored: ListingIndex | undefined;
  /** records produced or confirmed by this listing */
  seen: ListingIndex;
  /** wall-clock time before any file of the directory was stated or opened */
  startedMs: number;
  /** whether {@link seen} holds a record the stored index does not */
  dirty: boolean;
}

const sharedCache = new SessionInfoCache();
const cachesByStorage = new WeakMap<SessionStorage, SessionInfoCache>();

function contextFor(dir: string, options: DiscoveryOptions): Context {
  const concurrency = options.concurrency ?? DEFAULT_DISCOVERY_CONCURRENCY;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new SessionManagerError("invalid_options", "concurrency must be a positive integer");
  const storage = options.storage ?? new FileSessionStorage(dir);
  return { storage, cache: cacheFor(options, storage), concurrency, persistentIndex: options.persistentIndex !== false };
}

function cacheFor(options: DiscoveryOptions, storage: SessionStorage): SessionInfoCache | undefined {
  if (options.cache instanceof SessionInfoCache) return options.cache;
  if (options.cache === false) return undefined;
  if (options.storage === undefined) return sharedCache;
  // Inode numbers identify a file only within one storage (memory storages number from 1).
  let cache = cachesByStorage.get(storage);
  if (cache === undefined) cachesByStorage.set(storage, (cache = new SessionInfoCache()));
  return cache;
}

/** The session file names (or directory names) in `dir`, `[]` when it is missing; a failure, and every stray entry, goes to `skipped`. */
function listNames(storage: SessionStorage, dir: string, kind: "file" | "directory", skipped: SkippedSession[]): string[] {
  let names: string[];
  try {
    names = storage.listFilesSync(dir, { kind });
  } catch (error) {
    // A path the storage cannot even address is the caller's mistake, not a damaged directory.
    if (error instanceof StorageError && CALLER_ERRORS.has(error.code)) throw error;
    if (!(error instanceof StorageError && error.code === "not_found")) skipped.push(skipOf(dir, error));
    return [];
  }
  reportStrays(storage, dir, kind === "directory", skipped);
  return kind === "file" ? names.filter(isSessionFileName) : names;
}

const CALLER_ERRORS: ReadonlySet<StorageErrorCode> = new Set<StorageErrorCode>(["invalid_path", "outside_root"]);

function isSessionFileName(name: string): boolean {
  return name.endsWith(SESSION_FILE_SUFFIX) && name.length > SESSION_FILE_SUFFIX.length;
}

/**
 * Links, FIFOs, sockets and devices in `dir`, reported so that a planted link or FIFO is seen (the storage lists regular files
 * only); in a sessions root (`root`) directories are expected, elsewhere only session file names count. Nothing is followed.
 */
function reportStrays(storage: SessionStorage, dir: string, root: boolean, skipped: SkippedSession[]): void {
  let entries: { name: string; type: string }[];
  try {
    if (storage instanceof ManagedSessionStorage) entries = storage.listEntriesSync(dir);
    else if (!(storage instanceof FileSessionStorage)) return;
    else {
      entries = fs.readdirSync(dir, { withFileTypes: true }).map((e) => ({
        name: e.name,
        type: e.isFile() ? "file" : e.isSymbolicLink() ? "symlink" : e.isDirectory() ? "directory" : "other",
      }));
    }
  } catch {
    // The storage listed this directory a moment ago; if it is gone now, so are its entries.
    return;
  }
  for (const { name, type } of entries) {
    if (type === "file" || name.startsWith(".") || (root ? type === "directory" : !isSessionFileName(name))) continue;
    skipped.push({ path: path.join(dir, name), code: type === "symlink" ? "symlink_refused" : "not_regular_file" });
  }
}

/** Lists each of `dirs` into one listing after the rows already in `skipped`. */
async function listDirectories(context: Context, dirs: readonly string[], skipped: SkippedSession[]): Promise<SessionListing> {
  const into: SessionListing = { sessions: [], skipped };
  for (const dir of dirs) await examineDirectory(context, openDirectory(context, dir, skipped), into);
  into.sessions.sort((a, b) => newestFirst(a.path, a.modified.getTime(), b.path, b.modified.getTime()));
  skipped.sort(byPath);
  return into;
}

/** Lists the session file names of `dir` (what is skipped unread goes to `skipped`), then reads its index when the listing uses one. */
function openDirectory(context: Context, dir: string, skipped: SkippedSession[]): DirectoryState {
  const names = listNames(context.storage, dir, "file", skipped);
  const access: IndexAccess = context.persistentIndex ? indexAccess(context.storage, dir) : { file: undefined, writable: false };
  const stored = readListingIndex(context.storage, access, dir);
  return { dir, prefix: path.join(dir, path.sep), names, access, stored, seen: new Map(), startedMs: Date.now(), dirty: false };
}

/** Examines every file of `state`: known ones are stated in one batch (and not opened while unchanged), the rest read. */
async function examineDirectory(context: Context, state: DirectoryState, into: SessionListing): Promise<void> {
  const { names } = state;
  const files = names.map((name) => state.prefix + name);
  const known = names.filter((name, index) => state.stored?.has(name) === true || context.cache?.has(files[index]!) === true);
  // `known` keeps the order of `names`, so one cursor pairs each with its stat.
  const stats = statAll(context, state.dir, known);
  const candidates: Candidate[] = [];
  let cursor = 0;
  for (let index = 0; index < names.length; index++) {
    const stat = known[cursor] === names[index] ? stats[cursor++] : undefined;
    if (stat !== undefined && "code" in stat) into.skipped.push(stat);
    else candidates.push({ name: names[index]!, file: files[index]!, stat });
  }
  await examineAll(context, state, candidates, into);
  closeDirectory(context, state);
}

/** Writes the index back when this listing learned what it did not hold (a new or changed file, one gone), carrying over records of files not examined (a recent listing stops early). */
function closeDirectory(context: Context, state: DirectoryState): void {
  if (state.access.file === undefined || !state.access.writable) return;
  const listed = new Set(state.names);
  const stored: ListingIndex = state.stored ?? new Map();
  if (!state.dirty && [...stored.keys()].every((name) => listed.has(name))) return;
  const next: ListingIndex = new Map();
  for (const [name, record] of stored) if (listed.has(name) && !state.seen.has(name)) next.set(name, record);
  for (const [name, record] of state.seen) next.set(name, record);
  writeListingIndex(context.storage, state.access.file, next);
}

/** {@link SessionStorage.statEntriesSync} of `names` in `dir`, each failure as its skip. */
function statAll(context: Context, dir: string, names: readonly string[]): (StorageStat | SkippedSession)[] {
  if (names.length === 0) return [];
  let stats: ReturnType<SessionStorage["statEntriesSync"]>;
  try {
    stats = context.storage.statEntriesSync(dir, names);
  } catch (error) {
    return names.map((name) => skipOf(path.join(dir, name), error));
  }
  return stats.map((stat, index) => {
    if (stat instanceof StorageError) return skipOf(path.join(dir, names[index]!), stat);
    return stat.kind === "file" ? stat : { path: path.join(dir, names[index]!), code: "not_regular_file" };
  });
}

/** Examines `candidates` into `into`: synchronous reads (a 4 KiB page-cache read costs less than a thread-pool hand-off), a yield every `concurrency` files. */
async function examineAll(context: Context, state: DirectoryState, candidates: readonly Candidate[], into: SessionListing): Promise<void> {
  for (let index = 0; index < candidates.length; index++) {
    if (index > 0 && index % context.concurrency === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    examine(context, state, candidates[index]!, into);
  }
}

/** A record the in-process cache or the directory index holds for a file with the identity in `stat`. */
function knownRecord(context: Context, state: DirectoryState, name: string, file: string, stat: StorageStat): ListingRecord | undefined {
  const cached = context.cache?.lookup(file, stat);
  if (cached !== undefined) return cached;
  const stored = state.stored?.get(name);
  if (stored === undefined || !sameFile(stored, stat)) return undefined;
  context.cache?.store(file, stored);
  return stored;
}

/** Lists one file: a known result, or one open giving the identity, the prefix and the late patch scan. */
function examine(context: Context, state: DirectoryState, { name, file, stat }: Candidate, into: SessionListing): void {
  const known = stat === undefined ? undefined : knownRecord(context, state, name, file, stat);
  if (known !== undefined) return settle(state, name, file, known, into);
  let reader: SessionFileReader;
  try {
    reader = context.storage.openReaderSync(file);
  } catch (error) {
    into.skipped.push(skipOf(file, error));
    return;
  }
  let record: ListingRecord;
  try {
    if (stat === undefined || !sameFile(stat, reader.stat)) {
      const known = knownRecord(context, state, name, file, reader.stat);
      if (known !== undefined) return settle(state, name, file, known, into);
    }
    // Only this process remembers where to resume: the index keeps no resume points.
    const read = readOutcome(reader, context.cache?.resumePoint(file, reader.stat));
    record = recordOf(reader.stat, read.outcome, read.resume);
    // What was read of a file that shrank meanwhile is reported, never remembered.
    if (read.partial) return report(record.outcome, file, into);
  } catch (error) {
    // A failed read is not cached: permissions and races change without touching the file.
    into.skipped.push(skipOf(file, error));
    return;
  } finally {
    reader.close();
  }
  if (changedTooRecently(record, state.startedMs)) return report(record.outcome, file, into);
  context.cache?.store(file, record);
  settle(state, name, file, record, into);
}

/** How long after its last change a file's identity tells a later change apart (whole-second clocks: longer). */
const SETTLE_MS = 50;
const COARSE_SETTLE_MS = 2000;

/** True when the file changed so shortly before this listing that a same-size rewrite could get the same change time: such a result is reported, not remembered. */
function changedTooRecently(record: ListingRecord, startedMs: number): boolean {
  const changed = record.ctimeMs ?? record.mtimeMs;
  return startedMs - changed < (changed % 1000 === 0 ? COARSE_SETTLE_MS : SETTLE_MS);
}

/** Notes `record` as this listing's view of `name` and reports its outcome. */
function settle(state: DirectoryState, name: string, file: string, record: ListingRecord, into: SessionListing): void {
  // Only a writable index needs what was seen; a stored record is carried over unless seen otherwise.
  const stored = state.stored?.get(name);
  if (state.access.writable && stored !== record) {
    state.seen.set(name, record);
    // The index keeps no resume points, the one part of a record that may differ unseen.
    state.dirty ||= stored === undefined || !sameFile(stored, record) || stored.outcome.kind !== record.outcome.kind;
  }
  report(record.outcome, file, into);
}

function report(outcome: CachedOutcome, file: string, into: SessionListing): void {
  if (outcome.kind === "session") into.sessions.push(outcome.info);
  else into.skipped.push({ path: file, code: outcome.code });
}

/** The buffer every prefix is read into: files are examined one at a time and no view of it is kept. */
const prefixScratch = Buffer.allocUnsafe(SESSION_LIST_PREFIX_BYTES);

/**
 * What a listing needs from the file open in `reader`: the prefix summary, then (for a longer file) the rest scanned for
 * messages and, in v4/v5, late patches. A file that only grew (same object, prefix and bytes before the old end) is scanned
 * on from where the last scan ended. `partial` when the file ended before its stat's size.
 */
function readOutcome(reader: SessionFileReader, previous: ResumePoint | undefined): { outcome: CachedOutcome; resume?: ResumePoint; partial: boolean } {
  const { stat } = reader;
  const whole = stat.size <= SESSION_LIST_PREFIX_BYTES;
  const bytes = prefixScratch.subarray(0, reader.readSync(prefixScratch, 0));
  // Only a file longer than the prefix is ever resumed, so only such a file needs its prefix digest.
  const digest = (): string => createHash("sha256").update(bytes).digest("base64");
  let prefixDigest: string | undefined;
  let summary: PrefixSummary;
  let earlier: LatePatches = {};
  let from: number;
  if (previous !== undefined && previous.prefixDigest === (prefixDigest = digest()) && unchangedBefore(reader, previous)) {
    summary = previous.summary;
    earlier = previous.late;
    from = previous.offset;
  } else {
    const summarized = summarizePrefix(decodeUtf8Prefix(bytes), whole);
    if (summarized.kind === "skip") return { outcome: summarized, partial: false };
    summary = summarized;
    from = summary.parsedBytes;
  }
  if (whole) return { outcome: { kind: "session", info: buildSessionInfo(reader.path, summary, {}, stat), summary, late: {} }, partial: false };
  // A prefix that is not valid UTF-8 was parsed for its header only (parsedBytes 0): its messages are counted by the scan.
  const messages = from === 0 ? new MessageCollector() : MessageCollector.continuing(summary);
  const found = { messages, late: summary.version < FIRST_PATCH_VERSION ? undefined : { ...earlier } };
  const scan = scanRest(reader, from, stat.size, found);
  const full = withMessages(summary, messages);
  const late = found.late ?? {};
  const partial = !scan.complete;
  const outcome: CachedOutcome = { kind: "session", info: buildSessionInfo(reader.path, full, late, stat, partial), summary: full, late };
  if (scan.resume === undefined || partial) return { outcome, partial };
  const { offset, boundary, atBoundary } = scan.resume;
  const resume = { offset, boundary, prefixDigest: prefixDigest ?? digest(), summary: withMessages(summary, atBoundary.messages), late: atBoundary.late ?? {} };
  return { outcome, partial, resume };
}

/** `summary` with what `messages` collected. */
function withMessages(summary: PrefixSummary, messages: MessageCollector): PrefixSummary {
  return { ...summary, messageCount: messages.count, firstMessage: messages.first, allMessagesText: messages.all.join(" ") };
}

/** True when the bytes just before the resume point are still the ones seen there. */
function unchangedBefore(reader: SessionFileReader, previous: ResumePoint): boolean {
  const length = previous.boundary.length;
  if (previous.offset < length) return false;
  const now = Buffer.allocUnsafe(length);
  return reader.readSync(now, previous.offset - length) === length && now.equals(previous.boundary);
}

function newestFirst(pathA: string, mtimeA: number, pathB: string, mtimeB: number): number {
  if (mtimeA !== mtimeB) return mtimeB - mtimeA;
  return pathA < pathB ? -1 : pathA > pathB ? 1 : 0;
}

function byPath(a: SkippedSession, b: SkippedSession): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}
