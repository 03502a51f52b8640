/** pi's module functions over session files (reader, newest session, default directory, listing rows), each a shape over the main entry's mechanism. */
import path from "node:path";

import type { ListOptions, SessionManagerOptions } from "../manager/index.js";
import { SessionManager as GjcSessionManager } from "../manager/session-manager.js";
import { defined } from "../manager/appender.js";
import { readSessionRecords } from "../manager/session-files.js";
import { MessageCollector, NO_MESSAGES, SESSION_LIST_PREFIX_BYTES, summarizePrefix, type SessionInfo as GjcSessionInfo } from "../manager/session-info.js";
import { resolveOptions } from "../manager/options.js";
import { getSessionInfoName, type FileEntry, type SessionHeader } from "../session/index.js";
import { isStorageError, type SessionStorage } from "../storage/index.js";

/** One session as pi's `list` / `listAll` describe it. */
export interface SessionInfo {
  /** Absolute path of the session file. */
  path: string;
  /** The header's session id. */
  id: string;
  /** The header's working directory; `""` when absent. */
  cwd: string;
  /** The session's name: the latest `session_info` (an empty one clears it). */
  name?: string;
  /** The header's `parentSession` (a path for a branched session, an id for a fork). */
  parentSessionPath?: string;
  /** The header timestamp. */
  created: Date;
  /** The newest user or assistant message's time, else the header time, else the file mtime. */
  modified: Date;
  /** Every `message` entry of the file. */
  messageCount: number;
  /** The first user text, or `"(no messages)"`. */
  firstMessage: string;
  /** Every user and assistant text of the file, joined by spaces. */
  allMessagesText: string;
}

/** Called after each listed file: how many are done, of how many. */
export type ListProgress = (loaded: number, total: number) => void;

/** The storage that reaches `dir` (managed and owner-checked when it lies below the agent dir). */
function storageOf(dir: string, options: SessionManagerOptions): SessionStorage {
  return resolveOptions({ sessionDir: dir, storage: undefined, cwd: dir }, { terminalId: null, ...options }).storage;
}

/**
 * The records of `filePath`, header first, synchronously, by the main entry's loader (patches applied, older versions
 * migrated in memory, never written). @returns `[]` for a missing or empty file, or one without a usable header
 * @throws SessionFormatError `version_too_new` / `invalid_version`; StorageError for other read failures
 */
export function loadEntriesFromFile(filePath: string): (SessionHeader | FileEntry)[] {
  return readSessionRecords(filePath);
}

/** Whether the file's first bytes hold a usable session header (the listing's own check). */
function hasUsableHeader(storage: SessionStorage, file: string): boolean {
  try {
    const reader = storage.openReaderSync(file);
    try {
      const buffer = Buffer.alloc(SESSION_LIST_PREFIX_BYTES);
      const read = reader.readSync(buffer, 0);
      return summarizePrefix(buffer.subarray(0, read).toString("utf8"), read < buffer.length).kind === "session";
    } finally {
      reader.close();
    }
  } catch {
    return false;
  }
}

/** The newest session file of `sessionDir` by mtime whose header is usable, or `null` (also for a missing directory); synchronous, as pi's. @throws ScopeError / StorageError for a directory that cannot be reached safely */
export function findMostRecentSession(sessionDir: string, options: SessionManagerOptions = {}): string | null {
  const dir = path.resolve(sessionDir);
  let storage: SessionStorage;
  let names: string[];
  try {
    storage = storageOf(dir, options);
    names = storage.listFilesSync(dir).filter((name) => name.endsWith(".jsonl"));
  } catch (error) {
    if (isStorageError(error, "not_found")) return null;
    throw error;
  }
  const stats = storage.statEntriesSync(dir, names);
  const candidates: { file: string; mtimeMs: number }[] = [];
  names.forEach((name, i) => {
    const stat = stats[i]!;
    if (!(stat instanceof Error) && stat.kind === "file") candidates.push({ file: path.join(dir, name), mtimeMs: stat.mtimeMs });
  });
  candidates.sort((a, b) => b.mtimeMs - a.mtimeMs);
  return candidates.find((candidate) => hasUsableHeader(storage, candidate.file))?.file ?? null;
}

/** The session directory of `cwd`: the managed scope below `<agentDir>/sessions` (prepared owner-only), never pi's legacy `--<cwd>--` one. @throws ScopeError */
export function getDefaultSessionDir(cwd: string, agentDir?: string): string {
  return GjcSessionManager.getDefaultSessionDir(cwd, agentDir);
}

/** A timestamp as a time, when it parses. */
function timeOf(value: unknown): number | undefined {
  if (typeof value === "number" && Number.isFinite(value)) return value;
  if (typeof value !== "string") return undefined;
  const parsed = Date.parse(value);
  return Number.isNaN(parsed) ? undefined : parsed;
}

/** pi's row for one listed session: the whole file read through the one loader. */
function piInfoOf(row: GjcSessionInfo, storage: SessionStorage): SessionInfo {
  let records: (SessionHeader | FileEntry)[] = [];
  try {
    records = readSessionRecords(row.path, storage);
  } catch {
    // Listed from its prefix but unreadable now (gone, replaced): the prefix's facts stand.
  }
  const entries = records.slice(1) as FileEntry[];
  const messages = new MessageCollector();
  let newest: number | undefined;
  for (const entry of entries) {
    if (entry.type !== "message") continue;
    const message = (entry as { message?: { role?: unknown; timestamp?: unknown } }).message;
    messages.add(message);
    if (message?.role !== "user" && message?.role !== "assistant") continue;
    const time = timeOf(message.timestamp) ?? timeOf((entry as { timestamp?: unknown }).timestamp);
    if (time !== undefined && (newest === undefined || time > newest)) newest = time;
  }
  const header = records[0] as SessionHeader | undefined;
  const created = timeOf(header?.timestamp);
  const name = getSessionInfoName(entries);
  const loaded = records.length > 0;
  return {
    path: row.path,
    id: row.id,
    cwd: row.cwd,
    ...defined({ name, parentSessionPath: row.parentSession }),
    created: row.created,
    modified: new Date(newest ?? created ?? row.modified.getTime()),
    messageCount: loaded ? messages.count : row.messageCount,
    firstMessage: loaded ? (messages.first ?? NO_MESSAGES) : row.firstMessage,
    allMessagesText: loaded ? messages.all.join(" ") : row.allMessagesText,
  };
}

/** pi's rows for the listed `rows`, newest `modified` first, reporting progress per file. Never writes. */
export function piInfos(rows: readonly GjcSessionInfo[], listOptions: ListOptions, onProgress: ListProgress | undefined): SessionInfo[] {
  const options: SessionManagerOptions = listOptions.agentDir === undefined ? {} : { agentDir: listOptions.agentDir };
  const storages = new Map<string, SessionStorage>();
  const out: SessionInfo[] = [];
  for (const row of rows) {
    const dir = path.dirname(row.path);
    let storage = storages.get(dir);
    if (storage === undefined) {
      storage = storageOf(dir, options);
      storages.set(dir, storage);
    }
    out.push(piInfoOf(row, storage));
    onProgress?.(out.length, rows.length);
  }
  return out.sort((a, b) => b.modified.getTime() - a.modified.getTime());
}
