/**
 * The manager's statics that need no session: GJC's listings (each through the storage the manager would use) and the session
 * directories. Managed directories are opened by descriptor from the held agent directory: one swapped for a link is refused.
 */
import path from "node:path";

import { AgentRoot } from "../scope/agent-root.js";
import { defaultAgentDir, resolveManagedScopeOrThrow, SESSIONS_DIRECTORY } from "../scope/resolve.js";
import { managedSessionStorageForRead } from "../scope/session-defaults.js";
import { FileSessionStorage, ManagedSessionStorage, StorageError, consoleStorageLogger, type SessionStorage } from "../storage/index.js";
import { toStorageError } from "../storage/errors.js";
import { checkManagedStorage, explicitDestination, managedDestination, type SessionDestination } from "./destination.js";
import { listAll, listSessions, type DiscoveryOptions, type SessionListing } from "./discovery.js";
import { explicitStorage } from "./options.js";
import { skipOf, type SessionInfo, type SkippedSession } from "./session-info.js";
import { SessionReader } from "./session-reader.js";

/** Discovery's options without the storage, which each listing chooses. */
type Discovery = Omit<DiscoveryOptions, "storage">;

/** Our extras of the listings: the agent directory and discovery's tuning options. */
export interface ListOptions extends Discovery {
  /** The agent directory whose managed scopes are listed; default `defaultAgentDir()`. */
  agentDir?: string;
  /** Receives, once per listing and only if any, what was left out with its codes (the peer-shaped result holds sessions only). */
  onSkipped?: (skipped: readonly SkippedSession[]) => void;
}

/** Base of the session manager holding its session-independent statics. */
export abstract class SessionDirectories extends SessionReader {
  /**
   * The sessions of `sessionDir` (default: the managed scope of `cwd`), newest first; a missing
   * directory lists as empty. Never writes. Files that cannot be listed, or that an open would
   * refuse (the owner-only rules), are left out and reported to `options.onSkipped`.
   * @throws SessionManagerError `managed_storage_unsupported` for a non-file storage without a directory; ScopeError for an unusable `cwd`
   */
  static async list(cwd: string, sessionDir?: string, storage?: SessionStorage, options: ListOptions = {}): Promise<SessionInfo[]> {
    const { agentDir, onSkipped, ...discovery } = options;
    let listing: SessionListing;
    if (sessionDir === undefined) {
      checkManagedStorage(storage);
      listing = await listManagedScope(cwd, agentDir, discovery);
    } else {
      listing = storage === undefined ? await listExplicit(sessionDir, agentDir, discovery) : await listSessions(sessionDir, { ...discovery, storage });
    }
    return sessionsOf(listing, onSkipped);
  }

  /** The sessions of every managed scope below `<managedAgentDir>/sessions`, newest first; never writes; `[]` for a non-file storage (managed scopes exist only on disk). */
  static async listAll(storage?: SessionStorage, managedAgentDir?: string, options: ListOptions = {}): Promise<SessionInfo[]> {
    if (storage !== undefined && !(storage instanceof FileSessionStorage)) return [];
    const { agentDir, onSkipped, ...discovery } = options;
    return sessionsOf(await listAllManaged({ ...discovery, agentDir: managedAgentDir ?? agentDir }), onSkipped);
  }

  /** The managed scope directory of `cwd`, prepared (created owner-only, bound) for writing. @throws SessionManagerError `managed_storage_unsupported`; ScopeError */
  static getDefaultSessionDir(cwd: string, agentDir?: string, storage?: SessionStorage): string {
    return managedDestination(cwd, agentDir, storage).sessionDir;
  }

  /** The managed scope directory of `cwd`, resolved without creating anything. @throws ScopeError */
  static getDefaultSessionDirReadOnly(cwd: string, agentDir?: string): string {
    return resolveManagedScopeOrThrow({ cwd, agentDir }).directoryPath;
  }

  /** A trusted token for the managed scope of `cwd` (prepared now). */
  static managedDestination(cwd: string, agentDir?: string, storage?: SessionStorage): SessionDestination {
    return managedDestination(cwd, agentDir, storage);
  }

  /** A trusted token for the explicit session directory `directory`. */
  static explicitDestination(directory: string): SessionDestination {
    return explicitDestination(directory);
  }
}

/** The sessions of `listing`, its `skipped` handed to `onSkipped`. */
function sessionsOf(listing: SessionListing, onSkipped: ListOptions["onSkipped"]): SessionInfo[] {
  if (listing.skipped.length > 0) onSkipped?.(listing.skipped);
  return listing.sessions;
}

/** `list` run through `storage`, closed once it settles. */
async function listThrough(storage: ManagedSessionStorage, list: typeof listSessions, dir: string, discovery: Discovery): Promise<SessionListing> {
  try {
    return await list(dir, { ...discovery, storage });
  } finally {
    storage.close();
  }
}

/** An explicit session directory listed through {@link explicitStorage}, as the manager would open its files: one failing the owner-only rules is skipped with its code. */
async function listExplicit(sessionDir: string, agentDir: string | undefined, discovery: Discovery): Promise<SessionListing> {
  let storage: SessionStorage | undefined;
  try {
    // A relative directory gets listSessions' own `invalid_path`.
    if (path.isAbsolute(sessionDir)) storage = explicitStorage(path.resolve(sessionDir), agentDir, consoleStorageLogger, true);
  } catch (error) {
    if (error instanceof StorageError && error.code === "not_found") return { sessions: [], skipped: [] };
    return { sessions: [], skipped: [skipOf(sessionDir, error)] };
  }
  // Plain file storage is what discovery defaults to; letting it default keeps the shared cache.
  return storage instanceof ManagedSessionStorage ? listThrough(storage, listSessions, sessionDir, discovery) : listSessions(sessionDir, discovery);
}

/**
 * The sessions of the managed scope of `cwd` through the scope directory the resolution verified (held, not reopened); a missing
 * scope lists as empty. Writes only the listing index. @throws ScopeError as `resolveManagedScope` in read mode
 */
export async function listManagedScope(cwd: string, agentDir: string = defaultAgentDir(), options: Discovery = {}): Promise<SessionListing> {
  const held = managedSessionStorageForRead(cwd, agentDir);
  return held === undefined ? { sessions: [], skipped: [] } : listThrough(held.storage, listSessions, held.storage.root, options);
}

/** The sessions of every scope below `<agentDir>/sessions`, newest first; a missing root lists as empty, one that cannot be opened safely is reported in `skipped`. */
export async function listAllManaged(options: Discovery & { readonly agentDir?: string | undefined } = {}): Promise<SessionListing> {
  const { agentDir = defaultAgentDir(), ...discovery } = options;
  const sessionsRoot = path.join(path.resolve(agentDir), SESSIONS_DIRECTORY);
  let root: AgentRoot | undefined;
  let storage: ManagedSessionStorage | undefined;
  try {
    root = AgentRoot.openIfExists(agentDir);
    const dir = root?.openDirIfExists([SESSIONS_DIRECTORY]);
    storage = dir === undefined ? undefined : new ManagedSessionStorage(dir);
  } catch (error) {
    return { sessions: [], skipped: [skipOf(sessionsRoot, toStorageError(error, "read", sessionsRoot))] };
  } finally {
    root?.close();
  }
  return storage === undefined ? { sessions: [], skipped: [] } : listThrough(storage, listAll, storage.root, discovery);
}

/** What {@link resolveResumableSession} found: the session, and whether it is this workspace's. */
export interface ResolvedSessionMatch {
  session: SessionInfo;
  /** `local`: in this workspace's listing; `global`: in another managed scope */
  scope: "local" | "global";
}

/** Whether `prefix` (lowercased) starts the id, the file name or the id part of the file name. */
function matchesPrefix(session: SessionInfo, prefix: string): boolean {
  const name = path.basename(session.path).toLowerCase();
  const idPart =
    name
      .replace(/\.jsonl$/, "")
      .split("_")
      .pop() ?? "";
  return session.id.toLowerCase().startsWith(prefix) || name.startsWith(prefix) || idPart.startsWith(prefix);
}

/**
 * GJC's `--resume <prefix>` lookup: the newest session whose id, file name or the id part of its
 * file name starts with `sessionArg` (case-insensitive), first in this workspace's listing, then,
 * only without a `sessionDir`, in every managed scope.
 * @returns `undefined` when nothing matches or `sessionArg` is empty
 */
export async function resolveResumableSession(
  sessionArg: string,
  cwd: string,
  sessionDir?: string,
  storage?: SessionStorage,
  managedAgentDir?: string,
): Promise<ResolvedSessionMatch | undefined> {
  const prefix = typeof sessionArg === "string" ? sessionArg.trim().toLowerCase() : "";
  if (prefix.length === 0) return undefined;
  const local = (await SessionDirectories.list(cwd, sessionDir, storage, { agentDir: managedAgentDir })).find((s) => matchesPrefix(s, prefix));
  if (local !== undefined) return { session: local, scope: "local" };
  if (sessionDir !== undefined) return undefined;
  const global = (await SessionDirectories.listAll(storage, managedAgentDir)).find((s) => matchesPrefix(s, prefix));
  return global === undefined ? undefined : { session: global, scope: "global" };
}
