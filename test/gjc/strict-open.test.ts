/**
 * Strict resume selection on the `/gjc` face: the read-only inspection's verdicts (resumable,
 * terminal, and each error reason), and the strict open, which opens exactly the inspected
 * bytes or nothing, and leaves a v1-v4 file byte for byte as it was until the session changes.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager } from "../../src/gjc/session-manager.js";
import { BOUNDED_RESUME_TRANSCRIPT_MAX_BYTES, RESUME_TRANSCRIPT_MAX_BYTES } from "../../src/gjc/strict-open.js";
import { SessionTranscriptOversizedError } from "../../src/gjc/errors.js";
import type { AgentMessage } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";

const FIXTURES = path.join(import.meta.dirname, "..", "fixtures", "peer-sessions");

let tmp: { path: string; remove(): void };
let dir: string;
beforeEach(() => {
  tmp = makeTempDir("gjc-face-strict-");
  dir = path.join(tmp.path, "sessions");
  fs.mkdirSync(dir, { mode: 0o700 });
});
afterEach(() => tmp.remove());

const options = { terminalId: null, agentDir: "/nonexistent-agent-dir-for-tests" } as const;

/** Copies a fixture into the session directory, owner-only. */
function copyFixture(name: string, as = "2025-11-20T23-33-50-805Z_fixture.jsonl"): string {
  const target = path.join(dir, as);
  fs.copyFileSync(path.join(FIXTURES, name), target);
  fs.chmodSync(target, 0o600);
  return target;
}

/** Everything in the session directory with its bytes. */
function snapshotDir(): Map<string, string> {
  const out = new Map<string, string>();
  for (const name of fs.readdirSync(dir)) {
    const full = path.join(dir, name);
    if (fs.lstatSync(full).isFile()) out.set(name, fs.readFileSync(full, "base64"));
  }
  return out;
}

function write(name: string, lines: readonly string[]): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, lines.map((line) => `${line}\n`).join(""), { mode: 0o600 });
  return file;
}

const header = JSON.stringify({ type: "session", version: 5, id: "019f0000-2222-7000-aaaa-000000000001", timestamp: "2026-07-18T13:22:00.198Z", cwd: "/work" });
const user = (id: string, parentId: string | null) =>
  JSON.stringify({
    type: "message",
    id,
    parentId,
    timestamp: "2026-07-18T13:22:05.000Z",
    message: { role: "user", content: [{ type: "text", text: "long prompt ".repeat(200) }], timestamp: 1 },
  });
const assistant = (id: string, parentId: string) =>
  JSON.stringify({
    type: "message",
    id,
    parentId,
    timestamp: "2026-07-18T13:22:06.000Z",
    message: {
      role: "assistant",
      content: [{ type: "text", text: "answer" }],
      provider: "p",
      model: "m",
      timestamp: 2,
      usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
      stopReason: "stop",
    },
  });

describe("inspectSessionTailReadOnly", () => {
  it("tells an interrupted turn from a finished one, by the context's last message", async () => {
    const open = write("a.jsonl", [header, user("u1", null)]);
    const done = write("b.jsonl", [header, user("u1", null), assistant("a1", "u1")]);
    const inspection = await SessionManager.inspectSessionTailReadOnly(open);
    expect(inspection).toMatchObject({
      kind: "resumable",
      identity: { canonicalPath: open, sessionId: "019f0000-2222-7000-aaaa-000000000001", size: fs.statSync(open).size },
    });
    expect(await SessionManager.inspectSessionTailReadOnly(done)).toMatchObject({ kind: "terminal" });
  });

  it("names each reason a transcript cannot be resumed as it is, and writes nothing", async () => {
    const badJson = write("c.jsonl", [header, "{not json"]);
    const badUtf8 = path.join(dir, "d.jsonl");
    fs.writeFileSync(badUtf8, Buffer.concat([Buffer.from(`${header}\n`), Buffer.from([0xff, 0xfe, 0x0a])]), { mode: 0o600 });
    const noId = write("e.jsonl", [JSON.stringify({ type: "session", version: 5, timestamp: "t", cwd: "/w" })]);
    const oversized = write("f.jsonl", [header]);
    fs.truncateSync(oversized, RESUME_TRANSCRIPT_MAX_BYTES + 1);
    const link = path.join(dir, "g.jsonl");
    fs.symlinkSync(badJson, link);
    const before = snapshotDir();
    expect(await SessionManager.inspectSessionTailReadOnly(path.join(dir, "missing.jsonl"))).toEqual({ kind: "error", reason: "missing" });
    expect(await SessionManager.inspectSessionTailReadOnly(badJson)).toEqual({ kind: "error", reason: "malformed" });
    expect(await SessionManager.inspectSessionTailReadOnly(badUtf8)).toEqual({ kind: "error", reason: "malformed" });
    expect(await SessionManager.inspectSessionTailReadOnly(noId)).toEqual({ kind: "error", reason: "malformed" });
    expect(await SessionManager.inspectSessionTailReadOnly(oversized)).toEqual({ kind: "error", reason: "oversized", size: RESUME_TRANSCRIPT_MAX_BYTES + 1 });
    expect(await SessionManager.inspectSessionTailReadOnly(link)).toEqual({ kind: "error", reason: "read-failed" });
    expect(snapshotDir()).toEqual(before);
  });
});

describe("openExistingStrict", () => {
  it("opens a v1 file as inspected and leaves it byte for byte until the session changes", async () => {
    const file = copyFixture("pi-mono__large-session__v1-head20.jsonl");
    const before = snapshotDir();
    const mtime = fs.statSync(file).mtimeMs;
    expect((await SessionManager.listForResumePickerReadOnly("/work", dir)).map((row) => row.path)).toEqual([file]);
    const inspection = await SessionManager.inspectSessionTailReadOnly(file);
    if (inspection.kind === "error") throw new Error(inspection.reason);
    const opened = await SessionManager.openExistingStrict(inspection.identity, undefined, undefined, "copy-retain", "shadow", options);
    if (opened.kind !== "opened") throw new Error(opened.reason);
    const manager = opened.manager;
    expect(manager.getSessionFile()).toBe(file);
    expect(manager.getEntries().length).toBeGreaterThan(10);
    await manager.ensureOnDisk();
    await manager.flush();
    await manager.close();
    expect(fs.readFileSync(file, "base64")).toBe(before.get(path.basename(file)));
    expect(fs.statSync(file).mtimeMs).toBe(mtime);
    expect([...snapshotDir().keys()].filter((name) => name.endsWith(".jsonl"))).toEqual([path.basename(file)]);
  });

  it("ends the read-only resume at the first change: the migrated file is then written as v5", async () => {
    const file = copyFixture("pi-mono__large-session__v1-head20.jsonl");
    const inspection = await SessionManager.inspectSessionTailReadOnly(file);
    if (inspection.kind === "error") throw new Error(inspection.reason);
    const opened = await SessionManager.openExistingStrict(inspection.identity, undefined, undefined, undefined, undefined, options);
    if (opened.kind !== "opened") throw new Error(opened.reason);
    const count = opened.manager.getEntries().length;
    opened.manager.appendMessage({ role: "user", content: [{ type: "text", text: "one more" }], timestamp: 3 } as AgentMessage);
    await opened.manager.close();
    const lines = fs
      .readFileSync(file, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; version?: number });
    expect(lines[0]).toMatchObject({ type: "session", version: 5 });
    expect(lines.filter((line) => line.type !== "session")).toHaveLength(count + 1);
  });

  it("opens nothing when the file changed since it was inspected", async () => {
    const file = write("h.jsonl", [header, user("u1", null), assistant("a1", "u1")]);
    const inspection = await SessionManager.inspectSessionTailReadOnly(file);
    if (inspection.kind === "error") throw new Error(inspection.reason);
    fs.appendFileSync(file, `${user("u2", "a1")}\n`);
    const bytes = fs.readFileSync(file);
    expect(await SessionManager.openExistingStrict(inspection.identity, undefined, undefined, undefined, undefined, options)).toEqual({
      kind: "error",
      reason: "identity-mismatch",
    });
    expect(fs.readFileSync(file)).toEqual(bytes);
    // Nothing was left holding it: a writable open takes it at once.
    const manager = await SessionManager.open(file, undefined, undefined, undefined, undefined, options);
    expect(manager.getEntries()).toHaveLength(3);
    await manager.close();
  });

  it("adopts a candidate through setSessionFile only while it is the file that was inspected", async () => {
    const first = write("2026-07-18T13-22-00-000Z_first.jsonl", [header, user("u1", null), assistant("a1", "u1")]);
    const otherHeader = header.replace("000000000001", "000000000002");
    const second = write("2026-07-18T13-23-00-000Z_second.jsonl", [otherHeader, user("u1", null), assistant("a1", "u1")]);
    const manager = await SessionManager.open(first, undefined, undefined, undefined, undefined, options);
    const inspection = await SessionManager.inspectSessionTailReadOnly(second);
    if (inspection.kind === "error") throw new Error(inspection.reason);
    const adopted = await manager.prepareManagedCandidateForStrictAdoption(second, "copy-retain", inspection.identity);
    fs.appendFileSync(second, `${user("u2", "a1")}\n`);
    await expect(manager.setSessionFile(adopted)).rejects.toMatchObject({ code: "prepared_session_changed" });
    expect(manager.getSessionFile()).toBe(first);
    const again = await SessionManager.inspectSessionTailReadOnly(second);
    if (again.kind === "error") throw new Error(again.reason);
    await manager.prepareManagedCandidateForStrictAdoption(second, "copy-retain", again.identity);
    await manager.setSessionFile(second);
    expect(manager.getSessionId()).toBe("019f0000-2222-7000-aaaa-000000000002");
    await manager.close();
  });
});

describe("captureTranscriptStrict and forkFromCaptured", () => {
  it("forks exactly the captured bytes, and nothing once the source changed", async () => {
    const file = write("2026-07-18T13-22-00-000Z_source.jsonl", [header, user("u1", null), assistant("a1", "u1"), user("u2", "a1"), assistant("a2", "u2")]);
    const captured = SessionManager.captureTranscriptStrict(file);
    if (captured.kind !== "captured") throw new Error(captured.reason);
    const { snapshot } = captured;
    expect(snapshot.identity.sha256).toBe(((await SessionManager.inspectSessionTailReadOnly(file)) as { identity: { sha256: string } }).identity.sha256);
    const lines: string[] = [];
    expect(snapshot.forEachLine((line) => void lines.push(line))).toBe(true);
    expect(lines).toEqual(fs.readFileSync(file, "utf8").trimEnd().split("\n"));
    expect(Buffer.from(snapshot.materialize())).toEqual(fs.readFileSync(file));

    const forked = await SessionManager.forkFromCaptured(snapshot, "/work", dir, "copy-retain", "shadow", options);
    if (forked.kind !== "forked") throw new Error(forked.reason);
    expect(forked.manager.getHeader().parentSession).toBe(snapshot.identity.sessionId);
    expect(forked.manager.getEntries().map((e) => e.id)).toEqual(["u1", "a1", "u2", "a2"]);
    await forked.manager.close();

    fs.appendFileSync(file, `${user("u3", "a2")}\n`);
    expect(snapshot.revalidate()).toEqual({ kind: "error", reason: "identity-mismatch" });
    const before = fs
      .readdirSync(dir)
      .filter((name) => name.endsWith(".jsonl"))
      .sort();
    expect(await SessionManager.forkFromCaptured(snapshot, "/work", dir, "copy-retain", "shadow", options)).toEqual({
      kind: "error",
      reason: "identity-mismatch",
    });
    expect(() => snapshot.forEachLine(() => undefined)).toThrow(expect.objectContaining({ code: "prepared_session_changed" }));
    expect(
      fs
        .readdirSync(dir)
        .filter((name) => name.endsWith(".jsonl"))
        .sort(),
    ).toEqual(before);
    snapshot.close();
    expect(SessionManager.captureTranscriptStrict(write("bad.jsonl", [JSON.stringify({ type: "message" })]))).toEqual({ kind: "error", reason: "malformed" });
  });
});

describe("continueRecent", () => {
  it("resumes a v1 file without writing it until the session changes", async () => {
    const file = copyFixture("pi-mono__large-session__v1-head20.jsonl");
    const bytes = fs.readFileSync(file);
    const manager = await SessionManager.continueRecent("/work", dir, undefined, undefined, undefined, options);
    expect(manager.getSessionFile()).toBe(file);
    await manager.ensureOnDisk();
    await manager.close();
    expect(fs.readFileSync(file)).toEqual(bytes);
  });
});

describe("opening a transcript over the cap", () => {
  async function refusal(run: () => Promise<unknown>): Promise<unknown> {
    try {
      await run();
    } catch (error) {
      return error;
    }
    return undefined;
  }

  it("open and forkFrom refuse it from its size alone, creating nothing, and leave it as it was", async () => {
    const big = write("big.jsonl", [header, user("u1", null)]);
    fs.truncateSync(big, RESUME_TRANSCRIPT_MAX_BYTES + 1);
    const destination = path.join(tmp.path, "elsewhere");
    for (const run of [
      () => SessionManager.open(big, destination, undefined, undefined, undefined, options),
      () => SessionManager.open(big, undefined, undefined, undefined, "shadow", options),
      () => SessionManager.forkFrom(big, tmp.path, destination, undefined, undefined, undefined, options),
    ]) {
      const error = await refusal(run);
      expect(error).toBeInstanceOf(SessionTranscriptOversizedError);
      expect(error).toMatchObject({ code: "oversized", size: RESUME_TRANSCRIPT_MAX_BYTES + 1 });
    }
    expect(fs.existsSync(destination)).toBe(false);
    expect(fs.readdirSync(dir)).toEqual(["big.jsonl"]);
    expect(fs.statSync(big).size).toBe(RESUME_TRANSCRIPT_MAX_BYTES + 1);
  });

  it("a paging memory mode raises the cap to the bounded one, and refuses above it", async () => {
    const huge = write("huge.jsonl", [header, user("u1", null)]);
    fs.truncateSync(huge, BOUNDED_RESUME_TRANSCRIPT_MAX_BYTES + 1);
    for (const mode of ["enabled", "auto"] as const) {
      const error = await refusal(() => SessionManager.open(huge, dir, undefined, undefined, mode, options));
      expect(error).toMatchObject({ code: "oversized", size: BOUNDED_RESUME_TRANSCRIPT_MAX_BYTES + 1 });
    }
    expect(BOUNDED_RESUME_TRANSCRIPT_MAX_BYTES).toBeGreaterThan(RESUME_TRANSCRIPT_MAX_BYTES);
  });

  it("a transcript under the cap opens", async () => {
    const small = write("small.jsonl", [header, user("u1", null), assistant("a1", "u1")]);
    const manager = await SessionManager.open(small, dir, undefined, undefined, undefined, options);
    expect(manager.getEntries()).toHaveLength(2);
    await manager.close();
  });
});

describe("deleteManagedCandidate", () => {
  it("deletes a session of its workspace's managed scope or project folder, and nothing else", async () => {
    const agentDir = path.join(tmp.path, "agent");
    const workspace = path.join(tmp.path, "work");
    fs.mkdirSync(workspace, { mode: 0o700 });
    const previous = process.env.GJC_CODING_AGENT_DIR;
    process.env.GJC_CODING_AGENT_DIR = agentDir;
    try {
      const manager = SessionManager.create(workspace, undefined, undefined, { terminalId: null });
      manager.appendMessage(JSON.parse(user("u1", null)).message as AgentMessage);
      manager.appendMessage(JSON.parse(assistant("a1", "u1")).message as AgentMessage);
      await manager.saveArtifact("out", "bash");
      const managed = manager.getSessionFile()!;
      await manager.close();
      const stray = write("stray.jsonl", [header.replace('"/work"', JSON.stringify(workspace)), user("u1", null)]);
      await expect(SessionManager.deleteManagedCandidate(stray)).rejects.toMatchObject({ code: "session_not_contained" });
      expect(fs.existsSync(stray)).toBe(true);
      await SessionManager.deleteManagedCandidate(managed);
      expect(fs.existsSync(managed)).toBe(false);
      expect(fs.existsSync(managed.replace(/\.jsonl$/, ""))).toBe(false);
    } finally {
      if (previous === undefined) delete process.env.GJC_CODING_AGENT_DIR;
      else process.env.GJC_CODING_AGENT_DIR = previous;
    }
  });
});
