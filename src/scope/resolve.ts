/** resolveManagedScope: from a cwd and an agent directory to the `v2-<digest>` scope holding that workspace's sessions. */
import path from "node:path";

import { SecureDir, SecureFsError, unlessMissing } from "../fs/index.js";
import { SESSIONS_DIRECTORY } from "../storage/paths.js";
import { defaultAgentDir } from "./agent-dir.js";
import { AgentRoot, canonicalizeTrustedPath, namesBelowAgentDir, openOrRepair } from "./agent-root.js";
import { ensureBinding, readBinding, type BindingIdentity } from "./binding.js";
import { ScopeError, scopeFailure, type ScopeErrorCode, type ScopeFailure } from "./errors.js";
import { formerWorkspaceIdentity, scopeDirectoryName, workspaceIdentity, type IdentityPlatform } from "./identity.js";

export { canonicalizeTrustedPath } from "./agent-root.js";
export { defaultAgentDir } from "./agent-dir.js";

export { SESSIONS_DIRECTORY } from "../storage/paths.js";

/** A resolved managed scope. Paths are for I/O; the identity fields are what is hashed. */
export interface ManagedScope {
  readonly apiVersion: 1;
  readonly layoutVersion: 2;
  readonly identityVersion: 1;
  readonly platform: IdentityPlatform;
  /** Agent directory with its existing ancestors canonicalised. */
  readonly agentDir: string;
  /** `<agentDir>/sessions`. */
  readonly sessionsRoot: string;
  /** Native canonical path of the cwd (hashed). */
  readonly canonicalCwd: string;
  /** `path.resolve(cwd)`: the spelling the legacy layout encoded. */
  readonly legacyLexicalCwd: string;
  /** The 52-character identity digest. */
  readonly identityDigest: string;
  /** `v2-<digest>`. */
  readonly directoryName: string;
  /** `<sessionsRoot>/v2-<digest>`. */
  readonly directoryPath: string;
  /** Whether the scope directory exists (always true after a write preparation). */
  readonly exists: boolean;
  /** Directories whose mode or ACLs were repaired while preparing (write mode only). */
  readonly repaired: readonly string[];
  /** Resolved for a workspace that may no longer exist ({@link ResolveScopeOptions.former}); its sessions' owners are checked alike. */
  readonly former: boolean;
}

/** Options of {@link resolveManagedScope}. */
export interface ResolveScopeOptions {
  /** The workspace directory. */
  readonly cwd: string;
  /** The agent directory; default {@link defaultAgentDir}. */
  readonly agentDir?: string;
  /** The sessions root; default `<agentDir>/sessions`. */
  readonly sessionsRoot?: string;
  /**
   * `"read"` (default) never writes; `"write"` prepares the scope for new data; `"sources"` opens nothing and only describes
   * the scope, for reading legacy sources by their own rules (the migration checks every directory it reads then).
   */
  readonly mode?: "read" | "write" | "sources";
  /** The cwd may be a workspace that no longer exists: its scope is the one of the path it had ({@link formerWorkspaceIdentity}). Only on an explicit request. */
  readonly former?: boolean;
}

/** Outcome of {@link resolveManagedScope}. */
export type ScopeResolution = { readonly kind: "resolved"; readonly scope: ManagedScope } | ScopeFailure;

/**
 * Resolves the managed scope of `options.cwd`: workspace identity (a failing cwd causes no I/O below the agent
 * directory), then by descriptor the agent directory, sessions root, scope directory and binding.
 */
export function resolveManagedScope(options: ResolveScopeOptions): ScopeResolution {
  const opened = openManagedScope(options);
  if (opened.kind === "error") return opened;
  opened.scopeDir?.close();
  opened.agent?.close();
  return { kind: "resolved", scope: opened.scope };
}

/** {@link resolveManagedScope}, throwing {@link ScopeError} instead of returning a failure. */
export function resolveManagedScopeOrThrow(options: ResolveScopeOptions): ManagedScope {
  const result = resolveManagedScope(options);
  if (result.kind === "error") throw new ScopeError(result);
  return result.scope;
}

/** A resolution with the descriptors it opened, which the caller closes. */
interface OpenedScope {
  readonly kind: "opened";
  readonly scope: ManagedScope;
  /** The agent directory, when the sessions root lies below it. */
  readonly agent: AgentRoot | undefined;
  /** The verified scope directory, when it exists. */
  readonly scopeDir: SecureDir | undefined;
}

/** @internal {@link resolveManagedScope}, keeping what it opened so the caller works on the very directory checked. */
export function openManagedScope(options: ResolveScopeOptions): OpenedScope | ScopeFailure {
  if (typeof options !== "object" || options === null || typeof options.cwd !== "string") {
    return scopeFailure("invalid_request", "invalid_argument", "resolveManagedScope needs { cwd }");
  }
  const mode = options.mode ?? "read";
  if (mode !== "read" && mode !== "write" && mode !== "sources")
    return scopeFailure("invalid_request", "invalid_argument", "mode must be read, write or sources");
  const former = options.former === true;
  const found = former ? formerWorkspaceIdentity(options.cwd) : workspaceIdentity(options.cwd);
  if (found.kind === "error") return found;
  const { identity } = found;
  const givenAgentDir = options.agentDir ?? defaultAgentDir();
  const agentDir = canonicalizeTrustedPath(givenAgentDir);
  // A sessions root below the agent directory is walked from the agent's descriptor; one elsewhere
  // is a trusted root of its own (and the agent directory is not opened).
  const names = options.sessionsRoot === undefined ? [SESSIONS_DIRECTORY] : namesBelowAgentDir(agentDir, givenAgentDir, options.sessionsRoot);
  if (names?.length === 0) return scopeFailure("invalid_request", "invalid_argument", "the sessions root cannot be the agent directory itself");
  const sessionsRoot = names === undefined ? canonicalizeTrustedPath(options.sessionsRoot as string) : path.join(agentDir, ...names);
  const directoryName = scopeDirectoryName(identity.digest);
  const base = {
    apiVersion: 1,
    layoutVersion: 2,
    identityVersion: 1,
    platform: identity.platform,
    agentDir,
    sessionsRoot,
    canonicalCwd: identity.canonicalPath,
    legacyLexicalCwd: path.resolve(options.cwd),
    identityDigest: identity.digest,
    directoryName,
    directoryPath: path.join(sessionsRoot, directoryName),
  } as const;
  // Legacy sources are read by their own rules (a 0755 agent directory of an older tool passes there): described only.
  if (mode === "sources") return { kind: "opened", scope: { ...base, exists: false, repaired: [], former }, agent: undefined, scopeDir: undefined };
  let agent: AgentRoot | undefined;
  if (names !== undefined) {
    try {
      agent = mode === "write" ? AgentRoot.open(agentDir, { write: true }) : AgentRoot.openIfExists(agentDir);
    } catch (error) {
      return fsFailure(error, "sessions_root_unavailable", "the agent directory cannot be opened safely");
    }
  }
  const repaired: string[] = [];
  const outcome = openScopeDir(base, identity, agent, names, mode === "write", repaired);
  if (outcome.kind === "error") {
    agent?.close();
    return outcome;
  }
  const { scopeDir } = outcome;
  return { kind: "opened", scope: { ...base, exists: scopeDir !== undefined, repaired: [...(agent?.repaired ?? []), ...repaired], former }, agent, scopeDir };
}

/**
 * The scope directory, its binding checked, reached by descriptor. Read mode changes nothing (a
 * missing directory: no scope yet) and refuses what write mode would repair. Write mode
 * creates the chain owner-only and repairs permission deviations of the user's own (into `repaired`).
 */
function openScopeDir(
  base: Pick<ManagedScope, "sessionsRoot" | "directoryName" | "directoryPath">,
  expected: BindingIdentity,
  agent: AgentRoot | undefined,
  names: string[] | undefined,
  write: boolean,
  repaired: string[],
): { readonly kind: "ok"; readonly scopeDir: SecureDir | undefined } | ScopeFailure {
  const { sessionsRoot, directoryName, directoryPath } = base;
  let root: SecureDir | undefined;
  try {
    // `agent` is opened only when the sessions root lies below it (`names`); read mode may find none.
    if (names !== undefined) root = write ? agent?.openDir(names) : agent?.openDirIfExists(names);
    else if (write) root = openOrRepair((o) => SecureDir.openRoot(sessionsRoot, o), sessionsRoot, repaired);
    else root = unlessMissing(() => SecureDir.openRoot(sessionsRoot));
  } catch (error) {
    return fsFailure(
      error,
      "sessions_root_unavailable",
      write ? "the sessions root cannot be prepared" : "the sessions root is not a safe owner-only directory",
    );
  }
  if (root === undefined) return { kind: "ok", scopeDir: undefined };
  let scopeDir: SecureDir | undefined;
  try {
    scopeDir = write ? openOrRepair((o) => root.openDir(directoryName, o), directoryPath, repaired) : root.openDir(directoryName);
    const binding = write ? ensureBinding(scopeDir, expected) : readBinding(scopeDir, expected);
    if (binding.kind === "error") {
      scopeDir.close();
      return binding;
    }
    return { kind: "ok", scopeDir };
  } catch (error) {
    scopeDir?.close();
    if (!write && error instanceof SecureFsError && error.code === "not_found") return { kind: "ok", scopeDir: undefined };
    return fsFailure(error, "binding_invalid", write ? "the scope directory cannot be prepared" : "the scope directory is not a safe owner-only directory");
  } finally {
    root.close();
  }
}

function fsFailure(error: unknown, code: ScopeErrorCode, message: string): ScopeFailure {
  if (!(error instanceof SecureFsError)) throw error;
  const cause = error.code === "symlink_refused" ? "reparse_point" : error.code;
  return scopeFailure(code, cause, `${message} (${error.code})`);
}
