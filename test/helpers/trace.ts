/**
 * Recording the syscalls a child process makes on every thread (addon work on the libuv
 * thread pool included) with `strace -f`, between two marker stats the child makes.
 */
import fs from "node:fs";
import path from "node:path";
import { expect } from "vitest";

import { BINDING_LOADER, hasCommand, run, skipBecause, type SkipContext } from "./processes.js";

/** One recorded call: its thread, its text from the name to the result (`openat(...) = 5`). */
export interface TracedCall {
  readonly tid: number;
  readonly name: string;
  readonly line: string;
  /** The return value, when it is a number. */
  readonly result: number | undefined;
}

/**
 * Runs `body` in a node child where `b` is the loaded addon and `begin()` / `end()` mark the
 * traced span (call `end()` when the work to record has settled, e.g. in a `then`). Returns
 * the calls of `traceSet` (strace `-e trace=` names) made in that span, on any thread.
 * Skips the test when strace is missing or not allowed to trace. `launcher` is a command the
 * child runs under (e.g. `[tools.enosysExec, "renameat2"]`), traced with it.
 */
export function traceThreads(ctx: SkipContext, logDir: string, traceSet: readonly string[], body: string, launcher: readonly string[] = []): TracedCall[] {
  if (!hasCommand("strace")) skipBecause(ctx, "strace is not installed");
  // load(): the addon is loaded before the span, not by its first call inside it.
  const script = `const b = require(${JSON.stringify(BINDING_LOADER)}).load();
const begin = () => { try { require("node:fs").statSync("/gjc-trace-begin"); } catch {} };
const end = () => { try { require("node:fs").statSync("/gjc-trace-end"); } catch {} };
${body}`;
  const log = fs.mkdtempSync(path.join(logDir, "strace-"));
  const file = path.join(log, "calls.log");
  const result = run(
    "strace",
    ["-f", "-o", file, "-e", `trace=${[...traceSet, "stat", "newfstatat", "statx"].join(",")}`, ...launcher, process.execPath, "-e", script],
    { timeout: 30_000 },
  );
  if (result.status !== 0 && /ptrace|PTRACE|Operation not permitted/.test(result.stderr)) {
    skipBecause(ctx, `strace cannot trace here: ${result.stderr.trim().split("\n")[0]}`);
  }
  expect(result.signal, "the child blocked").toBeNull();
  expect(result.status, result.stderr).toBe(0);
  const calls = joinResumed(fs.readFileSync(file, "utf8"));
  const begin = calls.findIndex((c) => c.line.includes("/gjc-trace-begin"));
  const end = calls.findIndex((c) => c.line.includes("/gjc-trace-end"));
  expect(begin).toBeGreaterThanOrEqual(0);
  expect(end).toBeGreaterThan(begin);
  return calls.slice(begin + 1, end).filter((c) => traceSet.includes(c.name));
}

/**
 * Parses `strace -f` output, where a call one thread was in when another thread's call was
 * logged is split into an `<unfinished ...>` line and a later `<... name resumed>` line:
 * each call becomes one entry, placed where it was entered.
 */
function joinResumed(text: string): TracedCall[] {
  const calls: { tid: number; line: string }[] = [];
  const pending = new Map<number, number>();
  for (const raw of text.split("\n")) {
    const match = /^(\d+)\s+(.*)$/.exec(raw);
    if (!match) continue;
    const tid = Number(match[1]);
    const rest = match[2] as string;
    if (rest.endsWith("<unfinished ...>")) {
      pending.set(tid, calls.length);
      calls.push({ tid, line: rest.slice(0, -"<unfinished ...>".length).trimEnd() });
      continue;
    }
    const resumed = /^<\.\.\. [a-z0-9_]+ resumed>\s?(.*)$/.exec(rest);
    const at = pending.get(tid);
    if (resumed && at !== undefined) {
      const call = calls[at] as { tid: number; line: string };
      call.line += resumed[1];
      pending.delete(tid);
      continue;
    }
    if (/^[a-z0-9_]+\(/.test(rest)) calls.push({ tid, line: rest });
  }
  return calls.map(({ tid, line: raw }) => {
    // strace pads short calls to align their results; one space is kept.
    const line = raw.replace(/\)\s+=\s(?=-?\d+(?: .*)?$)/, ") = ");
    const result = /\) = (-?\d+)(?: .*)?$/.exec(line);
    return { tid, name: line.slice(0, line.indexOf("(")), line, result: result ? Number(result[1]) : undefined };
  });
}
