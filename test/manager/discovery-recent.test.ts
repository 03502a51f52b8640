/**
 * The listing cache (reuse only while dev, ino, size, mtime and ctime all match, and only of
 * files that had settled when they were read) and the most-recent queries that read only as
 * many files as they return.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { FileSessionStorage, SessionInfoCache, findMostRecentSession, getRecentSessions, listRecentSessions, listSessions } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { countingStorage, filler, header, headerPatch, message, writeAt } from "./discovery-fixtures.js";

const BASE = 1_700_000_000;

let temp: ReturnType<typeof makeTempDir>;
beforeEach(() => {
  temp = makeTempDir("gjc-discovery-");
});
afterEach(() => temp.remove());

/**
 * Waits until files written so far count as settled: a listing remembers nothing about a file
 * changed in the last few clock ticks before it began (see `changedTooRecently`).
 */
async function settle(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 80));
}

function session(id: string, title: string): string {
  return header({ id, version: 5, cwd: "/w" }) + message("user", "hello") + headerPatch({ title });
}

describe("listing cache", () => {
  it("skips re-reads of unchanged files and re-reads a file whose size, mtime or inode changed", async () => {
    const file = path.join(temp.path, "a.jsonl");
    const other = path.join(temp.path, "b.jsonl");
    writeAt(file, session("a", "one"), BASE);
    writeAt(other, session("b", "bee"), BASE + 1);
    const { storage, log } = countingStorage(new FileSessionStorage(temp.path));
    const cache = new SessionInfoCache();
    const list = async () => {
      await settle();
      return (await listSessions(temp.path, { storage, cache })).sessions.find((s) => s.id === "a");
    };

    expect((await list())?.title).toBe("one");
    expect(log.prefixes).toHaveLength(2);
    expect((await list())?.title).toBe("one");
    expect(log.prefixes).toHaveLength(2);
    expect(cache.stats).toEqual({ hits: 2, misses: 2 });

    // An append: size and mtime change.
    fs.appendFileSync(file, message("assistant", "more"));
    expect((await list())?.messageCount).toBe(2);
    expect(log.prefixes.map((read) => read.path).slice(2)).toEqual([file]);

    // Same size, new mtime: the title changes by one character in place.
    const sameSize = fs.readFileSync(file, "utf8").replace('"title":"one"', '"title":"two"');
    writeAt(file, sameSize, BASE + 10);
    expect((await list())?.title).toBe("two");

    // Same size and mtime, new inode: an atomic replace.
    const replacement = path.join(temp.path, ".replacement");
    writeAt(replacement, sameSize.replace('"title":"two"', '"title":"six"'), BASE + 10);
    const before = fs.statSync(file);
    fs.renameSync(replacement, file);
    const after = fs.statSync(file);
    expect([after.size, after.mtimeMs]).toEqual([before.size, before.mtimeMs]);
    expect(after.ino).not.toBe(before.ino);
    expect((await list())?.title).toBe("six");
    expect(log.prefixes.filter((read) => read.path === other)).toHaveLength(1);
  });

  it("scans a grown v5 file only from where the last listing stopped, unless its old bytes changed", async () => {
    const file = path.join(temp.path, "live.jsonl");
    const start = header({ id: "live", version: 5, cwd: "/w" }) + headerPatch({ title: "auto" }) + filler(300_000);
    fs.writeFileSync(file, start);
    const { storage, log } = countingStorage(new FileSessionStorage(temp.path));
    const cache = new SessionInfoCache();
    const list = async () => {
      await settle();
      log.tails.length = 0;
      return (await listSessions(temp.path, { storage, cache })).sessions[0]!;
    };
    const tailBytes = () => log.tails.reduce((sum, read) => sum + read.got, 0);

    expect((await list()).title).toBe("auto");
    expect(tailBytes()).toBeGreaterThan(290_000);

    fs.appendFileSync(file, headerPatch({ title: "renamed" }) + message("user", "more"));
    expect(await list()).toMatchObject({ title: "renamed", cwd: "/w" });
    expect(tailBytes()).toBeLessThan(1_000);

    fs.appendFileSync(file, message("assistant", "still going"));
    expect(await list()).toMatchObject({ title: "renamed", messageCountIsEstimate: false });
    expect(tailBytes()).toBeLessThan(1_000);

    // Same inode, grown, but the bytes before the old end were rewritten in place.
    const changedTail = fs.readFileSync(file, "utf8").replace('"title":"renamed"', '"title":"rewritten"') + message("user", "x");
    fs.writeFileSync(file, changedTail);
    expect((await list()).title).toBe("rewritten");
    expect(tailBytes()).toBeGreaterThan(290_000);

    // Same inode, grown, with a different prefix (the header's cwd changed).
    fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace('"cwd":"/w"', '"cwd":"/v"') + message("user", "y"));
    expect(await list()).toMatchObject({ title: "rewritten", cwd: "/v" });
    expect(tailBytes()).toBeGreaterThan(290_000);
  });

  it("caches what a file's content says (an invalid header too) but never a failed read", async () => {
    const bad = path.join(temp.path, "bad.jsonl");
    fs.writeFileSync(bad, "not a session\n");
    const { storage, log } = countingStorage(new FileSessionStorage(temp.path));
    const cache = new SessionInfoCache();
    await settle();
    for (let i = 0; i < 2; i++) {
      expect((await listSessions(temp.path, { storage, cache })).skipped).toEqual([{ path: bad, code: "invalid_header" }]);
    }
    expect(log.prefixes).toHaveLength(1);
    expect(cache.size).toBe(1);
  });

  it("stays within its bound, dropping the least recently used entry", async () => {
    for (const id of ["a", "b", "c"]) writeAt(path.join(temp.path, `${id}.jsonl`), session(id, id), BASE);
    const cache = new SessionInfoCache(2);
    await settle();
    await listSessions(temp.path, { cache });
    expect(cache.size).toBe(2);
    expect(() => new SessionInfoCache(0)).toThrow(expect.objectContaining({ name: "SessionManagerError", code: "invalid_options" }));
  });

  it("reads every file again with cache: false and persistentIndex: false", async () => {
    writeAt(path.join(temp.path, "a.jsonl"), session("a", "a"), BASE);
    const { storage, log } = countingStorage(new FileSessionStorage(temp.path));
    await settle();
    await listSessions(temp.path, { storage, cache: false, persistentIndex: false });
    await listSessions(temp.path, { storage, cache: false, persistentIndex: false });
    expect(log.prefixes).toHaveLength(2);
    // The in-process cache off alone still leaves the directory's index, which the first
    // listing did not write.
    await listSessions(temp.path, { storage, cache: false });
    await listSessions(temp.path, { storage, cache: false });
    expect(log.prefixes).toHaveLength(3);
  });
});

describe("getRecentSessions and findMostRecentSession", () => {
  beforeEach(() => {
    for (let i = 0; i < 10; i++) writeAt(path.join(temp.path, `s${i}.jsonl`), session(`s${i}`, `t${i}`), BASE + i);
    // A tie with s9, ordered by path; and the newest file of all is corrupt.
    writeAt(path.join(temp.path, "s9b.jsonl"), session("s9b", "tie"), BASE + 9);
    writeAt(path.join(temp.path, "zz-newest.jsonl"), "garbage\n", BASE + 100);
  });

  it("returns the newest `limit` sessions, ties by path, reading only what it returns", async () => {
    const { storage, log } = countingStorage(new FileSessionStorage(temp.path));
    const recent = await listRecentSessions(temp.path, 3, { storage, cache: false });
    expect(recent.sessions.map((s) => s.id)).toEqual(["s9", "s9b", "s8"]);
    expect(recent.skipped).toEqual([{ path: path.join(temp.path, "zz-newest.jsonl"), code: "invalid_header" }]);
    expect(log.prefixes).toHaveLength(4);
  });

  it("defaults to 20, accepts 0, and refuses a negative or fractional limit", async () => {
    expect(await getRecentSessions(temp.path)).toHaveLength(11);
    expect(await getRecentSessions(temp.path, 0)).toEqual([]);
    expect((await getRecentSessions(temp.path, 2, new FileSessionStorage(temp.path), { cache: false })).map((s) => s.id)).toEqual(["s9", "s9b"]);
    await expect(getRecentSessions(temp.path, -1)).rejects.toMatchObject({ name: "SessionManagerError", code: "invalid_options" });
    await expect(getRecentSessions(temp.path, 1.5)).rejects.toMatchObject({ name: "SessionManagerError", code: "invalid_options" });
  });

  it("finds the newest valid session, or nothing in an empty or missing directory", async () => {
    expect(await findMostRecentSession(temp.path, undefined, { cache: false })).toBe(path.join(temp.path, "s9.jsonl"));
    const empty = path.join(temp.path, "empty");
    fs.mkdirSync(empty);
    expect(await findMostRecentSession(empty)).toBeNull();
    expect(await findMostRecentSession(path.join(temp.path, "missing"))).toBeNull();
  });
});
