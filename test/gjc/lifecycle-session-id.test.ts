/**
 * A process GJC's lifecycle daemon spawned (`/session_create`: `GJC_LIFECYCLE_REQUEST_ID` and a preallocated
 * `GJC_SESSION_ID`) gives its first session that id, so the daemon's records and the header agree; a normal
 * launch, an unsafe id, and every later session of the manager get fresh ids.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager } from "../../src/gjc/session-manager.js";
import type { AgentMessage } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: { path: string; remove(): void };
let saved: Record<string, string | undefined>;
beforeEach(() => {
  tmp = makeTempDir("gjc-lifecycle-id-");
  saved = { GJC_LIFECYCLE_REQUEST_ID: process.env.GJC_LIFECYCLE_REQUEST_ID, GJC_SESSION_ID: process.env.GJC_SESSION_ID };
});
afterEach(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  tmp.remove();
});

function launch(request: string | undefined, id: string | undefined): void {
  if (request === undefined) delete process.env.GJC_LIFECYCLE_REQUEST_ID;
  else process.env.GJC_LIFECYCLE_REQUEST_ID = request;
  if (id === undefined) delete process.env.GJC_SESSION_ID;
  else process.env.GJC_SESSION_ID = id;
}

const options = { terminalId: null, agentDir: "/nonexistent-agent-dir-for-tests" } as const;
const user: AgentMessage = { role: "user", content: [{ type: "text", text: "start the migration ".repeat(300) }], timestamp: 1 } as AgentMessage;
const assistant = {
  role: "assistant",
  content: [{ type: "text", text: "done" }],
  provider: "p",
  model: "m",
  timestamp: 2,
  usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
  stopReason: "stop",
} as unknown as AgentMessage;

describe("the lifecycle-preallocated session id", () => {
  it("becomes the header id of a created session, in the file name and on disk, once", async () => {
    launch("lc-req-1", "s-preallocated-1");
    const dir = path.join(tmp.path, "sessions");
    fs.mkdirSync(dir, { mode: 0o700 });
    const manager = SessionManager.create(tmp.path, dir, undefined, options);
    expect(manager.getSessionId()).toBe("s-preallocated-1");
    manager.appendMessage(user);
    manager.appendMessage(assistant);
    await manager.flush();
    const file = manager.getSessionFile()!;
    expect(path.basename(file)).toMatch(/_s-preallocated-1\.jsonl$/);
    expect(JSON.parse(fs.readFileSync(file, "utf8").split("\n")[0]!)).toMatchObject({ type: "session", id: "s-preallocated-1" });
    expect(fs.readdirSync(dir).filter((name) => name.endsWith(".jsonl"))).toEqual([path.basename(file)]);
    await manager.newSession();
    expect(manager.getSessionId()).not.toBe("s-preallocated-1");
    await manager.close();
  });

  it("applies to in-memory sessions too", () => {
    launch("lc-req-2", "s-preallocated-2");
    expect(SessionManager.inMemory(tmp.path).getSessionId()).toBe("s-preallocated-2");
  });

  it("is ignored without a lifecycle request, and when the id is not a safe session id", () => {
    launch(undefined, "s-should-be-ignored");
    expect(SessionManager.inMemory(tmp.path).getSessionId()).not.toBe("s-should-be-ignored");
    launch("lc-req-3", "../bad/id");
    expect(SessionManager.inMemory(tmp.path).getSessionId()).not.toBe("../bad/id");
    launch("lc-req-4", "   ");
    expect(SessionManager.inMemory(tmp.path).getSessionId()).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("becomes the id of the copy a lifecycle fork makes (forkFrom and forkFromCaptured), as GJC's session host checks", async () => {
    const dir = path.join(tmp.path, "sessions");
    fs.mkdirSync(dir, { mode: 0o700 });
    launch(undefined, undefined);
    const source = SessionManager.create(tmp.path, dir, undefined, options);
    source.appendMessage(user);
    source.appendMessage(assistant);
    await source.flush();
    const sourceFile = source.getSessionFile()!;
    const sourceId = source.getSessionId();
    await source.close();

    launch("lc-req-5", "s-preallocated-fork");
    const forked = await SessionManager.forkFrom(sourceFile, tmp.path, dir, undefined, undefined, undefined, options);
    expect(forked.getSessionId()).toBe("s-preallocated-fork");
    expect(forked.getHeader()).toMatchObject({ id: "s-preallocated-fork", parentSession: sourceId });
    expect(forked.getEntries()).toHaveLength(2);
    await forked.flush();
    expect(path.basename(forked.getSessionFile()!)).toMatch(/_s-preallocated-fork\.jsonl$/);
    await forked.close();

    launch("lc-req-6", "s-preallocated-captured");
    const captured = SessionManager.captureTranscriptStrict(sourceFile);
    if (captured.kind !== "captured") throw new Error(`capture failed: ${captured.reason}`);
    const result = await SessionManager.forkFromCaptured(captured.snapshot, tmp.path, dir, undefined, undefined, options);
    captured.snapshot.close();
    if (result.kind !== "forked") throw new Error(`fork failed: ${result.reason}`);
    expect(result.manager.getSessionId()).toBe("s-preallocated-captured");
    expect(JSON.parse(fs.readFileSync(result.manager.getSessionFile()!, "utf8").split("\n")[0]!)).toMatchObject({
      id: "s-preallocated-captured",
      parentSession: sourceId,
    });
    await result.manager.close();

    launch(undefined, "s-not-a-lifecycle-launch");
    const plain = await SessionManager.forkFrom(sourceFile, tmp.path, dir, undefined, undefined, undefined, options);
    expect(plain.getSessionId()).not.toBe("s-not-a-lifecycle-launch");
    await plain.close();
  });
});
