/**
 * GJC's app reads a destination token's `directory` and expects `open` of a path that holds no
 * session yet to leave that file on disk with its header (GJC's `open` writes it at once).
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager } from "../../src/gjc/session-manager.js";
import { loadEntriesFromFile } from "../../src/manager/index.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: { path: string; remove(): void };
let agentDir: string;
let cwd: string;
beforeEach(() => {
  tmp = makeTempDir("gjc-face-dest-");
  agentDir = path.join(tmp.path, "agent");
  cwd = path.join(tmp.path, "project");
  fs.mkdirSync(cwd, { mode: 0o700 });
});
afterEach(() => tmp.remove());

const options = { terminalId: null, agentDir: "/nonexistent-agent-dir-for-tests" } as const;

describe("destination tokens", () => {
  it("name their directory under GJC's field, `directory`, for managed and explicit tokens", () => {
    const managed = SessionManager.managedDestination(cwd, agentDir);
    expect(managed.directory).toBe(managed.sessionDir);
    expect(managed.directory.startsWith(path.join(agentDir, "sessions") + path.sep)).toBe(true);
    const explicitDir = path.join(tmp.path, "explicit");
    const explicit = SessionManager.explicitDestination(explicitDir);
    expect(explicit.directory).toBe(explicitDir);
  });
});

describe("open of a path that holds no session", () => {
  it("writes the header at the open, owner-only, and later appends follow it", async () => {
    const dir = path.join(tmp.path, "sessions");
    fs.mkdirSync(dir, { mode: 0o700 });
    const file = path.join(dir, "named-by-the-user.jsonl");
    const session = await SessionManager.open(file, undefined, undefined, undefined, undefined, options);
    try {
      expect(fs.existsSync(file)).toBe(true);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      const [header] = await loadEntriesFromFile(file);
      expect(header).toMatchObject({ type: "session", id: session.getSessionId() });
      const prompt = "explain the tokenizer ".repeat(500);
      session.appendMessage({ role: "user", content: prompt, timestamp: 1 });
      session.appendMessage({
        role: "assistant",
        content: [{ type: "text", text: "it splits text" }],
        provider: "p",
        model: "m",
        timestamp: 2,
        usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
        stopReason: "stop",
      } as never);
      await session.flush();
      const entries = await loadEntriesFromFile(file);
      expect(entries.map((entry) => entry.type)).toEqual(["session", "message", "message"]);
    } finally {
      await session.close();
    }
  });

  it("in a managed destination writes it there too", async () => {
    const destination = SessionManager.managedDestination(cwd, agentDir);
    const file = path.join(destination.directory, "new.jsonl");
    const session = await SessionManager.open(file, destination, undefined, "copy-retain", "enabled", { ...options, agentDir });
    try {
      expect(session.getSessionFile()).toBe(file);
      expect(fs.existsSync(file)).toBe(true);
    } finally {
      await session.close();
    }
  });

  it("writes nothing for a read-only open", async () => {
    const dir = path.join(tmp.path, "sessions");
    fs.mkdirSync(dir, { mode: 0o700 });
    const file = path.join(dir, "absent.jsonl");
    const session = await SessionManager.open(file, undefined, undefined, undefined, undefined, { ...options, readOnly: true }).catch(
      (error: unknown) => error,
    );
    if (session instanceof SessionManager) await session.close();
    expect(fs.existsSync(file)).toBe(false);
  });
});

describe("moveTo of a session in an explicit directory", () => {
  it("moves the file and its artifacts into the managed scope of the new cwd, which the session then uses", async () => {
    const dir = path.join(tmp.path, "sessions");
    fs.mkdirSync(dir, { mode: 0o700 });
    const target = path.join(tmp.path, "elsewhere");
    fs.mkdirSync(target, { mode: 0o700 });
    const session = SessionManager.create(cwd, dir, undefined, { ...options, agentDir });
    const prompt = `review this diff\n${"+ added line\n".repeat(400)}`;
    session.appendMessage({ role: "user", content: prompt, timestamp: 1 });
    session.appendMessage({
      role: "assistant",
      content: [{ type: "text", text: "looks fine" }],
      provider: "p",
      model: "m",
      timestamp: 2,
      usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
      stopReason: "stop",
    } as never);
    await session.flush();
    const artifactId = await session.saveArtifact("tool output ".repeat(1000), "bash");
    const before = session.getSessionFile()!;
    expect(session.isManagedDestination()).toBe(false);

    await session.moveTo(target);

    const after = session.getSessionFile()!;
    expect(path.dirname(after)).toBe(SessionManager.managedDestination(target, agentDir).directory);
    expect(path.basename(after)).toBe(path.basename(before));
    expect(fs.existsSync(before)).toBe(false);
    expect(fs.existsSync(before.slice(0, -".jsonl".length))).toBe(false);
    expect(session.isManagedDestination()).toBe(true);
    expect(session.getCwd()).toBe(target);
    expect(session.getDestinationForFork()?.directory).toBe(path.dirname(after));
    expect(path.dirname((await session.getArtifactPath(artifactId!))!)).toBe(after.slice(0, -".jsonl".length));
    session.appendMessage({ role: "user", content: "after the move", timestamp: 3 });
    await session.close();
    const entries = await loadEntriesFromFile(after);
    expect(entries[0]).toMatchObject({ type: "session", cwd: target });
    expect(entries.filter((entry) => entry.type === "message")).toHaveLength(3);
    expect(fs.readdirSync(after.slice(0, -".jsonl".length)).some((name) => name.endsWith(".bash.log"))).toBe(true);
  });
});
