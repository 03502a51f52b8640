/**
 * Loads, once per process, the SQLite extension that lets a database path name a held
 * directory descriptor (`/proc/self/fd/<n>/<name>`, Linux): without it SQLite's unix VFS
 * resolves that link back to a path string and opens by name (see native/sqlite/pinned_vfs.c).
 * The extension registers itself as the default VFS of the driver's SQLite library (each
 * driver links its own); every path that does not have that form behaves exactly as before.
 */
import { pinnedVfsExtensionPath } from "../fs/index.js";
import { HistoryError } from "./errors.js";
import type { SqliteConnection, SqliteDriver, SqliteDriverName } from "./sqlite-driver.js";

const loaded = new Set<SqliteDriverName>();

function unavailable(why: string, cause?: unknown): HistoryError {
  const message = `history: cannot open the database through its held directory: ${why}`;
  return new HistoryError("history_pin_unavailable", message, cause === undefined ? {} : { cause });
}

/**
 * Makes sure the pinned VFS is registered in `driver`'s SQLite; throws
 * `history_pin_unavailable` if it cannot be.
 */
export function ensurePinnedVfs(driver: SqliteDriver): void {
  if (loaded.has(driver.name)) return;
  const extension = pinnedVfsExtensionPath();
  if (extension === undefined) throw unavailable("the gjc_pinned_vfs SQLite extension was not built (npm run build:native)");
  try {
    driver.loadExtension(extension);
  } catch (error) {
    throw unavailable(`loading ${extension} into ${driver.name} failed: ${error instanceof Error ? error.message : String(error)}`, error);
  }
  loaded.add(driver.name);
}

/**
 * Refuses a connection whose main database is not the path it was given: SQLite reports
 * the path it resolved, so anything else means the pinned VFS was not the one used (another
 * default VFS registered since) and the file was reached by name.
 */
export function checkPinnedConnection(db: SqliteConnection, expected: string): void {
  const main = db.prepare("PRAGMA database_list").all().find((row) => row.name === "main");
  if (main?.file !== expected) {
    throw unavailable(`SQLite resolved ${expected} to ${String(main?.file)} instead of keeping it`);
  }
}
