/**
 * GJC's session-storage calls on the `/gjc` entry, on real session files the engine wrote:
 * descriptor snapshots, deleting a session with its artifacts, the two-phase verified delete and
 * its refusals (which change nothing), and the disk GC's dry run and retirement.
 */
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager as Engine, StorageError, isStorageError } from "../../src/index.js";
import {
  FileSessionStorage,
  SessionManager as FaceManager,
  probeSessionRetirement,
  retireSessionTranscript,
  type VerifiedSessionDeleteTarget,
} from "../../src/gjc/index.js";
import { assistant, codeOfAsync, user } from "../manager/helpers.js";
import { deleteRefusalOf } from "../helpers/errors.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: { path: string; remove(): void };
let root: string;
const storage = new FileSessionStorage();

beforeEach(() => {
  tmp = makeTempDir("gjc-storage-");
  root = path.join(tmp.path, "sessions");
  fs.mkdirSync(root, { mode: 0o700 });
});
afterEach(() => tmp.remove());

/** A written session of `turns` turns in `root`, with an artifacts directory holding tool output and a nested folder. */
async function writtenSession(turns = 20): Promise<{ file: string; id: string; cwd: string; artifacts: string }> {
  const cwd = path.join(tmp.path, "workspace");
  fs.mkdirSync(cwd, { recursive: true });
  const session = Engine.create(cwd, root);
  for (let i = 0; i < turns; i++) {
    session.appendMessage(user(`question ${i} ${"about the build ".repeat(50)}`));
    session.appendMessage(assistant(`answer ${i}`));
  }
  await session.flush();
  const file = session.getSessionFile()!;
  const id = session.getSessionId();
  await session.close();
  const artifacts = file.slice(0, -".jsonl".length);
  fs.mkdirSync(path.join(artifacts, "local", "deep"), { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(artifacts, "1.bash.log"), "y".repeat(100_000), { mode: 0o600 });
  fs.writeFileSync(path.join(artifacts, "local", "deep", "notes.md"), "notes", { mode: 0o600 });
  return { file, id, cwd, artifacts };
}

function targetOf(file: string, id: string, cwd: string, attempt = crypto.randomUUID()): VerifiedSessionDeleteTarget {
  const { stat, bytes } = storage.readSnapshotSync(file);
  const dir = path.dirname(file);
  return {
    sessionsRoot: root,
    transcriptPath: file,
    sessionId: id,
    cwd,
    transcriptIdentity: {
      dev: stat.dev,
      ino: stat.ino,
      nlink: stat.nlink,
      size: stat.size,
      mtimeNs: stat.mtimeNs,
      sha256: crypto.createHash("sha256").update(bytes).digest("hex"),
    },
    plannedArtifactsPath: path.join(dir, `.gjc-delete-${attempt}-artifacts`),
    plannedTranscriptPath: path.join(dir, `.gjc-delete-${attempt}-transcript`),
  };
}

/** The storage error code `fn` throws, if any. */
function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return isStorageError(error) ? error.code : String(error);
  }
  return undefined;
}

/** What is left in the sessions directory besides the writer locks' directory. */
function sessionDirEntries(): string[] {
  return fs.readdirSync(root).filter((name) => name !== ".gjc-locks");
}

describe("readSnapshotSync", () => {
  it("returns the bytes and the bigint identity of one descriptor", async () => {
    const { file } = await writtenSession();
    const snapshot = storage.readSnapshotSync(file);
    const st = fs.lstatSync(file, { bigint: true });
    expect(Buffer.from(snapshot.bytes)).toEqual(fs.readFileSync(file));
    expect(snapshot.stat).toMatchObject({ dev: st.dev, ino: st.ino, nlink: 1n, size: Number(st.size), mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs, isFile: true });
  });

  it("refuses a link and anything but a regular file", async () => {
    const { file } = await writtenSession(1);
    fs.symlinkSync(file, path.join(root, "link.jsonl"));
    expect(() => storage.readSnapshotSync(path.join(root, "link.jsonl"))).toThrow(StorageError);
    const fifo = path.join(root, "fifo.jsonl");
    spawnMkfifo(fifo);
    let code = "";
    try {
      storage.readSnapshotSync(fifo);
    } catch (error) {
      code = (error as StorageError).code;
    }
    expect(code).toBe("not_regular_file");
  });
});

function spawnMkfifo(at: string): void {
  expect(spawnSync("mkfifo", ["-m", "600", at]).status).toBe(0);
}

describe("statSync in GJC's shape", () => {
  it("reports the file's own bigint identity, link count and nanosecond times, and refuses a link at the name", async () => {
    const { file, artifacts } = await writtenSession(2);
    const st = fs.lstatSync(file, { bigint: true });
    expect(storage.statSync(file)).toEqual({
      dev: st.dev,
      ino: st.ino,
      nlink: st.nlink,
      size: Number(st.size),
      mtimeMs: Number(st.mtimeMs),
      mtimeNs: st.mtimeNs,
      ctimeNs: st.ctimeNs,
      mtime: st.mtime,
      isFile: true,
    });
    expect(storage.statSync(artifacts).isFile).toBe(false);
    fs.linkSync(file, path.join(root, "second-name.jsonl"));
    expect(storage.statSync(file).nlink).toBe(2n);
    fs.symlinkSync(file, path.join(root, "link.jsonl"));
    expect(codeOf(() => storage.statSync(path.join(root, "link.jsonl")))).toBe("symlink_refused");
    expect(codeOf(() => storage.statSync(path.join(root, "none.jsonl")))).toBe("not_found");
  });

  it("is what a strict inspection through the storage names, and the engine still opens, appends to and lists through it", async () => {
    const { file, id } = await writtenSession(3);
    const inspection = await FaceManager.inspectSessionTailReadOnly(file, storage);
    if (inspection.kind === "error") throw new Error(`expected an identity, got ${inspection.reason}`);
    const stat = storage.statSync(file);
    expect(inspection.identity).toMatchObject({ dev: stat.dev, ino: stat.ino, size: stat.size, mtimeNs: stat.mtimeNs });
    const opened = await FaceManager.open(file, root, storage);
    opened.appendMessage(user("one more question"));
    await opened.close();
    expect((await FaceManager.list("/unused", root, storage)).map((info) => info.id)).toEqual([id]);
    expect(storage.statSync(file).size).toBeGreaterThan(stat.size);
  });
});

describe("deleteSessionWithArtifacts", () => {
  it("removes the transcript, GJC's spill sidecars and the whole artifacts tree, and nothing else", async () => {
    const { file, artifacts } = await writtenSession();
    const other = await writtenSession(2);
    fs.writeFileSync(`${file}.spill.0`, "derived", { mode: 0o600 });
    await storage.deleteSessionWithArtifacts(file);
    expect(fs.existsSync(file)).toBe(false);
    expect(fs.existsSync(`${file}.spill.0`)).toBe(false);
    expect(fs.existsSync(artifacts)).toBe(false);
    expect(fs.existsSync(other.file)).toBe(true);
    expect(fs.existsSync(path.join(other.artifacts, "1.bash.log"))).toBe(true);
    expect(sessionDirEntries().filter((n) => n.includes(path.basename(file)))).toEqual([]);
    // Again: nothing left is no error.
    await storage.deleteSessionWithArtifacts(file);
  });

  it("refuses a session another writer holds (session_busy), leaving it whole", async () => {
    const cwd = path.join(tmp.path, "w");
    fs.mkdirSync(cwd);
    const live = Engine.create(cwd, root);
    live.appendMessage(user("still working"));
    live.appendMessage(assistant("yes"));
    await live.flush();
    const file = live.getSessionFile()!;
    expect(await codeOfAsync(() => storage.deleteSessionWithArtifacts(file))).toBe("session_busy");
    expect(fs.existsSync(file)).toBe(true);
    await live.close();
  });
});

describe("deleteSessionVerified", () => {
  it("deletes in two calls: the artifacts first (transcript untouched), then the transcript, leaving no quarantine name", async () => {
    const { file, id, cwd, artifacts } = await writtenSession();
    const target = targetOf(file, id, cwd);
    const first = await storage.deleteSessionVerified(target);
    expect(first).toEqual({ kind: "artifacts_removed", phase: "artifacts", transcriptIdentity: target.transcriptIdentity });
    expect(fs.existsSync(artifacts)).toBe(false);
    expect(fs.existsSync(file)).toBe(true);
    expect(await storage.deleteSessionVerified({ ...target, artifactsRemoved: true })).toEqual({ kind: "deleted" });
    expect(sessionDirEntries()).toEqual([]);
  });

  it("refuses, changing nothing: outside the root, no quarantine name, another session id or cwd, a transcript changed since", async () => {
    const { file, id, cwd, artifacts } = await writtenSession();
    const target = targetOf(file, id, cwd);
    const before = fs.readFileSync(file);
    expect(await deleteRefusalOf(() => storage.deleteSessionVerified({ ...target, sessionsRoot: path.join(tmp.path, "elsewhere") }))).toBe("containment");
    expect(await deleteRefusalOf(() => storage.deleteSessionVerified({ ...target, plannedArtifactsPath: undefined }))).toBe("containment");
    expect(await deleteRefusalOf(() => storage.deleteSessionVerified({ ...target, plannedArtifactsPath: path.join(root, "not-quarantine") }))).toBe(
      "containment",
    );
    expect(await deleteRefusalOf(() => storage.deleteSessionVerified({ ...target, sessionId: "another-session" }))).toBe("identity");
    expect(await deleteRefusalOf(() => storage.deleteSessionVerified({ ...target, cwd: "/somewhere/else" }))).toBe("cwd");
    fs.appendFileSync(file, `${JSON.stringify({ type: "custom", customType: "late", id: "zz000001", parentId: null, timestamp: new Date().toISOString() })}\n`);
    expect(await deleteRefusalOf(() => storage.deleteSessionVerified(target))).toBe("identity");
    expect(fs.readFileSync(file).subarray(0, before.length)).toEqual(before);
    expect(fs.existsSync(path.join(artifacts, "local", "deep", "notes.md"))).toBe(true);
    expect(fs.readdirSync(root).filter((n) => n.startsWith(".gjc-delete-"))).toEqual([]);
  });

  it("refuses a transcript whose first line is no session header as `header`", async () => {
    const file = path.join(root, "2026-01-01T00-00-00-000Z_not-a-session.jsonl");
    fs.writeFileSync(file, `${JSON.stringify({ type: "artifact", id: "s1", cwd: "/w" })}\n${"x".repeat(10_000)}\n`, { mode: 0o600 });
    expect(await deleteRefusalOf(() => storage.deleteSessionVerified(targetOf(file, "s1", "/w")))).toBe("header");
    expect(fs.existsSync(file)).toBe(true);
  });

  it("the second call refuses a transcript replaced by another of the same size, and puts it back", async () => {
    const { file, id, cwd } = await writtenSession();
    const target = targetOf(file, id, cwd);
    await storage.deleteSessionVerified(target);
    const bytes = fs.readFileSync(file);
    const swapped = Buffer.from(bytes);
    swapped[swapped.length - 3] = swapped[swapped.length - 3] === 0x31 ? 0x32 : 0x31;
    fs.rmSync(file);
    fs.writeFileSync(file, swapped, { mode: 0o600 });
    expect(await deleteRefusalOf(() => storage.deleteSessionVerified({ ...target, artifactsRemoved: true }))).toBe("identity");
    expect(fs.readFileSync(file)).toEqual(swapped);
  });
});

describe("deleteSessionVerified refusals named as GJC names them", () => {
  it("a link at the transcript's name is `symlink`, a second link to it `identity`, a link at the artifacts `symlink`; nothing moves", async () => {
    const { file, id, cwd, artifacts } = await writtenSession();
    const target = targetOf(file, id, cwd);
    const linked = path.join(root, "2026-01-01T00-00-00-000Z_linked.jsonl");
    fs.symlinkSync(file, linked);
    expect(await deleteRefusalOf(() => storage.deleteSessionVerified({ ...target, transcriptPath: linked }))).toBe("symlink");
    expect(fs.lstatSync(linked).isSymbolicLink()).toBe(true);

    const second = path.join(tmp.path, "second-link.jsonl");
    fs.linkSync(file, second);
    expect(await deleteRefusalOf(() => storage.deleteSessionVerified(target))).toBe("identity");
    fs.rmSync(second);

    const realArtifacts = path.join(tmp.path, "real-artifacts");
    fs.renameSync(artifacts, realArtifacts);
    fs.symlinkSync(realArtifacts, artifacts);
    expect(await deleteRefusalOf(() => storage.deleteSessionVerified(target))).toBe("symlink");
    expect(fs.lstatSync(artifacts).isSymbolicLink()).toBe(true);
    expect(fs.existsSync(path.join(realArtifacts, "local", "deep", "notes.md"))).toBe(true);
    expect(fs.existsSync(file)).toBe(true);
    expect(fs.readdirSync(root).filter((n) => n.startsWith(".gjc-delete-"))).toEqual([]);
  });
});

describe("probeSessionRetirement and retireSessionTranscript", () => {
  it("the probe changes nothing; retirement removes the session and its artifacts", async () => {
    const { file, artifacts } = await writtenSession();
    const st = fs.statSync(file, { bigint: true });
    expect(probeSessionRetirement(storage, root, file)).toEqual({ kind: "retirable" });
    expect(fs.statSync(file, { bigint: true }).mtimeNs).toBe(st.mtimeNs);
    expect(await retireSessionTranscript(storage, root, file)).toEqual({ kind: "retired" });
    expect(fs.existsSync(file)).toBe(false);
    expect(fs.existsSync(artifacts)).toBe(false);
    expect(sessionDirEntries()).toEqual([]);
  });

  it("keeps an unusable header, a second link and an unreadable path, with GJC's reasons", async () => {
    const bad = path.join(root, "2026-01-01T00-00-00-000Z_bad.jsonl");
    fs.writeFileSync(bad, `${JSON.stringify({ type: "session", id: "x" })}\n`, { mode: 0o600 });
    expect(probeSessionRetirement(storage, root, bad)).toEqual({ kind: "kept", reason: "transcript_header_unusable" });
    expect(await retireSessionTranscript(storage, root, bad)).toEqual({ kind: "kept", reason: "transcript_header_unusable" });
    const { file } = await writtenSession(2);
    fs.linkSync(file, path.join(tmp.path, "second"));
    expect(await retireSessionTranscript(storage, root, file)).toEqual({ kind: "kept", reason: "transcript_not_single_link" });
    expect(probeSessionRetirement(storage, root, path.join(root, "missing.jsonl"))).toEqual({ kind: "kept", reason: "transcript_unreadable: not_found" });
    expect(fs.existsSync(file)).toBe(true);
  });
});
