/**
 * One verdict for a session file the manager refuses or cannot take: the listing skips it with
 * its code (never lists it), `continueRecent` passes over it to the next newest session and
 * reports what it passed over (`onSkipped`), whether the file fails the owner-only rules (in an
 * explicit session directory below the agent directory) or another live process is writing it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager, type SessionManagerOptions, type SkippedSession } from "../../src/index.js";
import { isRoot } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { bundleManagerChild } from "./child.js";
import { assistant, recordingLogger } from "./helpers.js";

let tmp: { path: string; remove(): void };
let agentDir: string;
let sessionDir: string;
let base: SessionManagerOptions;

beforeEach(() => {
  tmp = makeTempDir("gjc-resume-skips-");
  agentDir = path.join(tmp.path, "agent");
  sessionDir = path.join(agentDir, "mine");
  fs.mkdirSync(sessionDir, { recursive: true, mode: 0o700 });
  base = { agentDir, logger: recordingLogger(), terminalId: null };
});
afterEach(() => tmp.remove());

async function session(text: string, mtimeSeconds: number): Promise<string> {
  const manager = SessionManager.create("/work/a", sessionDir, undefined, base);
  manager.appendMessage(assistant(text));
  await manager.close();
  const file = manager.getSessionFile()!;
  fs.utimesSync(file, mtimeSeconds, mtimeSeconds);
  return file;
}

async function resume(): Promise<{ manager: SessionManager; skipped: SkippedSession[] }> {
  const skipped: SkippedSession[] = [];
  const manager = await SessionManager.continueRecent("/work/a", sessionDir, undefined, undefined, undefined, {
    ...base,
    onSkipped: (rows) => skipped.push(...rows),
  });
  return { manager, skipped };
}

async function listed(): Promise<{ paths: string[]; skipped: SkippedSession[] }> {
  const skipped: SkippedSession[] = [];
  const sessions = await SessionManager.list("/work/a", sessionDir, undefined, { agentDir, onSkipped: (rows) => skipped.push(...rows) });
  return { paths: sessions.map((s) => s.path), skipped };
}

describe("a session file failing the owner-only rules in an explicit directory below the agent dir", () => {
  const breaks: [string, string, (file: string) => void][] = [
    ["mode 0644", "mode_mismatch", (file) => fs.chmodSync(file, 0o644)],
    ["a second hard link", "hardlink_refused", (file) => fs.linkSync(file, path.join(tmp.path, "second-link"))],
  ];
  if (isRoot()) breaks.push(["another owner", "owner_mismatch", (file) => fs.chownSync(file, 65534, 65534)]);

  it.each(breaks)("%s: skipped by the listing with its code, passed over and reported by continueRecent", async (_label, detail, breakIt) => {
    const older = await session("older", 1_000);
    const newer = await session("newer", 2_000);
    breakIt(newer);

    const list = await listed();
    expect(list.paths).toEqual([older]);
    expect(list.skipped).toEqual([{ path: newer, code: "unsafe_entry", detail }]);

    const { manager, skipped } = await resume();
    expect(manager.getSessionFile()).toBe(older);
    expect(skipped).toEqual([{ path: newer, code: "unsafe_entry", detail }]);
    await manager.close();

    // The refused file is still not taken, and a file that opens is reported as refused on open too.
    expect(await SessionManager.open(newer, sessionDir, undefined, undefined, undefined, base).catch((e: { code: string }) => e.code)).toBe("unsafe_entry");
  });

  it("with nothing else to resume, the new session comes with the report", async () => {
    const only = await session("only", 1_000);
    fs.chmodSync(only, 0o644);
    const { manager, skipped } = await resume();
    expect(manager.getSessionFile()).not.toBe(only);
    expect(manager.getEntries()).toHaveLength(0);
    expect(skipped).toEqual([{ path: only, code: "unsafe_entry", detail: "mode_mismatch" }]);
  });
});

describe("continueRecent while another process writes the newest session", () => {
  let holders: ChildProcess[] = [];
  afterEach(async () => {
    await Promise.all(
      holders.map(
        (child) =>
          new Promise((resolve) => {
            child.once("exit", resolve);
            child.stdin?.end();
          }),
      ),
    );
    holders = [];
  });

  async function hold(file: string, script: string): Promise<void> {
    const child = spawn(process.execPath, [script, file, agentDir], { stdio: ["pipe", "pipe", "inherit"] });
    holders.push(child);
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", (chunk: Buffer) => (chunk.toString().includes("held") ? resolve() : undefined));
      child.once("exit", (status) => reject(new Error(`holder exited with ${status}`)));
    });
  }

  it("takes the newest session no live writer holds, else starts a new one, and reports the busy ones", async () => {
    const child = await bundleManagerChild("hold-session");
    try {
      const older = await session("older", 1_000);
      const newer = await session("newer", 2_000);
      await hold(newer, child.file);

      const first = await resume();
      expect(first.manager.getSessionFile()).toBe(older);
      expect(first.skipped).toEqual([{ path: newer, code: "session_busy" }]);
      await first.manager.close();

      await hold(older, child.file);
      const second = await resume();
      expect([older, newer]).not.toContain(second.manager.getSessionFile());
      expect(second.manager.getEntries()).toHaveLength(0);
      expect(second.skipped).toEqual([
        { path: newer, code: "session_busy" },
        { path: older, code: "session_busy" },
      ]);
    } finally {
      child.remove();
    }
  });
});
