/**
 * Every legacy session below an agent directory, whichever workspace it belongs to: the files in the older layout's
 * folders of `<agentDir>/sessions` (neither scopes nor internal), each with the cwd its header names, read by the
 * legacy-source rules. For `migrate --all` and listings of every workspace; never writes.
 */
import path from "node:path";

import { SecureDir, SecureFsError } from "../fs/index.js";
import { canonicalizeTrustedPath, INTERNAL_DIRECTORY, isScopeDirectoryName, SESSIONS_DIRECTORY } from "../scope/index.js";
import { MigrationError } from "./errors.js";
import { readHeader } from "./session-file.js";

/** One session file of a legacy folder. */
export interface LegacySessionFile {
  /** Below the canonical agent directory. */
  readonly path: string;
  readonly mtimeMs: number;
  /** The workspace its header names; `undefined` without a usable header (it belongs to none). */
  readonly cwd: string | undefined;
}

/** Whether `name`, an entry of a sessions root, is a folder of the older layout. */
export function isLegacyFolderName(name: string): boolean {
  return !isScopeDirectoryName(name) && name !== INTERNAL_DIRECTORY && !name.startsWith(".");
}

/** The session files of every legacy folder of `agentDir`'s sessions root, by path; none without one. A folder or file refused by the legacy-source rules is passed over. */
export function listLegacySessionFiles(agentDir: string): LegacySessionFile[] {
  let root: SecureDir;
  try {
    root = SecureDir.openRoot(path.join(canonicalizeTrustedPath(agentDir), SESSIONS_DIRECTORY), { source: true });
  } catch (error) {
    if (error instanceof SecureFsError) return [];
    throw error;
  }
  const found: LegacySessionFile[] = [];
  try {
    for (const folder of root.list()) {
      if (folder.type !== "directory" || !isLegacyFolderName(folder.name)) continue;
      const dir = unlessRefused(() => root.openDir(folder.name, { source: true }));
      if (dir === undefined) continue;
      try {
        for (const { name, type } of dir.list()) {
          if (type !== "file" || !name.endsWith(".jsonl") || name.startsWith(".")) continue;
          const stat = unlessRefused(() => dir.stat(name));
          if (stat === undefined) continue;
          const header = unlessRefused(() => readHeader(dir, name, "source"));
          found.push({ path: path.join(root.path, folder.name, name), mtimeMs: stat.mtimeMs, cwd: header?.cwd });
        }
      } finally {
        dir.close();
      }
    }
  } finally {
    root.close();
  }
  return found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** `read()`, or `undefined` when the file system or the source rules refuse it. */
function unlessRefused<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch (error) {
    if (error instanceof SecureFsError || error instanceof MigrationError) return undefined;
    throw error;
  }
}
