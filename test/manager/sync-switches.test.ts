/**
 * The synchronous hooks a facade for pi's non-awaiting runtime uses (internal, not on the main
 * entry): open, newSession and setSessionFile on the same load path as the async API.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager } from "../../src/index.js";
import { synchronousSwitches } from "../../src/manager/session-manager.js";
import { makeTempDir } from "../helpers/temp.js";
import { assistant, codeOfAsync, readRecords, recordingLogger, user } from "./helpers.js";

let tmp: { path: string; remove(): void };
let dir: string;
const extras = () => ({ terminalId: null, logger: recordingLogger() });
beforeEach(() => {
  tmp = makeTempDir("gjc-sync-");
  dir = path.join(tmp.path, "sessions");
});
afterEach(() => tmp.remove());

describe("synchronous switches", () => {
  it("open loads a file with the same checks and lock as the async open", async () => {
    const sync = synchronousSwitches();
    const writer = SessionManager.create("/s", dir, undefined, extras());
    writer.appendMessage(user("q"));
    writer.appendMessage(assistant("a"));
    await writer.flush();
    const file = writer.getSessionFile()!;
    expect(await codeOfAsync(() => sync.open(file, undefined, undefined, extras()))).toBe("session_busy");
    const reader = sync.open(file, undefined, undefined, { ...extras(), readOnly: true });
    expect(reader.getEntries()).toHaveLength(2);
    await writer.close();
    const opened = sync.open(file, dir, undefined, extras());
    expect([opened.getSessionId(), opened.getCwd(), opened.getLeafId()]).toEqual([writer.getSessionId(), "/s", writer.getLeafId()]);
    await opened.close();
    fs.writeFileSync(path.join(dir, "newer.jsonl"), `{"type":"session","version":6,"id":"x","timestamp":"t","cwd":"/"}\n`, { mode: 0o600 });
    expect(await codeOfAsync(() => sync.open(path.join(dir, "newer.jsonl")))).toBe("version_too_new");
  });

  it("newSession and setSessionFile switch before returning; the old file is finished in the background", async () => {
    const sync = synchronousSwitches();
    const manager = SessionManager.create("/s", dir, undefined, extras());
    manager.appendMessage(assistant("a"));
    const first = manager.getSessionFile()!;
    const second = sync.newSession(manager, { id: "second-session" })!;
    expect(manager.getSessionId()).toBe("second-session");
    expect(await codeOfAsync(() => sync.newSession(manager, { id: "bad/id" }))).toBe("invalid_session_id");
    manager.appendMessage(user("in the second"));
    manager.appendMessage(assistant("b"));
    // The first file is still being written and released in the background.
    expect(await codeOfAsync(() => sync.setSessionFile(manager, first))).toBe("session_busy");
    expect(await codeOfAsync(() => sync.setSessionFile(manager, second))).toBe("session_busy");
    await manager.flush();
    sync.setSessionFile(manager, first);
    expect(manager.getEntries()).toHaveLength(1);
    const missing = path.join(dir, "fresh.jsonl");
    sync.setSessionFile(manager, missing);
    expect(manager.getSessionFile()).toBe(missing);
    manager.appendMessage(user("queued behind the header"));
    await manager.close();
    expect(readRecords(second).map((r) => r.type)).toEqual(["session", "message", "message"]);
    expect(readRecords(missing).map((r) => r.type)).toEqual(["session", "message"]);
    expect(readRecords(first)).toHaveLength(2);
  });
});
