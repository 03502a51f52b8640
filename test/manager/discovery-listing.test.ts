/**
 * Listing many real session files with corrupt ones among them: order, skip codes, and that
 * nothing (a link, a FIFO, garbage) stops or hangs the listing.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import {
  FileSessionStorage,
  ManagedSessionStorage,
  MemorySessionStorage,
  listAll,
  listSessions,
  type SessionInfo,
  type SessionStorage,
} from "../../src/index.js";
import { hasCommand, isRoot, skipBecause } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { runProcess, type BundledChild } from "../storage/child-bundle.js";
import { bundleManagerChild } from "./child.js";
import { filler, header, headerPatch, line, message, writeAt } from "./discovery-fixtures.js";

/** The uid and gid of `nobody`, which owns nothing this test does not give it. */
const UNPRIVILEGED = 65534;

const BASE = 1_700_000_000;

function expectNewestFirst(sessions: readonly SessionInfo[]): void {
  for (let i = 1; i < sessions.length; i++) {
    const a = sessions[i - 1]!;
    const b = sessions[i]!;
    const ordered = a.modified.getTime() > b.modified.getTime() || (a.modified.getTime() === b.modified.getTime() && a.path < b.path);
    expect(ordered, `${a.path} before ${b.path}`).toBe(true);
  }
}

describe("listing 1,000 generated sessions with corrupt ones", () => {
  const temp = makeTempDir("gjc-discovery-");
  const dir = path.join(temp.path, "sessions");
  const corrupt: Record<string, string> = {};

  beforeAll(() => {
    fs.mkdirSync(dir);
    for (let i = 0; i < 1000; i++) {
      const name = `2026-01-01T00-00-00-000Z_${String(i).padStart(4, "0")}.jsonl`;
      const version = i % 3 === 0 ? undefined : i % 3 === 1 ? 3 : 5;
      const body =
        header({ id: `s${i}`, ...(version === undefined ? {} : { version }), cwd: `/work/p${i % 7}`, timestamp: "2026-01-01T00:00:00.000Z" }) +
        message("user", `question ${i}`) +
        (version === 5 ? headerPatch({ title: `title ${i}` }) : "") +
        (i % 10 === 0 ? filler(6000) : message("assistant", `answer ${i}`));
      // Every 50th pair shares an mtime, so ties are ordered by path.
      writeAt(path.join(dir, name), body, BASE + i - (i % 50 === 1 ? 1 : 0));
    }
    const put = (name: string, content: string | Buffer): void => {
      writeAt(path.join(dir, name), content, BASE + 5000);
      corrupt[name] = path.join(dir, name);
    };
    put("bad-first-record.jsonl", message("user", "no header") + header({ id: "late" }));
    put("version-6.jsonl", header({ id: "v6", version: 6 }) + message("user", "from the future"));
    put("version-string.jsonl", header({ id: "vs", version: "5" }));
    put("malformed-cwd.jsonl", line({ type: "session", id: "m", cwd: 5 }));
    put("garbage.jsonl", randomBytes(3000));
    put("empty.jsonl", "");
    put("blank.jsonl", "\n\n  \n");
    fs.symlinkSync(path.join(dir, "2026-01-01T00-00-00-000Z_0005.jsonl"), path.join(dir, "link.jsonl"));
    execFileSync("mkfifo", [path.join(dir, "fifo.jsonl")]);
    fs.mkdirSync(path.join(dir, "directory.jsonl"));
    // Not session files at all: not listed, not counted.
    fs.writeFileSync(path.join(dir, "notes.txt"), "hello");
    fs.writeFileSync(path.join(dir, ".hidden.jsonl"), header({ id: "hidden" }));
    fs.writeFileSync(path.join(dir, "x.jsonl.invalid-2026"), header({ id: "aside" }));
  });
  afterAll(() => temp.remove());

  it("lists every valid session newest first, ties by path, and counts each corrupt file with its code", async () => {
    const { sessions, skipped } = await listSessions(dir, { cache: false });
    expect(sessions).toHaveLength(1000);
    expectNewestFirst(sessions);
    expect(new Set(sessions.map((s) => s.id)).size).toBe(1000);
    const tie = sessions.findIndex((s) => s.id === "s50");
    expect(sessions[tie + 1]?.id).toBe("s51");
    expect(Object.fromEntries(skipped.map((s) => [path.basename(s.path), s.code]))).toEqual({
      "bad-first-record.jsonl": "invalid_header",
      "version-6.jsonl": "version_too_new",
      "version-string.jsonl": "invalid_version",
      "malformed-cwd.jsonl": "invalid_header",
      "garbage.jsonl": "invalid_header",
      "empty.jsonl": "empty",
      "blank.jsonl": "empty",
      "link.jsonl": "symlink_refused",
      "fifo.jsonl": "not_regular_file",
      "directory.jsonl": "not_regular_file",
    });
    expect(skipped.map((s) => s.path)).toEqual([...skipped.map((s) => s.path)].sort());
  });

  it("reads each version's fields: v5 patch titles apply, v1 and v3 have no patches", async () => {
    const { sessions } = await listSessions(dir, { cache: false });
    const byId = new Map(sessions.map((s) => [s.id, s]));
    const v1 = byId.get("s3")!;
    expect(v1).toMatchObject({ version: 1, cwd: "/work/p3", firstMessage: "question 3", messageCount: 2 });
    expect(v1.title).toBeUndefined();
    expect(byId.get("s4")).toMatchObject({ version: 3, displayName: "question 4" });
    expect(byId.get("s5")).toMatchObject({ version: 5, title: "title 5", displayName: "title 5" });
    expect(byId.get("s5")!.created.toISOString()).toBe("2026-01-01T00:00:00.000Z");
    expect(byId.get("s5")!.modified.getTime()).toBe((BASE + 5) * 1000);
  });
});

describe("listing edge cases", () => {
  it("lists a missing directory as empty and reports a session dir that is not a directory", async () => {
    const temp = makeTempDir("gjc-discovery-");
    try {
      expect(await listSessions(path.join(temp.path, "none"))).toEqual({ sessions: [], skipped: [] });
      const file = path.join(temp.path, "file");
      fs.writeFileSync(file, "x");
      const listing = await listSessions(file, { storage: new FileSessionStorage(temp.path) });
      expect(listing).toEqual({ sessions: [], skipped: [{ path: file, code: "not_regular_file" }] });
    } finally {
      temp.remove();
    }
  });

  it("throws for a directory the storage cannot address, and for bad options", async () => {
    const storage = new MemorySessionStorage({ root: "/agent" });
    await expect(listSessions("relative/dir")).rejects.toMatchObject({ code: "invalid_path" });
    await expect(listSessions("/elsewhere", { storage })).rejects.toMatchObject({ code: "outside_root" });
    await expect(listAll("/elsewhere", { storage })).rejects.toMatchObject({ code: "outside_root" });
    await expect(listSessions("/agent", { storage, concurrency: 0 })).rejects.toMatchObject({ name: "SessionManagerError", code: "invalid_options" });
  });

  it("reports a file swapped for a link between the directory read and the file read", async () => {
    const temp = makeTempDir("gjc-discovery-");
    try {
      const victim = path.join(temp.path, "victim.jsonl");
      const other = path.join(temp.path, "other.jsonl");
      fs.writeFileSync(victim, header({ id: "victim", version: 5 }));
      fs.writeFileSync(other, header({ id: "other", version: 5 }));
      const real = new FileSessionStorage(temp.path);
      // The race, made deterministic: the swap happens right after the storage listed names.
      const racing = new Proxy(real, {
        get(target, key) {
          const value = Reflect.get(target, key, target) as unknown;
          if (key !== "listFilesSync") return typeof value === "function" ? (value as () => unknown).bind(target) : value;
          return (dir: string) => {
            const names = target.listFilesSync(dir);
            fs.unlinkSync(victim);
            fs.symlinkSync(other, victim);
            return names;
          };
        },
      }) as SessionStorage;
      const listing = await listSessions(temp.path, { storage: racing, cache: false });
      expect(listing.sessions.map((s) => s.id)).toEqual(["other"]);
      expect(listing.skipped).toContainEqual({ path: victim, code: "symlink_refused" });
    } finally {
      temp.remove();
    }
  });

  it("lists through managed storage, reporting a file that fails the owner-only checks", async () => {
    const temp = makeTempDir("gjc-discovery-");
    try {
      const dir = path.join(temp.path, "scope");
      fs.mkdirSync(dir, { mode: 0o700 });
      fs.chmodSync(dir, 0o700);
      for (const [name, mode] of [
        ["good.jsonl", 0o600],
        ["loose.jsonl", 0o644],
      ] as const) {
        fs.writeFileSync(path.join(dir, name), header({ id: name, version: 5 }));
        fs.chmodSync(path.join(dir, name), mode);
      }
      fs.symlinkSync(path.join(dir, "good.jsonl"), path.join(dir, "link.jsonl"));
      const storage = ManagedSessionStorage.open(temp.path);
      const listing = await listSessions(dir, { storage, cache: false });
      expect(listing.sessions.map((s) => s.id)).toEqual(["good.jsonl"]);
      expect(listing.skipped).toEqual([
        { path: path.join(dir, "link.jsonl"), code: "symlink_refused" },
        { path: path.join(dir, "loose.jsonl"), code: "unsafe_entry", detail: "mode_mismatch" },
      ]);
    } finally {
      temp.remove();
    }
  });

  it("keeps the same contract on memory storage", async () => {
    const storage = new MemorySessionStorage({ root: "/agent" });
    storage.ensureDirSync("/agent/sessions/a");
    await storage.writeText("/agent/sessions/a/one.jsonl", header({ id: "one", version: 5, cwd: "/w" }) + message("user", "hi"));
    await storage.writeText("/agent/sessions/a/bad.jsonl", header({ id: "bad", version: 9 }));
    const listing = await listSessions("/agent/sessions/a", { storage });
    expect(listing.sessions.map((s) => [s.id, s.firstMessage])).toEqual([["one", "hi"]]);
    expect(listing.skipped).toEqual([{ path: "/agent/sessions/a/bad.jsonl", code: "version_too_new" }]);
  });

  it("lists every scope under a sessions root in one order and reports linked scopes", async () => {
    const temp = makeTempDir("gjc-discovery-");
    try {
      const root = path.join(temp.path, "sessions");
      for (const [scope, id, mtime] of [
        ["v2-a", "a1", 3],
        ["v2-a", "a2", 1],
        ["v2-b", "b1", 2],
      ] as const) {
        fs.mkdirSync(path.join(root, scope), { recursive: true });
        writeAt(path.join(root, scope, `${id}.jsonl`), header({ id, version: 5, cwd: `/${scope}` }), BASE + mtime);
      }
      fs.writeFileSync(path.join(root, "v2-b", "broken.jsonl"), "{");
      fs.symlinkSync(path.join(root, "v2-a"), path.join(root, "v2-link"));
      fs.writeFileSync(path.join(root, "stray.jsonl"), header({ id: "stray" }));
      const listing = await listAll(root, { cache: false });
      expect(listing.sessions.map((s) => s.id)).toEqual(["a1", "b1", "a2"]);
      expect(listing.skipped).toEqual([
        { path: path.join(root, "v2-b", "broken.jsonl"), code: "invalid_header" },
        { path: path.join(root, "v2-link"), code: "symlink_refused" },
      ]);
      expect(await listAll(path.join(temp.path, "missing"))).toEqual({ sessions: [], skipped: [] });
    } finally {
      temp.remove();
    }
  });

  it("reports an unreadable file as permission_denied", async (ctx) => {
    const temp = makeTempDir("gjc-discovery-");
    let child: BundledChild | undefined;
    try {
      const locked = path.join(temp.path, "locked.jsonl");
      const open = path.join(temp.path, "open.jsonl");
      fs.writeFileSync(locked, header({ id: "locked" }));
      fs.writeFileSync(open, header({ id: "open" }));
      fs.chmodSync(locked, 0);
      const expected = { ids: ["open"], skipped: [{ path: locked, code: "permission_denied" }] };
      if (!isRoot()) {
        const listing = await listSessions(temp.path, { cache: false });
        expect({ ids: listing.sessions.map((s) => s.id), skipped: listing.skipped }).toEqual(expected);
        return;
      }
      // Root reads files whatever their mode: list as an unprivileged uid that owns them.
      if (!hasCommand("setpriv")) skipBecause(ctx, "root, and setpriv (util-linux) is not installed");
      for (const target of [temp.path, locked, open]) fs.chownSync(target, UNPRIVILEGED, UNPRIVILEGED);
      child = await bundleManagerChild("list-sessions");
      const ids = [`--reuid=${UNPRIVILEGED}`, `--regid=${UNPRIVILEGED}`, "--clear-groups"];
      const result = await runProcess("setpriv", [...ids, process.execPath, child.file, temp.path]);
      expect(result.status, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual(expected);
    } finally {
      child?.remove();
      temp.remove();
    }
  });
});
