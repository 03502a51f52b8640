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
import type { ManagedLine } from "./lines.js";
import { emptyReport, type SessionLoadReport } from "./open-file.js";
import { sessionFileName, type NewSessionOptions, type ResolvedOptions } from "./options.js";
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

/** A new, empty session (header only); `file` defaults to a fresh name in the session dir. */
export function freshState(
  options: ResolvedOptions,
  session: NewSessionOptions,
  persistent: boolean,
  file?: string,
): SessionState {
  const now = options.now();
  const timestamp = now.toISOString();
  const id = newSessionId(now.getTime());
  const header: SessionHeader = {
    type: "session",
    version: CURRENT_SESSION_VERSION,
    id,
    timestamp,
    cwd: session.cwd ?? process.cwd(),
    ...(session.parentSession === undefined ? {} : { parentSession: session.parentSession }),
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
