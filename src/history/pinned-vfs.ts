/**
 * Loads, once per driver (each links its own SQLite), the extension (native/sqlite/pinned_vfs.c)
 * that lets a path name a held directory descriptor (`/proc/self/fd/<n>/<name>`, Linux), which
 * the unix VFS would resolve back to a path. It becomes the default VFS, other paths unchanged.
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
