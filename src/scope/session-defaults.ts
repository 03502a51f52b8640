/**
 * The default home of a workspace's sessions when no session directory is given: the
 * managed v2 scope of the cwd under the agent directory, reached through owner-only managed
 * storage on the very scope directory the resolution checked (held by descriptor, never
 * reopened by path). The legacy layout is never a default target.
 */
import { ManagedSessionStorage } from "../storage/index.js";
import type { AgentRoot } from "./agent-root.js";
import { ScopeError } from "./errors.js";
import { defaultAgentDir, openManagedScope, type ManagedScope } from "./resolve.js";

/** Where a session manager writes by default. */
export interface ManagedSessionTarget {
  readonly scope: ManagedScope;
  /** The scope directory. */
  readonly sessionDir: string;
  /** The (canonicalised) agent directory. */
  readonly agentDir: string;
  /** Managed storage rooted at the scope directory (it owns that descriptor). */
  readonly storage: ManagedSessionStorage;
  /**
   * The agent directory, held in write mode: blobs, breadcrumbs and anything else below it
   * are to be opened from here ({@link AgentRoot.openDir}). The caller closes it when done
   * (it is also released when collected).
   */
  readonly agentRoot: AgentRoot;
}

/**
 * Prepares the managed scope of `cwd` for writing (agent dir chain, scope directory and
 * binding) and opens managed storage on the scope directory it prepared.
 * @throws ScopeError with the resolution's code (`cwd_missing`, `binding_conflict`, ...)
 */
export function managedSessionTarget(cwd: string, agentDir: string = defaultAgentDir()): ManagedSessionTarget {
  const result = openManagedScope({ cwd, agentDir, mode: "write" });
  if (result.kind === "error") throw new ScopeError(result);
  const { scope, held } = result;
  const scopeDir = held.takeScopeDir();
  const agentRoot = held.takeAgent();
  held.close();
  // Write mode below the agent directory always holds both (the default sessions root).
  if (scopeDir === undefined || agentRoot === undefined) {
    scopeDir?.close();
    agentRoot?.close();
    throw new ScopeError({ code: "sessions_root_unavailable", cause: "io_error", message: "the prepared scope was not held" });
  }
  return { scope, sessionDir: scope.directoryPath, agentDir: scope.agentDir, storage: new ManagedSessionStorage(scopeDir), agentRoot };
}

/**
 * The managed scope of `cwd` for reading, held: managed storage on the verified scope
 * directory, or `undefined` when the scope does not exist yet. Never writes. The caller
 * closes the storage.
 * @throws ScopeError with the resolution's code
 */
export function managedSessionStorageForRead(
  cwd: string,
  agentDir: string = defaultAgentDir(),
): { readonly scope: ManagedScope; readonly storage: ManagedSessionStorage } | undefined {
  const result = openManagedScope({ cwd, agentDir });
  if (result.kind === "error") throw new ScopeError(result);
  const scopeDir = result.held.takeScopeDir();
  result.held.close();
  return scopeDir === undefined ? undefined : { scope: result.scope, storage: new ManagedSessionStorage(scopeDir) };
}
