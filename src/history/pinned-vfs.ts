/**
 * Loads, once per process, the SQLite extension that lets a database path name a held
 * directory descriptor (`/proc/self/fd/<n>/<name>`, Linux): without it SQLite's unix VFS
 * resolves that link back to a path string and opens by name (see native/sqlite/pinned_vfs.c).
 * The extension registers itself as the default VFS of better-sqlite3's SQLite; every path
 * that does not have that form behaves exactly as before.
 */
import Database from "better-sqlite3";

import { pinnedVfsExtensionPath } from "../fs/index.js";
import { HistoryError } from "./errors.js";

let loaded = false;

function unavailable(why: string, cause?: unknown): HistoryError {
  return new HistoryError(
    "history_pin_unavailable",
    `history: cannot open the database through its held directory: ${why}`,
    cause === undefined ? {} : { cause },
  );
}

/** Makes sure the pinned VFS is registered; throws `history_pin_unavailable` if it cannot be. */
export function ensurePinnedVfs(): void {
  if (loaded) return;
  const extension = pinnedVfsExtensionPath();
  if (extension === undefined) throw unavailable("the gjc_pinned_vfs SQLite extension was not built (npm run build:native)");
  const probe = new Database(":memory:");
  try {
    probe.loadExtension(extension);
  } catch (error) {
    throw unavailable(`loading ${extension} failed: ${error instanceof Error ? error.message : String(error)}`, error);
  } finally {
    probe.close();
  }
  loaded = true;
}

/**
 * Refuses a connection whose main database is not the path it was given: SQLite reports
 * the path it resolved, so anything else means the pinned VFS was not the one used (another
 * default VFS registered since) and the file was reached by name.
 */
export function checkPinnedConnection(db: Database.Database, expected: string): void {
  const main = (db.pragma("database_list") as Array<{ name: string; file: string }>).find((row) => row.name === "main");
  if (main?.file !== expected) {
    throw unavailable(`SQLite resolved ${expected} to ${String(main?.file)} instead of keeping it`);
  }
}
