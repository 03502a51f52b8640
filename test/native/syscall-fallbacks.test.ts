// The system calls the addon needs but a kernel may lack, refused for real: a seccomp filter
// (test/helpers/c/enosys_exec.c) answers renameat2 or getrandom with ENOSYS in a child, below
// the libc, as kernels before 3.15 / 3.17 do. strace records what the kernel answered, so each
// test proves the fallback was taken, and then that it kept its promise.
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { SecureDir } from "../../src/index.js";
import { buildTools, type Tools } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { traceThreads } from "../helpers/trace.js";

let tools: Tools;
let tmp: ReturnType<typeof makeTempDir>;
let store: string;

beforeAll(() => {
  tools = buildTools();
});
beforeEach(() => {
  tmp = makeTempDir();
  store = path.join(tmp.path, "store");
  SecureDir.openRoot(store, { create: true }).close();
});
afterEach(() => tmp.remove());

const WRITES = 200;
// Real-shaped bytes: one long session line per file, different in each.
const content = (i: number) =>
  `${JSON.stringify({ type: "message", id: `e${i}`, message: { role: "toolResult", content: [{ type: "text", text: `line ${i}\n`.repeat(400) }] } })}\n`;

describe("a kernel without renameat2", () => {
  it("no-replace publication goes through linkat, and still never replaces", (ctx) => {
    const calls = traceThreads(
      ctx,
      tmp.path,
      ["renameat2", "linkat", "unlinkat"],
      `const root = b.openRoot(${JSON.stringify(store)});
begin();
const first = b.writeFileAtomic(root, "session.jsonl", ${JSON.stringify(content(1))}, { noReplace: true });
const second = b.writeFileAtomic(root, "session.jsonl", ${JSON.stringify(content(2))}, { noReplace: true });
end();
process.stdout.write(JSON.stringify({ first: first ?? null, second: second ?? null }));`,
      [tools.enosysExec, "renameat2"],
    );
    const renames = calls.filter((c) => c.name === "renameat2");
    expect(renames).toHaveLength(2);
    // glibc turns the kernel's ENOSYS into EINVAL; a libc without the wrapper (musl) passes it on.
    for (const call of renames) expect(call.line).toMatch(/RENAME_NOREPLACE\) = -1 (ENOSYS|EINVAL)/);
    const links = calls.filter((c) => c.name === "linkat");
    expect(links.map((c) => c.result)).toEqual([0, -1]);
    expect(links[1]?.line).toContain("EEXIST");
    expect(fs.readFileSync(path.join(store, "session.jsonl"), "utf8")).toBe(content(1));
    // The staging files are gone: the linked one unlinked, the refused one removed.
    expect(fs.readdirSync(store)).toEqual(["session.jsonl"]);
    expect(fs.statSync(path.join(store, "session.jsonl")).nlink).toBe(1);
  });
});

describe("a kernel without getrandom", () => {
  it("staging names come from the fallback, stay distinct, and every write lands", (ctx) => {
    const names = Array.from({ length: WRITES }, (_, i) => `s${String(i).padStart(4, "0")}.jsonl`);
    const calls = traceThreads(
      ctx,
      tmp.path,
      ["getrandom", "openat"],
      `const root = b.openRoot(${JSON.stringify(store)});
const names = ${JSON.stringify(names)};
const content = ${content.toString()};
begin();
const failures = names.map((name, i) => b.writeFileAtomic(root, name, content(i))).filter((r) => r && r.failed);
end();
if (failures.length) throw new Error(JSON.stringify(failures[0]));`,
      [tools.enosysExec, "getrandom"],
    );
    const draws = calls.filter((c) => c.name === "getrandom");
    expect(draws).toHaveLength(WRITES);
    for (const call of draws) expect(call.line).toMatch(/, 8, GRND_NONBLOCK\) = -1 ENOSYS/);
    const staged = calls
      .filter((c) => c.name === "openat" && c.line.includes("O_EXCL"))
      .map((c) => /"([^"]+)"/.exec(c.line)?.[1]);
    expect(staged).toHaveLength(WRITES);
    expect(new Set(staged).size).toBe(WRITES);
    expect(fs.readdirSync(store).sort()).toEqual(names);
    names.forEach((name, i) => expect(fs.readFileSync(path.join(store, name), "utf8")).toBe(content(i)));
  });
});
