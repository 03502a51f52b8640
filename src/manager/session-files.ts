/** GJC's module-level reader of one session file, on the manager's load path. */
import path from "node:path";

import type { FileEntry, SessionHeader } from "../session/index.js";
import { FileSessionStorage, isStorageError, type SessionStorage } from "../storage/index.js";
import { isSessionManagerError } from "./errors.js";
import { openSessionFile } from "./open-file.js";

/**
 * The effective header of the session file `filePath`, then every entry in file order (patches applied, pre-v5 migrated in
 * memory, blob references kept), read without the writer lock through `storage` (default: a `FileSessionStorage` of the
 * file's directory). Never writes.
 * @returns `[]` for a missing or empty file, or one without a usable session header
 * @throws SessionFormatError `version_too_new` / `invalid_version`; StorageError for other read failures
 */
export async function loadEntriesFromFile(filePath: string, storage?: SessionStorage): Promise<(SessionHeader | FileEntry)[]> {
  return readSessionRecords(filePath, storage);
}

/** {@link loadEntriesFromFile}, synchronously (pi's reader is). */
export function readSessionRecords(filePath: string, storage?: SessionStorage): (SessionHeader | FileEntry)[] {
  const absolute = path.resolve(filePath);
  const reader = storage ?? new FileSessionStorage(path.dirname(absolute));
  try {
    const opened = openSessionFile(reader, absolute, { readOnly: true, lookup: () => undefined, now: () => new Date() });
    const { indexed } = opened;
    if (indexed !== undefined) {
      try {
        return [indexed.header, ...indexed.tree.getEntries()];
      } finally {
        indexed.release();
      }
    }
    return opened.loaded === undefined ? [] : [opened.loaded.header, ...opened.entries];
  } catch (error) {
    if (isStorageError(error, "not_found") || isSessionManagerError(error, "invalid_header")) return [];
    throw error;
  }
}
