/**
 * The one place migration and legacy discovery acquire the sessions root by descriptor: every legacy directory and
 * file, scope directory, staging entry, receipt and tombstone is then reached from that handle by entry name.
 */
import path from "node:path";

import { SecureDir, SecureFsError } from "../fs/index.js";
import { SESSIONS_DIRECTORY, type ManagedScope } from "../scope/index.js";
import { MigrationError } from "./errors.js";

/**
 * The sessions root of `scope`: `<agentDir>/sessions` opened below the agent directory, or an explicit root opened as
 * the root itself (the top of what migration touches). For `read` both are taken by the legacy-source rules (a root an
 * older tool made 0755 is fine); for `write` (the scope prepared for write) they are held owner-only. Throws
 * `sessions_root_unavailable` with the fs code as cause (`not_found` when it does not exist).
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

/** The scope directory of `scope` below the held sessions root; any refusal is `binding_invalid`. */
export function openScopeDir(root: SecureDir, scope: ManagedScope): SecureDir {
  try {
    return root.openDir(scope.directoryName);
  } catch (error) {
    if (!(error instanceof SecureFsError)) throw error;
    throw new MigrationError("binding_invalid", error.code, `the scope directory is not safe (${error.code})`);
  }
}
