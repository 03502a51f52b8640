/** pi's module functions over session files (reader, newest session, default directory, listing rows), each a shape over the main entry's mechanism. */
import os from "node:os";
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
  return resolveOptions({ sessionDir: dir, storage: undefined, cwd: dir }, { terminalId: null, ...withPiAgentDir(options) }).storage;
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

/** pi's agent directory: `$PI_CODING_AGENT_DIR` (a leading `~/` is the home directory, a relative one is taken from the process's cwd), else `~/.pi/agent`. */
export function piAgentDir(env: NodeJS.ProcessEnv = process.env, home: string = os.homedir()): string {
  const value = env.PI_CODING_AGENT_DIR;
  if (value === undefined || value.length === 0) return path.join(home, ".pi", "agent");
  return path.resolve(value === "~" ? home : value.startsWith("~/") ? path.join(home, value.slice(2)) : value);
}

/** Options of the `/pi` factories: the main entry's, and where a report of directories made owner-only goes. */
export interface PiSessionManagerOptions extends SessionManagerOptions {
  /**
   * Receives, once per directory and process, the directories preparing a managed scope made owner-only (pi creates
   * `~/.pi/agent` and its `sessions` 0755; managed storage needs them 0700). Default: one line on stderr.
   */
  onTightened?: (directories: readonly string[]) => void;
}

/** `options` with pi's agent directory where none is given. */
export function withPiAgentDir<T extends { agentDir?: string | undefined }>(options: T): T & { agentDir: string } {
  return { ...options, agentDir: options.agentDir ?? piAgentDir() };
}

/** The newest session file of `sessionDir` by mtime whose header is usable, or `null` (also for a missing directory); synchronous, as pi's. @throws ScopeError / StorageError for a directory that cannot be reached safely */
export function findMostRecentSession(sessionDir: string, options: SessionManagerOptions = {}): string | null {
  return recentSessions(sessionDir, options).find((file) => file.usable())?.path ?? null;
}

/** The session files of `sessionDir`, newest mtime first, each with a check of its header (read when asked); none for a missing directory. */
export function recentSessions(sessionDir: string, options: SessionManagerOptions = {}): { path: string; mtimeMs: number; usable(): boolean }[] {
  const dir = path.resolve(sessionDir);
  let storage: SessionStorage;
  let names: string[];
  try {
    storage = storageOf(dir, options);
    names = storage.listFilesSync(dir).filter((name) => name.endsWith(".jsonl"));
  } catch (error) {
    if (isStorageError(error, "not_found")) return [];
    throw error;
  }
  const stats = storage.statEntriesSync(dir, names);
  const files: { path: string; mtimeMs: number; usable(): boolean }[] = [];
  names.forEach((name, i) => {
    const stat = stats[i]!;
    const file = path.join(dir, name);
    if (!(stat instanceof Error) && stat.kind === "file") files.push({ path: file, mtimeMs: stat.mtimeMs, usable: () => hasUsableHeader(storage, file) });
  });
  return files.sort((a, b) => b.mtimeMs - a.mtimeMs);
}

/** The session directory of `cwd`: the managed scope below `<agentDir>/sessions` (default pi's, {@link piAgentDir}; prepared owner-only), never pi's legacy `--<cwd>--` one. @throws ScopeError */
export function getDefaultSessionDir(cwd: string, agentDir: string = piAgentDir()): string {
  return GjcSessionManager.getDefaultSessionDir(cwd, agentDir);
}

/** A timestamp as a time, when it parses. */
function timeOf(value: unknown): number | undefined {
  if (typeof value === "number" && Number.isFinite(value)) return value;
  if (typeof value !== "string") return undefined;
  const parsed = Date.parse(value);
  return Number.isNaN(parsed) ? undefined : parsed;
}

/** What a row falls back on when its file cannot be read whole: the listing's facts. */
type RowFacts = Pick<GjcSessionInfo, "path" | "id" | "cwd" | "parentSession" | "created" | "modified" | "messageCount" | "firstMessage" | "allMessagesText">;

/** The records of `file` read through the one loader (`storage`, else as the file is), `[]` when unreadable now. */
function recordsOf(file: string, storage: SessionStorage | undefined): (SessionHeader | FileEntry)[] {
  try {
    return readSessionRecords(file, storage);
  } catch {
    // Listed but unreadable now (gone, replaced): the listing's facts stand.
    return [];
  }
}

/** pi's row for one listed session from its whole file's `records`. */
function piInfoOf(row: RowFacts, records: readonly (SessionHeader | FileEntry)[]): SessionInfo {
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

/** pi's row for a session file pi wrote itself (read as it is: pi's files are 0644), or `undefined` when it has no usable header now. */
function legacyInfoOf(file: { path: string; mtimeMs: number }): SessionInfo | undefined {
  const records = recordsOf(file.path, undefined);
  const header = records[0] as SessionHeader | undefined;
  if (header === undefined || typeof header.id !== "string") return undefined;
  const parentSession = typeof header.parentSession === "string" ? header.parentSession : undefined;
  const facts: RowFacts = {
    path: file.path,
    id: header.id,
    cwd: typeof header.cwd === "string" ? header.cwd : "",
    ...defined({ parentSession }),
    created: new Date(timeOf(header.timestamp) ?? file.mtimeMs),
    modified: new Date(file.mtimeMs),
    messageCount: 0,
    firstMessage: NO_MESSAGES,
    allMessagesText: "",
  };
  return piInfoOf(facts, records);
}

/**
 * pi's rows for the listed `rows` and for the `legacy` session files pi wrote itself, newest `modified` first, reporting
 * progress per file. Never writes.
 */
export function piInfos(
  rows: readonly GjcSessionInfo[],
  listOptions: ListOptions,
  onProgress: ListProgress | undefined,
  legacy: readonly { path: string; mtimeMs: number }[] = [],
): SessionInfo[] {
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
    out.push(piInfoOf(row, recordsOf(row.path, storage)));
    onProgress?.(out.length, rows.length + legacy.length);
  }
  legacy.forEach((file, i) => {
    const info = legacyInfoOf(file);
    if (info !== undefined) out.push(info);
    onProgress?.(rows.length + i + 1, rows.length + legacy.length);
  });
  return out.sort((a, b) => b.modified.getTime() - a.modified.getTime());
}
