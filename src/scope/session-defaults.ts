/** The default home of a workspace's sessions: managed storage on the very v2 scope directory the resolution checked (never the legacy layout). */
import { ManagedSessionStorage } from "../storage/index.js";
import type { AgentRoot } from "./agent-root.js";
import { ScopeError } from "./errors.js";
import { defaultAgentDir, openManagedScope, type ManagedScope } from "./resolve.js";

/** Where a session manager writes by default. */
interface ManagedSessionTarget {
  readonly scope: ManagedScope;
  /** The scope directory. */
  readonly sessionDir: string;
  /** The (canonicalised) agent directory. */
  readonly agentDir: string;
  /** Managed storage rooted at the scope directory (it owns that descriptor). */
  readonly storage: ManagedSessionStorage;
  /** The agent directory held in write mode, for blobs, breadcrumbs and the rest below it; the caller closes it. */
  readonly agentRoot: AgentRoot;
}

/**
 * Prepares the managed scope of `cwd` for writing and opens managed storage on the directory it prepared.
 * @throws ScopeError with the resolution's code (`cwd_missing`, `binding_conflict`, ...)
 */
export function managedSessionTarget(cwd: string, agentDir: string = defaultAgentDir()): ManagedSessionTarget {
  const result = openManagedScope({ cwd, agentDir, mode: "write" });
  if (result.kind === "error") throw new ScopeError(result);
  const { scope, scopeDir, agent } = result;
  // Write mode below the agent directory always holds both (the default sessions root).
  if (scopeDir === undefined || agent === undefined) {
    scopeDir?.close();
    agent?.close();
    throw new ScopeError({ code: "sessions_root_unavailable", cause: "io_error", message: "the prepared scope was not held" });
  }
  return { scope, sessionDir: scope.directoryPath, agentDir: scope.agentDir, storage: new ManagedSessionStorage(scopeDir), agentRoot: agent };
}

/**
 * Managed storage (the caller closes it) on the verified scope of `cwd`, or `undefined` when it does not exist yet. Never writes.
 * @throws ScopeError with the resolution's code
 */
export function managedSessionStorageForRead(
  cwd: string,
  agentDir: string = defaultAgentDir(),
): { readonly scope: ManagedScope; readonly storage: ManagedSessionStorage } | undefined {
  const result = openManagedScope({ cwd, agentDir });
  if (result.kind === "error") throw new ScopeError(result);
  result.agent?.close();
  return result.scopeDir === undefined ? undefined : { scope: result.scope, storage: new ManagedSessionStorage(result.scopeDir) };
}
