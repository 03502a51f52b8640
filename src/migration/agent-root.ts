/**
 * The one place migration and legacy discovery acquire the directory everything they touch
 * lies below: the agent directory, opened once by descriptor, and the sessions root below
 * it. Every legacy directory and file, scope directory, staging entry, receipt and
 * tombstone is then reached from that handle by entry name, never by a path string.
 */
import path from "node:path";

import { SecureDir, SecureFsError } from "../fs/index.js";
import { SESSIONS_DIRECTORY, type ManagedScope } from "../scope/index.js";
import { MigrationError } from "./errors.js";

/**
 * What the caller does below the root: `read` (listing: nothing is written, so a root an
 * older tool made 0755 is accepted by the legacy-source rules) or `write` (migration: the
 * scope was prepared for write, which made the agent directory and the sessions root
 * owner-only, and they are held to that).
 */
export type RootAccess = "read" | "write";

/**
 * Opens the agent directory of `scope` by descriptor: owner-only for `write`, by the
 * legacy-source rules (no link, owned by the effective user, not writable by others) for
 * `read`. Throws `sessions_root_unavailable` with the fs code as cause.
 */
export function openAgentDir(scope: ManagedScope, access: RootAccess): SecureDir {
  try {
    return SecureDir.openRoot(scope.agentDir, access === "read" ? { source: true } : {});
  } catch (error) {
    throw rootFailure(error);
  }
}

/**
 * The sessions root of `scope`, held by descriptor: `<agentDir>/sessions` opened below the
 * agent directory's handle, or an explicit sessions root elsewhere opened as the root
 * itself (it is then the top of what migration touches). `not_found` when it does not exist
 * (read only: preparing for write creates it).
 */
export function openSessionsRoot(scope: ManagedScope, access: RootAccess): SecureDir {
  const options = access === "read" ? { source: true } : {};
  if (scope.sessionsRoot !== path.join(scope.agentDir, SESSIONS_DIRECTORY)) {
    try {
      return SecureDir.openRoot(scope.sessionsRoot, options);
    } catch (error) {
      throw rootFailure(error);
    }
  }
  const agent = openAgentDir(scope, access);
  try {
    return agent.openDir(SESSIONS_DIRECTORY, options);
  } catch (error) {
    throw rootFailure(error);
  } finally {
    agent.close();
  }
}

/** True for the failure of a root that is simply not there yet. */
export function isMissingRoot(error: unknown): boolean {
  return error instanceof MigrationError && error.code === "sessions_root_unavailable" && error.detail === "not_found";
}

function rootFailure(error: unknown): MigrationError {
  if (!(error instanceof SecureFsError)) throw error;
  const cause = error.code === "symlink_refused" ? "reparse_point" : error.code;
  return new MigrationError("sessions_root_unavailable", cause, `the sessions root cannot be opened safely (${error.code})`);
}
