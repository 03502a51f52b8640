/** GJC's static listings (`SessionManager.list` / `listAll`) over discovery, each through the storage the manager would use. */
import path from "node:path";

import { FileSessionStorage, ManagedSessionStorage, StorageError, consoleStorageLogger, type SessionStorage } from "../storage/index.js";
import { defaultAgentDir } from "../scope/resolve.js";
import { checkManagedStorage } from "./destination.js";
import { listSessions, type DiscoveryOptions, type SessionListing } from "./discovery.js";
import { listAllManaged, listManagedScope, withStorage } from "./managed-listing.js";
import { explicitStorage } from "./options.js";
import type { SessionInfo, SkippedSession } from "./session-info.js";
import { skipOf } from "./skip-codes.js";

/** Our extras of the listings: the agent directory and discovery's tuning options. */
export interface ListOptions extends Omit<DiscoveryOptions, "storage"> {
  /** The agent directory whose managed scopes are listed; default `defaultAgentDir()`. */
  agentDir?: string;
  /** Receives, once per listing and only if any, what was left out with its codes (the peer-shaped result holds sessions only). */
  onSkipped?: (skipped: readonly SkippedSession[]) => void;
}

/** The sessions of `listing`, its `skipped` handed to `onSkipped`. */
function sessionsOf(listing: SessionListing, onSkipped: ListOptions["onSkipped"]): SessionInfo[] {
  if (listing.skipped.length > 0) onSkipped?.(listing.skipped);
  return listing.sessions;
}

/**
 * An explicit session directory listed through {@link explicitStorage}, as the manager would open
 * its files: a file failing the owner-only rules is skipped with its code, not listed then refused.
 */
async function listExplicit(sessionDir: string, agentDir: string | undefined, discovery: Omit<ListOptions, "agentDir" | "onSkipped">): Promise<SessionListing> {
  // A relative directory gets listSessions' own `invalid_path`.
  if (!path.isAbsolute(sessionDir)) return listSessions(sessionDir, discovery);
  let storage: SessionStorage;
  try {
    storage = explicitStorage(path.resolve(sessionDir), agentDir, consoleStorageLogger, true);
  } catch (error) {
    if (error instanceof StorageError && error.code === "not_found") return { sessions: [], skipped: [] };
    return { sessions: [], skipped: [skipOf(sessionDir, error)] };
  }
  // Plain file storage is what discovery defaults to; letting it default keeps the shared cache.
  if (!(storage instanceof ManagedSessionStorage)) return listSessions(sessionDir, discovery);
  const managed = storage;
  return withStorage(managed, () => listSessions(sessionDir, { ...discovery, storage: managed }));
}

/**
 * The sessions of `sessionDir`, else of the managed scope of `cwd` (none when it does not exist yet), newest first.
 * @throws SessionManagerError `managed_storage_unsupported` for a non-file storage without a
 *   directory; ScopeError for an unusable `cwd`
 */
export async function listScope(cwd: string, sessionDir: string | undefined, storage: SessionStorage | undefined, options: ListOptions): Promise<SessionInfo[]> {
  const { agentDir, onSkipped, ...discovery } = options;
  if (sessionDir !== undefined) {
    const listing = storage === undefined ? await listExplicit(sessionDir, agentDir, discovery) : await listSessions(sessionDir, { ...discovery, storage });
    return sessionsOf(listing, onSkipped);
  }
  checkManagedStorage(storage);
  return sessionsOf(await listManagedScope(cwd, agentDir, discovery), onSkipped);
}

/** The sessions of every managed scope under `<agentDir>/sessions`; `[]` for a non-file storage. */
export async function listAllScopes(storage: SessionStorage | undefined, managedAgentDir: string | undefined, options: ListOptions): Promise<SessionInfo[]> {
  if (storage !== undefined && !(storage instanceof FileSessionStorage)) return [];
  const { agentDir, onSkipped, ...discovery } = options;
  return sessionsOf(await listAllManaged({ ...discovery, agentDir: managedAgentDir ?? agentDir ?? defaultAgentDir() }), onSkipped);
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
  const idPart = name.replace(/\.jsonl$/, "").split("_").pop() ?? "";
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
  const agentDir = managedAgentDir === undefined ? {} : { agentDir: managedAgentDir };
  const local = (await listScope(cwd, sessionDir, storage, agentDir)).find((s) => matchesPrefix(s, prefix));
  if (local !== undefined) return { session: local, scope: "local" };
  if (sessionDir !== undefined) return undefined;
  const global = (await listAllScopes(storage, managedAgentDir, {})).find((s) => matchesPrefix(s, prefix));
  return global === undefined ? undefined : { session: global, scope: "global" };
}
