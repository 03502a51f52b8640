/**
 * Two directory-level helpers GJC's session module exports: syncing a session directory after
 * a move, and putting back the transcript backups GJC's own rewrite leaves when it dies between
 * moving the old file aside and publishing the new one. This store's rewrites never make such
 * backups (a temporary file is renamed over the transcript), so the recovery is for session
 * directories GJC wrote before they came here.
 */
import path from "node:path";

import { SecureDir } from "../fs/index.js";
import { FileSessionStorage, type StorageError } from "../storage/index.js";
import { toStorageError } from "../storage/errors.js";
import { engineStorage, type FaceSessionStorage } from "./storage-view.js";

/** The directory handle {@link syncSessionMoveDirectory} syncs and closes. */
export interface SessionMoveDirectoryHandle {
  sync(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Flushes `directory`'s entries to stable storage, so a rename into or out of it survives a
 * crash. Windows has no directory sync: nothing is opened there. The directory is opened by
 * descriptor, no link followed, and must be the effective user's (its mode is not judged:
 * an explicit session directory may be shared-readable).
 * @param openDirectory opens the handle; by default a {@link SecureDir} on `directory`
 * @throws StorageError when the directory cannot be opened or synced
 */
export async function syncSessionMoveDirectory(
  directory: string,
  platform: NodeJS.Platform = process.platform,
  openDirectory: (directory: string) => Promise<SessionMoveDirectoryHandle> = openForSync,
): Promise<void> {
  if (platform === "win32") return;
  const handle = await openDirectory(directory);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function openForSync(directory: string): Promise<SessionMoveDirectoryHandle> {
  let held: SecureDir;
  try {
    held = SecureDir.openRoot(directory, { owned: true });
  } catch (error) {
    throw toStorageError(error, "write", directory);
  }
  return {
    sync: async () => {
      try {
        await held.syncAsync();
      } catch (error) {
        throw toStorageError(error, "write", directory);
      }
    },
    close: async () => held.close(),
  };
}

/** One backup {@link recoverOrphanedBackups} looked at. */
export interface OrphanedBackupRecovery {
  /** The transcript the backup belongs to. */
  sessionFile: string;
  /** The backup (`<transcript>.<number>.bak`). */
  backupPath: string;
  /** Why it was left where it is; absent when it was renamed back. */
  error?: StorageError;
}

const BACKUP_NAME = /^(.+\.jsonl)\.(\d+)\.bak$/;

/**
 * Renames GJC's orphaned transcript backups back: for every `<name>.jsonl.<number>.bak` in
 * `sessionDir` whose `<name>.jsonl` is missing, the newest backup (by mtime, then by number)
 * becomes the transcript. The rename never replaces a file (a transcript that appeared
 * meanwhile wins) and, in a file storage, takes the writer lock and syncs the directory.
 * Older backups of the same transcript, and every backup of a transcript that exists, are left.
 * A directory that cannot be listed recovers nothing.
 * @param appStorage where the directory is; by default a file storage rooted at the directory
 * @returns what was renamed back, and what failed with its error
 */
export async function recoverOrphanedBackups(sessionDir: string, appStorage?: FaceSessionStorage): Promise<OrphanedBackupRecovery[]> {
  const storage = engineStorage(appStorage) ?? new FileSessionStorage(path.resolve(sessionDir));
  const dir = path.resolve(sessionDir);
  let names: string[];
  try {
    names = storage.listFilesSync(dir);
  } catch {
    return [];
  }
  const newest = new Map<string, { backupPath: string; mtimeMs: number; serial: bigint }>();
  for (const name of names) {
    const match = BACKUP_NAME.exec(name);
    if (match === null) continue;
    const backupPath = path.join(dir, name);
    let mtimeMs: number;
    try {
      mtimeMs = storage.statSync(backupPath).mtimeMs;
    } catch {
      continue;
    }
    const sessionFile = path.join(dir, match[1]!);
    const serial = BigInt(match[2]!);
    const current = newest.get(sessionFile);
    if (current === undefined || mtimeMs > current.mtimeMs || (mtimeMs === current.mtimeMs && serial > current.serial)) {
      newest.set(sessionFile, { backupPath, mtimeMs, serial });
    }
  }
  const outcomes: OrphanedBackupRecovery[] = [];
  for (const [sessionFile, { backupPath }] of newest) {
    try {
      if (storage.existsSync(sessionFile)) continue;
      await storage.rename(backupPath, sessionFile, { noReplace: true });
      outcomes.push({ sessionFile, backupPath });
    } catch (error) {
      outcomes.push({ sessionFile, backupPath, error: toStorageError(error, "write", backupPath) });
    }
  }
  return outcomes;
}
