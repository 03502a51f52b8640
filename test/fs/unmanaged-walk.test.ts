// walkUnmanagedTree: the no-follow walk of a legacy artifact tree in one addon call. Its
// entries must be exactly what lstat says of each path, in per-directory byte order with
// directories before their contents; links and special files are reported, never entered
// or opened; the depth and entry bounds hold; refusals carry stable codes; and every
// descriptor it opens is no-follow, close-on-exec and closed before it resolves.
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { type EntryType } from "../../src/index.js";
import { walkUnmanagedTree, type UnmanagedEntry, type UnmanagedTree } from "../../src/fs/index.js";
import { asyncCodeOf } from "../helpers/errors.js";
import { isRoot, run, skipBecause } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { traceThreads } from "../helpers/trace.js";

const posix = process.platform !== "win32";
const WIDE = { maxDepth: 32, maxEntries: 10_000 };
let tmp: ReturnType<typeof makeTempDir>;
let n = 0;

beforeAll(() => {
  tmp = makeTempDir("gjc-walk-");
});
afterAll(() => tmp.remove());

/** A fresh tree root; `fill` plants entries by relative path (a trailing `/` makes a directory). */
function tree(fill: Record<string, string> = {}): string {
  n += 1;
  const root = path.join(tmp.path, `tree-${n}`);
  fs.mkdirSync(root, { mode: 0o700 });
  for (const [rel, content] of Object.entries(fill)) {
    const target = path.join(root, rel);
    if (rel.endsWith("/")) fs.mkdirSync(target, { recursive: true });
    else {
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, content);
    }
  }
  return root;
}

function idOf(p: string): { dev: bigint; ino: bigint } {
  const st = fs.lstatSync(p, { bigint: true });
  return { dev: st.dev, ino: st.ino };
}

async function walk(root: string, limits = WIDE): Promise<UnmanagedTree> {
  const walked = await walkUnmanagedTree(root, idOf(root), limits);
  if (walked === "unsupported") throw new Error("the native walk is unsupported on this platform");
  return walked;
}

function typeOf(st: fs.BigIntStats): EntryType {
  if (st.isSymbolicLink()) return "symlink";
  if (st.isDirectory()) return "directory";
  if (st.isFile()) return "file";
  if (st.isFIFO()) return "fifo";
  if (st.isSocket()) return "socket";
  return "unknown";
}

/** What the walk must report for `rel` below `root`, from Node's own lstat of the path. */
function lstatEntry(root: string, rel: string): UnmanagedEntry {
  const st = fs.lstatSync(path.join(root, rel), { bigint: true });
  return {
    path: rel,
    depth: rel.split("/").length,
    type: typeOf(st),
    dev: st.dev,
    ino: st.ino,
    size: Number(st.size),
    nlink: Number(st.nlink),
    mtimeNs: st.mtimeNs,
    ctimeNs: st.ctimeNs,
  };
}

const paths = (t: UnmanagedTree) => t.entries.map((e) => e.path);

describe.runIf(posix)("walkUnmanagedTree: entries", () => {
  it("reports every entry as lstat does, each directory's names in byte order, directories before their contents", async () => {
    const root = tree({
      "b.txt": "hello",
      "a/z.log": "zz",
      "a/y/deep.bin": "abc",
      "a-b": "dash",
      "a.b": "dot",
      "B": "upper",
      "\u00e9.txt": "accent",
      "empty-dir/": "",
      "empty-file": "",
    });
    const walked = await walk(root);
    // "a-b" and "a.b" sort after "a" but, by whole paths, would come before "a/...": the
    // order is per directory, not of the joined paths.
    const expected = ["B", "a", "a/y", "a/y/deep.bin", "a/z.log", "a-b", "a.b", "b.txt", "empty-dir", "empty-file", "\u00e9.txt"];
    expect(paths(walked)).toEqual(expected);
    expect(walked.truncated).toBe(false);
    expect(walked.entries).toEqual(expected.map((rel) => lstatEntry(root, rel)));
    expect(walked.entries.find((e) => e.path === "a/y")).toMatchObject({ type: "directory", depth: 2 });
    expect(walked.entries.find((e) => e.path === "empty-file")).toMatchObject({ type: "file", size: 0, nlink: 1 });
  });

  it("an empty root has no entries", async () => {
    expect(await walk(tree())).toEqual({ entries: [], truncated: false });
  });

  it("reports links to a file, to a directory and to nothing as symlinks and never enters them", async () => {
    const root = tree({ "d/inside": "in", f: "file" });
    fs.symlinkSync("f", path.join(root, "link-file"));
    fs.symlinkSync("d", path.join(root, "link-dir"));
    fs.symlinkSync(path.join(root, "d"), path.join(root, "link-dir-absolute"));
    fs.symlinkSync("/nonexistent/target", path.join(root, "dangling"));
    const walked = await walk(root);
    const expected = ["d", "d/inside", "dangling", "f", "link-dir", "link-dir-absolute", "link-file"];
    expect(paths(walked)).toEqual(expected);
    expect(walked.entries).toEqual(expected.map((rel) => lstatEntry(root, rel)));
    for (const link of ["dangling", "link-dir", "link-dir-absolute", "link-file"]) {
      expect(walked.entries.find((e) => e.path === link)?.type, link).toBe("symlink");
    }
  });

  it("reports a FIFO and a socket without opening them (the walk does not block)", async () => {
    const root = tree({ z: "after" });
    expect(run("mkfifo", ["-m", "600", path.join(root, "pipe")]).status).toBe(0);
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(path.join(root, "sock"), resolve));
    try {
      const walked = await walk(root);
      expect(paths(walked)).toEqual(["pipe", "sock", "z"]);
      expect(walked.entries).toEqual(["pipe", "sock", "z"].map((rel) => lstatEntry(root, rel)));
      expect(walked.entries.map((e) => e.type)).toEqual(["fifo", "socket", "file"]);
    } finally {
      server.close();
    }
  });

  it("reports both names of a hard link with nlink 2 and the same identity", async () => {
    const root = tree({ one: "shared" });
    fs.linkSync(path.join(root, "one"), path.join(root, "two"));
    const walked = await walk(root);
    expect(walked.entries).toEqual(["one", "two"].map((rel) => lstatEntry(root, rel)));
    const [one, two] = walked.entries;
    expect(one?.nlink).toBe(2);
    expect(two?.ino).toBe(one?.ino);
  });
});

describe.runIf(posix)("walkUnmanagedTree: bounds", () => {
  it("enters directories down to maxDepth; deeper ones are reported but not entered", async () => {
    const root = tree({ "a/b/c/d.txt": "deep", "top.txt": "t" });
    expect(paths(await walk(root, { maxDepth: 0, maxEntries: 100 }))).toEqual(["a", "top.txt"]);
    expect(paths(await walk(root, { maxDepth: 1, maxEntries: 100 }))).toEqual(["a", "a/b", "top.txt"]);
    expect(paths(await walk(root, { maxDepth: 2, maxEntries: 100 }))).toEqual(["a", "a/b", "a/b/c", "top.txt"]);
    const full = await walk(root, { maxDepth: 3, maxEntries: 100 });
    expect(paths(full)).toEqual(["a", "a/b", "a/b/c", "a/b/c/d.txt", "top.txt"]);
    expect(full.entries.map((e) => e.depth)).toEqual([1, 2, 3, 4, 1]);
    const shallow = await walk(root, { maxDepth: 1, maxEntries: 100 });
    expect(shallow.entries.find((e) => e.path === "a/b")).toEqual(lstatEntry(root, "a/b"));
  });

  it("stops after maxEntries + 1 entries and says so only when more exist", async () => {
    const root = tree({ "a/0": "0", "a/1": "1", "a/2": "2", b: "b" });
    const all = ["a", "a/0", "a/1", "a/2", "b"];
    for (let maxEntries = 0; maxEntries < all.length - 1; maxEntries++) {
      const walked = await walk(root, { maxDepth: 8, maxEntries });
      expect(paths(walked), `maxEntries ${maxEntries}`).toEqual(all.slice(0, maxEntries + 1));
      expect(walked.truncated, `maxEntries ${maxEntries}`).toBe(true);
    }
    // Exactly maxEntries + 1 in all: everything is there, nothing was left out.
    expect(await walk(root, { maxDepth: 8, maxEntries: all.length - 1 })).toMatchObject({ truncated: false });
    expect(paths(await walk(root, { maxDepth: 8, maxEntries: all.length - 1 }))).toEqual(all);
    expect(await walk(root, { maxDepth: 8, maxEntries: all.length })).toMatchObject({ truncated: false });
  });

  it("refuses bounds and roots that are not valid arguments", async () => {
    const root = tree({ f: "x" });
    const id = idOf(root);
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(await asyncCodeOf(() => walkUnmanagedTree(root, id, { maxDepth: bad, maxEntries: 10 })), `maxDepth ${bad}`).toBe("invalid_argument");
      expect(await asyncCodeOf(() => walkUnmanagedTree(root, id, { maxDepth: 2, maxEntries: bad })), `maxEntries ${bad}`).toBe("invalid_argument");
    }
    expect(await asyncCodeOf(() => walkUnmanagedTree(path.relative(process.cwd(), root), id, WIDE))).toBe("invalid_argument");
    expect(await asyncCodeOf(() => walkUnmanagedTree("relative/dir", id, WIDE))).toBe("invalid_argument");
  });
});

describe.runIf(posix)("walkUnmanagedTree: refusals", () => {
  it("a root that is not the directory rootId names -> identity_mismatch", async () => {
    const root = tree({ f: "x" });
    const other = tree();
    const { dev, ino } = idOf(root);
    expect(await asyncCodeOf(() => walkUnmanagedTree(root, { dev, ino: ino + 1n }, WIDE))).toBe("identity_mismatch");
    expect(await asyncCodeOf(() => walkUnmanagedTree(root, idOf(other), WIDE))).toBe("identity_mismatch");
  });

  it("a root that is a symbolic link -> symlink_refused, even with the target's identity", async () => {
    const target = tree({ f: "x" });
    const link = path.join(tmp.path, `link-${n}`);
    fs.symlinkSync(target, link);
    expect(await asyncCodeOf(() => walkUnmanagedTree(link, idOf(target), WIDE))).toBe("symlink_refused");
    expect(await asyncCodeOf(() => walkUnmanagedTree(link, idOf(link), WIDE))).toBe("symlink_refused");
  });

  it("a missing root -> not_found; a root that is a file -> not_directory", async () => {
    const root = tree({ f: "x" });
    expect(await asyncCodeOf(() => walkUnmanagedTree(path.join(root, "missing"), idOf(root), WIDE))).toBe("not_found");
    expect(await asyncCodeOf(() => walkUnmanagedTree(path.join(root, "f"), idOf(path.join(root, "f")), WIDE))).toBe("not_directory");
  });

  it("a name that is not UTF-8, anywhere in the tree -> not_utf8", async () => {
    const root = tree({ "ok.txt": "x", "sub/fine": "y" });
    const bad = Buffer.concat([Buffer.from(path.join(root, "sub") + path.sep), Buffer.from([0x66, 0xff, 0x66])]);
    fs.writeFileSync(bad, "bytes");
    try {
      expect(await asyncCodeOf(() => walk(root))).toBe("not_utf8");
      // Not entered: not listed, so not refused.
      expect(paths(await walk(root, { maxDepth: 0, maxEntries: 100 }))).toEqual(["ok.txt", "sub"]);
    } finally {
      fs.unlinkSync(bad);
    }
  });

  it("a subdirectory this uid cannot read -> permission_denied (root reads it; the uid 65534 re-run checks the refusal)", async () => {
    const root = tree({ "a.txt": "x", "locked/inside": "y" });
    fs.chmodSync(path.join(root, "locked"), 0o000);
    if (isRoot()) expect(paths(await walk(root))).toEqual(["a.txt", "locked", "locked/inside"]);
    else expect(await asyncCodeOf(() => walk(root))).toBe("permission_denied");
    // Reported but not entered, it is no obstacle.
    expect(paths(await walk(root, { maxDepth: 0, maxEntries: 100 }))).toEqual(["a.txt", "locked"]);
  });
});

describe.runIf(process.platform === "linux")("walkUnmanagedTree: syscalls", () => {
  it("opens every directory no-follow and close-on-exec, never a link or a special file, and closes all it opens", (ctx) => {
    const root = tree({ "d/e/f.txt": "f", "d/g": "g", top: "t" });
    fs.symlinkSync("d", path.join(root, "link-dir"));
    fs.symlinkSync("top", path.join(root, "link-file"));
    expect(run("mkfifo", ["-m", "600", path.join(root, "pipe")]).status).toBe(0);
    const st = fs.lstatSync(root, { bigint: true });
    const calls = traceThreads(
      ctx,
      tmp.path,
      ["open", "openat", "close"],
      `const fs = require("node:fs");
const id = BigUint64Array.of(${st.dev}n, ${st.ino}n);
const before = fs.readdirSync("/proc/self/fd").length;
begin();
b.walkTreeAsync(${JSON.stringify(root)}, id, 8, 100).then((r) => {
  end();
  if (r.failed) throw new Error(r.code);
  if (r.paths.join(",") !== "d,d/e,d/e/f.txt,d/g,link-dir,link-file,pipe,top") throw new Error(r.paths.join(","));
  if (fs.readdirSync("/proc/self/fd").length !== before) throw new Error("a descriptor was left open");
});`,
    );
    const opens = calls.filter((c) => c.name !== "close");
    // The root, then each of the two directories once to hold and once to list.
    expect(opens.filter((c) => c.line.includes(JSON.stringify(root))).length).toBeGreaterThanOrEqual(1);
    for (const name of ["link-dir", "link-file", "pipe", "top", "f.txt", "g"]) {
      expect(opens.filter((c) => c.line.includes(`"${name}"`)), name).toEqual([]);
    }
    for (const name of ["d", "e"]) expect(opens.filter((c) => c.line.includes(`"${name}"`)).length, name).toBe(1);
    for (const open of opens) {
      for (const flag of ["O_NOFOLLOW", "O_CLOEXEC", "O_DIRECTORY"]) expect(open.line, flag).toContain(flag);
      expect(open.result, open.line).toBeGreaterThanOrEqual(0);
    }
    const closed = calls.filter((c) => c.name === "close").map((c) => Number(c.line.slice(6, c.line.indexOf(")"))));
    for (const open of opens) expect(closed, open.line).toContain(open.result);
    expect(opens.length).toBeGreaterThanOrEqual(4);
  });
});
