/** The state of the session a manager is on, and how each switch (new, branched, forked, opened) builds one. */
import path from "node:path";

import {
  checkEntryBounds,
  copyValue,
  CURRENT_SESSION_VERSION,
  isUnknownEntry,
  newSessionId,
  SessionTree,
  UsageAccumulator,
  type FileEntry,
  type SessionHeader,
} from "../session/index.js";
import { FileSessionStorage, type SessionStorageWriter } from "../storage/index.js";
import { SessionManagerError } from "./errors.js";
import { isAssistantMessage, linesFromLoad, type ManagedLine, type ReadEntryLine } from "./lines.js";
import type { SessionLoadReport } from "./load-report.js";
import { emptyReport, openSessionFile } from "./open-file.js";
import { sessionFileName, type ResolvedOptions } from "./options.js";
import type { LineIndexAppender } from "./line-index.js";
import { SessionPersistence } from "./persistence.js";

/** Internal: everything that describes the current session. */
export interface SessionState {
  header: SessionHeader;
  tree: SessionTree;
  lines: ManagedLine[];
  file: string | undefined;
  persistence: SessionPersistence | undefined;
  /** persistence has started (an assistant message exists, or the opened file had one) */
  active: boolean;
  /** the next persistence must write the whole file (new file, or migration pending) */
  fullWritePending: boolean;
  /** the pending full write only brings an older format up to date: it waits for a persisting call (a read and close never rewrite) */
  migrationOnly: boolean;
  /** a file exists at `file` that a full write must replace rather than create */
  fileExists: boolean;
  hasAssistant: boolean;
  /** lines appended while persistence had not started (no assistant message yet): what a close leaves unwritten */
  unwritten: number;
  /** usage totals over every entry of the file, fed as entries load and append (never a walk) */
  usage: UsageAccumulator;
  report: SessionLoadReport;
  /** closes the file an indexed read-only open keeps reading its unread entries from; idempotent */
  release?: () => void;
}

/** Totals over `entries` (a session's file being loaded or copied). */
function usageOf(entries: Iterable<FileEntry>): UsageAccumulator {
  const usage = new UsageAccumulator();
  for (const entry of entries) usage.add(entry);
  return usage;
}

/** What a fresh session's header records. */
interface FreshSession {
  cwd: string;
  parentSession?: string | undefined;
  /** a caller-chosen id, already validated; default a new UUIDv7 */
  id?: string | undefined;
  /** the header whose title a copy carries over (fork) */
  titleFrom?: SessionHeader | undefined;
}

/** A new session (header only); `file` defaults to a fresh name in the session dir, `writer` is the one held on it. */
export function freshState(options: ResolvedOptions, session: FreshSession, persistent: boolean, file?: string, writer?: SessionStorageWriter): SessionState {
  const now = options.now();
  const timestamp = now.toISOString();
  const id = session.id ?? newSessionId(now.getTime());
  const { title, titleSource } = session.titleFrom ?? {};
  const header: SessionHeader = {
    type: "session",
    version: CURRENT_SESSION_VERSION,
    id,
    timestamp,
    cwd: session.cwd,
    ...(session.parentSession === undefined ? {} : { parentSession: session.parentSession }),
    ...(title === undefined ? {} : { title, ...(titleSource === undefined ? {} : { titleSource }) }),
  };
  const target = file ?? path.join(options.sessionDir, sessionFileName(timestamp, id));
  const state: SessionState = {
    header,
    tree: new SessionTree([], { now: options.now }),
    lines: [{ kind: "header" }],
    file: target,
    persistence: undefined,
    active: false,
    fullWritePending: true,
    migrationOnly: false,
    fileExists: false,
    hasAssistant: false,
    unwritten: 0,
    usage: new UsageAccumulator(),
    report: emptyReport(target),
  };
  if (persistent) state.persistence = new SessionPersistence(options, target, () => state.header.cwd, writer);
  return state;
}

/** The state of the session file `file` through the one load path; a missing, blank or moved-aside file gives a fresh session there for `freshCwd`. @throws what {@link openSessionFile} throws */
export function openedState(options: ResolvedOptions, file: string, readOnly: boolean, freshCwd: string): SessionState {
  const opened = openSessionFile(options.storage, file, { readOnly, lookup: options.blobStore?.lookup() ?? (() => undefined), now: options.now });
  const { indexed } = opened;
  const loadedState = (
    session: Omit<SessionState, "file" | "persistence" | "active" | "fileExists" | "unwritten">,
    index?: LineIndexAppender,
  ): SessionState => {
    const state: SessionState = { ...session, file, persistence: undefined, active: session.hasAssistant, fileExists: true, unwritten: 0 };
    if (!readOnly) state.persistence = new SessionPersistence(options, file, () => state.header.cwd, opened.writer, index);
    return state;
  };
  if (indexed !== undefined) {
    const { appender, ...session } = indexed;
    return loadedState({ ...session, fullWritePending: false, migrationOnly: false }, appender);
  }
  if (opened.loaded === undefined) {
    const state = freshState(options, { cwd: freshCwd }, !readOnly, file, opened.writer);
    state.report = opened.report;
    state.fileExists = opened.writer !== undefined;
    return state;
  }
  const { loaded, entries } = opened;
  return loadedState({
    header: loaded.header,
    tree: new SessionTree(entries, { now: options.now }),
    lines: linesFromLoad(loaded, entries),
    hasAssistant: entries.some(isAssistantMessage),
    usage: usageOf(entries),
    report: opened.report,
    fullWritePending: loaded.migratedFrom !== null,
    migrationOnly: loaded.migratedFrom !== null,
  });
}

/** A tree of `entries` with its leaf at `leaf` (`null`: reset). */
function treeAt(entries: Iterable<FileEntry>, leaf: string | null, now: () => Date): SessionTree {
  const tree = new SessionTree(entries, { now });
  if (leaf === null) tree.resetLeaf();
  else tree.branch(leaf);
  return tree;
}

/**
 * The session `createBranchedSession` switches to: root..`leafId` of `current` without labels,
 * each re-linked to the copied entry before it, then the labels in force on them (re-added
 * after, as both peers do). @throws SessionTreeError `unknown_entry`
 */
export function branchedState(options: ResolvedOptions, current: SessionState, leafId: string, session: FreshSession, persistent: boolean): SessionState {
  const entries: FileEntry[] = [];
  let parentId: string | null = null;
  for (const entry of current.tree.getPath(leafId)) {
    if (entry.type === "label") continue;
    const record = entry as FileEntry & { id: string; parentId?: string | null };
    entries.push(record.parentId === parentId ? entry : ({ ...record, parentId } as FileEntry));
    parentId = record.id;
  }
  const state = freshState(options, session, persistent);
  state.tree = new SessionTree(entries, { now: options.now });
  // Entries read from the file are copied as read (never truncated again), as a fork copies them;
  // a re-linked copy is a new object of the same record, so its read mark is found by id.
  const read = new Map<unknown, ReadEntryLine>();
  for (const line of current.lines) if (line.kind === "entry" && line.read !== undefined) read.set((line.entry as { id?: unknown }).id, line.read);
  const labels: FileEntry[] = [];
  for (const entry of entries) {
    const id = (entry as { id: string }).id;
    const from = read.get(id);
    state.lines.push(from === undefined ? { kind: "entry", entry } : { kind: "entry", entry, read: from });
    const label = current.tree.getLabel(id);
    if (label !== undefined) labels.push(state.tree.appendLabel(id, label));
  }
  state.lines.push(...labels.map((entry): ManagedLine => ({ kind: "entry", entry })));
  state.hasAssistant = entries.some(isAssistantMessage);
  state.usage = usageOf(entries);
  return state;
}

/**
 * The session `forkFrom` starts: every line of the file `source` (read unlocked through its own explicit storage) in a
 * fresh session for `cwd` with the source's title, parented to the source's id or `parentSession` (pi records the path), with id `id`
 * when given (already validated).
 */
export function copiedState(options: ResolvedOptions, source: string, cwd: string, parentSession?: string, id?: string): SessionState {
  const reader = { ...options, storage: new FileSessionStorage(path.dirname(source), { logger: options.logger }) };
  const opened = openedState(reader, source, true, cwd);
  const header = opened.report.loaded ? opened.header : undefined;
  const state = freshState(options, { cwd, parentSession: parentSession ?? header?.id, titleFrom: header, id }, true);
  // The copy is written later: read every deferred line now, while the source is still the same file.
  opened.tree.getEntries();
  for (const line of opened.lines) if (line.kind === "invalid") void line.invalid;
  opened.release?.();
  state.lines = opened.lines;
  state.tree = opened.tree;
  state.hasAssistant = opened.hasAssistant;
  state.usage = opened.usage;
  return state;
}

/** The session `fork` switches to: every line of `current` with its title and leaf, parented to its id. */
export function forkedState(options: ResolvedOptions, current: SessionState, cwd: string): SessionState {
  const { header } = current;
  const state = freshState(options, { cwd, parentSession: header.id, titleFrom: header }, true);
  state.tree = treeAt(current.tree.getEntries(), current.tree.getLeafId(), options.now);
  // Applied patches live on in the entries and the carried title; the rest is copied.
  state.lines = current.lines.filter((line) => line.kind !== "patch" || line.state === "skipped");
  state.hasAssistant = current.hasAssistant;
  state.usage = usageOf(state.tree.getEntries());
  return state;
}

/** The entry types whose payload an in-place update may replace. */
type ReplaceableType = "message" | "custom_message";

/** The payload fields of `update` for an entry of `type`, or undefined when they are malformed. */
function payloadOf(type: ReplaceableType, update: Record<string, unknown>): Record<string, unknown> | undefined {
  if (type === "message") {
    return typeof update.message === "object" && update.message !== null ? { message: update.message } : undefined;
  }
  const { content, display, details } = update;
  if (typeof content !== "string" && !Array.isArray(content)) return undefined;
  if (typeof display !== "boolean") return undefined;
  return { content, display, ...(details === undefined ? {} : { details }) };
}

/**
 * Replaces by id the payload of entries of `type` (`message`; or `content`, `display`, `details`), keeping the leaf, and
 * marks the file for a full rewrite. @throws SessionManagerError `invalid_rewrite` for an update that is not an entry
 * of that type here, or whose payload is malformed (nothing is replaced then)
 */
export function replacePayloads(state: SessionState, updates: readonly FileEntry[], type: ReplaceableType, now: () => Date): void {
  const replaced = new Map<FileEntry, FileEntry>();
  for (const update of updates) {
    const record = update as Record<string, unknown>;
    const existing = typeof record.id === "string" ? state.tree.getEntry(record.id) : undefined;
    const payload = record.type === type ? payloadOf(type, record) : undefined;
    if (existing === undefined || isUnknownEntry(existing) || existing.type !== type || payload === undefined) {
      throw new SessionManagerError("invalid_rewrite", `not a ${type} entry of this session: ${String(record.id)}`);
    }
    // Before the clone, which a value past the bounds would overflow.
    checkEntryBounds(payload, `the new payload of ${record.id}`);
    const base: Record<string, unknown> = { ...existing };
    if (type === "custom_message" && payload.details === undefined) delete base.details;
    replaced.set(existing, { ...base, ...copyValue(payload) } as FileEntry);
  }
  if (replaced.size === 0) return;
  const tree = treeAt(
    state.tree.getEntries().map((entry) => replaced.get(entry) ?? entry),
    state.tree.getLeafId(),
    now,
  );
  state.tree = tree;
  state.lines = state.lines.map((line) => {
    if (line.kind !== "entry") return line;
    const next = replaced.get(line.entry);
    return next === undefined ? line : { kind: "entry", entry: next };
  });
  state.hasAssistant = tree.getEntries().some(isAssistantMessage);
  state.fullWritePending = true;
  state.migrationOnly = false;
}
