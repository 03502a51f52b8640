/**
 * The one place migration and legacy discovery acquire the sessions root by descriptor. Every
 * legacy directory and file, scope directory, staging entry, receipt and tombstone is then
 * reached from that handle by entry name, never by a path string.
 */
import path from "node:path";

import { SecureDir, SecureFsError } from "../fs/index.js";
import { resolveManagedScope, SESSIONS_DIRECTORY, type ManagedScope } from "../scope/index.js";
import { MigrationError } from "./errors.js";

/**
 * The sessions root of `scope`: `<agentDir>/sessions` opened below the agent directory, or an
 * explicit root elsewhere opened as the root itself (the top of what migration touches). For
 * `read` (listing writes nothing) both are accepted by the legacy-source rules, so a root an
 * older tool made 0755 is fine; for `write` (migration, after the scope was prepared for
 * write) they are held owner-only. Throws `sessions_root_unavailable` with the fs code as
 * cause (`not_found` when it does not exist).
 */
export function openSessionsRoot(scope: ManagedScope, access: "read" | "write"): SecureDir {
  const options = access === "read" ? { source: true } : {};
  let agent: SecureDir | undefined;
  try {
    if (scope.sessionsRoot !== path.join(scope.agentDir, SESSIONS_DIRECTORY)) return SecureDir.openRoot(scope.sessionsRoot, options);
    agent = SecureDir.openRoot(scope.agentDir, options);
    return agent.openDir(SESSIONS_DIRECTORY, options);
  } catch (error) {
    if (!(error instanceof SecureFsError)) throw error;
    const cause = error.code === "symlink_refused" ? "reparse_point" : error.code;
    throw new MigrationError("sessions_root_unavailable", cause, `the sessions root cannot be opened safely (${error.code})`);
  } finally {
    agent?.close();
  }
}

/** True for the failure of a root that is simply not there yet. */
export function isMissingRoot(error: unknown): boolean {
  return error instanceof MigrationError && error.code === "sessions_root_unavailable" && error.detail === "not_found";
}

/** The scope directory of `scope` below the held sessions root; any refusal is `binding_invalid`. */
export function openScopeDir(root: SecureDir, scope: ManagedScope): SecureDir {
  try {
    return root.openDir(scope.directoryName);
  } catch (error) {
    if (!(error instanceof SecureFsError)) throw error;
    throw new MigrationError("binding_invalid", error.code, `the scope directory is not safe (${error.code})`);
  }
}

/**
 * `scope` resolved again for write, with the same sessions root (an explicit one is passed on),
 * so migration and retiring write where the candidate was listed. Throws the resolution's
 * failure, or `binding_conflict` when the workspace now resolves to another scope.
 */
export function prepareScopeForWrite(scope: ManagedScope): ManagedScope {
  const defaultRoot = path.join(scope.agentDir, SESSIONS_DIRECTORY) === scope.sessionsRoot;
  const prepared = resolveManagedScope({ cwd: scope.canonicalCwd, agentDir: scope.agentDir, ...(defaultRoot ? {} : { sessionsRoot: scope.sessionsRoot }), mode: "write" });
  if (prepared.kind === "error") throw new MigrationError(prepared.code, prepared.cause, prepared.message);
  if (prepared.scope.directoryPath !== scope.directoryPath) throw new MigrationError("binding_conflict", "scope_moved", "the workspace now resolves to another scope");
  return { ...prepared.scope, legacyLexicalCwd: scope.legacyLexicalCwd };
}
