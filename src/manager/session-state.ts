/**
 * The state of the session a manager is on, and how a new one starts. Kept apart from the
 * manager so that switching sessions (new, branched, forked, opened) builds one value.
 */
import path from "node:path";

import {
  CURRENT_SESSION_VERSION,
  newSessionId,
  SessionTree,
  type AgentMessage,
  type FileEntry,
  type SessionHeader,
} from "../session/index.js";
import { announceSession } from "./continuation.js";
import { linesFromLoad, type ManagedLine } from "./lines.js";
import { emptyReport, openSessionFile, type SessionLoadReport } from "./open-file.js";
import { sessionFileName, type ResolvedOptions } from "./options.js";
import { SessionPersistence, type PersistenceTarget } from "./persistence.js";

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
  /** a file exists at `file` that a full write must replace rather than create */
  fileExists: boolean;
  hasAssistant: boolean;
  report: SessionLoadReport;
}

/** Whether `entry` is an assistant message (the event that starts persistence). */
export function isAssistantMessage(entry: FileEntry): boolean {
  return entry.type === "message" && (entry as { message?: AgentMessage }).message?.role === "assistant";
}

/** The persistence target of `file`, announcing it through a breadcrumb once written. */
export function persistenceTarget(options: ResolvedOptions, file: string, cwd: () => string | undefined): PersistenceTarget {
  return {
    storage: options.storage,
    path: file,
    logger: options.logger,
    onWriterReady: (written) => announceSession(options, written, cwd()),
  };
}

/** What a fresh session's header records. */
export interface FreshSession {
  cwd: string;
  parentSession?: string | undefined;
  /** a caller-chosen id, already validated; default a new UUIDv7 */
  id?: string | undefined;
  /** a title carried over (fork) */
  title?: { title: string; titleSource: SessionHeader["titleSource"] } | undefined;
}

/** A new, empty session (header only); `file` defaults to a fresh name in the session dir. */
export function freshState(options: ResolvedOptions, session: FreshSession, persistent: boolean, file?: string): SessionState {
  const now = options.now();
  const timestamp = now.toISOString();
  const id = session.id ?? newSessionId(now.getTime());
  const header: SessionHeader = {
    type: "session",
    version: CURRENT_SESSION_VERSION,
    id,
    timestamp,
    cwd: session.cwd,
    ...(session.parentSession === undefined ? {} : { parentSession: session.parentSession }),
    ...(session.title === undefined
      ? {}
      : { title: session.title.title, ...(session.title.titleSource === undefined ? {} : { titleSource: session.title.titleSource }) }),
  };
  const target = file ?? path.join(options.sessionDir, sessionFileName(timestamp, id));
  return {
    header,
    tree: new SessionTree([], { now: options.now }),
    lines: [{ kind: "header" }],
    file: target,
    persistence: persistent ? new SessionPersistence(persistenceTarget(options, target, () => header.cwd)) : undefined,
    active: false,
    fullWritePending: true,
    fileExists: false,
    hasAssistant: false,
    report: emptyReport(target),
  };
}

/**
 * The state of the session file `file`, loaded through {@link openSessionFile} (the one load
 * path, synchronous). A missing, blank or moved-aside file gives a fresh session at `file`
 * whose header records `freshCwd`.
 * @throws what {@link openSessionFile} throws
 */
export function openedState(options: ResolvedOptions, file: string, readOnly: boolean, freshCwd: string): SessionState {
  const opened = openSessionFile(options.storage, file, {
    readOnly,
    lookup: options.blobStore?.lookup() ?? (() => undefined),
    now: options.now,
  });
  if (opened.loaded === undefined) {
    const state = freshState(options, { cwd: freshCwd }, !readOnly, file);
    state.report = opened.report;
    state.fileExists = opened.writer !== undefined;
    if (state.persistence !== undefined && opened.writer !== undefined) {
      state.persistence = new SessionPersistence(persistenceTarget(options, file, () => state.header.cwd), opened.writer);
    }
    return state;
  }
  const loaded = opened.loaded;
  const hasAssistant = opened.entries.some(isAssistantMessage);
  return {
    header: loaded.header,
    tree: new SessionTree(opened.entries, { now: options.now }),
    lines: linesFromLoad(loaded, opened.entries),
    file,
    persistence: readOnly ? undefined : new SessionPersistence(persistenceTarget(options, file, () => loaded.header.cwd), opened.writer),
    active: hasAssistant,
    fullWritePending: loaded.migratedFrom !== null,
    fileExists: true,
    hasAssistant,
    report: opened.report,
  };
}

/**
 * The entries `createBranchedSession` copies: root..`leafId` without its label entries, each
 * re-linked to the copied entry before it, and the labels in force on the copied entries
 * (re-added after the copy, as both peers do).
 * @throws SessionTreeError `unknown_entry`
 */
export function branchEntries(tree: SessionTree, leafId: string): { entries: FileEntry[]; labels: { targetId: string; label: string }[] } {
  const entries: FileEntry[] = [];
  let parentId: string | null = null;
  for (const entry of tree.getPath(leafId)) {
    if (entry.type === "label") continue;
    const record = entry as FileEntry & { id: string; parentId?: string | null };
    entries.push(record.parentId === parentId ? entry : ({ ...record, parentId } as FileEntry));
    parentId = record.id;
  }
  const labels: { targetId: string; label: string }[] = [];
  for (const entry of entries) {
    const id = (entry as { id: string }).id;
    const label = tree.getLabel(id);
    if (label !== undefined) labels.push({ targetId: id, label });
  }
  return { entries, labels };
}
