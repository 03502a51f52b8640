/**
 * Loads, once per process and driver (each links its own SQLite), the extension that lets a
 * database path name a held directory descriptor (`/proc/self/fd/<n>/<name>`, Linux): SQLite's
 * unix VFS would resolve that link back to a path and open by name. It registers itself as the
 * default VFS and leaves every other path as it was (native/sqlite/pinned_vfs.c).
 */
import { pinnedVfsExtensionPath } from "../fs/index.js";
import { HistoryError } from "./errors.js";
import type { SqliteConnection, SqliteDriver, SqliteDriverName } from "./sqlite-driver.js";

const loaded = new Set<SqliteDriverName>();

function unavailable(why: string, cause?: unknown): HistoryError {
  const message = `history: cannot open the database through its held directory: ${why}`;
  return new HistoryError("history_pin_unavailable", message, cause === undefined ? {} : { cause });
}

/** Registers the pinned VFS in `driver`'s SQLite, or throws `history_pin_unavailable`. */
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

/** Refuses a connection whose main database is not at the path given: anything else means another VFS reached the file by name. */
export function checkPinnedConnection(db: SqliteConnection, expected: string): void {
  const main = db.prepare("PRAGMA database_list").all().find((row) => row.name === "main");
  if (main?.file !== expected) {
    throw unavailable(`SQLite resolved ${expected} to ${String(main?.file)} instead of keeping it`);
  }
}
