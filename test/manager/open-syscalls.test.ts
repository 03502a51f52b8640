/**
 * What resuming a managed session and appending one line costs the file system, counted with
 * strace in a real child process: the held handles an open works through (each directory walked
 * once, the transcript opened once and read through the writer's own descriptor, its line index
 * opened once for the read and the upkeep), no directory created, one sync for one flush.
 */
import fs from "node:fs";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { SessionManager } from "../../src/index.js";
import { hasCommand, run, skipBecause } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { bundleManagerChild } from "./child.js";
import type { BundledChild } from "../storage/child-bundle.js";

/**
 * The calls an open plus one append made when this bound was set, for an agent directory two levels
 * below `/` (issue 32's goal is 40). A change that adds a call to this path shows here first;
 * lowering the bound is the point.
 */
const MOST_CALLS = 92;
/** Each directory above the agent directory: its walk (open, stat, close) and a readlink in each of the path's canonicalisations. */
const PER_ANCESTOR = 6;
/** The file system's calls (the event loop's own, such as epoll's, vary with timing and are left out). */
const FILE_CALLS = [
  "openat",
  "open",
  "close",
  "read",
  "pread64",
  "write",
  "pwrite64",
  "lseek",
  "fstat",
  "newfstatat",
  "statx",
  "fgetxattr",
  "flistxattr",
  "fchmod",
  "fcntl",
  "ftruncate",
  "getdents64",
  "mkdir",
  "mkdirat",
  "readlink",
  "access",
  "unlinkat",
  "renameat",
  "renameat2",
  "linkat",
  "fsync",
  "fdatasync",
];

let tmp: { path: string; remove(): void };
let child: BundledChild;
beforeAll(async () => {
  tmp = makeTempDir("gjc-open-syscalls-");
  child = await bundleManagerChild("open-append");
});
afterAll(() => {
  child?.remove();
  tmp?.remove();
});

/** A managed session of `turns` turns with long prompts and tool output, written through the library. */
async function session(agentDir: string, cwd: string, turns: number): Promise<string> {
  const manager = SessionManager.create(cwd, undefined, undefined, { agentDir, terminalId: null, logger: { error() {} } });
  const pasted = "Here is the stack trace and the file I pasted for you to read. ".repeat(60);
  for (let i = 0; i < turns; i++) {
    manager.appendMessage({ role: "user", content: [{ type: "text", text: `${pasted} (${i})` }], timestamp: i });
    manager.appendMessage({ role: "assistant", provider: "p", model: "m", content: [{ type: "text", text: `Reading it now (${i}).` }], timestamp: i } as never);
  }
  await manager.flush();
  await manager.close();
  return manager.getSessionFile()!;
}

describe("resume and one append", () => {
  it("walk each directory once, open the transcript and its index once, create nothing, sync once", async (ctx) => {
    if (!hasCommand("strace")) skipBecause(ctx, "strace is not installed");
    const agentDir = path.join(tmp.path, "agent");
    fs.mkdirSync(agentDir, { mode: 0o700 });
    const cwd = path.join(tmp.path, "project");
    fs.mkdirSync(cwd);
    const warmUp = await session(agentDir, cwd, 3);
    const file = await session(agentDir, cwd, 120);
    const log = path.join(tmp.path, "calls.log");
    const traced = run("strace", ["-f", "-qq", "-o", log, "-e", `trace=${FILE_CALLS.join(",")}`, process.execPath, child.file, warmUp, file, agentDir], {
      timeout: 60_000,
    });
    if (traced.status !== 0 && /ptrace|PTRACE|Operation not permitted/.test(traced.stderr))
      skipBecause(ctx, `strace cannot trace here: ${traced.stderr.trim().split("\n")[0]}`);
    expect(traced.status, traced.stderr).toBe(0);
    expect(traced.stdout.trim()).toBe("240");

    const lines = fs.readFileSync(log, "utf8").split("\n");
    const begin = lines.findIndex((line) => line.includes("/gjc-trace-begin"));
    const end = lines.findIndex((line) => line.includes("/gjc-trace-end"));
    expect(begin).toBeGreaterThanOrEqual(0);
    expect(end).toBeGreaterThan(begin);
    // One call per line: a call another thread interrupted is logged twice (`unfinished`, then `resumed`).
    const calls = lines.slice(begin + 1, end).filter((line) => /^\d+\s+[a-z0-9_]+\(/.test(line));
    const name = path.basename(file);
    const opensOf = (target: string) => calls.filter((line) => /^\d+\s+openat\(/.test(line) && line.includes(`"${target}"`));

    expect(calls.filter((line) => /\s(mkdir|mkdirat)\(/.test(line))).toEqual([]);
    expect(calls.filter((line) => line.includes("O_CREAT"))).toEqual([]);
    expect(opensOf(name)).toHaveLength(1);
    expect(opensOf(`.gjc-lines.${name}.v6`)).toHaveLength(1);
    expect(calls.filter((line) => /\s(fsync|fdatasync)\(/.test(line))).toHaveLength(1);
    const bound = MOST_CALLS + PER_ANCESTOR * (tmp.path.split(path.sep).filter(Boolean).length - 2);
    expect(calls.length, calls.join("\n")).toBeLessThanOrEqual(bound);
    console.log(`resume + one append: ${calls.length} file system calls (bound ${bound}, goal 40)`);
  });
});
