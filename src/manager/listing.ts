/**
 * GJC's static listings (`SessionManager.list` / `listAll`) over discovery: which directory
 * a workspace's sessions are in, and which storage reaches it.
 */
import path from "node:path";

import { FileSessionStorage, type SessionStorage } from "../storage/index.js";
import { canonicalizeTrustedPath, defaultAgentDir, SESSIONS_DIRECTORY } from "../scope/resolve.js";
import { managedSessionDirForRead } from "../scope/session-defaults.js";
import { checkManagedStorage } from "./destination.js";
import { listAll, listSessions, type DiscoveryOptions } from "./discovery.js";
import type { SessionInfo } from "./session-info.js";

/** Our extras of the listings: the agent directory and discovery's tuning options. */
export interface ListOptions extends Omit<DiscoveryOptions, "storage"> {
  /** The agent directory whose managed scopes are listed; default `defaultAgentDir()`. */
  agentDir?: string;
}

/**
 * The sessions of `sessionDir`, else of the managed scope of `cwd` (none when it does not
 * exist yet), newest first.
 * @throws SessionManagerError `managed_storage_unsupported` for a non-file storage without a
 *   directory; ScopeError for an unusable `cwd`
 */
export async function listScope(
  cwd: string,
  sessionDir: string | undefined,
  storage: SessionStorage | undefined,
  options: ListOptions,
): Promise<SessionInfo[]> {
  const { agentDir, ...discovery } = options;
  if (sessionDir !== undefined) {
    return (await listSessions(sessionDir, storage === undefined ? discovery : { ...discovery, storage })).sessions;
  }
  checkManagedStorage(storage);
  const dir = managedSessionDirForRead(cwd, agentDir);
  return dir === undefined ? [] : (await listSessions(dir, discovery)).sessions;
}

/** The sessions of every managed scope under `<agentDir>/sessions`; `[]` for a non-file storage. */
export async function listAllScopes(
  storage: SessionStorage | undefined,
  managedAgentDir: string | undefined,
  options: ListOptions,
): Promise<SessionInfo[]> {
  if (storage !== undefined && !(storage instanceof FileSessionStorage)) return [];
  const { agentDir, ...discovery } = options;
  const root = path.join(canonicalizeTrustedPath(managedAgentDir ?? agentDir ?? defaultAgentDir()), SESSIONS_DIRECTORY);
  return (await listAll(root, discovery)).sessions;
}
