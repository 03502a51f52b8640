// The system calls the addon needs but a kernel may lack, refused for real: a seccomp filter
// (test/helpers/c/enosys_exec.c) answers renameat2 or getrandom with ENOSYS in a child, below
// the libc, as kernels before 3.15 / 3.17 do. strace records what the kernel answered, so each
// test proves the fallback was taken, and then that it kept its promise. A libc without a
// renameat2 wrapper (musl; glibc before 2.28), where the addon makes the system call itself,
// is reached through the native core built against musl by the prebuilds' compiler.
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { SecureDir } from "../../src/index.js";
import { buildTools, hasCommand, REPO_ROOT, run, skipBecause, type SkipContext, type Tools } from "../helpers/processes.js";
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

/**
 * test/helpers/c/core_publish.cc with the Linux sources of the native core, built as a static
 * musl executable by the pinned zig (scripts/toolchain.sh, installed from the npm registry on
 * first use), into a temp folder keyed by the sources.
 */
function muslCorePublish(): string {
  const sources = run(process.execPath, [path.join(REPO_ROOT, "scripts", "gyp-sources.cjs"), "linux", "sources"], { cwd: REPO_ROOT })
    .stdout.split("\n")
    .filter((f) => f.startsWith("native/core/"));
  const inputs = ["test/helpers/c/core_publish.cc", ...sources];
  const hash = crypto.createHash("sha256");
  for (const f of inputs) hash.update(fs.readFileSync(path.join(REPO_ROOT, f)));
  const out = path.join(os.tmpdir(), `gjc-core-publish-musl-${process.getuid?.() ?? 0}-${hash.digest("hex").slice(0, 12)}`);
  if (fs.existsSync(out)) return out;
  const staging = `${out}.${process.pid}`;
  // Through toolchain.sh, which also points zig at the cache of runtimes the prebuilds filled.
  const compile = '. scripts/toolchain.sh && zig="$(zig_path)" && exec "$zig" c++ "$@"';
  const args = ["-target", "x86_64-linux-musl", "-std=c++17", "-O1", "-Wall", "-Wextra", "-o", staging, ...inputs];
  const built = run("bash", ["-c", compile, "bash", ...args], { cwd: REPO_ROOT, timeout: 900_000 });
  if (built.status !== 0) throw new Error(`building core_publish for musl failed: ${built.stderr}`);
  fs.renameSync(staging, out);
  return out;
}

describe.runIf(process.platform === "linux" && process.arch === "x64")("a libc without renameat2 (musl)", { timeout: 1_200_000 }, () => {
  let corePublish: string;
  beforeAll(() => {
    corePublish = muslCorePublish();
  }, 1_200_000);

  /** core_publish under strace (and `launcher`): its printed results and the traced publication calls. */
  function publishTwice(ctx: SkipContext, launcher: readonly string[]): { printed: string[]; calls: string[] } {
    if (!hasCommand("strace")) skipBecause(ctx, "strace is not installed");
    const log = path.join(tmp.path, "strace.log");
    const result = run("strace", ["-f", "-o", log, "-e", "trace=renameat2,linkat", ...launcher, corePublish, store, "session.jsonl", content(1), content(2)]);
    expect(result.status, result.stderr).toBe(0);
    const calls = fs
      .readFileSync(log, "utf8")
      .split("\n")
      .map((line) => line.replace(/^\d+\s+/, ""))
      .filter((line) => /^(renameat2|linkat)\(/.test(line));
    return { printed: result.stdout.trim().split("\n"), calls };
  }

  it("links no renameat2 (weak and null), so the system call is made directly, and refuses to replace", (ctx) => {
    const symbols = run("nm", [corePublish]).stdout;
    expect(symbols).toMatch(/^\s+w renameat2$/m);
    const { printed, calls } = publishTwice(ctx, []);
    expect(printed).toEqual(["ok", `already_exists renameat2 ${os.constants.errno.EEXIST}`]);
    expect(calls).toHaveLength(2);
    expect(calls[0]).toMatch(/RENAME_NOREPLACE\) += 0$/);
    expect(calls[1]).toMatch(/RENAME_NOREPLACE\) += -1 EEXIST/);
    expect(fs.readFileSync(path.join(store, "session.jsonl"), "utf8")).toBe(content(1));
    expect(fs.readdirSync(store)).toEqual(["session.jsonl"]);
  });

  it("the kernel's ENOSYS reaches the addon untranslated and leads to linkat, which still never replaces", (ctx) => {
    const { printed, calls } = publishTwice(ctx, [tools.enosysExec, "renameat2"]);
    expect(printed).toEqual(["ok", `already_exists linkat ${os.constants.errno.EEXIST}`]);
    expect(calls.map((c) => c.replace(/\(.*\) += /, " = ").replace(/ \(.*\)$/, ""))).toEqual([
      "renameat2 = -1 ENOSYS",
      "linkat = 0",
      "renameat2 = -1 ENOSYS",
      "linkat = -1 EEXIST",
    ]);
    expect(fs.readFileSync(path.join(store, "session.jsonl"), "utf8")).toBe(content(1));
    expect(fs.readdirSync(store)).toEqual(["session.jsonl"]);
    expect(fs.statSync(path.join(store, "session.jsonl")).nlink).toBe(1);
  });
});
