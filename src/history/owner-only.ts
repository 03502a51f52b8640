/**
 * Owner-only guard around the files SQLite opens by path: the agent directory, `history.db`
 * and its `-wal`/`-shm`/`-journal` sidecars. All checks go through `SecureDir`; SQLite itself
 * cannot be handed a descriptor, so the database is checked before it opens and its
 * identity is checked again after.
 */
import path from "node:path";

import { SecureDir, SecureFsError } from "../fs/index.js";
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
 * The verified agent directory and the identity of the `history.db` found or created in it.
 * Holds the directory descriptor until {@link HistoryFiles.close}.
 */
export class HistoryFiles {
  readonly #dir: SecureDir;
  readonly #dev: string;
  readonly #ino: string;
  /** Absolute path SQLite opens. */
  readonly dbPath: string;

  private constructor(dir: SecureDir, dev: string, ino: string) {
    this.#dir = dir;
    this.#dev = dev;
    this.#ino = ino;
    this.dbPath = path.join(dir.path, HISTORY_DB_NAME);
  }

  /**
   * Opens the agent directory owner-only (creating it 0700 when `create`), refuses sidecars
   * that fail the owner-only rules, and creates `history.db` exclusively at 0600 or verifies
   * the one that exists (no link, ours, 0600, one link, no ACL).
   */
  static prepare(agentDir: string, options: { readonly create: boolean }): HistoryFiles {
    const dir = guarded("agent directory", () => SecureDir.openRoot(agentDir, { create: options.create }));
    try {
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
        const { dev, ino } = guarded(HISTORY_DB_NAME, () => file.stat());
        return new HistoryFiles(dir, dev, ino);
      } finally {
        file.close();
      }
    } catch (error) {
      dir.close();
      throw error;
    }
  }

  /**
   * Run after SQLite opened the database and touched its sidecars: `history.db` must still be
   * the file checked in {@link HistoryFiles.prepare} (nobody swapped it in between), and every
   * sidecar that now exists must be owner-only.
   */
  verifyOpened(): void {
    const file = guarded(HISTORY_DB_NAME, () => this.#dir.openFile(HISTORY_DB_NAME));
    try {
      const { dev, ino } = guarded(HISTORY_DB_NAME, () => file.stat());
      if (dev !== this.#dev || ino !== this.#ino) {
        throw new HistoryError("history_insecure", `history: ${this.dbPath} was replaced while it was being opened`, {
          fsCode: "identity_mismatch",
        });
      }
    } finally {
      file.close();
    }
    for (const suffix of SIDECAR_SUFFIXES) verifyIfPresent(this.#dir, HISTORY_DB_NAME + suffix);
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

  /** Releases the directory descriptor. Idempotent. */
  close(): void {
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

function verifyIfPresent(dir: SecureDir, name: string): void {
  // Opening verifies on the descriptor: a link is refused before it is followed. A sidecar
  // may vanish at any moment (SQLite removes them on last close), which is fine.
  ignoringMissing(name, () => dir.openFile(name).close());
}
