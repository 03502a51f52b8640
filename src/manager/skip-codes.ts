/**
 * The skip code a listing reports for a storage failure on one file or directory.
 */
import { StorageError, type StorageErrorCode } from "../storage/index.js";
import type { DiscoverySkipCode } from "./session-info.js";

const PASSED_THROUGH: ReadonlySet<StorageErrorCode> = new Set<StorageErrorCode>([
  "symlink_refused",
  "not_regular_file",
  "permission_denied",
  "not_found",
  "unsafe_entry",
]);

/** The skip code of a storage failure; anything unexpected is a `read_failed`. */
export function skipCodeOf(error: unknown): DiscoverySkipCode {
  if (error instanceof StorageError) {
    if (PASSED_THROUGH.has(error.code)) return error.code as DiscoverySkipCode;
    if (error.code === "not_directory") return "not_regular_file";
  }
  return "read_failed";
}

