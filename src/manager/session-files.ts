/**
 * GJC's module-level reader of one session file, on the same loader as the manager.
 */
import path from "node:path";

import type { FileEntry, SessionHeader } from "../session/index.js";
import { FileSessionStorage, isStorageError, type SessionStorage } from "../storage/index.js";
import { isSessionManagerError } from "./errors.js";
import { openSessionFile } from "./open-file.js";

/**
 * The records of the session file `filePath`: its effective header first, then every entry
 * in file order (header and entry patches applied; pre-v5 files come migrated to v5 in memory,
 * the file is never written; blob references stay references). Read without the writer lock
 * through `storage` (default: a `FileSessionStorage` rooted at the file's directory).
 *
 * @returns `[]` for a missing file, an empty one, or one whose first record is not a usable
 *   session header
 * @throws SessionFormatError `version_too_new` / `invalid_version`; StorageError for other
 *   read failures
 */
export async function loadEntriesFromFile(filePath: string, storage?: SessionStorage): Promise<(SessionHeader | FileEntry)[]> {
  return readSessionRecords(filePath, storage);
}

/** {@link loadEntriesFromFile}, synchronously (the load path is synchronous; pi's reader is). */
export function readSessionRecords(filePath: string, storage?: SessionStorage): (SessionHeader | FileEntry)[] {
  const absolute = path.resolve(filePath);
  const reader = storage ?? new FileSessionStorage(path.dirname(absolute));
  try {
    const opened = openSessionFile(reader, absolute, { readOnly: true, lookup: () => undefined, now: () => new Date() });
    if (opened.indexed !== undefined) return [opened.indexed.header, ...opened.indexed.tree.getEntries()];
    return opened.loaded === undefined ? [] : [opened.loaded.header, ...opened.entries];
  } catch (error) {
    if (isStorageError(error, "not_found") || isSessionManagerError(error, "invalid_header")) return [];
    throw error;
  }
}
