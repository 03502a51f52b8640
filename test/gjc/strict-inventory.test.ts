/**
 * GJC's strict session inventory on the `/gjc` face, over real session directories: every
 * transcript read once through one descriptor and checked, a complete list or failures only
 * (never a partial list), a missing directory an empty inventory, messages free of paths.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { FileSessionStorage, MemorySessionStorage, SessionManager } from "../../src/gjc/index.js";
import { SessionManager as Engine } from "../../src/index.js";
import { assistant, user } from "../manager/helpers.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: { path: string; remove(): void };
let dir: string;
let workspace: string;

beforeEach(() => {
  tmp = makeTempDir("gjc-inventory-");
  dir = path.join(tmp.path, "sessions");
  workspace = path.join(tmp.path, "work");
  fs.mkdirSync(dir, { mode: 0o700 });
  fs.mkdirSync(workspace, { mode: 0o700 });
});
afterEach(() => tmp.remove());

async function written(cwd: string, turns: number): Promise<{ file: string; id: string }> {
  const session = Engine.create(cwd, dir);
  for (let i = 0; i < turns; i++) {
    session.appendMessage(user(`step ${i}: ${"rebuild the index and report the failures ".repeat(40)}`));
    session.appendMessage(assistant(`done ${i}`));
  }
  await session.flush();
  const result = { file: session.getSessionFile()!, id: session.getSessionId() };
  await session.close();
  return result;
}

describe("inventorySessionsStrict", () => {
  it("lists every session of the workspace with the identity of the object read", async () => {
    const sessions = [await written(workspace, 30), await written(workspace, 3)];
    const result = SessionManager.inventorySessionsStrict(workspace, { sessionDir: dir });
    if (result.kind !== "complete") throw new Error(`expected a complete inventory, got ${JSON.stringify(result)}`);
    expect(result.candidates.map((c) => [c.path, c.id]).sort()).toEqual(sessions.map((s) => [s.file, s.id]).sort());
    for (const candidate of result.candidates) {
      const stat = fs.statSync(candidate.path, { bigint: true });
      expect(candidate.identity).toMatchObject({ dev: stat.dev, ino: stat.ino, size: Number(stat.size), mtimeNs: stat.mtimeNs, isFile: true });
      expect(candidate.cwd).toBe(workspace);
    }
  });

  it("fails closed, without candidates, on any transcript it cannot vouch for", async () => {
    await written(workspace, 2);
    const other = path.join(tmp.path, "other");
    fs.mkdirSync(other);
    const foreign = await written(other, 2);
    const garbage = path.join(dir, "garbage.jsonl");
    fs.writeFileSync(garbage, "{not json\n", { mode: 0o600 });
    const notSession = path.join(dir, "not-session.jsonl");
    fs.writeFileSync(notSession, `${JSON.stringify({ type: "artifact", id: "x", cwd: workspace })}\n`, { mode: 0o600 });
    // A link is no session file of this directory: the scan never lists it, so it can never be authorised.
    fs.symlinkSync(foreign.file, path.join(dir, "link.jsonl"));
    const result = SessionManager.inventorySessionsStrict(workspace, { sessionDir: dir });
    expect(result).not.toHaveProperty("candidates");
    if (result.kind !== "failure") throw new Error("expected a failure");
    expect(result.failures.map((f) => [path.basename(f.path!), f.kind]).sort()).toEqual(
      [
        [path.basename(foreign.file), "cwd"],
        ["garbage.jsonl", "parse"],
        ["not-session.jsonl", "header"],
      ].sort(),
    );
    for (const failure of result.failures) expect(failure.message).not.toContain(tmp.path);
  });

  it("a missing directory is an empty inventory; a file where the directory goes, or a link to one, is a root failure", () => {
    expect(SessionManager.inventorySessionsStrict(workspace, { sessionDir: path.join(dir, "missing") })).toEqual({ kind: "complete", candidates: [] });
    const file = path.join(tmp.path, "a-file");
    fs.writeFileSync(file, "x");
    const notDir = SessionManager.inventorySessionsStrict(workspace, { sessionDir: file });
    expect(notDir).toMatchObject({ kind: "failure", failures: [{ kind: "root", message: "Scoped session root could not be inspected" }] });
    const linked = path.join(tmp.path, "linked");
    fs.symlinkSync(dir, linked);
    expect(SessionManager.inventorySessionsStrict(workspace, { sessionDir: linked })).toMatchObject({ kind: "failure", failures: [{ kind: "root" }] });
  });

  it("needs a strict scan from the storage, and runs over a memory storage too", () => {
    const bare = { readSnapshotSync: new FileSessionStorage().readSnapshotSync };
    expect(SessionManager.inventorySessionsStrict(workspace, { sessionDir: dir, storage: bare })).toMatchObject({
      kind: "failure",
      failures: [{ kind: "scan", message: "Strict scoped session scan is unavailable" }],
    });
    const memory = new MemorySessionStorage();
    memory.writeTextSync("/s/a.jsonl", `${JSON.stringify({ type: "session", version: 3, id: "m1", timestamp: "2026-12-07T10:00:00.000Z", cwd: "/mem" })}\n`);
    memory.writeTextSync("/s/notes.txt", "not a transcript");
    memory.writeTextSync("/s/.hidden.jsonl", "not listed");
    expect(memory.listFilesStrictSync("/s", "*.jsonl")).toEqual(["/s/a.jsonl"]);
    expect(() => memory.listFilesStrictSync("/nowhere", "*")).toThrow(expect.objectContaining({ code: "not_found" }));
    const result = SessionManager.inventorySessionsStrict("/mem", { sessionDir: "/s", storage: memory });
    expect(result).toMatchObject({ kind: "complete", candidates: [{ path: "/s/a.jsonl", id: "m1", cwd: "/mem" }] });
  });

  it("listFilesSync with GJC's glob pattern gives matching paths, nothing for a missing directory, and still refuses a file as a directory", async () => {
    const { file } = await written(workspace, 2);
    fs.writeFileSync(`${file}.1.bak`, "backup", { mode: 0o600 });
    fs.writeFileSync(path.join(dir, ".hidden.bak"), "x", { mode: 0o600 });
    const storage = new FileSessionStorage();
    expect(storage.listFilesSync(dir, "*.bak")).toEqual([`${file}.1.bak`]);
    expect(storage.listFilesSync(dir, "*")).toEqual([file, `${file}.1.bak`]);
    expect(storage.listFilesSync(dir)).toEqual([path.basename(file), `${path.basename(file)}.1.bak`]);
    expect(storage.listFilesSync(path.join(dir, "missing"), "*.jsonl")).toEqual([]);
    expect(() => storage.listFilesSync(file, "*")).toThrow(expect.objectContaining({ code: "not_directory" }));
  });
});
