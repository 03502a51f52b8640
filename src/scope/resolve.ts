/**
 * resolveManagedScope: from a cwd and an agent directory to the `v2-<digest>` scope that
 * holds that workspace's sessions. Reading never writes anything; preparing for write
 * creates the owner-only directory chain and the binding, and repairs only permission
 * deviations of directories the user already owns.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { SecureDir, SecureFsError, type SecureFsErrorCode } from "../fs/index.js";
import { ensureBinding, readBinding, type BindingIdentity } from "./binding.js";
import { ScopeError, scopeFailure, type ScopeErrorCode, type ScopeFailure } from "./errors.js";
import { scopeDirectoryName, workspaceIdentity, type IdentityPlatform } from "./identity.js";

/** Name of the sessions root below the agent directory. */
export const SESSIONS_DIRECTORY = "sessions";

/** Environment variables that name the agent directory, strongest first. */
export const AGENT_DIR_ENV = ["GJC_CODING_AGENT_DIR", "PI_CODING_AGENT_DIR"] as const;

/** Environment variable that renames the `.gjc` config directory under the home directory. */
export const CONFIG_DIR_ENV = "GJC_CONFIG_DIR";

/**
 * The default agent directory: `$GJC_CODING_AGENT_DIR`, else `$PI_CODING_AGENT_DIR`, else
 * `~/<$GJC_CONFIG_DIR or .gjc>/agent`.
 */
export function defaultAgentDir(env: NodeJS.ProcessEnv = process.env, home: string = os.homedir()): string {
  for (const name of AGENT_DIR_ENV) {
    const value = env[name];
    if (value !== undefined && value.length > 0) return path.resolve(value);
  }
  const config = env[CONFIG_DIR_ENV];
  return path.resolve(home, config !== undefined && config.length > 0 ? config : ".gjc", "agent");
}

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
 * Resolves the managed scope of `options.cwd`. Order: workspace identity (no I/O below the
 * agent directory happens for a cwd that fails), sessions root, scope directory (must be a
 * real owner-only directory), binding (canonical bytes of this identity).
 */
export function resolveManagedScope(options: ResolveScopeOptions): ScopeResolution {
  if (typeof options !== "object" || options === null || typeof options.cwd !== "string") {
    return scopeFailure("invalid_request", "invalid_argument", "resolveManagedScope needs { cwd }");
  }
  const mode = options.mode ?? "read";
  if (mode !== "read" && mode !== "write") return scopeFailure("invalid_request", "invalid_argument", "mode must be read or write");
  const found = workspaceIdentity(options.cwd);
  if (found.kind === "error") return found;
  const { identity } = found;
  const agentDir = canonicalizeTrustedPath(options.agentDir ?? defaultAgentDir());
  const sessionsRoot =
    options.sessionsRoot === undefined ? path.join(agentDir, SESSIONS_DIRECTORY) : canonicalizeTrustedPath(options.sessionsRoot);
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
  const expected: BindingIdentity = identity;
  const outcome = mode === "write" ? prepareForWrite(base, expected, options.sessionsRoot === undefined) : checkForRead(base, expected);
  if (outcome.kind === "error") return outcome;
  return { kind: "resolved", scope: { ...base, exists: outcome.exists, repaired: outcome.repaired } };
}

/** {@link resolveManagedScope}, throwing {@link ScopeError} instead of returning a failure. */
export function resolveManagedScopeOrThrow(options: ResolveScopeOptions): ManagedScope {
  const result = resolveManagedScope(options);
  if (result.kind === "error") throw new ScopeError(result);
  return result.scope;
}

type Base = Omit<ManagedScope, "exists" | "repaired">;
type Checked = { kind: "ok"; exists: boolean; repaired: string[] } | ScopeFailure;

function checkForRead(base: Base, expected: BindingIdentity): Checked {
  const root = lstatOrFailure(base.sessionsRoot);
  if (root === undefined) return { kind: "ok", exists: false, repaired: [] };
  if ("kind" in root) return root;
  if (root.isSymbolicLink()) return scopeFailure("sessions_root_unavailable", "reparse_point", "the sessions root is a link");
  if (!root.isDirectory()) return scopeFailure("sessions_root_unavailable", "not_directory", "the sessions root is not a directory");
  const entry = lstatOrFailure(base.directoryPath);
  if (entry === undefined) return { kind: "ok", exists: false, repaired: [] };
  if ("kind" in entry) return entry;
  let scopeDir: SecureDir | undefined;
  try {
    // The scope directory alone is checked: a sessions root made by an older tool with
    // looser permissions is still readable, and preparing for write repairs it.
    scopeDir = SecureDir.openRoot(base.directoryPath);
    const binding = readBinding(scopeDir, expected);
    if (binding.kind === "error") return binding;
    return { kind: "ok", exists: true, repaired: [] };
  } catch (error) {
    return fsFailure(error, "binding_invalid", "the scope directory is not a safe owner-only directory");
  } finally {
    scopeDir?.close();
  }
}

/** fs-layer codes that only mean "permissions deviate" on an object we own: repairable. */
const REPAIRABLE: ReadonlySet<SecureFsErrorCode> = new Set(["mode_mismatch", "acl_present", "acl_malformed"]);

function prepareForWrite(base: Base, expected: BindingIdentity, rootBelowAgent: boolean): Checked {
  const repaired: string[] = [];
  let agent: SecureDir | undefined;
  let root: SecureDir | undefined;
  let scopeDir: SecureDir | undefined;
  try {
    if (rootBelowAgent) {
      agent = openOrRepair(() => SecureDir.openRoot(base.agentDir, { create: true }), () => SecureDir.openRoot(base.agentDir, { repair: true }), base.agentDir, repaired);
      const parent = agent;
      root = openOrRepair(() => parent.openDir(SESSIONS_DIRECTORY, { create: true }), () => parent.openDir(SESSIONS_DIRECTORY, { repair: true }), base.sessionsRoot, repaired);
    } else {
      root = openOrRepair(() => SecureDir.openRoot(base.sessionsRoot, { create: true }), () => SecureDir.openRoot(base.sessionsRoot, { repair: true }), base.sessionsRoot, repaired);
    }
  } catch (error) {
    agent?.close();
    return fsFailure(error, "sessions_root_unavailable", "the sessions root cannot be prepared");
  }
  try {
    const parent = root;
    scopeDir = openOrRepair(() => parent.openDir(base.directoryName, { create: true }), () => parent.openDir(base.directoryName, { repair: true }), base.directoryPath, repaired);
    const binding = ensureBinding(scopeDir, expected);
    if (binding.kind === "error") return binding;
    return { kind: "ok", exists: true, repaired };
  } catch (error) {
    return fsFailure(error, "binding_invalid", "the scope directory cannot be prepared");
  } finally {
    scopeDir?.close();
    root.close();
    agent?.close();
  }
}

/** Opens with `open`; on a repairable deviation opens with `repair` and records `where`. */
function openOrRepair(open: () => SecureDir, repair: () => SecureDir, where: string, repaired: string[]): SecureDir {
  try {
    return open();
  } catch (error) {
    if (!(error instanceof SecureFsError) || !REPAIRABLE.has(error.code)) throw error;
  }
  const dir = repair();
  repaired.push(where);
  return dir;
}

function fsFailure(error: unknown, code: ScopeErrorCode, message: string): ScopeFailure {
  if (!(error instanceof SecureFsError)) throw error;
  const cause = error.code === "symlink_refused" ? "reparse_point" : error.code;
  return scopeFailure(code, cause, `${message} (${error.code})`);
}

function lstatOrFailure(target: string): fs.Stats | ScopeFailure | undefined {
  try {
    return fs.lstatSync(target);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "io_error";
    if (code === "ENOENT") return undefined;
    return scopeFailure("sessions_root_unavailable", code, "the sessions root cannot be inspected");
  }
}

/**
 * `target` with its deepest existing ancestor (or itself) replaced by its real path and the
 * missing tail re-appended verbatim. The secure layer refuses links below a trusted root, so
 * a link in a trusted prefix (macOS `/var`, a linked home) is resolved here, once.
 */
export function canonicalizeTrustedPath(target: string): string {
  const absolute = path.resolve(target);
  const tail: string[] = [];
  let current = absolute;
  for (;;) {
    try {
      const real = fs.realpathSync.native(current);
      return tail.length === 0 ? real : path.join(real, ...tail.reverse());
    } catch (error) {
      const parent = path.dirname(current);
      if ((error as NodeJS.ErrnoException).code !== "ENOENT" || parent === current) return absolute;
      tail.push(path.basename(current));
      current = parent;
    }
  }
}
