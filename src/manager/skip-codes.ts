/** The skip code a listing or `continueRecent` reports for a storage failure on one file or directory. */
import { StorageError, type StorageErrorCode } from "../storage/index.js";
import type { DiscoverySkipCode, SkippedSession } from "./session-info.js";

const PASSED_THROUGH: ReadonlySet<StorageErrorCode> = new Set<StorageErrorCode>(["symlink_refused", "not_regular_file", "permission_denied", "not_found", "unsafe_entry"]);

function skipCodeOf(error: unknown): DiscoverySkipCode {
  if (error instanceof StorageError) {
    if (PASSED_THROUGH.has(error.code)) return error.code as DiscoverySkipCode;
    if (error.code === "not_directory") return "not_regular_file";
  }
  return "read_failed";
}

/** The skip row of a storage failure on `file` (anything unexpected is `read_failed`), with the lower layer's `detail` if any (which owner-only rule an `unsafe_entry` broke). */
export function skipOf(file: string, error: unknown): SkippedSession {
  const code = skipCodeOf(error);
  const detail = error instanceof StorageError ? error.detail : undefined;
  return detail === undefined ? { path: file, code } : { path: file, code, detail };
}

/** Why `continueRecent` passes over `file` it failed to open (another writer holds it, or a listing would refuse it too); `undefined` for any other failure, which the caller rethrows. */
export function resumeSkipOf(file: string, error: unknown): SkippedSession | undefined {
  if (!(error instanceof StorageError)) return undefined;
  if (error.code === "session_busy") return { path: file, code: "session_busy" };
  return PASSED_THROUGH.has(error.code) && error.code !== "not_found" ? skipOf(file, error) : undefined;
}
