/**
 * The default home of a workspace's sessions when no session directory is given: the
 * managed v2 scope of the cwd under the agent directory, reached through owner-only managed
 * storage. The legacy layout is never a default target.
 */
import { ManagedSessionStorage } from "../storage/index.js";
import { ScopeError } from "./errors.js";
import { defaultAgentDir, resolveManagedScope, type ManagedScope } from "./resolve.js";

/** Where a session manager writes by default. */
export interface ManagedSessionTarget {
  readonly scope: ManagedScope;
  /** The scope directory. */
  readonly sessionDir: string;
  /** The (canonicalised) agent directory. */
  readonly agentDir: string;
  /** Managed storage rooted at the scope directory. */
  readonly storage: ManagedSessionStorage;
}

/**
 * Prepares the managed scope of `cwd` for writing (agent dir chain, scope directory and
 * binding) and opens managed storage on it.
 * @throws ScopeError with the resolution's code (`cwd_missing`, `binding_conflict`, ...)
 */
export function managedSessionTarget(cwd: string, agentDir: string = defaultAgentDir()): ManagedSessionTarget {
  const result = resolveManagedScope({ cwd, agentDir, mode: "write" });
  if (result.kind === "error") throw new ScopeError(result);
  const { scope } = result;
  return { scope, sessionDir: scope.directoryPath, agentDir: scope.agentDir, storage: ManagedSessionStorage.open(scope.directoryPath) };
}

/**
 * The managed scope directory of `cwd` for reading, or undefined when it does not exist yet.
 * Never writes.
 * @throws ScopeError with the resolution's code
 */
export function managedSessionDirForRead(cwd: string, agentDir: string = defaultAgentDir()): string | undefined {
  const result = resolveManagedScope({ cwd, agentDir });
  if (result.kind === "error") throw new ScopeError(result);
  return result.scope.exists ? result.scope.directoryPath : undefined;
}
