/**
 * The database is opened through the held directory descriptor: swaps of the directory's
 * path (also by another user who owns its parent) redirect no read and no write, planted
 * links, hard links and FIFOs are refused typed, and a peer-made 0644 database of ours is
 * tightened while anything foreign, linked or carrying an ACL grant is still refused.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { HistoryStorage } from "../../src/history/index.js";
import { HistoryFiles } from "../../src/history/owner-only.js";
import { checkPinnedConnection, pragmaValue, sqliteDriver } from "../../src/history/sqlite-driver.js";
import { ACL_TAG, aclHex } from "../helpers/acl.js";
import { hasCommand, isRoot, run } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { childJson, childProgram, historyError, modeOf, rawDb, runChild } from "./helpers.js";

const NOBODY = 65534;
const SET_ACL = "import os, sys; os.setxattr(sys.argv[1], 'system.posix_acl_access', bytes.fromhex(sys.argv[2]))";
const GET_ACL = "import os, sys; print(os.getxattr(sys.argv[1], 'system.posix_acl_access').hex())";
const asNobody = ["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups"];
const linux = process.platform === "linux";

let tmp: ReturnType<typeof makeTempDir>;
let agent: string;
let dbPath: string;
let outside: string;

beforeEach(() => {
  tmp = makeTempDir("gjc-history-pin-");
  agent = path.join(tmp.path, "agent");
  dbPath = path.join(agent, "history.db");
  outside = path.join(tmp.path, "outside");
  fs.mkdirSync(outside, { mode: 0o700 });
});
afterEach(() => {
  HistoryStorage.resetInstance();
  tmp.remove();
});

/** Moves the agent dir away and puts a link to `target` at its path; returns where it went. */
function swapForLink(target: string): string {
  const moved = path.join(tmp.path, "agent-moved");
  fs.renameSync(agent, moved);
  fs.symlinkSync(target, agent);
  return moved;
}

describe.skipIf(!linux)("SQLite through the held directory (Linux)", () => {
  it("gives SQLite a /proc/self/fd path that it keeps as given", () => {
    HistoryStorage.open(dbPath).close();
    const files = HistoryFiles.prepare(agent, "probe.db", { create: false });
    try {
      sqliteDriver().ensurePinnedVfs();
      expect(files.sqlitePath).toMatch(/^\/proc\/self\/fd\/\d+\/probe\.db$/);
      const probe = rawDb(files.sqlitePath);
      const [main] = probe.prepare("PRAGMA database_list").all<{ file: string }>();
      probe.close();
      expect(main?.file).toBe(files.sqlitePath);
    } finally {
      files.close();
    }
  });

  it("refuses, typed, a connection on which the pinned path was not kept", () => {
    const db = rawDb(":memory:", { create: true });
    try {
      expect(historyError(() => checkPinnedConnection(db, "/proc/self/fd/3/history.db")).code).toBe("history_pin_unavailable");
    } finally {
      db.close();
    }
  });

  it("a swap of the directory's path between the checks and SQLite's open redirects nothing", () => {
    fs.mkdirSync(agent, { mode: 0o700 });
    const files = HistoryFiles.prepare(agent, "history.db", { create: false });
    const moved = swapForLink(outside);
    try {
      sqliteDriver().ensurePinnedVfs();
      const db = rawDb(files.sqlitePath);
      pragmaValue(db, "journal_mode = WAL");
      db.exec("CREATE TABLE t(x); INSERT INTO t VALUES ('kept in the held directory')");
      expect(fs.readdirSync(outside)).toEqual([]);
      files.opened();
      db.close();
    } finally {
      files.close();
    }
    expect(fs.readdirSync(outside)).toEqual([]);
    expect(fs.readdirSync(moved)).toEqual(["history.db"]);
  });

  it("a swap while the store is open redirects no read and no write, and no sidecar", async () => {
    const store = HistoryStorage.open(dbPath);
    await store.add("before the swap");
    const planted = rawDb(path.join(outside, "history.db"), { create: true });
    planted.exec(
      "CREATE TABLE history(id INTEGER PRIMARY KEY, prompt TEXT, created_at INTEGER, cwd TEXT); INSERT INTO history VALUES (99, 'planted', 0, NULL)",
    );
    planted.close();
    fs.chmodSync(path.join(outside, "history.db"), 0o600);
    const outsideBefore = fs.readdirSync(outside).sort();
    const moved = swapForLink(outside);
    await store.add("after the swap");
    expect(store.getRecent(10).map((e) => e.prompt)).toEqual(["after the swap", "before the swap"]);
    expect(store.search("planted", 10)).toEqual([]);
    const [entry] = store.search("before", 10);
    expect(store.delete(entry!.id)).toBe(true);
    expect(store.clear()).toBe(1);
    await store.add("last");
    store.close();
    expect(fs.readdirSync(outside).sort()).toEqual(outsideBefore);
    const db = rawDb(path.join(moved, "history.db"));
    expect(db.prepare("SELECT prompt FROM history").all()).toEqual([{ prompt: "last" }]);
    db.close();
    // Opening by the swapped path now refuses the link.
    expect(historyError(() => HistoryStorage.open(dbPath)).fsCode).toBe("symlink_refused");
  });

  it.skipIf(!hasCommand("strace"))("no system call reaches the database or a sidecar by the directory's path (strace)", async (ctx) => {
    const script = await childProgram();
    fs.mkdirSync(agent, { mode: 0o700 });
    const log = path.join(tmp.path, "strace.log");
    const traced = run("strace", ["-f", "-o", log, "-e", "trace=%file", process.execPath, script, "open", agent]);
    if (traced.status !== 0 && /ptrace|Operation not permitted/.test(traced.stderr)) ctx.skip("strace cannot trace here");
    expect(traced.status, traced.stderr).toBe(0);
    const lines = fs
      .readFileSync(log, "utf8")
      .split("\n")
      .filter((line) => line.includes("history.db"));
    // The database and its sidecars were really used (created, opened, removed at close)...
    expect(lines.some((line) => /\/proc\/self\/fd\/\d+\/history\.db-wal"/.test(line))).toBe(true);
    expect(lines.some((line) => /\/proc\/self\/fd\/\d+\/history\.db-shm"/.test(line))).toBe(true);
    // ...but never by a path that walks the agent directory's name.
    expect(lines.filter((line) => line.includes(`${agent}/history.db`))).toEqual([]);
  });

  it.skipIf(!isRoot())("an agent dir inside a directory another user owns is refused before anything is opened (insecure_ancestor)", () => {
    // uid 65534 owns the parent, so it could swap the agent dir for a link at any moment:
    // the ancestor check refuses the chain instead of racing that user.
    const parent = path.join(tmp.path, "shared");
    fs.mkdirSync(parent, { mode: 0o755 });
    fs.chmodSync(tmp.path, 0o755);
    fs.chownSync(parent, NOBODY, NOBODY);
    const victim = path.join(parent, "agent");
    fs.mkdirSync(victim, { mode: 0o700 });
    expect(historyError(() => HistoryStorage.open(path.join(victim, "history.db")))).toMatchObject({
      code: "history_insecure",
      fsCode: "insecure_ancestor",
    });
    expect(fs.readdirSync(victim)).toEqual([]);
  });
});

describe("planted objects at the database and its sidecars", () => {
  beforeEach(() => {
    HistoryStorage.open(dbPath).close();
  });

  it("refuses a FIFO as history.db or history.db-wal, typed, without blocking", () => {
    fs.renameSync(dbPath, `${dbPath}.real`);
    expect(run("mkfifo", ["-m", "600", dbPath]).status).toBe(0);
    expect(historyError(() => HistoryStorage.open(dbPath))).toMatchObject({ code: "history_insecure", fsCode: "not_regular_file" });
    fs.unlinkSync(dbPath);
    fs.renameSync(`${dbPath}.real`, dbPath);
    expect(run("mkfifo", ["-m", "600", `${dbPath}-wal`]).status).toBe(0);
    expect(historyError(() => HistoryStorage.open(dbPath))).toMatchObject({ code: "history_insecure", fsCode: "not_regular_file" });
  });

  it("refuses a hard-linked or dangling-linked history.db-wal and creates nothing at the link's target", () => {
    const foreign = path.join(outside, "wal");
    fs.writeFileSync(foreign, "", { mode: 0o600 });
    fs.linkSync(foreign, `${dbPath}-wal`);
    expect(historyError(() => HistoryStorage.open(dbPath))).toMatchObject({ code: "history_insecure", fsCode: "hardlink_refused" });
    // Not tightened either (it is 0600 here, but a linked file is never touched).
    fs.unlinkSync(`${dbPath}-wal`);
    fs.unlinkSync(foreign);
    fs.symlinkSync(foreign, `${dbPath}-wal`);
    expect(historyError(() => HistoryStorage.open(dbPath))).toMatchObject({ code: "history_insecure", fsCode: "symlink_refused" });
    expect(fs.existsSync(foreign)).toBe(false);
    fs.unlinkSync(`${dbPath}-wal`);
    fs.symlinkSync(foreign, `${dbPath}-shm`);
    expect(historyError(() => HistoryStorage.open(dbPath))).toMatchObject({ code: "history_insecure", fsCode: "symlink_refused" });
    expect(fs.existsSync(foreign)).toBe(false);
  });

  it.skipIf(!linux || !hasCommand("python3"))("does not strip an ACL grant: a 0644 database granting another user is refused with acl_present", (ctx) => {
    // user::rw- user:65534:r-- group::r-- mask::r-- other::r-- : mode 0644 plus a named grant.
    const acl = aclHex([
      [ACL_TAG.USER_OBJ, 6],
      [ACL_TAG.USER, 4, NOBODY],
      [ACL_TAG.GROUP_OBJ, 4],
      [ACL_TAG.MASK, 4],
      [ACL_TAG.OTHER, 4],
    ]);
    const set = run("python3", ["-c", SET_ACL, dbPath, acl]);
    if (set.status !== 0) ctx.skip(`the filesystem under ${tmp.path} does not store POSIX ACLs`);
    expect(modeOf(dbPath)).toBe(0o644);
    expect(historyError(() => HistoryStorage.open(dbPath))).toMatchObject({ code: "history_insecure", fsCode: "acl_present" });
    // The grant is still stored: nothing was adopted by removing it.
    expect(run("python3", ["-c", GET_ACL, dbPath]).stdout.trim()).not.toBe("");
  });
});

describe.skipIf(!isRoot() || !hasCommand("setpriv"))("a peer-made 0644 database, as uid 65534", () => {
  beforeEach(async () => {
    await childProgram();
    fs.chmodSync(tmp.path, 0o755);
    fs.mkdirSync(agent, { mode: 0o700 });
    // The peer's file: SQLite's default mode under umask 022, WAL sidecars left beside it.
    const db = rawDb(dbPath, { create: true });
    pragmaValue(db, "journal_mode = WAL");
    db.exec(
      "CREATE TABLE history(id INTEGER PRIMARY KEY AUTOINCREMENT, prompt TEXT NOT NULL, created_at INTEGER NOT NULL, cwd TEXT); INSERT INTO history(prompt, created_at) VALUES ('from the peer', 1)",
    );
    db.close();
    fs.chmodSync(dbPath, 0o644);
    for (const name of [agent, dbPath]) fs.chownSync(name, NOBODY, NOBODY);
  });

  it("is tightened to 0600 in place and reported, its rows kept", async () => {
    const result = childJson<{ ok: boolean; tightened: string[]; modes: Record<string, string> }>(await runChild(["open-report", agent], { prefix: asNobody }));
    expect(result.tightened).toEqual(["history.db"]);
    expect(result.modes["history.db"]).toBe("600");
    const db = rawDb(dbPath);
    expect(
      db
        .prepare("SELECT prompt FROM history ORDER BY id")
        .all<{ prompt: string }>()
        .map((r) => r.prompt),
    ).toEqual(["from the peer", "hello"]);
    db.close();
  });

  it("owned by someone else, is refused and left as it was", async () => {
    fs.chownSync(dbPath, 0, 0);
    const result = childJson<{ code: string; fsCode: string }>(await runChild(["open-report", agent], { prefix: asNobody }));
    expect(result).toEqual({ code: "history_insecure", fsCode: "owner_mismatch" });
    expect(modeOf(dbPath)).toBe(0o644);
  });
});
