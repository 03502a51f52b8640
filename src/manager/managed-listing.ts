/**
 * Listings of the managed layout (a cwd's scope, or every scope) through managed storage on
 * directories opened by descriptor from the held agent directory: a directory swapped for a link
 * meanwhile is refused (reported in `skipped`), never read through.
 */
import path from "node:path";

import { AgentRoot } from "../scope/agent-root.js";
import { defaultAgentDir, SESSIONS_DIRECTORY } from "../scope/resolve.js";
import { managedSessionStorageForRead } from "../scope/session-defaults.js";
import { ManagedSessionStorage } from "../storage/index.js";
import { toStorageError } from "../storage/errors.js";
import { listAll, listSessions, type DiscoveryOptions, type SessionListing } from "./discovery.js";
import { skipOf } from "./skip-codes.js";

/** Options of the managed listings: discovery options, minus the storage they choose. */
type ManagedListingOptions = Omit<DiscoveryOptions, "storage">;

/**
 * The sessions of the managed scope of `cwd`, newest first, through the scope directory the
 * resolution verified (held, not reopened); a missing scope lists as empty. Writes only the listing index.
 * @throws ScopeError as `resolveManagedScope` in read mode
 */
export async function listManagedScope(cwd: string, agentDir: string = defaultAgentDir(), options: ManagedListingOptions = {}): Promise<SessionListing> {
  const held = managedSessionStorageForRead(cwd, agentDir);
  if (held === undefined) return { sessions: [], skipped: [] };
  return withStorage(held.storage, () => listSessions(held.storage.root, { ...options, storage: held.storage }));
}

/**
 * The sessions of every scope below `<agentDir>/sessions` or `sessionsRoot` (walked from the agent
 * directory when below it, else listed as an explicit directory), newest first. A missing root
 * lists as empty; one that cannot be opened safely is reported in `skipped` under its path.
 */
export async function listAllManaged(
  options: ManagedListingOptions & { readonly agentDir?: string; readonly sessionsRoot?: string } = {},
): Promise<SessionListing> {
  const { agentDir, sessionsRoot, ...discovery } = options;
  const given = agentDir ?? defaultAgentDir();
  const fallback = sessionsRoot ?? path.join(path.resolve(given), SESSIONS_DIRECTORY);
  let root: AgentRoot | undefined;
  let storage: ManagedSessionStorage;
  try {
    root = AgentRoot.openIfExists(given);
    const names = root === undefined || sessionsRoot === undefined ? [SESSIONS_DIRECTORY] : root.namesOf(sessionsRoot, given);
    if (names === undefined || (root === undefined && sessionsRoot !== undefined)) {
      // A sessions root outside the agent directory is an explicit directory of its own.
      root?.close();
      return await listAll(sessionsRoot as string, discovery);
    }
    if (root === undefined) return { sessions: [], skipped: [] };
    // As in scope resolution, the sessions root may be an older tool's looser directory;
    // every scope directory and file below it is verified in full.
    const dir = names.length === 0 ? root.dir : root.openDirIfExists(names, { readThrough: true });
    if (dir === undefined) {
      root.close();
      return { sessions: [], skipped: [] };
    }
    storage = new ManagedSessionStorage(dir);
    if (dir !== root.dir) root.close();
  } catch (error) {
    root?.close();
    return { sessions: [], skipped: [skipOf(fallback, toStorageError(error, "read", fallback))] };
  }
  const held = storage;
  return withStorage(held, () => listAll(held.root, { ...discovery, storage: held }));
}

/** `use`'s result, `storage` closed after it settles. */
export async function withStorage<T>(storage: ManagedSessionStorage, use: () => Promise<T>): Promise<T> {
  try {
    return await use();
  } finally {
    storage.close();
  }
}
