/**
 * continueRecent: this terminal's breadcrumb first (when its cwd matches), else the newest
 * session by mtime, else a new session; and the breadcrumb a writer leaves behind.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager, type SessionManagerOptions } from "../../src/index.js";
import { readBreadcrumb } from "../../src/manager/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { assistant, recordingLogger } from "./helpers.js";

let tmp: { path: string; remove(): void };
let base: SessionManagerOptions;
let sessionDir: string;
let agentDir: string;

beforeEach(() => {
  tmp = makeTempDir("gjc-manager-continue-");
  agentDir = path.join(tmp.path, "agent");
  fs.mkdirSync(agentDir, { mode: 0o700 });
  sessionDir = path.join(tmp.path, "sessions");
  base = { agentDir, logger: recordingLogger() };
});
afterEach(() => tmp.remove());

async function session(terminalId: string, cwd: string, mtimeSeconds: number): Promise<string> {
  const manager = SessionManager.create(cwd, sessionDir, undefined, { ...base, terminalId });
  manager.appendMessage(assistant(cwd));
  await manager.close();
  const file = manager.getSessionFile()!;
  fs.utimesSync(file, mtimeSeconds, mtimeSeconds);
  return file;
}

describe("continueRecent", () => {
  it("prefers the terminal's breadcrumb, falls back to the newest session", async () => {
    const older = await session("term-a", "/work/a", 1_000);
    const newer = await session("term-b", "/work/b", 2_000);
    expect(fs.readFileSync(path.join(agentDir, "terminal-sessions", "term-a"), "utf8")).toBe(`/work/a\n${older}\n`);

    const viaCrumb = await SessionManager.continueRecent("/work/a", sessionDir, undefined, undefined, undefined, { ...base, terminalId: "term-a" });
    expect(viaCrumb.getSessionFile()).toBe(older);
    await viaCrumb.close();

    // Another cwd than the breadcrumb's, or a terminal without one: the newest by mtime.
    fs.utimesSync(newer, 2_000, 2_000);
    const mismatch = await SessionManager.continueRecent("/work/c", sessionDir, undefined, undefined, undefined, { ...base, terminalId: "term-a" });
    expect(mismatch.getSessionFile()).toBe(newer);
    await mismatch.close();
    fs.utimesSync(newer, 2_000, 2_000);
    const noCrumb = await SessionManager.continueRecent("/work/a", sessionDir, undefined, undefined, undefined, { ...base, terminalId: "term-z" });
    expect(noCrumb.getSessionFile()).toBe(newer);
    expect(noCrumb.getEntries()).toHaveLength(1);
    await noCrumb.close();
  });

  it("leaves a breadcrumb naming the cwd a session was moved to before its first write", async () => {
    const manager = SessionManager.create("/work/a", sessionDir, undefined, { ...base, terminalId: "term-m" });
    await manager.moveTo("/work/m");
    manager.appendMessage(assistant("after the move"));
    await manager.close();
    expect(await readBreadcrumb(agentDir, "term-m")).toEqual({ kind: "found", cwd: "/work/m", sessionFile: manager.getSessionFile() });
    const resumed = await SessionManager.continueRecent("/work/m", sessionDir, undefined, undefined, undefined, { ...base, terminalId: "term-m" });
    expect(resumed.getSessionFile()).toBe(manager.getSessionFile());
    await resumed.close();
  });

  it("starts a new session when the directory holds none", async () => {
    const manager = await SessionManager.continueRecent("/work/a", sessionDir, undefined, undefined, undefined, { ...base, terminalId: null });
    expect(manager.getEntries()).toHaveLength(0);
    expect(fs.existsSync(manager.getSessionFile()!)).toBe(false);
    expect(manager.getHeader().cwd).toBe("/work/a");
  });
});
