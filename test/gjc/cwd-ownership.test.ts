/**
 * Process-cwd ownership and cwd transitions on the `/gjc` face: one owner per process, released
 * by close; transitions in call order after the read leases granted before them, leases asked
 * for later waiting for them, both re-entrant; moves fenced by the pinned directory identity and
 * counted by the generation.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager } from "../../src/gjc/session-manager.js";
import type { AgentMessage } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: { path: string; remove(): void };
beforeEach(() => {
  tmp = makeTempDir("gjc-face-cwd-");
});
afterEach(() => tmp.remove());

/** A promise and its resolver. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("process-cwd ownership", () => {
  it("has one owner at a time; close releases it", async () => {
    const a = SessionManager.inMemory(tmp.path);
    const b = SessionManager.inMemory(tmp.path);
    expect(SessionManager.claimProcessCwdOwnership(a)).toBe(true);
    expect(SessionManager.claimProcessCwdOwnership(a)).toBe(true);
    expect(SessionManager.claimProcessCwdOwnership(b)).toBe(false);
    expect(SessionManager.isProcessCwdOwner(b)).toBe(false);
    SessionManager.releaseProcessCwdOwnership(b);
    expect(SessionManager.isProcessCwdOwner(a)).toBe(true);
    await a.close();
    expect(SessionManager.isProcessCwdOwner(a)).toBe(false);
    expect(SessionManager.claimProcessCwdOwnership(b)).toBe(true);
    SessionManager.releaseProcessCwdOwnership(b);
  });

  it("checks the process cwd against a pinned identity, and opens directories without following a link", async () => {
    const stat = fs.statSync(process.cwd(), { bigint: true });
    await SessionManager.assertProcessCwdIdentity({ dev: stat.dev, ino: stat.ino });
    await expect(SessionManager.assertProcessCwdIdentity({ dev: stat.dev, ino: stat.ino + 1n })).rejects.toMatchObject({ code: "cwd_identity_changed" });
    const real = path.join(tmp.path, "real");
    fs.mkdirSync(real);
    fs.symlinkSync(real, path.join(tmp.path, "link"));
    const handle = await SessionManager.openNoFollowDirectory(real);
    expect((await handle.stat({ bigint: true })).ino).toBe(fs.statSync(real, { bigint: true }).ino);
    await handle.close();
    // Linux reports a final link under O_DIRECTORY | O_NOFOLLOW as ENOTDIR, other systems as ELOOP.
    await expect(SessionManager.openNoFollowDirectory(path.join(tmp.path, "link"))).rejects.toThrow(/ENOTDIR|ELOOP/);
  });
});

describe("cwd transitions and read leases", () => {
  it("runs a transition after the leases granted before it, and leases asked for later after it", async () => {
    const manager = SessionManager.inMemory(tmp.path);
    const order: string[] = [];
    const toolRunning = gate();
    const lease = manager.runWithCwdReadLease(async () => {
      order.push("tool:start");
      await toolRunning.promise;
      order.push("tool:end");
    });
    await tick();
    const move = manager.runExclusiveCwdTransition(async () => {
      order.push("move");
    });
    const later = manager.runWithCwdReadLease(async () => {
      order.push("later tool");
    });
    await tick();
    expect(order).toEqual(["tool:start"]);
    toolRunning.open();
    await Promise.all([lease, move, later]);
    expect(order).toEqual(["tool:start", "tool:end", "move", "later tool"]);
  });

  it("is re-entrant within a transition and within a lease, and join never rejects", async () => {
    const manager = SessionManager.inMemory(tmp.path);
    const inner = await manager.runExclusiveCwdTransition(async () =>
      manager.runExclusiveCwdTransition(async () => manager.runWithCwdReadLease(async () => "nested")),
    );
    expect(inner).toBe("nested");
    expect(await manager.runWithCwdReadLease(async () => manager.runWithCwdReadLease(async () => 7))).toBe(7);
    const failing = manager.runExclusiveCwdTransition(async () => {
      throw new Error("move failed");
    });
    await expect(failing).rejects.toThrow("move failed");
    await expect(manager.joinCwdTransition()).resolves.toBeUndefined();
  });

  it("counts committed moves, and refuses a target that is not the pinned directory", async () => {
    const sessions = path.join(tmp.path, "sessions");
    const from = path.join(tmp.path, "from");
    const to = path.join(tmp.path, "to");
    for (const dir of [sessions, from, to]) fs.mkdirSync(dir, { mode: 0o700 });
    const manager = SessionManager.create(from, sessions, undefined, { terminalId: null });
    expect(manager.getCwdGeneration()).toBe(0);
    const pinned = fs.statSync(to, { bigint: true });
    const handle = await SessionManager.openNoFollowDirectory(to);
    await manager.moveTo(to, { expectedIdentity: { dev: pinned.dev, ino: pinned.ino }, targetHandle: handle });
    await handle.close();
    expect(manager.getCwd()).toBe(to);
    expect(manager.getCwdGeneration()).toBe(1);

    // The name now points at another directory: the move is refused and nothing changes.
    fs.renameSync(to, path.join(tmp.path, "to-old"));
    fs.mkdirSync(to, { mode: 0o700 });
    // An identity the target cannot have (its own inode plus one), whatever inodes the machine hands out meanwhile.
    const target = fs.statSync(from, { bigint: true });
    await expect(manager.moveTo(from, { expectedIdentity: { dev: target.dev, ino: target.ino + 1n } })).rejects.toMatchObject({ code: "cwd_identity_changed" });
    expect(manager.getCwd()).toBe(to);
    expect(manager.getCwdGeneration()).toBe(1);
    await manager.close();
  });

  it("moves a managed session's artifacts with it", async () => {
    const agentDir = path.join(tmp.path, "agent");
    const from = path.join(tmp.path, "from-ws");
    const to = path.join(tmp.path, "to-ws");
    for (const dir of [from, to]) fs.mkdirSync(dir, { mode: 0o700 });
    const manager = SessionManager.create(from, SessionManager.managedDestination(from, agentDir), undefined, { terminalId: null, agentDir });
    manager.appendMessage({ role: "user", content: [{ type: "text", text: "q" }], timestamp: 1 } as AgentMessage);
    manager.appendMessage({
      role: "assistant",
      content: [{ type: "text", text: "a" }],
      provider: "p",
      model: "m",
      timestamp: 2,
      usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
      stopReason: "stop",
    } as AgentMessage);
    const id = await manager.saveArtifact("build log ".repeat(1000), "bash");
    const oldDir = manager.getArtifactsDir()!;
    await manager.moveTo(to);
    const newDir = manager.getArtifactsDir()!;
    expect(newDir).not.toBe(oldDir);
    expect(fs.existsSync(oldDir)).toBe(false);
    expect(fs.readFileSync(path.join(newDir, `${id}.bash.log`), "utf8")).toBe("build log ".repeat(1000));
    expect(await manager.saveArtifact("next", "bash")).toBe(String(Number(id) + 1));
    expect(manager.getCwdGeneration()).toBe(1);
    await manager.close();
  });
});
