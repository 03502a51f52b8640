/** The manager's statics that need no session: GJC's listings and the session directories. */
import { resolveManagedScopeOrThrow } from "../scope/resolve.js";
import type { SessionStorage } from "../storage/index.js";
import { explicitDestination, managedDestination, type SessionDestination } from "./destination.js";
import { listAllScopes, listScope, type ListOptions } from "./listing.js";
import type { SessionInfo } from "./session-info.js";
import { SessionReader } from "./session-reader.js";

/** Base of the session manager holding its session-independent statics. */
export abstract class SessionDirectories extends SessionReader {
  /**
   * The sessions of `sessionDir` (default: the managed scope of `cwd`), newest first; a missing
   * directory lists as empty. Never writes. Files that cannot be listed, or that an open would
   * refuse (the owner-only rules), are left out and reported to `options.onSkipped`.
   */
  static async list(cwd: string, sessionDir?: string, storage?: SessionStorage, options: ListOptions = {}): Promise<SessionInfo[]> {
    return listScope(cwd, sessionDir, storage, options);
  }

  /**
   * The sessions of every managed scope below `<managedAgentDir>/sessions`, newest first. Never
   * writes; a storage other than file storage lists nothing (managed scopes exist only on disk).
   */
  static async listAll(storage?: SessionStorage, managedAgentDir?: string, options: ListOptions = {}): Promise<SessionInfo[]> {
    return listAllScopes(storage, managedAgentDir, options);
  }

  /**
   * The managed scope directory of `cwd`, prepared (created owner-only, bound) for writing.
   * @throws SessionManagerError `managed_storage_unsupported`; ScopeError
   */
  static getDefaultSessionDir(cwd: string, agentDir?: string, storage?: SessionStorage): string {
    return managedDestination(cwd, agentDir, storage).sessionDir;
  }

  /** The managed scope directory of `cwd`, resolved without creating anything. @throws ScopeError */
  static getDefaultSessionDirReadOnly(cwd: string, agentDir?: string): string {
    return resolveManagedScopeOrThrow({ cwd, ...(agentDir === undefined ? {} : { agentDir }) }).directoryPath;
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
