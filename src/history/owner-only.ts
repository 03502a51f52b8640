/**
 * Owner-only guard around the files SQLite opens (directory, database, sidecars). SQLite takes only
 * a path: it gets one through the held directory where the platform has one; the files are checked before and after.
 */
import fs from "node:fs";
import path from "node:path";

import { isValidEntryName, SecureDir, SecureFsError, type SecureStat } from "../fs/index.js";
import { HistoryError } from "./errors.js";
import { identityStamp, walOwnerStamp } from "./wal-owner.js";

/** File name of the database inside the agent directory (the peer's default). */
export const HISTORY_DB_NAME = "history.db";
// A sidecar SQLite creates copies the database's mode (fchmod, ignoring the umask), so a 0600
// database yields 0600 sidecars; one that exists is reused as it is, so it is checked too.
const SIDECAR_SUFFIXES = ["-wal", "-shm", "-journal"] as const;
const ALL_SUFFIXES = ["", ...SIDECAR_SUFFIXES] as const;

/** Turns a SecureFsError into the history error that carries its code. */
function insecure(error: unknown, what: string): HistoryError {
  if (!(error instanceof SecureFsError)) return new HistoryError("history_io_error", `history: ${what}: ${String(error)}`, { cause: error });
  const readonly = error.code === "permission_denied" || error.errnoName === "EROFS";
  const code = readonly ? "history_readonly" : error.code === "io_error" ? "history_io_error" : "history_insecure";
  return new HistoryError(code, `history: ${what}: ${error.message}`, { fsCode: error.code, cause: error });
}

function guarded<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    throw insecure(error, what);
  }
}

/**
 * POSIX drops *all* of a process's record locks on a file when it closes *any* descriptor of it:
 * opening and closing `history.db` or `-shm` while a connection here is open would release its
 * SQLite locks, and another process could reset the WAL index under it (SIGBUS, lost rows). So
 * descriptors are opened only while no connection here holds the database; else checks are by `stat`.
 */
const openInThisProcess = new Map<string, number>();

/** The database's verified directory (held until {@link HistoryFiles.close}) and the identity of its database file. */
export class HistoryFiles {
  readonly #dir: SecureDir;
  readonly #name: string;
  readonly #key: string;
  /** Descriptors open before SQLite opened anything (Linux), to find SQLite's own. */
  readonly #before: ReadonlySet<string>;
  #registered = false;
  /** Absolute path of the database, for messages and `HistoryStorage.path`. */
  readonly dbPath: string;
  /** What SQLite opens: on Linux a path through the held descriptor ({@link SecureDir.pinnedPath}), else `dbPath`. */
  readonly sqlitePath: string;
  /** True when {@link HistoryFiles.sqlitePath} goes through the held descriptor. */
  readonly pinned: boolean;
  /** Names tightened to 0600 while preparing (database first, then sidecars). */
  readonly tightened: readonly string[];
  /** The database file's identity as every write transaction stamps it into page 1 (see wal-owner.ts). */
  readonly stamp: number;

  private constructor(dir: SecureDir, name: string, key: string, tightened: readonly string[]) {
    this.#dir = dir;
    this.#name = name;
    this.#key = key;
    this.tightened = tightened;
    this.stamp = identityStamp(key);
    this.dbPath = path.join(dir.path, name);
    const pinned = dir.pinnedPath(name);
    this.pinned = pinned !== undefined;
    this.sqlitePath = pinned ?? this.dbPath;
    this.#before = new Set(openDescriptors().keys());
  }

  /**
   * Opens the directory owner-only (created 0700 with `create`), tightens what {@link tightenIfLoose} may, refuses
   * sidecars failing the owner-only rules, and creates `name` at 0600 or verifies it. Call `opened` once SQLite has it.
   */
  static prepare(dirPath: string, name: string, options: { readonly create: boolean }): HistoryFiles {
    if (!isValidEntryName(name)) {
      throw new HistoryError("history_invalid_argument", `history: ${JSON.stringify(name)} is not a valid database file name`);
    }
    const dir = guarded("database directory", () => SecureDir.openRoot(dirPath, { create: options.create }));
    try {
      const existing = statIfPresent(dir, name);
      if (existing !== undefined && openInThisProcess.has(identityKey(existing))) {
        // Verified on a descriptor when this process first opened it; re-check by stat only.
        for (const suffix of ALL_SUFFIXES) checkByStat(dir, name + suffix);
        return new HistoryFiles(dir, name, identityKey(existing), []).#refusingForeignWal();
      }
      const tightened = ALL_SUFFIXES.map((suffix) => name + suffix).filter((n) => tightenIfLoose(dir, n));
      // Verified on a descriptor (a link refused unfollowed); a sidecar may vanish meanwhile.
      for (const sidecar of SIDECAR_SUFFIXES.map((suffix) => name + suffix)) ifPresent(sidecar, () => dir.openFile(sidecar).close());
      const file = guarded(name, () => dir.openFile(name, { create: "if-missing" }));
      let key: string;
      try {
        key = identityKey(guarded(name, () => file.stat()));
      } finally {
        file.close();
      }
      // Built only now, so the descriptors listed are not SQLite's (it may reuse the number just closed).
      return new HistoryFiles(dir, name, key, tightened).#refusingForeignWal();
    } catch (error) {
      dir.close();
      throw error;
    }
  }

  /**
   * Run once SQLite opened the database: it must still be the file `prepare` checked, every sidecar
   * owner-only, and what SQLite holds those very files (Linux: its descriptors on these names match
   * the held directory's files by device and inode; elsewhere the directory path, reopened
   * unfollowed, still is the held directory). No descriptor of these files is opened until `close`.
   */
  opened(): void {
    const now = checkByStat(this.#dir, this.#name);
    if (now === undefined || identityKey(now) !== this.#key) throw replaced(this.dbPath, "was replaced while it was being opened");
    for (const suffix of SIDECAR_SUFFIXES) checkByStat(this.#dir, this.#name + suffix);
    if (process.platform === "linux") this.#checkSqliteDescriptors();
    else this.#checkDirectoryPath();
    openInThisProcess.set(this.#key, (openInThisProcess.get(this.#key) ?? 0) + 1);
    this.#registered = true;
  }

  #checkSqliteDescriptors(): void {
    const names = new Set(ALL_SUFFIXES.map((suffix) => this.#name + suffix));
    let sawDatabase = false;
    for (const [fd, target] of openDescriptors()) {
      const base = path.basename(target);
      if (this.#before.has(fd) || !names.has(base)) continue;
      let held: fs.BigIntStats;
      try {
        // stat, not open: closing an opened one would drop SQLite's POSIX locks.
        held = fs.statSync(`/proc/self/fd/${fd}`, { bigint: true });
      } catch {
        continue; // closed meanwhile: not one SQLite keeps
      }
      const expected = statIfPresent(this.#dir, base);
      if (expected === undefined || expected.dev !== String(held.dev) || expected.ino !== String(held.ino)) {
        throw replaced(path.join(this.#dir.path, base), `is not the file SQLite opened (it opened ${target})`);
      }
      if (base === this.#name) sawDatabase = true;
    }
    if (!sawDatabase) throw replaced(this.dbPath, "was not found among the files SQLite opened");
  }

  #checkDirectoryPath(): void {
    const again = guarded("database directory", () => SecureDir.openRoot(this.#dir.path));
    try {
      const held = this.#dir.stat();
      const seen = again.stat();
      if (held.dev !== seen.dev || held.ino !== seen.ino) throw replaced(this.#dir.path, "was replaced while the database was being opened");
    } finally {
      again.close();
    }
  }

  /**
   * Before a write: the name still holds the database SQLite has open (same device and inode) and it still
   * passes the owner-only rules, by `stat` alone (no descriptor: see {@link openInThisProcess}). A database
   * renamed aside, replaced or swapped for a link would take rows into a WAL of another file. The sidecars
   * are SQLite's, held open already, and another process of the user's may recreate them meanwhile.
   * @throws HistoryError `history_insecure` (`identity_mismatch`, `symlink_refused`, ...)
   */
  verify(): void {
    const now = checkByStat(this.#dir, this.#name);
    if (now === undefined || identityKey(now) !== this.#key) throw replaced(this.dbPath, "was replaced or moved while the store was open");
  }

  /**
   * Why the WAL at the name must not be read with this database, if it must not: it holds committed changes stamped by
   * another database file (one renamed aside or replaced, a restored backup, while a writer in any process had frames
   * in it). SQLite keeps no link between a database and its WAL beyond the name, so it would read them as this file's.
   */
  foreignWal(): HistoryError | undefined {
    const owner = this.#walStamp();
    if (owner === undefined || owner === this.stamp) return undefined;
    return replaced(
      `${this.dbPath}-wal`,
      `holds changes written to another database file (one renamed aside or replaced while a store had it open); put that file back at ${this.#name}, or move ${this.#name}-wal and ${this.#name}-shm aside (their changes are then lost)`,
    );
  }

  /** This, unless the WAL at the name is another file's: checked before SQLite ever reads it. */
  #refusingForeignWal(): HistoryFiles {
    const foreign = this.foreignWal();
    if (foreign !== undefined) throw foreign;
    return this;
  }

  /** True when the newest committed page 1 in the WAL carries this file's stamp: its frames are this file's to checkpoint. */
  walIsOwn(): boolean {
    return this.#walStamp() === this.stamp;
  }

  #walStamp(): number | undefined {
    const wal = `${this.#name}-wal`;
    // A descriptor of the WAL may be opened and closed while SQLite has it: SQLite takes no POSIX lock on it.
    return ifPresent(wal, () => {
      const file = this.#dir.openFile(wal);
      try {
        return walOwnerStamp(file);
      } finally {
        file.close();
      }
    });
  }

  /** Why opening failed if the files themselves changed under SQLite (a link swapped in, a replaced database), else `undefined`. */
  insecurity(): HistoryError | undefined {
    try {
      this.verify();
      return undefined;
    } catch (error) {
      if (error instanceof HistoryError && error.code === "history_insecure") return error;
      throw error;
    }
  }

  /**
   * `failure` as the swap it was when SQLite found the database read-only though the directory is writable:
   * SQLite reopens a database read-only when its read-write open fails, and the file it checked here is the
   * user's 0600 one, so that open met another file at the name (a link swapped in and back). Else `failure`.
   */
  explain(failure: HistoryError): HistoryError {
    if (failure.code !== "history_readonly" || failure.sqliteCode === undefined) return failure;
    try {
      // The held directory itself where it can be named (a read-only mount fails this with EROFS).
      const pinned = this.#dir.pinnedPath(this.#name);
      fs.accessSync(pinned === undefined ? this.#dir.path : path.dirname(pinned), fs.constants.W_OK);
    } catch {
      return failure;
    }
    return new HistoryError("history_insecure", `${failure.message} (another file was at ${this.dbPath} when SQLite opened it)`, {
      fsCode: "identity_mismatch",
      sqliteCode: failure.sqliteCode,
      cause: failure,
    });
  }

  /** Renames the files to `<name>.corrupt-<stamp>` + suffix (never replacing, never deleting); new paths, database first. */
  moveAside(): string[] {
    const stamp = `${new Date().toISOString().replace(/[:.]/g, "-")}-${process.pid}`;
    const base = `${this.#name}.corrupt-${stamp}`;
    const moved: string[] = [];
    for (const suffix of ALL_SUFFIXES) {
      const from = this.#name + suffix;
      const done = ifPresent(from, () => {
        this.#dir.publishNoReplace(from, base + suffix);
        return true;
      });
      if (done) moved.push(path.join(this.#dir.path, base + suffix));
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

function replaced(where: string, what: string): HistoryError {
  return new HistoryError("history_insecure", `history: ${where} ${what}`, { fsCode: "identity_mismatch" });
}

/** Where each descriptor this process has open leads, by number (Linux; empty elsewhere). */
function openDescriptors(): Map<string, string> {
  const open = new Map<string, string>();
  if (process.platform !== "linux") return open;
  let listed: string[];
  try {
    listed = fs.readdirSync("/proc/self/fd");
  } catch (error) {
    throw new HistoryError("history_io_error", `history: cannot list /proc/self/fd to check what SQLite opened: ${String(error)}`, { cause: error });
  }
  for (const fd of listed) {
    try {
      open.set(fd, fs.readlinkSync(`/proc/self/fd/${fd}`));
    } catch {
      // The listing's own descriptor, closed by now.
    }
  }
  return open;
}

/**
 * The peer creates its database 0644 (umask 022): a file that is ours, regular and single-linked
 * is tightened to 0600 by a descriptor opened unfollowed (below the held directory where possible)
 * and matched by device and inode; anything else, and ACLs, are left to the checks that follow.
 * True if the mode changed; never on Windows (no POSIX modes).
 */
function tightenIfLoose(dir: SecureDir, name: string): boolean {
  if (process.platform === "win32") return false;
  const seen = statIfPresent(dir, name);
  if (seen === undefined || seen.type !== "file" || seen.uid !== process.geteuid?.() || seen.nlink !== 1 || seen.mode === 0o600) return false;
  const where = path.join(dir.path, name);
  let fd: number;
  try {
    const reach = dir.pinnedPath(name) ?? where;
    fd = fs.openSync(reach, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw new HistoryError("history_io_error", `history: ${where}: ${String(error)}`, { cause: error });
  }
  try {
    const held = fs.fstatSync(fd, { bigint: true });
    if (String(held.dev) !== seen.dev || String(held.ino) !== seen.ino || held.nlink !== 1n || Number(held.uid) !== seen.uid) {
      throw replaced(where, "changed while its mode was being tightened");
    }
    fs.fchmodSync(fd, 0o600);
  } finally {
    fs.closeSync(fd);
  }
  return true;
}

/** `fn()`, or undefined if `name` did not exist; other failures are thrown typed. */
function ifPresent<T>(name: string, fn: () => T): T | undefined {
  try {
    return fn();
  } catch (error) {
    if (error instanceof SecureFsError && error.code === "not_found") return undefined;
    throw insecure(error, name);
  }
}

function identityKey(stat: SecureStat): string {
  return `${stat.dev}:${stat.ino}`;
}

function statIfPresent(dir: SecureDir, name: string): SecureStat | undefined {
  return ifPresent(name, () => dir.stat(name));
}

/** The owner-only rules `stat` can see, for files not to be opened (SQLite's, born in a directory without default ACL, have no ACL). */
function checkByStat(dir: SecureDir, name: string): SecureStat | undefined {
  const stat = statIfPresent(dir, name);
  if (stat === undefined) return undefined;
  // Windows has neither POSIX owners nor modes; its DACL is checked on a descriptor instead.
  const posix = process.platform !== "win32";
  const failed =
    stat.type === "symlink"
      ? "symlink_refused"
      : stat.type !== "file"
        ? "not_regular_file"
        : stat.nlink !== 1
          ? "hardlink_refused"
          : posix && stat.uid !== process.geteuid?.()
            ? "owner_mismatch"
            : posix && stat.mode !== 0o600
              ? "mode_mismatch"
              : undefined;
  if (failed !== undefined) throw insecure(new SecureFsError(failed, { operation: "stat", path: path.join(dir.path, name) }), name);
  return stat;
}
