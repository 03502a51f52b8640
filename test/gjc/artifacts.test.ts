/**
 * Artifacts and drafts on the `/gjc` face: the artifacts directory beside the transcript,
 * created owner-only by descriptor; ids claimed no-replace and never handed out twice, even by
 * two managers of one session in two processes' worth of state; paths exposed for explicit
 * destinations only; cut outputs; adoption of a parent's artifact manager; a fork's bounded
 * copy refusing a link; drafts kept for the next resume and read once.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { ARTIFACT_MAX_BYTES, type SessionArtifacts } from "../../src/gjc/artifacts.js";
import { SessionManager } from "../../src/gjc/session-manager.js";
import { FileSessionStorage } from "../../src/gjc/storage.js";
import { SessionManagerTestHooks } from "../../src/gjc/test-hooks.js";
import { createReadonlySessionManager } from "../../src/gjc/index.js";
import type { AgentMessage } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: { path: string; remove(): void };
let sessions: string;
let agentDir: string;
let workspace: string;
beforeEach(() => {
  tmp = makeTempDir("gjc-face-artifacts-");
  sessions = path.join(tmp.path, "sessions");
  agentDir = path.join(tmp.path, "agent");
  workspace = path.join(tmp.path, "work");
  fs.mkdirSync(sessions, { mode: 0o700 });
  fs.mkdirSync(workspace, { mode: 0o700 });
});
afterEach(() => tmp.remove());

const options = () => ({ terminalId: null, agentDir });

async function answered(manager: SessionManager): Promise<SessionManager> {
  manager.appendMessage({ role: "user", content: [{ type: "text", text: "run the build" }], timestamp: 1 } as AgentMessage);
  manager.appendMessage({
    role: "assistant",
    content: [{ type: "text", text: "ok" }],
    provider: "p",
    model: "m",
    timestamp: 2,
    usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
    stopReason: "stop",
  } as AgentMessage);
  await manager.flush();
  return manager;
}

const mode = (file: string) => fs.lstatSync(file).mode & 0o777;

describe("the artifacts directory", () => {
  it("sits beside the transcript, owner-only, with ids claimed once across managers", async () => {
    const manager = await answered(SessionManager.create(workspace, sessions, undefined, options()));
    const dir = manager.getArtifactsDir()!;
    expect(dir).toBe(manager.getSessionFile()!.replace(/\.jsonl$/, ""));
    expect(fs.existsSync(dir)).toBe(false);
    const reserved = await manager.allocateArtifactPath("bash");
    expect(reserved).toEqual({ id: "0", path: path.join(dir, "0.bash.log") });
    expect(mode(dir)).toBe(0o700);
    // A second manager reading the same session (a subagent, another process) never gets a claimed id.
    const reader = await SessionManager.open(manager.getSessionFile()!, undefined, undefined, undefined, undefined, { ...options(), readOnly: true });
    expect(await reader.saveArtifact("second manager output", "read")).toBe("1");
    expect(await manager.saveArtifact("first manager output", "bash")).toBe("2");
    expect(fs.readFileSync(path.join(dir, "2.bash.log"), "utf8")).toBe("first manager output");
    expect(mode(path.join(dir, "2.bash.log"))).toBe(0o600);
    await expect(manager.saveArtifact("x", "../escape")).rejects.toMatchObject({ code: "artifacts_unavailable" });
    await reader.close();
    await manager.close();
  });

  it("hands out ids only for a managed destination, and cuts outputs past the bound with a notice", async () => {
    const manager = await answered(SessionManager.create(workspace, SessionManager.managedDestination(workspace, agentDir), undefined, options()));
    const reserved = await manager.allocateArtifactPath("bash");
    expect(reserved).toEqual({ id: "0" });
    const big = "é".repeat(ARTIFACT_MAX_BYTES);
    const id = await manager.saveArtifact(big, "bash");
    const saved = fs.readFileSync(path.join(manager.getArtifactsDir()!, `${id}.bash.log`), "utf8");
    expect(Buffer.byteLength(saved)).toBeLessThan(ARTIFACT_MAX_BYTES + 200);
    expect(saved).toMatch(/\[artifact truncated after \d+ bytes; omitted \d+ bytes\]\n$/);
    expect(saved.startsWith("é".repeat(1000))).toBe(true);
    await manager.close();
  });

  it("publishes a pruned tool output exactly, with proof of its bytes, and takes it back on request", async () => {
    const manager = await answered(SessionManager.create(workspace, sessions, undefined, options()));
    const store = (await manager.ensureArtifactManager()) as SessionArtifacts;
    const text = "tool output line\n".repeat(5000);
    const outcome = await store.publishExactText(text, { toolType: "evicted" });
    if (outcome.outcome !== "saved") throw new Error(outcome.outcome);
    const file = path.join(manager.getArtifactsDir()!, `${outcome.handle.artifactId}.evicted.log`);
    expect(fs.readFileSync(file, "utf8")).toBe(text);
    expect(outcome.handle).toMatchObject({ v: 1, uri: `artifact://${outcome.handle.artifactId}`, bytes: Buffer.byteLength(text), complete: true });
    expect(outcome.handle.sha256).toBe(createHash("sha256").update(text).digest("hex"));
    expect(await store.publishExactText(text, { maxBytes: 10 })).toEqual({ outcome: "incomplete", bytes: Buffer.byteLength(text), maxBytes: 10 });
    expect(await store.publishExactText(text, { persist: false })).toMatchObject({ outcome: "unavailable" });
    expect(await store.removeNamedBestEffort("../escape")).toBe(false);
    expect(await store.removeNamedBestEffort(path.basename(file))).toBe(true);
    expect(fs.existsSync(file)).toBe(false);
    await manager.close();
  });

  it("refuses an artifacts directory swapped for a link", async () => {
    const manager = await answered(SessionManager.create(workspace, sessions, undefined, options()));
    const elsewhere = path.join(tmp.path, "elsewhere");
    fs.mkdirSync(elsewhere, { mode: 0o700 });
    fs.symlinkSync(elsewhere, manager.getArtifactsDir()!);
    await expect(manager.saveArtifact("secret", "bash")).rejects.toMatchObject({ code: "symlink_refused" });
    expect(fs.readdirSync(elsewhere)).toEqual([]);
    await manager.close();
  });

  it("gives a session in memory a temporary directory, removed when the manager closes", async () => {
    const manager = SessionManager.inMemory(workspace);
    expect(manager.getArtifactsDir()).toBeNull();
    expect(await manager.allocateArtifactPath("bash")).toEqual({});
    expect(await manager.getArtifactPath("0")).toBeNull();
    const id = await manager.saveArtifact("in memory", "bash");
    const store = manager.getArtifactManager() as { dir: string };
    // The private temporary directory itself, owner-only, holds the outputs.
    expect(path.dirname(store.dir)).toBe(path.resolve(os.tmpdir()));
    expect(mode(store.dir)).toBe(0o700);
    expect(await manager.getArtifactPath(id!)).toBe(path.join(store.dir, `${id}.bash.log`));
    expect(fs.readFileSync(path.join(store.dir, `${id}.bash.log`), "utf8")).toBe("in memory");
    expect(await manager.getArtifactPath("99")).toBeNull();
    expect(await manager.closeStrict()).toEqual({ kind: "closed" });
    expect(fs.existsSync(store.dir)).toBe(false);
  });

  it("keeps a session in memory's temporary directory through a switch that fails, and removes it after one that lands", async () => {
    const source = await answered(SessionManager.create(workspace, sessions, undefined, options()));
    const file = source.getSessionFile()!;
    const sourceId = source.getSessionId();
    await source.close();
    const manager = SessionManager.inMemory(workspace, new FileSessionStorage());
    const id = await manager.saveArtifact(`build log ${"x".repeat(200_000)}`, "bash");
    const store = manager.getArtifactManager() as SessionArtifacts;
    SessionManagerTestHooks.beforeResidentTransitionIndexBuild = () => {
      throw new Error("injected switch failure");
    };
    try {
      await expect(manager.setSessionFile(file)).rejects.toThrow("injected switch failure");
    } finally {
      SessionManagerTestHooks.beforeResidentTransitionIndexBuild = undefined;
    }
    expect(manager.getArtifactManager()).toBe(store);
    expect(manager.getSessionId()).not.toBe(sourceId);
    expect(await manager.getArtifactPath(id!)).toBe(path.join(store.dir, `${id}.bash.log`));

    await manager.setSessionFile(file);
    expect(manager.getSessionId()).toBe(sourceId);
    expect(manager.getArtifactManager()).not.toBe(store);
    await manager.close();
    expect(fs.existsSync(store.dir)).toBe(false);
  });

  it("answers through an adopted artifact manager until it is released", async () => {
    const manager = await answered(SessionManager.create(workspace, sessions, undefined, options()));
    const calls: string[] = [];
    const parent = {
      allocatePath: async (toolType: string) => (calls.push(`allocate ${toolType}`), { id: "41" }),
      save: async (_content: string, toolType: string) => (calls.push(`save ${toolType}`), "42"),
    };
    manager.adoptArtifactManager(parent);
    expect(manager.getArtifactsDir()).toBeNull();
    expect(manager.isArtifactManagerAuthorized(parent)).toBe(true);
    expect(manager.isArtifactManagerAuthorized({ ...parent })).toBe(false);
    expect(await manager.allocateArtifactPath("task")).toEqual({ id: "41" });
    expect(await manager.saveArtifact("out", "task")).toBe("42");
    manager.releaseArtifactManager({ ...parent });
    expect(manager.getArtifactManager()).toBe(parent);
    manager.releaseArtifactManager(parent);
    expect(manager.getArtifactsDir()).not.toBeNull();
    expect(calls).toEqual(["allocate task", "save task"]);
    await manager.close();
  });

  it("saved before the session's first write, makes the session directory owner-only; its path answered by the manager and its facade", async () => {
    const fresh = path.join(tmp.path, "not-yet", "sessions");
    const manager = SessionManager.create(workspace, fresh, undefined, options());
    expect(fs.existsSync(fresh)).toBe(false);
    const id = await manager.saveArtifact("tool output before any answer", "sdk-tool");
    expect(id).toBe("0");
    expect(mode(fresh)).toBe(0o700);
    expect(mode(path.join(tmp.path, "not-yet"))).toBe(0o700);
    const file = await manager.getArtifactPath(id!);
    expect(file).toBe(path.join(manager.getArtifactsDir()!, "0.sdk-tool.log"));
    expect(fs.readFileSync(file!, "utf8")).toBe("tool output before any answer");
    expect(await createReadonlySessionManager(manager).getArtifactPath(id!)).toBe(file);
    expect(await manager.getArtifactPath("7")).toBeNull();
    expect(await SessionManager.inMemory(workspace).getArtifactPath("0")).toBeNull();
    // The session's own first write goes into the directory the artifact made.
    await answered(manager);
    expect(path.dirname(manager.getSessionFile()!)).toBe(fresh);
    expect(fs.existsSync(manager.getSessionFile()!)).toBe(true);
    await manager.close();
  });

  it("refuses to fork an artifact tree holding a link, leaving nothing staged", async () => {
    const manager = await answered(SessionManager.create(workspace, sessions, undefined, options()));
    await manager.saveArtifact("output", "bash");
    fs.symlinkSync("/etc/hostname", path.join(manager.getArtifactsDir()!, "link.log"));
    await expect(manager.prepareFork()).rejects.toMatchObject({ code: "unsafe_artifacts" });
    expect(fs.readdirSync(sessions).filter((name) => name.startsWith(".fork-"))).toEqual([]);
    expect(fs.readdirSync(sessions).filter((name) => name.endsWith(".jsonl"))).toHaveLength(1);
    await manager.close();
  });

  it("fork() carries the artifacts over (a 2 MiB output too), owner-only, the source's left as they were", async () => {
    const manager = await answered(SessionManager.create(workspace, sessions, undefined, options()));
    const big = "build log line\n".repeat(150_000);
    expect(await manager.saveArtifact(big, "bash")).toBe("0");
    expect(await manager.saveArtifact("second output", "read")).toBe("1");
    const sourceId = manager.getSessionId();
    const forked = await manager.fork();
    expect(forked!.oldSessionFile).not.toBe(forked!.newSessionFile);
    expect(manager.getSessionFile()).toBe(forked!.newSessionFile);
    expect(manager.getHeader()!.parentSession).toBe(sourceId);
    const copied = forked!.newSessionFile.replace(/\.jsonl$/, "");
    expect(fs.readFileSync(path.join(copied, "0.bash.log"), "utf8")).toBe(big);
    expect(fs.readFileSync(path.join(copied, "1.read.log"), "utf8")).toBe("second output");
    expect(mode(copied)).toBe(0o700);
    expect(mode(path.join(copied, "0.bash.log"))).toBe(0o600);
    expect(fs.readFileSync(path.join(forked!.oldSessionFile.replace(/\.jsonl$/, ""), "0.bash.log"), "utf8")).toBe(big);
    // The copy's ids go on after the copied ones; the transcript is written whole and durable.
    expect(await manager.saveArtifact("after the fork", "bash")).toBe("2");
    expect(fs.readFileSync(forked!.newSessionFile, "utf8").trim().split("\n")).toHaveLength(3);
    expect(fs.readdirSync(sessions).filter((name) => name.startsWith(".fork-"))).toEqual([]);
    // The source's writer is let go: it opens again for writing.
    const source = await SessionManager.open(forked!.oldSessionFile, undefined, undefined, undefined, undefined, options());
    await source.close();
    await manager.close();
  });

  it("a refused fork() leaves the manager on its session and no copy behind", async () => {
    const manager = await answered(SessionManager.create(workspace, sessions, undefined, options()));
    await manager.saveArtifact("output", "bash");
    const before = manager.getSessionFile();
    fs.symlinkSync("/etc/hostname", path.join(manager.getArtifactsDir()!, "link.log"));
    await expect(manager.fork()).rejects.toMatchObject({ code: "unsafe_artifacts" });
    expect(manager.getSessionFile()).toBe(before);
    expect(fs.readdirSync(sessions).filter((name) => name.endsWith(".jsonl"))).toEqual([path.basename(before!)]);
    expect(fs.readdirSync(sessions).filter((name) => name.startsWith(".fork-"))).toEqual([]);
    manager.appendMessage({ role: "user", content: [{ type: "text", text: "still here" }], timestamp: 3 } as AgentMessage);
    await manager.close();
    expect(fs.readFileSync(before!, "utf8")).toContain("still here");
  });
});

describe("drafts", () => {
  it("keeps the unsent text for the next resume (writing the session first) and reads it once", async () => {
    const manager = SessionManager.create(workspace, sessions, undefined, options());
    manager.appendMessage({ role: "user", content: [{ type: "text", text: "half a turn" }], timestamp: 1 } as AgentMessage);
    expect(fs.existsSync(manager.getSessionFile()!)).toBe(false);
    await manager.saveDraft("unsent prompt");
    expect(fs.existsSync(manager.getSessionFile()!)).toBe(true);
    const draft = path.join(manager.getArtifactsDir()!, "draft.txt");
    expect(mode(draft)).toBe(0o600);
    const file = manager.getSessionFile()!;
    await manager.close();

    const resumed = await SessionManager.open(file, undefined, undefined, undefined, undefined, options());
    expect(await resumed.consumeDraft()).toBe("unsent prompt");
    expect(await resumed.consumeDraft()).toBeNull();
    await resumed.saveDraft("another");
    await resumed.saveDraft("");
    expect(fs.existsSync(draft)).toBe(false);
    await resumed.close();
    const memory = SessionManager.inMemory(workspace);
    await memory.saveDraft("nowhere to keep it");
    expect(await memory.consumeDraft()).toBeNull();
  });
});
