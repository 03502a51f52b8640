/**
 * An explicit session directory reached through a link among its ancestors is resolved once, at
 * creation: the manager writes to and reports the real directory. A link at the directory
 * itself is still refused by the storage.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager } from "../../src/gjc/session-manager.js";
import type { AgentMessage } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: { path: string; remove(): void };
let real: string;
let link: string;
beforeEach(() => {
  tmp = makeTempDir("gjc-session-dir-links-");
  real = path.join(fs.realpathSync(tmp.path), "real");
  fs.mkdirSync(real, { mode: 0o700 });
  link = path.join(tmp.path, "link");
  fs.symlinkSync(real, link, "dir");
});
afterEach(() => tmp.remove());

const options = { terminalId: null, agentDir: "/nonexistent-agent-dir-for-tests" } as const;
const user = { role: "user", content: [{ type: "text", text: "summarise the incident log ".repeat(200) }], timestamp: 1 } as AgentMessage;
const assistant = {
  role: "assistant",
  content: [{ type: "text", text: "ok" }],
  provider: "p",
  model: "m",
  timestamp: 2,
  usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
  stopReason: "stop",
} as unknown as AgentMessage;

describe("an explicit session directory below a link", () => {
  it("is used and reported by its real path", async () => {
    const manager = SessionManager.create(real, path.join(link, "sessions", "s1"), undefined, options);
    expect(manager.getSessionDir()).toBe(path.join(real, "sessions", "s1"));
    manager.appendMessage(user);
    manager.appendMessage(assistant);
    await manager.flush();
    const file = manager.getSessionFile()!;
    expect(file.startsWith(path.join(real, "sessions", "s1") + path.sep)).toBe(true);
    expect(fs.lstatSync(file).isFile()).toBe(true);
    await manager.close();
  });

  it("that is itself the link is refused, and nothing is written through it", async () => {
    let failure: unknown;
    try {
      const manager = SessionManager.create(real, link, undefined, options);
      manager.appendMessage(user);
      manager.appendMessage(assistant);
      await manager.flush();
      await manager.close();
    } catch (error) {
      failure = error;
    }
    expect(failure).toBeInstanceOf(Error);
    expect(fs.readdirSync(real)).toEqual([]);
  });
});
