/**
 * The static half of the session manager that needs no session: GJC's listings and the
 * session directories (managed scope, destination tokens). A base class, so the statics are
 * `SessionManager.list(...)` and so on, kept apart from the factories and the instance life.
 */
import { resolveManagedScopeOrThrow } from "../scope/resolve.js";
import type { SessionStorage } from "../storage/index.js";
import { explicitDestination, managedDestination, type SessionDestination } from "./destination.js";
import { listAllScopes, listScope, type ListOptions } from "./listing.js";
import type { SessionInfo } from "./session-info.js";
import { SessionReader } from "./session-reader.js";

/** Base of the session manager holding its session-independent statics. */
export abstract class SessionDirectories extends SessionReader {
  /**
   * The sessions of one workspace, newest first: those in `sessionDir` when given, else in
   * the managed scope of `cwd`. Never writes; a directory or scope that does not exist yet
   * lists as empty. A file that cannot be listed, or that the manager would refuse to open
   * (below the agent directory: one failing the owner-only rules), is left out and reported
   * to `options.onSkipped` with its code.
   */
  static async list(cwd: string, sessionDir?: string, storage?: SessionStorage, options: ListOptions = {}): Promise<SessionInfo[]> {
    return listScope(cwd, sessionDir, storage, options);
  }

  /**
   * The sessions of every managed scope below `<managedAgentDir>/sessions` (default agent
   * directory), newest first. Never writes. A storage that is not file storage lists nothing,
   * as in GJC: managed scopes exist only on disk. What is left out goes to `options.onSkipped`.
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

  /** A trusted token for the managed scope of `cwd` (prepared now). See `destination.ts`. */
  static managedDestination(cwd: string, agentDir?: string, storage?: SessionStorage): SessionDestination {
    return managedDestination(cwd, agentDir, storage);
  }

  /** A trusted token for the explicit session directory `directory`. */
  static explicitDestination(directory: string): SessionDestination {
    return explicitDestination(directory);
  }
}
