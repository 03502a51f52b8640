import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { HistoryStorage } from "../../src/history/index.js";
import { hasCommand, isRoot, run } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { childJson, childProgram, historyError, modeOf, runChild } from "./helpers.js";

let tmp: ReturnType<typeof makeTempDir>;
let agent: string;
let dbPath: string;

beforeEach(async () => {
  await childProgram();
  tmp = makeTempDir("gjc-history-sec-");
  agent = path.join(tmp.path, "agent");
  dbPath = path.join(agent, "history.db");
});
afterEach(() => {
  HistoryStorage.resetInstance();
  tmp.remove();
});

const NOBODY = 65534;

describe("owner-only files", () => {
  it("creates the directory 0700 and the database and its sidecars 0600 under umask 000", async () => {
    const result = childJson<{ whileOpen: Record<string, string>; umask: number }>(await runChild(["modes", agent], { umask: 0 }));
    expect(result.umask).toBe(0);
    expect(result.whileOpen).toEqual({ "history.db": "600", "history.db-wal": "600", "history.db-shm": "600" });
    expect(modeOf(agent)).toBe(0o700);
    expect(fs.readdirSync(agent)).toEqual(["history.db"]);
    expect(modeOf(dbPath)).toBe(0o600);
  });

  it("refuses a symlinked history.db without following it", () => {
    fs.mkdirSync(agent, { mode: 0o700 });
    const elsewhere = path.join(tmp.path, "elsewhere.db");
    fs.writeFileSync(elsewhere, "", { mode: 0o600 });
    fs.symlinkSync(elsewhere, dbPath);
    const error = historyError(() => HistoryStorage.open(dbPath));
    expect(error.code).toBe("history_insecure");
    expect(error.fsCode).toBe("symlink_refused");
    expect(fs.readFileSync(elsewhere).byteLength).toBe(0);
    // A dangling link is refused the same way: it must not become a file created elsewhere.
    fs.unlinkSync(elsewhere);
    expect(historyError(() => HistoryStorage.open(dbPath)).fsCode).toBe("symlink_refused");
    expect(fs.existsSync(elsewhere)).toBe(false);
  });

  it("tightens a 0644 history.db of ours in place; refuses more than one link or another type", () => {
    const store = HistoryStorage.open(dbPath);
    void store.add("kept");
    store.close();
    fs.chmodSync(dbPath, 0o644);
    const inode = fs.statSync(dbPath).ino;
    const tightened = HistoryStorage.open(dbPath);
    expect(tightened.tightened).toEqual(["history.db"]);
    expect(modeOf(dbPath)).toBe(0o600);
    expect(fs.statSync(dbPath).ino).toBe(inode);
    expect(tightened.getRecent(10).map((e) => e.prompt)).toEqual(["kept"]);
    tightened.close();
    const link = path.join(tmp.path, "second-name.db");
    fs.linkSync(dbPath, link);
    expect(historyError(() => HistoryStorage.open(dbPath))).toMatchObject({ code: "history_insecure", fsCode: "hardlink_refused" });
    // A linked file is never tightened: the other name may be someone else's way in.
    fs.chmodSync(dbPath, 0o644);
    expect(historyError(() => HistoryStorage.open(dbPath)).code).toBe("history_insecure");
    expect(modeOf(dbPath)).toBe(0o644);
    fs.chmodSync(dbPath, 0o600);
    fs.unlinkSync(link);
    const reopened = HistoryStorage.open(dbPath);
    expect(reopened.getRecent(100).map((e) => e.prompt)).toEqual(["kept"]);
    reopened.close();
    fs.renameSync(dbPath, `${dbPath}.bak`);
    fs.mkdirSync(dbPath, { mode: 0o700 });
    expect(historyError(() => HistoryStorage.open(dbPath))).toMatchObject({ code: "history_insecure", fsCode: "not_regular_file" });
  });

  it("refuses sidecars that are links or not owner-only before SQLite can reuse them", () => {
    HistoryStorage.open(dbPath).close();
    const target = path.join(tmp.path, "captured-wal");
    fs.writeFileSync(target, "", { mode: 0o600 });
    fs.symlinkSync(target, `${dbPath}-wal`);
    expect(historyError(() => HistoryStorage.open(dbPath))).toMatchObject({ code: "history_insecure", fsCode: "symlink_refused" });
    expect(fs.readFileSync(target).byteLength).toBe(0);
    fs.unlinkSync(`${dbPath}-wal`);
    fs.writeFileSync(`${dbPath}-shm`, "", { mode: 0o666 });
    fs.chmodSync(`${dbPath}-shm`, 0o666);
    const store = HistoryStorage.open(dbPath);
    expect(store.tightened).toEqual(["history.db-shm"]);
    expect(modeOf(`${dbPath}-shm`)).toBe(0o600);
  });

  it("refuses an agent directory that is not owner-only", () => {
    fs.mkdirSync(agent, { mode: 0o755 });
    fs.chmodSync(agent, 0o755);
    expect(historyError(() => HistoryStorage.open(dbPath))).toMatchObject({ code: "history_insecure", fsCode: "mode_mismatch" });
    expect(fs.readdirSync(agent)).toEqual([]);
    fs.rmdirSync(agent);
    expect(historyError(() => HistoryStorage.open(dbPath, { createDir: false }))).toMatchObject({ code: "history_insecure", fsCode: "not_found" });
  });

  it.skipIf(!isRoot())("refuses a history.db owned by someone else", () => {
    HistoryStorage.open(dbPath).close();
    fs.chownSync(dbPath, NOBODY, NOBODY);
    expect(historyError(() => HistoryStorage.open(dbPath))).toMatchObject({ code: "history_insecure", fsCode: "owner_mismatch" });
  });
});

describe("corrupt database", () => {
  it("moves a file that is not a database aside, intact, and reports history_corrupt", () => {
    fs.mkdirSync(agent, { mode: 0o700 });
    const garbage = Buffer.from("this was never a SQLite database\n".repeat(300));
    fs.writeFileSync(dbPath, garbage, { mode: 0o600 });
    const error = historyError(() => HistoryStorage.open(dbPath));
    expect(error.code).toBe("history_corrupt");
    expect(error.sqliteCode).toBe("SQLITE_NOTADB");
    expect(error.movedTo).toHaveLength(1);
    const [moved] = error.movedTo;
    expect(path.dirname(moved!)).toBe(agent);
    expect(path.basename(moved!)).toMatch(/^history\.db\.corrupt-/);
    expect(fs.readFileSync(moved!).equals(garbage)).toBe(true);
    expect(modeOf(moved!)).toBe(0o600);
    expect(fs.existsSync(dbPath)).toBe(false);
    // The next open starts an empty database; the moved file stays.
    const fresh = HistoryStorage.open(dbPath);
    fresh.add("new life");
    expect(fresh.getRecent(100).map((e) => e.prompt)).toEqual(["new life"]);
    fresh.close();
    expect(fs.readFileSync(moved!).equals(garbage)).toBe(true);
  });

  it("shuts the store and moves the files aside when pages go bad while it is open", () => {
    const store = HistoryStorage.open(dbPath);
    for (let i = 0; i < 400; i++) store.add(`prompt number ${i} ${"filler ".repeat(40)}`);
    store.close();
    // Overwrite everything after the header page: the schema still reads, the data does not.
    const size = fs.statSync(dbPath).size;
    const page = 4096;
    const fd = fs.openSync(dbPath, "r+");
    fs.writeSync(fd, Buffer.alloc(size - page, 0xa5), 0, size - page, page);
    fs.closeSync(fd);
    const damaged = fs.readFileSync(dbPath);
    let error;
    try {
      const reopened = HistoryStorage.open(dbPath);
      error = historyError(() => reopened.search("prompt", 100));
      expect(reopened.closed).toBe(true);
    } catch (thrown) {
      // Some damage is already visible while the schema loads; the outcome must be the same.
      error = thrown;
    }
    expect(error).toMatchObject({ code: "history_corrupt" });
    const movedTo = (error as { movedTo: string[] }).movedTo;
    expect(movedTo.length).toBeGreaterThanOrEqual(1);
    expect(fs.readFileSync(movedTo[0]!).subarray(0, damaged.byteLength).equals(damaged)).toBe(true);
    expect(fs.existsSync(dbPath)).toBe(false);
  });
});

describe("read-only locations", () => {
  const canSetpriv = hasCommand("setpriv");

  it.skipIf(!canSetpriv || !isRoot())("an unprivileged owner cannot use a read-only agent directory: typed error, nothing created", async () => {
    fs.chmodSync(tmp.path, 0o755);
    fs.mkdirSync(agent, { mode: 0o700 });
    fs.chownSync(agent, NOBODY, NOBODY);
    fs.chmodSync(agent, 0o500);
    const asNobody = ["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups"];
    const result = childJson<{ code: string; fsCode: string | null }>(await runChild(["open", agent], { prefix: asNobody }));
    // 0500 is not owner-only (0700), so the directory check refuses it before any write.
    expect(result).toMatchObject({ code: "history_insecure", fsCode: "mode_mismatch" });
    expect(fs.readdirSync(agent)).toEqual([]);
    // The same directory made owner-only again works for that user.
    fs.chmodSync(agent, 0o700);
    expect(childJson(await runChild(["open", agent], { prefix: asNobody }))).toEqual({ ok: true });
    expect(fs.statSync(dbPath).uid).toBe(NOBODY);
  });

  it.skipIf(!canSetpriv || !isRoot())("an unprivileged user gets a typed error for a database it cannot write", async () => {
    fs.chmodSync(tmp.path, 0o755);
    HistoryStorage.open(dbPath).close();
    fs.chownSync(agent, NOBODY, NOBODY);
    // history.db stays root's 0600: that user cannot even open it to check it.
    const asNobody = ["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups"];
    const result = childJson<{ code: string; fsCode: string | null }>(await runChild(["open", agent], { prefix: asNobody }));
    expect(result).toMatchObject({ code: "history_readonly", fsCode: "permission_denied" });
  });

  it.skipIf(!isRoot() || !hasCommand("unshare") || !canUnshareMount())("a read-only filesystem gives history_readonly, and leaves the data alone", async () => {
    const mountPoint = path.join(tmp.path, "ro");
    fs.mkdirSync(mountPoint, { mode: 0o700 });
    const script = await childProgram();
    const sh = [
      "set -e",
      `mount -t tmpfs -o mode=0700 gjc-history-ro "${mountPoint}"`,
      `"${process.execPath}" "${script}" open "${mountPoint}" > /dev/null`,
      `mkdir -m 0700 "${mountPoint}/empty"`,
      `mount -o remount,ro "${mountPoint}"`,
      `"${process.execPath}" "${script}" open "${mountPoint}"`,
      `"${process.execPath}" "${script}" open "${mountPoint}/empty"`,
      `ls -A "${mountPoint}" "${mountPoint}/empty"`,
    ].join("\n");
    const result = run("unshare", ["-m", "--propagation", "private", "sh", "-c", sh]);
    expect(result.status, result.stderr).toBe(0);
    const lines = result.stdout.trim().split("\n");
    // An existing database: SQLite cannot open it for writing nor make its sidecars.
    expect(JSON.parse(lines[0]!)).toMatchObject({ code: "history_readonly", sqliteCode: "SQLITE_CANTOPEN" });
    // No database yet: creating it fails with EROFS.
    expect(JSON.parse(lines[1]!)).toMatchObject({ code: "history_readonly" });
    expect(lines.slice(2).filter((l) => l !== "" && !l.endsWith(":"))).toEqual(["empty", "history.db"]);
  });
});

function canUnshareMount(): boolean {
  return run("unshare", ["-m", "true"]).status === 0;
}
