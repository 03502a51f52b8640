/** Options of the session manager: where sessions live comes from GJC's positional arguments (`destination.ts`), the rest from one trailing {@link SessionManagerOptions}. */
import path from "node:path";

import { BlobStore, FileSessionStorage, ManagedSessionStorage, consoleStorageLogger, type SessionStorage, type StorageLogger } from "../storage/index.js";
import { AgentRoot, canonicalizeTrustedPath, namesBelowAgentDir } from "../scope/agent-root.js";
import { defaultAgentDir } from "../scope/resolve.js";
import { managedSessionTarget } from "../scope/session-defaults.js";
import { SessionManagerError } from "./errors.js";
import type { ToolClassifier } from "./selection.js";
import type { SkippedSession } from "./session-info.js";

/** Our extras, the optional last argument of every factory. */
export interface SessionManagerOptions {
  /** Where large inline images go, for every destination (as GJC): default `<agentDir>/blobs`, of the default agent directory when `agentDir` is not given. */
  blobStore?: BlobStore;
  /** The absolute agent directory, root of managed scopes (default `$GJC_CODING_AGENT_DIR`, else `~/.gjc/agent`). */
  agentDir?: string;
  /** Receives the first persistence failure of each session file; default `console.error`. */
  logger?: StorageLogger;
  /** Tells MCP tools, discoverable built-ins and essential built-ins apart (see `toolNames`). */
  classifyTool?: ToolClassifier;
  /** The terminal whose breadcrumb records the session; `null` disables breadcrumbs; default detected. */
  terminalId?: string | null;
  /** Clock for timestamps and file names (injectable for tests). */
  now?: () => Date;
  /** The tool selection a new session starts with: names speak only for their domain (by `classifyTool`), essential built-ins never; `[]` clears both; omitted, nothing is persisted. */
  toolNames?: readonly string[];
  /** `continueRecent` only: receives, once and only if any, the session files passed over with their codes. */
  onSkipped?: (skipped: readonly SkippedSession[]) => void;
}

/** What `SessionManager.close()` resolves to; a file starts with its session's first assistant message (the peers' rule), so a session without one wrote nothing. */
export interface SessionCloseReport {
  /** Entries appended that no file holds, including those of sessions this manager switched away from. */
  unpersistedEntries: number;
}

/** {@link SessionManagerOptions} of `SessionManager.open`. */
export interface OpenSessionOptions extends SessionManagerOptions {
  /** Load without the writer lock and never write (works while another process writes); mutations throw `read_only`. */
  readOnly?: boolean;
}

/** Options of `SessionManager.newSession`. */
export interface NewSessionOptions {
  /** Opaque lineage marker recorded as the header's `parentSession`. */
  parentSession?: string;
  /** The new session's id: a UUIDv7 or 1-128 characters from `[A-Za-z0-9._-]`; default a fresh UUIDv7. */
  id?: string;
  /** See {@link SessionManagerOptions.toolNames}. */
  toolNames?: readonly string[];
}

/** Internal: where a manager's sessions go and through which storage. */
export interface SessionTarget {
  /** absolute session directory; undefined means the managed scope of `cwd` */
  sessionDir: string | undefined;
  storage: SessionStorage | undefined;
  cwd: string;
  /** the agent directory a managed destination was resolved under */
  agentDir?: string | undefined;
  /** `sessionDir` is a managed scope resolved already (a managed destination token) */
  managed?: boolean;
}

/** The resolved, defaulted options a manager runs with. */
export interface ResolvedOptions {
  sessionDir: string;
  storage: SessionStorage;
  /** whether `sessionDir` is a managed scope (moveTo follows the cwd to its new scope) */
  managed: boolean;
  blobStore: BlobStore;
  agentDir: string | undefined;
  logger: StorageLogger;
  classifyTool: ToolClassifier | undefined;
  terminalId: string | null | undefined;
  now: () => Date;
}

function checkAbsolute(value: string | undefined, name: string): void {
  if (value !== undefined && (typeof value !== "string" || !path.isAbsolute(value)))
    throw new SessionManagerError("invalid_options", `${name} must be an absolute path`);
}

/**
 * Fills in defaults and checks paths; without a session directory, the managed scope of the cwd is prepared and used.
 * @throws SessionManagerError `invalid_options` for a relative directory; ScopeError when the managed scope cannot be resolved
 */
export function resolveOptions(target: SessionTarget, options: SessionManagerOptions = {}): ResolvedOptions {
  checkAbsolute(options.agentDir, "agentDir");
  checkAbsolute(target.agentDir, "agentDir");
  const agentDirOption = options.agentDir ?? target.agentDir;
  let { sessionDir, storage } = target;
  let agentDir = agentDirOption === undefined ? undefined : path.resolve(agentDirOption);
  const managed = sessionDir === undefined || target.managed === true;
  let blobStore = options.blobStore;
  if (sessionDir === undefined) {
    const scope = managedSessionTarget(target.cwd, agentDir);
    sessionDir = scope.sessionDir;
    storage = scope.storage;
    agentDir = scope.agentDir;
    blobStore ??= BlobStore.inDirectory(scope.agentRoot.dir, BLOBS_DIRECTORY);
  }
  checkAbsolute(sessionDir, "the session directory");
  const logger = options.logger ?? consoleStorageLogger;
  const dir = path.resolve(sessionDir);
  return {
    sessionDir: dir,
    storage: storage ?? explicitStorage(dir, agentDir, logger, (options as { readOnly?: boolean }).readOnly === true),
    managed,
    blobStore: blobStore ?? new BlobStore(path.join(agentDir ?? defaultAgentDir(), BLOBS_DIRECTORY)),
    agentDir,
    logger,
    classifyTool: options.classifyTool,
    terminalId: options.terminalId,
    now: options.now ?? (() => new Date()),
  };
}

/** The blob directory below the agent directory. */
const BLOBS_DIRECTORY = "blobs";

/**
 * The storage of an explicit session directory: below the agent directory, managed data walked by descriptor and held to the
 * owner-only rules like a scope (the listings use it too, so what the manager would refuse is skipped); elsewhere, file storage.
 * @throws StorageError when the agent directory or a directory on the way is unsafe or missing
 */
export function explicitStorage(dir: string, agentDir: string | undefined, logger: StorageLogger, readOnly: boolean): SessionStorage {
  const home = agentDir ?? defaultAgentDir();
  const canonical = canonicalizeTrustedPath(home);
  const names = namesBelowAgentDir(canonical, home, dir);
  if (names === undefined) return new FileSessionStorage(dir, { logger });
  const root = AgentRoot.openCanonical(canonical, { write: !readOnly });
  // Sessions kept in the agent directory itself: the storage holds the root's own descriptor.
  if (names.length === 0) return new ManagedSessionStorage(root.dir, { logger });
  try {
    return root.storage(names, { logger });
  } finally {
    root.close();
  }
}

/** `<ISO timestamp with : and . as ->_<sessionId>.jsonl`, the peer's file name scheme. */
export function sessionFileName(timestamp: string, sessionId: string): string {
  return `${timestamp.replace(/[:.]/g, "-")}_${sessionId}.jsonl`;
}
