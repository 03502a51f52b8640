/**
 * Options of the session manager. The session directory and its storage are given
 * explicitly; a caller that resolves a managed scope passes the scope's directory and its
 * `ManagedSessionStorage` here, and the manager works the same on either.
 */
import path from "node:path";

import { BlobStore, FileSessionStorage, consoleStorageLogger, type SessionStorage, type StorageLogger } from "../storage/index.js";
import { managedSessionTarget } from "../scope/session-defaults.js";
import { SessionManagerError } from "./errors.js";
import type { ToolClassifier } from "./selection.js";

/** Where sessions live and how they are written. */
export interface SessionManagerOptions {
  /** Absolute directory holding the session files. */
  sessionDir: string;
  /**
   * The storage the files are reached through; default a `FileSessionStorage` rooted at
   * `sessionDir` (explicit `--session-dir` rules: 0600 files, 0700 dirs, no symlinks).
   */
  storage?: SessionStorage;
  /**
   * Where large inline images go. Default: `<agentDir>/blobs` on a `FileSessionStorage`
   * rooted at `agentDir` when `agentDir` is given, else no externalization (images stay
   * inline, and blob references found on load stay references).
   */
  blobStore?: BlobStore;
  /** The agent directory; enables the default blob store and terminal breadcrumbs. */
  agentDir?: string;
  /** Receives the first persistence failure of each session file; default `console.error`. */
  logger?: StorageLogger;
  /** Tells MCP tools, discoverable built-ins and essential built-ins apart (see `toolNames`). */
  classifyTool?: ToolClassifier;
  /**
   * The terminal whose breadcrumb records the session being written; `null` disables
   * breadcrumbs; default: detected from the environment.
   */
  terminalId?: string | null;
  /** Clock for timestamps and file names (injectable for tests). */
  now?: () => Date;
}

/**
 * {@link SessionManagerOptions} where `sessionDir` may be omitted: then the managed v2 scope
 * of the cwd under `agentDir` (default `~/.gjc/agent`, or `$GJC_CODING_AGENT_DIR`) is
 * prepared owner-only and used through managed storage. A given `sessionDir` is explicit
 * storage: no scope is derived.
 */
export type ManagedDefaultOptions = Omit<SessionManagerOptions, "sessionDir"> & { sessionDir?: string | undefined };

/** Options of a session that starts now. */
export interface NewSessionOptions {
  /** The working directory recorded in the header; default `process.cwd()`. */
  cwd?: string;
  /** Opaque lineage marker recorded as the header's `parentSession`. */
  parentSession?: string;
  /**
   * Explicit tool selection the session starts with. Names establish authority only for
   * their own domain (MCP or discovered built-in, told apart by `classifyTool`); essential
   * built-ins never do; an empty list clears both domains. Omitted: nothing is persisted.
   */
  toolNames?: readonly string[];
}

/** The resolved, defaulted form of {@link SessionManagerOptions}. */
export interface ResolvedOptions {
  sessionDir: string;
  storage: SessionStorage;
  blobStore: BlobStore | undefined;
  agentDir: string | undefined;
  logger: StorageLogger;
  classifyTool: ToolClassifier | undefined;
  terminalId: string | null | undefined;
  now: () => Date;
}

/**
 * Fills in defaults and checks paths. Without `sessionDir`, the managed scope of `cwd`
 * (default `process.cwd()`) is prepared and used.
 * @throws SessionManagerError `invalid_options` for a relative `sessionDir` or `agentDir`;
 *   ScopeError when the managed scope cannot be resolved
 */
export function resolveOptions(options: ManagedDefaultOptions & { cwd?: string | undefined }): ResolvedOptions {
  if (options.sessionDir === undefined) {
    if (options.storage !== undefined) throw new SessionManagerError("invalid_options", "a storage needs its sessionDir");
    if (options.agentDir !== undefined && !path.isAbsolute(options.agentDir)) {
      throw new SessionManagerError("invalid_options", "agentDir must be an absolute path");
    }
    const managed = managedSessionTarget(options.cwd ?? process.cwd(), options.agentDir);
    return resolveOptions({ ...options, sessionDir: managed.sessionDir, storage: managed.storage, agentDir: options.agentDir ?? managed.agentDir });
  }
  if (typeof options.sessionDir !== "string" || !path.isAbsolute(options.sessionDir)) {
    throw new SessionManagerError("invalid_options", "sessionDir must be an absolute path");
  }
  if (options.agentDir !== undefined && !path.isAbsolute(options.agentDir)) {
    throw new SessionManagerError("invalid_options", "agentDir must be an absolute path");
  }
  const logger = options.logger ?? consoleStorageLogger;
  const sessionDir = path.resolve(options.sessionDir);
  const agentDir = options.agentDir === undefined ? undefined : path.resolve(options.agentDir);
  return {
    sessionDir,
    storage: options.storage ?? new FileSessionStorage(sessionDir, { logger }),
    blobStore:
      options.blobStore ??
      (agentDir === undefined ? undefined : new BlobStore(path.join(agentDir, "blobs"))),
    agentDir,
    logger,
    classifyTool: options.classifyTool,
    terminalId: options.terminalId,
    now: options.now ?? (() => new Date()),
  };
}

/** `<ISO timestamp with : and . as ->_<sessionId>.jsonl`, the peer's file name scheme. */
export function sessionFileName(timestamp: string, sessionId: string): string {
  return `${timestamp.replace(/[:.]/g, "-")}_${sessionId}.jsonl`;
}
