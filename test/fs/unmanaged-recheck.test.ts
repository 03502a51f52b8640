// unmanagedTreeUnchanged: the second walk of a legacy artifact tree, checked entry for entry
// in the addon against the first. True only for the same tree: every change a copy must not
// miss (a file grown, rewritten in place with its mtime put back, replaced, removed, added,
// made a link or a directory; a directory added or removed; a tree moved past a bound) is
// false, and a root that moved is refused as the first walk refuses it.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { unmanagedTreeUnchanged, walkUnmanagedTree, type UnmanagedTree } from "../../src/fs/index.js";
import binding from "../../src/native/binding.cjs";
import { asyncCodeOf } from "../helpers/errors.js";
import { makeTempDir } from "../helpers/temp.js";

const posix = process.platform !== "win32";
const LIMITS = { maxDepth: 8, maxEntries: 100 };
let tmp: ReturnType<typeof makeTempDir>;
let n = 0;

beforeAll(() => {
  tmp = makeTempDir("gjc-recheck-");
});
afterAll(() => tmp.remove());

/** A fresh tree: two directories, files at three depths. */
function tree(): string {
  n += 1;
  const root = path.join(tmp.path, `tree-${n}`);
  fs.mkdirSync(path.join(root, "a", "deep"), { recursive: true, mode: 0o700 });
  fs.mkdirSync(path.join(root, "b"));
  fs.writeFileSync(path.join(root, "top.log"), "top\n");
  fs.writeFileSync(path.join(root, "a", "one.log"), "one\n");
  fs.writeFileSync(path.join(root, "a", "deep", "two.log"), "two\n");
  fs.writeFileSync(path.join(root, "b", "three.log"), "three\n");
  return root;
}

function idOf(p: string): { dev: bigint; ino: bigint } {
  const st = fs.lstatSync(p, { bigint: true });
  return { dev: st.dev, ino: st.ino };
}

async function walk(root: string): Promise<UnmanagedTree> {
  const walked = await walkUnmanagedTree(root, idOf(root), LIMITS);
  if (walked === "unsupported") throw new Error("the native walk is unsupported on this platform");
  return walked;
}

/** Walks a fresh tree, applies `change`, and checks it again against the first walk. */
async function unchangedAfter(change: (root: string) => void): Promise<boolean> {
  const root = tree();
  const id = idOf(root);
  const first = await walk(root);
  change(root);
  return unmanagedTreeUnchanged(root, id, LIMITS, first);
}

describe.runIf(posix)("unmanagedTreeUnchanged", () => {
  it("is true for the same tree, also when only read or only its directories' times moved", async () => {
    expect(await unchangedAfter(() => {})).toBe(true);
    expect(
      await unchangedAfter((root) => {
        fs.readFileSync(path.join(root, "a", "one.log"));
        const past = new Date(Date.now() - 60_000);
        fs.utimesSync(path.join(root, "a"), past, past);
      }),
    ).toBe(true);
  });

  const changes: Record<string, (root: string) => void> = {
    "a file grown": (root) => fs.appendFileSync(path.join(root, "a", "deep", "two.log"), "more"),
    "a file rewritten at the same size with its times put back": (root) => {
      const file = path.join(root, "b", "three.log");
      const st = fs.statSync(file);
      fs.writeFileSync(file, "THREE\n");
      fs.utimesSync(file, st.atime, st.mtime);
    },
    "a file's mode changed (ctime)": (root) => fs.chmodSync(path.join(root, "top.log"), 0o600),
    "a file replaced by another with the same bytes": (root) => {
      const file = path.join(root, "a", "one.log");
      fs.writeFileSync(`${file}.new`, "one\n");
      fs.renameSync(`${file}.new`, file);
    },
    "a file hard-linked": (root) => fs.linkSync(path.join(root, "top.log"), path.join(tmp.path, `outside-${n}`)),
    "a file removed": (root) => fs.rmSync(path.join(root, "b", "three.log")),
    "a file added": (root) => fs.writeFileSync(path.join(root, "a", "zzz.log"), "new"),
    "a file added before the others": (root) => fs.writeFileSync(path.join(root, "a", "0.log"), "new"),
    "a directory added": (root) => fs.mkdirSync(path.join(root, "c")),
    "an empty directory removed": (root) => {
      fs.rmSync(path.join(root, "b", "three.log"));
      fs.rmdirSync(path.join(root, "b"));
    },
    "a file made a symbolic link to itself's copy": (root) => {
      const file = path.join(root, "top.log");
      fs.copyFileSync(file, path.join(tmp.path, `copy-${n}`));
      fs.rmSync(file);
      fs.symlinkSync(path.join(tmp.path, `copy-${n}`), file);
    },
    "a file made a directory": (root) => {
      fs.rmSync(path.join(root, "top.log"));
      fs.mkdirSync(path.join(root, "top.log"));
    },
    "entries added past the entry bound": (root) => {
      for (let i = 0; i < LIMITS.maxEntries; i++) fs.writeFileSync(path.join(root, "b", `x${i}`), "");
    },
  };
  for (const [name, change] of Object.entries(changes)) {
    it(`is false after ${name}`, async () => {
      expect(await unchangedAfter(change)).toBe(false);
    });
  }

  it("refuses a root that moved as the walk does: replaced -> identity_mismatch, a link -> symlink_refused, gone -> not_found", async () => {
    const root = tree();
    const id = idOf(root);
    const first = await walk(root);
    fs.renameSync(root, `${root}.old`);
    expect(await asyncCodeOf(() => unmanagedTreeUnchanged(root, id, LIMITS, first))).toBe("not_found");
    fs.symlinkSync(`${root}.old`, root);
    expect(await asyncCodeOf(() => unmanagedTreeUnchanged(root, id, LIMITS, first))).toBe("symlink_refused");
    fs.rmSync(root);
    fs.mkdirSync(root);
    expect(await asyncCodeOf(() => unmanagedTreeUnchanged(root, id, LIMITS, first))).toBe("identity_mismatch");
  });

  it("refuses a tree that walkUnmanagedTree did not return, and malformed expectations in the addon", async () => {
    const root = tree();
    const first = await walk(root);
    const copy: UnmanagedTree = { entries: [...first.entries], truncated: first.truncated };
    expect(await asyncCodeOf(() => unmanagedTreeUnchanged(root, idOf(root), LIMITS, copy))).toBe("invalid_argument");
    const id = BigUint64Array.of(...Object.values(idOf(root)));
    const good = { paths: ["a"], info: Float64Array.of(1, 1, 0, 2), ids: BigInt64Array.of(1n, 2n), times: BigInt64Array.of(3n, 4n) };
    const malformed = [
      { ...good, paths: "a" },
      { ...good, info: Float64Array.of(1, 1, 0) },
      { ...good, info: Float64Array.of(1, 99, 0, 2) },
      { ...good, ids: BigUint64Array.of(1n, 2n) },
      { ...good, times: BigInt64Array.of(3n) },
      { ...good, paths: [7] },
      null,
    ];
    for (const expected of malformed) {
      expect(binding.walkTreeAsync(root, id, 8, 100, expected as never)).toMatchObject({ failed: true, code: "invalid_argument" });
    }
    expect(await binding.walkTreeAsync(root, id, 8, 100, good as never)).toBe("differs");
  });
});
