/**
 * Staged subagent attempts on the `/gjc` face: invisible to listings until committed, published
 * no-replace, rolled back only while the final file is the published bytes, and discarded
 * without a trace, artifacts and their id claims included.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager } from "../../src/gjc/session-manager.js";
import type { AgentMessage } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: { path: string; remove(): void };
let dir: string;
let finalFile: string;
beforeEach(() => {
  tmp = makeTempDir("gjc-face-staged-");
  dir = path.join(tmp.path, "parent-artifacts");
  fs.mkdirSync(dir, { mode: 0o700 });
  finalFile = path.join(dir, "task-1.jsonl");
});
afterEach(() => tmp.remove());

const options = { terminalId: null } as const;
const listed = async () => (await SessionManager.listForResumePickerReadOnly(tmp.path, dir)).map((row) => row.path);

async function runAttempt(manager: SessionManager): Promise<void> {
  manager.appendMessage({ role: "user", content: [{ type: "text", text: "subtask ".repeat(50) }], timestamp: 1 } as AgentMessage);
  manager.appendMessage({
    role: "assistant",
    content: [{ type: "text", text: "done" }],
    provider: "p",
    model: "m",
    timestamp: 2,
    usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
    stopReason: "stop",
  } as AgentMessage);
  await manager.saveArtifact("subagent output", "bash");
}

describe("staged attempts", () => {
  it("publish at the commit, and roll back while the published bytes are still there", async () => {
    const manager = await SessionManager.openStaged(finalFile, undefined, "attempt-1", options);
    const staged = path.join(dir, ".staging", "attempt-1.jsonl");
    expect(fs.existsSync(staged)).toBe(true);
    expect(manager.getSessionFile()).toBe(staged);
    expect(manager.getArtifactsDir()).toBeNull();
    await runAttempt(manager);
    expect(await listed()).toEqual([]);
    expect(fs.readdirSync(path.join(dir, "task-1")).sort()).toEqual([".artifact-id-0", "0.bash.log"]);

    await manager.commitStaged({ deferArtifactFinalize: true });
    await manager.commitStaged();
    expect(fs.existsSync(staged)).toBe(false);
    expect(manager.getSessionFile()).toBe(finalFile);
    expect(await listed()).toEqual([finalFile]);
    manager.appendSessionInit({ systemPrompt: "sys", task: "subtask", tools: ["bash"] });
    await manager.refreshStagedCommitSnapshot();
    await manager.rollbackCommittedStaged();
    expect(fs.existsSync(finalFile)).toBe(false);
    expect(fs.readdirSync(path.join(dir, "task-1"))).toEqual([]);
    await expect(manager.commitStaged()).rejects.toMatchObject({ code: "staged_session_unavailable" });
  });

  it("keep a final file that changed since it was published", async () => {
    const manager = await SessionManager.openStaged(finalFile, undefined, "attempt-2", options);
    await runAttempt(manager);
    await manager.commitStaged({ deferArtifactFinalize: true });
    await manager.close();
    fs.appendFileSync(
      finalFile,
      `${JSON.stringify({ type: "custom", id: "x1", parentId: null, timestamp: "2026-01-01T00:00:00.000Z", customType: "other", data: {} })}\n`,
    );
    await manager.rollbackCommittedStaged();
    expect(fs.existsSync(finalFile)).toBe(true);
  });

  it("leave nothing behind when discarded, and refuse to replace a final file", async () => {
    const manager = await SessionManager.openStaged(finalFile, undefined, "attempt-3", options);
    await runAttempt(manager);
    await manager.discardStaged();
    await manager.discardStaged();
    expect(fs.readdirSync(path.join(dir, ".staging")).filter((name) => name.endsWith(".jsonl"))).toEqual([]);
    expect(fs.readdirSync(path.join(dir, "task-1"))).toEqual([]);

    fs.writeFileSync(finalFile, "taken\n", { mode: 0o600 });
    const second = await SessionManager.openStaged(finalFile, undefined, "attempt-4", options);
    await runAttempt(second);
    await expect(second.commitStaged()).rejects.toMatchObject({ code: "already_exists" });
    expect(fs.readFileSync(finalFile, "utf8")).toBe("taken\n");
    expect(fs.readdirSync(path.join(dir, ".staging")).filter((name) => name.endsWith(".jsonl"))).toEqual([]);

    await expect(SessionManager.openStaged(finalFile, undefined, "../escape", options)).rejects.toMatchObject({ code: "staged_session_unavailable" });
    await expect(SessionManager.openStaged(path.join(dir, ".staging", "x.jsonl"), undefined, "a", options)).rejects.toMatchObject({
      code: "staged_session_unavailable",
    });
  });
});
