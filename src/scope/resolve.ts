/**
 * resolveManagedScope: from a cwd and an agent directory to the `v2-<digest>` scope holding
 * that workspace's sessions. Reading never writes; preparing for write creates the owner-only
 * directory chain and the binding, repairing only permission deviations of the user's own.
 */
import path from "node:path";

import { SecureDir, SecureFsError } from "../fs/index.js";
import { defaultAgentDir } from "./agent-dir.js";
import { AgentRoot, canonicalizeTrustedPath, namesBelowAgentDir, openOrRepair, unlessMissing } from "./agent-root.js";
import { ensureBinding, readBinding, type BindingCheck, type BindingIdentity, type BindingRead } from "./binding.js";
import { ScopeError, scopeFailure, type ScopeErrorCode, type ScopeFailure } from "./errors.js";
import { scopeDirectoryName, workspaceIdentity, type IdentityPlatform } from "./identity.js";

export { canonicalizeTrustedPath } from "./agent-root.js";
export { defaultAgentDir } from "./agent-dir.js";

/** Name of the sessions root below the agent directory. */
export const SESSIONS_DIRECTORY = "sessions";

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
}

/** Options of {@link resolveManagedScope}. */
export interface ResolveScopeOptions {
  /** The workspace directory. */
  readonly cwd: string;
  /** The agent directory; default {@link defaultAgentDir}. */
  readonly agentDir?: string;
  /** The sessions root; default `<agentDir>/sessions`. */
  readonly sessionsRoot?: string;
  /** `"read"` (default) never writes; `"write"` prepares the scope for new data. */
  readonly mode?: "read" | "write";
}

/** Outcome of {@link resolveManagedScope}. */
export type ScopeResolution = { readonly kind: "resolved"; readonly scope: ManagedScope } | ScopeFailure;

/**
 * Resolves the managed scope of `options.cwd`: workspace identity (a failing cwd causes no I/O
 * below the agent directory), then the agent directory by descriptor, sessions root, scope
 * directory (owner-only) and binding (canonical bytes of this identity), all reached from the
 * held agent directory when below it.
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

/**
 * @internal {@link resolveManagedScope}, keeping what it opened so the caller works on the
 * very scope directory that was checked (never reopened by path).
 */
export function openManagedScope(options: ResolveScopeOptions): OpenedScope | ScopeFailure {
  if (typeof options !== "object" || options === null || typeof options.cwd !== "string") {
    return scopeFailure("invalid_request", "invalid_argument", "resolveManagedScope needs { cwd }");
  }
  const mode = options.mode ?? "read";
  if (mode !== "read" && mode !== "write") return scopeFailure("invalid_request", "invalid_argument", "mode must be read or write");
  const found = workspaceIdentity(options.cwd);
  if (found.kind === "error") return found;
  const { identity } = found;
  const givenAgentDir = options.agentDir ?? defaultAgentDir();
  const agentDir = canonicalizeTrustedPath(givenAgentDir);
  // A sessions root below the agent directory is walked from the agent's descriptor like the
  // default one; one elsewhere is a trusted root of its own (and the agent dir is not opened).
  const names = options.sessionsRoot === undefined ? [SESSIONS_DIRECTORY] : namesBelowAgentDir(agentDir, givenAgentDir, options.sessionsRoot);
  if (names?.length === 0) return scopeFailure("invalid_request", "invalid_argument", "the sessions root cannot be the agent directory itself");
  const sessionsRoot = names === undefined ? canonicalizeTrustedPath(options.sessionsRoot as string) : path.join(agentDir, ...names);
  let agent: AgentRoot | undefined;
  if (names !== undefined) {
    try {
      agent = mode === "write" ? AgentRoot.open(agentDir, { write: true }) : AgentRoot.openIfExists(agentDir);
    } catch (error) {
      return fsFailure(error, "sessions_root_unavailable", "the agent directory cannot be opened safely");
    }
  }
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
  const repaired: string[] = [];
  const outcome = mode === "write" ? prepareForWrite(base, identity, agent, names, repaired) : checkForRead(base, identity, agent, names);
  if (outcome.kind === "error") {
    agent?.close();
    return outcome;
  }
  const { scopeDir } = outcome;
  return { kind: "opened", scope: { ...base, exists: scopeDir !== undefined, repaired: [...(agent?.repaired ?? []), ...repaired] }, agent, scopeDir };
}

type Base = Omit<ManagedScope, "exists" | "repaired">;
type Checked = { kind: "ok"; scopeDir: SecureDir | undefined } | ScopeFailure;

/**
 * Read mode: every directory on the way is opened by descriptor and must pass the owner-only
 * check; a missing one means the scope does not exist yet. Nothing is created or repaired.
 */
function checkForRead(base: Base, expected: BindingIdentity, agent: AgentRoot | undefined, names: string[] | undefined): Checked {
  if (names !== undefined && agent === undefined) return { kind: "ok", scopeDir: undefined };
  let found: SecureDir | undefined;
  try {
    // The sessions root may be looser (an older tool's); the scope below it is verified.
    found = agent !== undefined && names !== undefined
      ? agent.openDirIfExists(names, { readThrough: true })
      : unlessMissing(() => SecureDir.openRoot(base.sessionsRoot, { owned: true }));
  } catch (error) {
    return fsFailure(error, "sessions_root_unavailable", "the sessions root is not a safe owner-only directory");
  }
  if (found === undefined) return { kind: "ok", scopeDir: undefined };
  const root = found;
  return bindScopeDir(root, () => root.openDir(base.directoryName), (dir) => readBinding(dir, expected), true, "the scope directory is not a safe owner-only directory");
}

/**
 * Write mode: the chain is created owner-only where missing, and permission deviations of
 * directories the user owns are repaired (recorded); anything else is refused, never adopted.
 */
function prepareForWrite(base: Base, expected: BindingIdentity, agent: AgentRoot | undefined, names: string[] | undefined, repaired: string[]): Checked {
  let root: SecureDir;
  try {
    root = agent !== undefined && names !== undefined ? agent.openDir(names) : openOrRepair((o) => SecureDir.openRoot(base.sessionsRoot, o), base.sessionsRoot, repaired);
  } catch (error) {
    return fsFailure(error, "sessions_root_unavailable", "the sessions root cannot be prepared");
  }
  const open = () => openOrRepair((o) => root.openDir(base.directoryName, o), base.directoryPath, repaired);
  return bindScopeDir(root, open, (dir) => ensureBinding(dir, expected), false, "the scope directory cannot be prepared");
}

/**
 * The scope directory `open` gives below `root` (closed here), kept open when its binding
 * `check`s out. With `read`, a scope that is not there is no directory rather than a failure.
 */
function bindScopeDir(root: SecureDir, open: () => SecureDir, check: (dir: SecureDir) => BindingRead | BindingCheck, read: boolean, message: string): Checked {
  let scopeDir: SecureDir | undefined;
  try {
    scopeDir = open();
    const binding = check(scopeDir);
    if (binding.kind === "error") {
      scopeDir.close();
      return binding;
    }
    return { kind: "ok", scopeDir };
  } catch (error) {
    scopeDir?.close();
    if (read && error instanceof SecureFsError && error.code === "not_found") return { kind: "ok", scopeDir: undefined };
    return fsFailure(error, "binding_invalid", message);
  } finally {
    root.close();
  }
}

function fsFailure(error: unknown, code: ScopeErrorCode, message: string): ScopeFailure {
  if (!(error instanceof SecureFsError)) throw error;
  const cause = error.code === "symlink_refused" ? "reparse_point" : error.code;
  return scopeFailure(code, cause, `${message} (${error.code})`);
}
