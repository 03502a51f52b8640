/**
 * Session discovery: listing the session files of a directory (or of every scope under a
 * sessions root) with the metadata a picker needs, newest first.
 *
 * Cost per file: one open whose descriptor gives the identity, a bounded prefix read and, for
 * v4/v5 files longer than the prefix, a backward scan for late `header_patch` records. A file
 * the in-process cache or the directory's persistent index (`listing-index.ts`) already knows
 * is checked by one stat, batched per directory, and not opened while it is unchanged. No
 * file is ever read whole, so memory does not grow with file sizes. A file that cannot be listed (unreadable,
 * no valid header, a newer format, a link, a FIFO) is reported in `skipped` with a code and
 * never fails the listing.
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
import { scanLatePatches } from "./patch-tail-scan.js";
import { skipOf } from "./skip-codes.js";
import { readListingIndex, writeListingIndex, type ListingIndex } from "./listing-index.js";
import { indexAccess, type IndexAccess } from "./sidecar-files.js";
import {
  SessionInfoCache,
  recordOf,
  sameFile,
  type CachedOutcome,
  type ListingRecord,
  type ResumePoint,
} from "./session-info-cache.js";
import {
  SESSION_LIST_PREFIX_BYTES,
  buildSessionInfo,
  summarizePrefix,
  type DiscoverySkipCode,
  type LatePatches,
  type PrefixSummary,
  type SessionInfo,
  type SkippedSession,
} from "./session-info.js";

/** File name ending of a session file. */
export const SESSION_FILE_SUFFIX = ".jsonl";

/** Default number of files examined between two yields to the event loop. */
export const DEFAULT_DISCOVERY_CONCURRENCY = 64;

/** Options shared by every discovery function. */
export interface DiscoveryOptions {
  /**
   * Where the files are read. Default: a {@link FileSessionStorage} rooted at the directory
   * being listed (the sessions root for {@link listAll}).
   */
  storage?: SessionStorage;
  /**
   * Results of earlier listings. Default: one cache per storage object, and one shared cache
   * for calls without a storage. `false` reads every file.
   */
  cache?: SessionInfoCache | false;
  /**
   * Files examined before the listing yields to the event loop (default
   * {@link DEFAULT_DISCOVERY_CONCURRENCY}).
   */
  concurrency?: number;
  /**
   * Use the persistent listing index ({@link LISTING_INDEX_FILE_NAME}) of each listed
   * directory: read it to skip files it knows unchanged, and write it back when something
   * changed and the directory is safe to write (see `listing-index.ts`). Default `true`.
   * `false` neither reads nor writes any index file.
   */
  persistentIndex?: boolean;
}

/** The result of a listing: sessions newest first (ties by path), and what was left out. */
export interface SessionListing {
  sessions: SessionInfo[];
  skipped: SkippedSession[];
}

/**
 * Lists every session file directly in `sessionDir`, newest first by mtime, ties by path.
 * A missing directory lists as empty; a directory that cannot be listed is reported in
 * `skipped` under its own path.
 *
 * @throws StorageError `invalid_path` for a relative directory, `outside_root` for one that is
 *   not below the given storage's root
 */
export async function listSessions(sessionDir: string, options: DiscoveryOptions = {}): Promise<SessionListing> {
  const context = contextFor(sessionDir, options);
  const found = candidatesIn(context, sessionDir);
  const outcomes = await examineDirectory(context, sessionDir, found.names);
  return collect(outcomes, found.skipped);
}

/**
 * Lists the session files in every directory directly below `sessionsRoot` (one directory per
 * workspace scope). Directories that cannot be listed, and links or other non-directories in
 * the root, are reported in `skipped`; the rest is listed as by {@link listSessions} and
 * merged in one order.
 */
export async function listAll(sessionsRoot: string, options: DiscoveryOptions = {}): Promise<SessionListing> {
  const context = contextFor(sessionsRoot, options);
  const skipped: SkippedSession[] = [];
  const dirs = listOrReport(sessionsRoot, (dir) => context.storage.listFilesSync(dir, { kind: "directory" }), skipped);
  if (dirs === undefined) return { sessions: [], skipped };
  for (const entry of nonRegularEntries(context.storage, sessionsRoot, () => true)) {
    if (entry.type !== "directory") skipped.push(entry.skip);
  }
  const outcomes: Outcome[] = [];
  for (const name of dirs) {
    const dir = path.join(sessionsRoot, name);
    const found = candidatesIn(context, dir);
    skipped.push(...found.skipped);
    for (const outcome of await examineDirectory(context, dir, found.names)) outcomes.push(outcome);
  }
  return collect(outcomes, skipped);
}

/**
 * The `limit` newest sessions of `sessionDir` (mtime descending, ties by path). Files are
 * ordered by a stat alone, and prefixes are read only from the newest down until `limit`
 * sessions are found, so the cost does not depend on how many older files there are.
 * `skipped` holds the files passed over on the way, and every link or non-regular entry.
 * {@link getRecentSessions} is the GJC-shaped form (the sessions only).
 */
export async function listRecentSessions(
  sessionDir: string,
  limit = 20,
  options: DiscoveryOptions = {},
): Promise<SessionListing> {
  if (!Number.isInteger(limit) || limit < 0) throw new SessionManagerError("invalid_options", "limit must be a non-negative integer");
  const context = contextFor(sessionDir, options);
  const found = candidatesIn(context, sessionDir);
  const skipped = [...found.skipped];
  const state = openDirectory(context, sessionDir, found.names);
  const stated: (Candidate & { stat: StorageStat })[] = [];
  for (const [index, stat] of statAll(context, sessionDir, found.names).entries()) {
    if ("code" in stat) skipped.push(stat);
    else stated.push({ name: found.names[index]!, stat });
  }
  stated.sort((a, b) => newestFirst(a.name, a.stat.mtimeMs, b.name, b.stat.mtimeMs));
  const sessions: SessionInfo[] = [];
  let next = 0;
  while (sessions.length < limit && next < stated.length) {
    const batch = stated.slice(next, next + Math.max(limit - sessions.length, 1));
    next += batch.length;
    for (const outcome of await examineAll(context, state, batch)) {
      if (outcome.kind === "session") {
        if (sessions.length < limit) sessions.push(outcome.info);
      } else {
        skipped.push(skipRow(outcome));
      }
    }
  }
  closeDirectory(context, state);
  return { sessions, skipped: skipped.sort(byPath) };
}

/**
 * GJC's `getRecentSessions`: the `limit` newest valid sessions of `sessionDir`, newest first
 * (what {@link listRecentSessions} returns without its `skipped` report). Rows are our
 * {@link SessionInfo}, which carries GJC's `path` and more, not GJC's display pairs.
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

interface Context {
  storage: SessionStorage;
  cache: SessionInfoCache | undefined;
  concurrency: number;
  persistentIndex: boolean;
}

interface Candidate {
  /** file name within the directory being examined */
  name: string;
  /** known already when the caller ordered files by mtime, or the file was known before */
  stat?: StorageStat;
  /** its path, when already built (one string per file keeps cache lookups cheap) */
  file?: string;
}

/** One directory being listed: its persistent index as read, and the records seen now. */
interface DirectoryState {
  dir: string;
  /** `dir` with a trailing separator: file paths are built by concatenation, once per file */
  prefix: string;
  access: IndexAccess;
  /** the index as read (validated as a whole, each record still checked against a stat) */
  stored: ListingIndex | undefined;
  /** the names listed now: records of the previous index for files not examined are kept */
  names: ReadonlySet<string>;
  /** records produced or confirmed by this listing */
  seen: ListingIndex;
  /** wall-clock time before any file of the directory was stated or opened */
  startedMs: number;
  /** whether {@link seen} holds a record the stored index does not */
  dirty: boolean;
}

type Outcome = { kind: "session"; info: SessionInfo } | ({ kind: "skip" } & SkippedSession);

/** The reported row of a skipped outcome. */
function skipRow(outcome: { kind: "skip" } & SkippedSession): SkippedSession {
  const { kind: _kind, ...row } = outcome;
  return row;
}

const sharedCache = new SessionInfoCache();
const cachesByStorage = new WeakMap<SessionStorage, SessionInfoCache>();

function contextFor(dir: string, options: DiscoveryOptions): Context {
  const concurrency = options.concurrency ?? DEFAULT_DISCOVERY_CONCURRENCY;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new SessionManagerError("invalid_options", "concurrency must be a positive integer");
  const storage = options.storage ?? new FileSessionStorage(dir);
  let cache: SessionInfoCache | undefined;
  if (options.cache instanceof SessionInfoCache) cache = options.cache;
  else if (options.cache === false) cache = undefined;
  else if (options.storage === undefined) cache = sharedCache;
  else {
    // Inode numbers identify a file only within one storage (memory storages number from 1).
    cache = cachesByStorage.get(storage);
    if (cache === undefined) {
      cache = new SessionInfoCache();
      cachesByStorage.set(storage, cache);
    }
  }
  return { storage, cache, concurrency, persistentIndex: options.persistentIndex !== false };
}

/** The session file names of one directory, and the entries there that are skipped unread. */
function candidatesIn(context: Context, dir: string): { names: string[]; skipped: SkippedSession[] } {
  const skipped: SkippedSession[] = [];
  const listed = listOrReport(dir, (at) => context.storage.listFilesSync(at), skipped);
  if (listed === undefined) return { names: [], skipped };
  for (const entry of nonRegularEntries(context.storage, dir, isSessionFileName)) skipped.push(entry.skip);
  return { names: listed.filter(isSessionFileName), skipped };
}

/**
 * The names `list` gives for `dir`; `undefined` when it cannot list them. A missing directory
 * is simply empty; any other failure is reported in `skipped` under the directory's path.
 */
function listOrReport(dir: string, list: (dir: string) => string[], skipped: SkippedSession[]): string[] | undefined {
  try {
    return list(dir);
  } catch (error) {
    // A path the storage cannot even address is the caller's mistake, not a damaged directory.
    if (error instanceof StorageError && CALLER_ERRORS.has(error.code)) throw error;
    if (!(error instanceof StorageError && error.code === "not_found")) skipped.push(skipOf(dir, error));
    return undefined;
  }
}

const CALLER_ERRORS: ReadonlySet<StorageErrorCode> = new Set<StorageErrorCode>(["invalid_path", "outside_root"]);

function isSessionFileName(name: string): boolean {
  return name.endsWith(SESSION_FILE_SUFFIX) && name.length > SESSION_FILE_SUFFIX.length;
}

/**
 * Links, FIFOs, sockets and devices in `dir` whose names pass `wanted`. The storage lists
 * regular files only, so these would otherwise vanish without a trace; they are reported so a
 * planted link or FIFO is visible. Only disk-backed storages can hold them, and the names are
 * taken from a plain directory read (a managed storage reads its held directory): nothing is
 * opened or followed.
 */
function nonRegularEntries(
  storage: SessionStorage,
  dir: string,
  wanted: (name: string) => boolean,
): { type: "symlink" | "directory" | "other"; skip: SkippedSession }[] {
  let entries: { name: string; type: "file" | "symlink" | "directory" | "other" }[];
  try {
    if (storage instanceof ManagedSessionStorage) {
      entries = storage.listEntriesSync(dir).map((e) => ({ name: e.name, type: e.type === "file" || e.type === "symlink" || e.type === "directory" ? e.type : "other" }));
    } else if (storage instanceof FileSessionStorage) {
      entries = fs.readdirSync(dir, { withFileTypes: true }).map((e) => ({
        name: e.name,
        type: e.isFile() ? "file" : e.isSymbolicLink() ? "symlink" : e.isDirectory() ? "directory" : "other",
      }));
    } else {
      return [];
    }
  } catch {
    // The storage listed this directory a moment ago; if it is gone now, so are its entries.
    return [];
  }
  const found: { type: "symlink" | "directory" | "other"; skip: SkippedSession }[] = [];
  for (const entry of entries) {
    if (entry.type === "file" || entry.name.startsWith(".") || !wanted(entry.name)) continue;
    const where = path.join(dir, entry.name);
    if (entry.type === "symlink") found.push({ type: "symlink", skip: { path: where, code: "symlink_refused" } });
    else found.push({ type: entry.type, skip: { path: where, code: "not_regular_file" } });
  }
  return found;
}

/**
 * Lists the session files `names` of `dir`: files the in-process cache or the directory's
 * index already knows are stated in one batch through the directory (and not opened while
 * unchanged); the rest are read. The index is written back when something changed.
 */
async function examineDirectory(context: Context, dir: string, names: readonly string[]): Promise<Outcome[]> {
  const state = openDirectory(context, dir, names);
  const files = names.map((name) => state.prefix + name);
  const known: string[] = [];
  for (let index = 0; index < names.length; index++) {
    if (state.stored?.has(names[index]!) === true || context.cache?.has(files[index]!) === true) known.push(names[index]!);
  }
  // Names are sorted and `known` keeps their order, so one cursor pairs each with its stat.
  const stats = statAll(context, dir, known);
  const outcomes = new Array<Outcome>(names.length);
  const toExamine: Candidate[] = [];
  const slots: number[] = [];
  let cursor = 0;
  for (let index = 0; index < names.length; index++) {
    const name = names[index]!;
    const file = files[index]!;
    let stat: StorageStat | SkippedSession | undefined;
    if (known[cursor] === name) stat = stats[cursor++];
    if (stat !== undefined && "code" in stat) {
      outcomes[index] = { kind: "skip", ...stat };
      continue;
    }
    toExamine.push(stat === undefined ? { name, file } : { name, file, stat });
    slots.push(index);
  }
  const examined = await examineAll(context, state, toExamine);
  for (let index = 0; index < slots.length; index++) outcomes[slots[index]!] = examined[index]!;
  closeDirectory(context, state);
  return outcomes;
}

/** Reads the index of `dir` (when the listing uses one) before its files are examined. */
function openDirectory(context: Context, dir: string, names: readonly string[]): DirectoryState {
  const access: IndexAccess = context.persistentIndex ? indexAccess(context.storage, dir) : { file: undefined, writable: false };
  const stored = readListingIndex(context.storage, access, dir);
  return { dir, prefix: path.join(dir, path.sep), access, stored, names: new Set(names), seen: new Map(), startedMs: Date.now(), dirty: false };
}

/**
 * Writes the index of the directory back when this listing learned something it did not
 * hold: a new or changed file, or a file gone. Records of files this listing did not need
 * (a `getRecentSessions` stops early) are carried over; they are checked when used.
 */
function closeDirectory(context: Context, state: DirectoryState): void {
  if (state.access.file === undefined || !state.access.writable) return;
  const stored: ListingIndex = state.stored ?? new Map();
  const gone = [...stored.keys()].some((name) => !state.names.has(name));
  if (!state.dirty && !gone) return;
  const next: ListingIndex = new Map();
  for (const [name, record] of stored) if (state.names.has(name) && !state.seen.has(name)) next.set(name, record);
  for (const [name, record] of state.seen) next.set(name, record);
  writeListingIndex(context.storage, state.access, next);
}

/**
 * Whether `next` stores nothing `stored` did not: two records of one identity were read from
 * the same unchanged file (the index keeps no resume points, the one part that may differ).
 */
function sameRecord(stored: ListingRecord, next: ListingRecord): boolean {
  const { dev, ino, size, mtimeMs, ctimeMs } = next;
  return stored.dev === dev && stored.ino === ino && stored.size === size && stored.mtimeMs === mtimeMs && stored.ctimeMs === ctimeMs && stored.outcome.kind === next.outcome.kind;
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

/**
 * Examines `candidates` of one directory, results in input order. Each file is read
 * synchronously (a 4 KiB read from the page cache costs far less than a hand-off to the
 * thread pool); the listing yields to the event loop after every `concurrency` files so a
 * large directory never holds the process for long.
 */
async function examineAll(context: Context, state: DirectoryState, candidates: readonly Candidate[]): Promise<Outcome[]> {
  const outcomes = new Array<Outcome>(candidates.length);
  for (let index = 0; index < candidates.length; index++) {
    if (index > 0 && index % context.concurrency === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    outcomes[index] = examine(context, state, candidates[index]!);
  }
  return outcomes;
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

/**
 * Lists one file: a known result, or one open that gives the identity, the prefix and (v4/v5)
 * the late patch scan from the same descriptor. A file known before comes with a stat, so an
 * unchanged one is never opened.
 */
function examine(context: Context, state: DirectoryState, candidate: Candidate): Outcome {
  const { name } = candidate;
  const file = candidate.file ?? state.prefix + name;
  let stat = candidate.stat;
  if (stat !== undefined) {
    const known = knownRecord(context, state, name, file, stat);
    if (known !== undefined) return settle(state, name, file, known);
  }
  let reader: SessionFileReader;
  try {
    reader = context.storage.openReaderSync(file);
  } catch (error) {
    return { kind: "skip", ...skipOf(file, error) };
  }
  let record: ListingRecord;
  try {
    if (stat === undefined || !sameFile(stat, reader.stat)) {
      stat = reader.stat;
      const known = knownRecord(context, state, name, file, stat);
      if (known !== undefined) return settle(state, name, file, known);
    }
    // Only this process remembers where to resume: the index keeps no resume points.
    const previous = context.cache?.resumePoint(file, reader.stat);
    const read = readOutcome(reader, reader.stat, previous);
    record = recordOf(reader.stat, read.outcome, read.resume);
  } catch (error) {
    // A failed read is not cached: permissions and races change without touching the file.
    return { kind: "skip", ...skipOf(file, error) };
  } finally {
    reader.close();
  }
  if (changedTooRecently(record, state.startedMs)) return withPath(file, record.outcome);
  context.cache?.store(file, record);
  return settle(state, name, file, record);
}

/** How long after its last change a file's identity is trusted to tell a later change apart. */
const SETTLE_MS = 50;
/** The same for file systems that keep whole seconds only (a ctime with no fraction). */
const COARSE_SETTLE_MS = 2000;

/**
 * True when the file changed so shortly before this listing began that a rewrite of the
 * same size could still get the same change time (timestamps advance in clock ticks, not
 * nanoseconds). Such a result is returned but not remembered: the next listing reads the
 * file again, by when any rewrite has a change time of its own.
 */
function changedTooRecently(record: ListingRecord, startedMs: number): boolean {
  const changed = record.ctimeMs ?? record.mtimeMs;
  return startedMs - changed < (changed % 1000 === 0 ? COARSE_SETTLE_MS : SETTLE_MS);
}

/** Notes `record` as this listing's view of `name` and gives its outcome. */
function settle(state: DirectoryState, name: string, file: string, record: ListingRecord): Outcome {
  // Only an index that may be written needs to know what was seen; a record of the index as
  // read is carried over by closeDirectory unless seen otherwise.
  const stored = state.stored?.get(name);
  if (!state.access.writable || stored === record) return withPath(file, record.outcome);
  state.seen.set(name, record);
  state.dirty ||= stored === undefined || !sameRecord(stored, record);
  return withPath(file, record.outcome);
}

/**
 * The buffer every prefix is read into: files are examined one at a time, synchronously, and
 * nothing keeps a view of it (the text is decoded, the digest computed, before the next file).
 */
const prefixScratch = Buffer.allocUnsafe(SESSION_LIST_PREFIX_BYTES);

/**
 * Reads what a listing needs from the file open in `reader`. A v4/v5 file that only grew
 * since the last listing (same object, same prefix, same bytes before the old end) is
 * scanned for late patches from where the last scan ended, so a live session is not re-read
 * whole each time.
 */
function readOutcome(
  reader: SessionFileReader,
  stat: StorageStat,
  previous: ResumePoint | undefined,
): { outcome: CachedOutcome; resume?: ResumePoint } {
  const whole = stat.size <= SESSION_LIST_PREFIX_BYTES;
  const bytes = prefixScratch.subarray(0, reader.readSync(prefixScratch, 0));
  const text = decodeUtf8Prefix(bytes);
  // Only a grown v4/v5 file is ever resumed, so only such a file needs its prefix digest.
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
    const summarized = summarizePrefix(text, whole);
    if (summarized.kind === "skip") return { outcome: summarized };
    summary = summarized;
    from = summary.parsedBytes;
  }
  if (whole || summary.version < FIRST_PATCH_VERSION) {
    return { outcome: { kind: "session", info: buildSessionInfo(reader.path, summary, {}, stat), summary, late: {} } };
  }
  const scan = scanLatePatches(reader, from, stat.size);
  const late: LatePatches = {};
  const title = scan.found.title ?? earlier.title;
  const cwd = scan.found.cwd ?? earlier.cwd;
  if (title !== undefined) late.title = title;
  if (cwd !== undefined) late.cwd = cwd;
  const outcome: CachedOutcome = { kind: "session", info: buildSessionInfo(reader.path, summary, late, stat), summary, late };
  if (scan.resume === undefined) return { outcome };
  return { outcome, resume: { ...scan.resume, prefixDigest: prefixDigest ?? digest(), summary, late } };
}

/** True when the bytes just before the resume point are still the ones seen there. */
function unchangedBefore(reader: SessionFileReader, previous: ResumePoint): boolean {
  const length = previous.boundary.length;
  if (previous.offset < length) return false;
  const now = Buffer.allocUnsafe(length);
  return reader.readSync(now, previous.offset - length) === length && now.equals(previous.boundary);
}

function withPath(file: string, outcome: CachedOutcome): Outcome {
  return outcome.kind === "session" ? outcome : { kind: "skip", path: file, code: outcome.code };
}

function collect(outcomes: readonly Outcome[], skippedBefore: readonly SkippedSession[]): SessionListing {
  const sessions: SessionInfo[] = [];
  const skipped = [...skippedBefore];
  for (const outcome of outcomes) {
    if (outcome.kind === "session") sessions.push(outcome.info);
    else skipped.push(skipRow(outcome));
  }
  sessions.sort((a, b) => newestFirst(a.path, a.modified.getTime(), b.path, b.modified.getTime()));
  return { sessions, skipped: skipped.sort(byPath) };
}

function newestFirst(pathA: string, mtimeA: number, pathB: string, mtimeB: number): number {
  if (mtimeA !== mtimeB) return mtimeB - mtimeA;
  return pathA < pathB ? -1 : pathA > pathB ? 1 : 0;
}

function byPath(a: SkippedSession, b: SkippedSession): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}
