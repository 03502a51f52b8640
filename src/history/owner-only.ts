/**
 * Owner-only guard around the files SQLite opens by path: the agent directory, `history.db`
 * and its `-wal`/`-shm`/`-journal` sidecars. All checks go through `SecureDir`; SQLite itself
 * cannot be handed a descriptor, so the database is checked before it opens and its
 * identity is checked again after.
 */
import path from "node:path";

import { SecureDir, SecureFsError, type SecureStat } from "../fs/index.js";
import { HistoryError } from "./errors.js";

/** File name of the database inside the agent directory. */
export const HISTORY_DB_NAME = "history.db";
// SQLite names its sidecars by appending these to the database name. A sidecar created by
// SQLite copies the database file's mode (and fchmods it, ignoring the umask), so a 0600
// database yields 0600 sidecars; a sidecar that already exists is reused as it is, so it
// must pass the same checks as the database.
const SIDECAR_SUFFIXES = ["-wal", "-shm", "-journal"] as const;

/** Turns a SecureFsError into the history error that carries its code. */
function insecure(error: unknown, what: string): HistoryError {
  if (error instanceof SecureFsError) {
    if (error.code === "permission_denied" || error.errnoName === "EROFS") {
      return new HistoryError("history_readonly", `history: ${what}: ${error.message}`, { fsCode: error.code, cause: error });
    }
    const code = error.code === "io_error" ? "history_io_error" : "history_insecure";
    return new HistoryError(code, `history: ${what}: ${error.message}`, { fsCode: error.code, cause: error });
  }
  return new HistoryError("history_io_error", `history: ${what}: ${String(error)}`, { cause: error });
}

function guarded<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    throw insecure(error, what);
  }
}

/**
 * SQLite locks its files with POSIX record locks, and POSIX drops *all* of a process's locks
 * on a file when the process closes *any* descriptor of it. Opening and closing `history.db`
 * or `-shm` ourselves while a connection of this process is open would silently release that
 * connection's locks; another process could then reset the shared WAL index under it (seen as
 * SIGBUS and lost rows). So descriptors are opened only while no connection of this process
 * holds the database, tracked here by identity; everything else is checked by `stat` on the
 * directory descriptor, which opens nothing.
 */
const openInThisProcess = new Map<string, number>();

/**
 * The verified agent directory and the identity of the `history.db` found or created in it.
 * Holds the directory descriptor until {@link HistoryFiles.close}.
 */
export class HistoryFiles {
  readonly #dir: SecureDir;
  readonly #key: string;
  #registered = false;
  /** Absolute path SQLite opens. */
  readonly dbPath: string;

  private constructor(dir: SecureDir, key: string) {
    this.#dir = dir;
    this.#key = key;
    this.dbPath = path.join(dir.path, HISTORY_DB_NAME);
  }

  /**
   * Opens the agent directory owner-only (creating it 0700 when `create`), refuses sidecars
   * that fail the owner-only rules, and creates `history.db` exclusively at 0600 or verifies
   * the one that exists (no link, ours, 0600, one link, no ACL). Must be followed by
   * {@link HistoryFiles.opened} once SQLite has the database open.
   */
  static prepare(agentDir: string, options: { readonly create: boolean }): HistoryFiles {
    const dir = guarded("agent directory", () => SecureDir.openRoot(agentDir, { create: options.create }));
    try {
      const existing = statIfPresent(dir, HISTORY_DB_NAME);
      if (existing !== undefined && openInThisProcess.has(identityKey(existing))) {
        // Verified on a descriptor when this process first opened it; re-check by stat only.
        for (const suffix of ["", ...SIDECAR_SUFFIXES]) checkByStat(dir, HISTORY_DB_NAME + suffix);
        return new HistoryFiles(dir, identityKey(existing));
      }
      for (const suffix of SIDECAR_SUFFIXES) verifyIfPresent(dir, HISTORY_DB_NAME + suffix);
      const file = guarded(HISTORY_DB_NAME, () => {
        try {
          return dir.openFile(HISTORY_DB_NAME, { write: true, create: "exclusive" });
        } catch (error) {
          if (error instanceof SecureFsError && error.code === "already_exists") return dir.openFile(HISTORY_DB_NAME);
          throw error;
        }
      });
      try {
        return new HistoryFiles(dir, identityKey(guarded(HISTORY_DB_NAME, () => file.stat())));
      } finally {
        file.close();
      }
    } catch (error) {
      dir.close();
      throw error;
    }
  }

  /**
   * Run once SQLite opened the database and touched its sidecars: `history.db` must still be
   * the file checked in {@link HistoryFiles.prepare} (nobody swapped it in between), and every
   * sidecar SQLite created must be an owner-only regular file. From here on this process
   * opens no descriptor of these files until {@link HistoryFiles.close}.
   */
  opened(): void {
    const now = checkByStat(this.#dir, HISTORY_DB_NAME);
    if (now === undefined || identityKey(now) !== this.#key) {
      throw new HistoryError("history_insecure", `history: ${this.dbPath} was replaced while it was being opened`, {
        fsCode: "identity_mismatch",
      });
    }
    for (const suffix of SIDECAR_SUFFIXES) checkByStat(this.#dir, HISTORY_DB_NAME + suffix);
    openInThisProcess.set(this.#key, (openInThisProcess.get(this.#key) ?? 0) + 1);
    this.#registered = true;
  }

  /**
   * Renames the database and whichever sidecars exist to `history.db.corrupt-<stamp>` (plus
   * the same suffixes, so SQLite can still open the set for recovery). Never replaces an
   * existing name and never deletes. Returns the new paths, database first.
   */
  moveAside(): string[] {
    const stamp = `${new Date().toISOString().replace(/[:.]/g, "-")}-${process.pid}`;
    const base = `${HISTORY_DB_NAME}.corrupt-${stamp}`;
    const moved: string[] = [];
    for (const suffix of ["", ...SIDECAR_SUFFIXES]) {
      const from = HISTORY_DB_NAME + suffix;
      if (ignoringMissing(from, () => this.#dir.publishNoReplace(from, base + suffix))) {
        moved.push(path.join(this.#dir.path, base + suffix));
      }
    }
    return moved;
  }

  /** Call after SQLite closed the database: releases the directory descriptor. Idempotent. */
  close(): void {
    if (this.#registered) {
      this.#registered = false;
      const left = (openInThisProcess.get(this.#key) ?? 1) - 1;
      if (left > 0) openInThisProcess.set(this.#key, left);
      else openInThisProcess.delete(this.#key);
    }
    this.#dir.close();
  }
}

/** Runs `fn`; true if it ran, false if `name` did not exist. Other failures are thrown typed. */
function ignoringMissing(name: string, fn: () => void): boolean {
  try {
    fn();
    return true;
  } catch (error) {
    if (error instanceof SecureFsError && error.code === "not_found") return false;
    throw insecure(error, name);
  }
}

function identityKey(stat: SecureStat): string {
  return `${stat.dev}:${stat.ino}`;
}

function statIfPresent(dir: SecureDir, name: string): SecureStat | undefined {
  let stat: SecureStat | undefined;
  ignoringMissing(name, () => {
    stat = dir.stat(name);
  });
  return stat;
}

/**
 * The owner-only rules that `stat` can see (type, owner, exact mode, one link), for files this
 * process must not open. ACLs need a descriptor; files SQLite creates in a directory verified
 * to carry no default ACL are born without one.
 */
function checkByStat(dir: SecureDir, name: string): SecureStat | undefined {
  const stat = statIfPresent(dir, name);
  if (stat === undefined) return undefined;
  const refuse = (fsCode: string, what: string): never => {
    throw new HistoryError("history_insecure", `history: ${path.join(dir.path, name)} ${what}`, { fsCode });
  };
  if (stat.type === "symlink") refuse("symlink_refused", "is a symbolic link");
  if (stat.type !== "file") refuse("not_regular_file", "is not a regular file");
  if (stat.nlink !== 1) refuse("hardlink_refused", "has more than one link");
  // Windows has neither POSIX owners nor modes; its DACL is checked on a descriptor instead.
  if (process.platform !== "win32") {
    if (stat.uid !== process.geteuid?.()) refuse("owner_mismatch", "is not owned by the effective user");
    if (stat.mode !== 0o600) refuse("mode_mismatch", `has mode ${stat.mode.toString(8)}, not 600`);
  }
  return stat;
}

function verifyIfPresent(dir: SecureDir, name: string): void {
  // Opening verifies on the descriptor: a link is refused before it is followed. A sidecar
  // may vanish at any moment (SQLite removes them on last close), which is fine.
  ignoringMissing(name, () => dir.openFile(name).close());
}
