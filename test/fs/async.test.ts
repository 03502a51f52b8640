// The thread-pool variants of the fsync-bound operations.
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SecureDir } from "../../src/index.js";
import { asyncCodeOf } from "../helpers/errors.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: ReturnType<typeof makeTempDir>;
let root: SecureDir;
beforeEach(() => {
  tmp = makeTempDir();
  root = SecureDir.openRoot(path.join(tmp.path, "store"), { create: true });
});
afterEach(() => {
  root.close();
  tmp.remove();
});

function descriptorsInto(dir: string): number {
  return fs.readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir);
    } catch {
      return false;
    }
  }).length;
}

describe("async variants", () => {
  it("writeFileAtomicAsync publishes, refuses to replace with noReplace, and reports codes as SecureFsError", async () => {
    await root.writeFileAtomicAsync("a.json", "one");
    await root.writeFileAtomicAsync("a.json", Buffer.from("two"));
    expect(fs.readFileSync(path.join(root.path, "a.json"), "utf8")).toBe("two");
    expect(await asyncCodeOf(() => root.writeFileAtomicAsync("a.json", "three", { noReplace: true }))).toBe("already_exists");
    expect(await asyncCodeOf(() => root.writeFileAtomicAsync("../x", "y"))).toBe("invalid_name");
    expect(fs.readdirSync(root.path)).toEqual(["a.json"]);
  });

  it("copies the data when called, so later changes to the buffer do not leak in", async () => {
    const data = Buffer.from("original");
    const pending = root.writeFileAtomicAsync("copy", data);
    data.fill(0x78);
    await pending;
    expect(fs.readFileSync(path.join(root.path, "copy"), "utf8")).toBe("original");
  });

  it("exactly one of many concurrent no-replace writers wins", async () => {
    const results = await Promise.allSettled(Array.from({ length: 16 }, (_, i) => root.writeFileAtomicAsync("claim", `writer ${i}`, { noReplace: true })));
    const winners = results.filter((r) => r.status === "fulfilled");
    expect(winners).toHaveLength(1);
    for (const r of results) {
      if (r.status === "rejected") expect((r.reason as { code: string }).code).toBe("already_exists");
    }
    expect(fs.readFileSync(path.join(root.path, "claim"), "utf8")).toMatch(/^writer \d+$/);
    expect(fs.readdirSync(root.path)).toEqual(["claim"]);
  });

  it("close() during pending work marks the handle closed and releases the descriptor once the work is done", async () => {
    const dir = root.openDir("d", { create: true });
    const dirPath = path.join(root.path, "d");
    expect(descriptorsInto(dirPath)).toBe(1);
    const pending = dir.writeFileAtomicAsync("f", "data");
    dir.close();
    expect(dir.closed).toBe(true);
    expect(await asyncCodeOf(() => dir.writeFileAtomicAsync("g", "x"))).toBe("closed");
    await pending;
    expect(fs.readFileSync(path.join(dirPath, "f"), "utf8")).toBe("data");
    expect(descriptorsInto(dirPath)).toBe(0);
  });

  it("syncAsync flushes files and directories, and a closed handle is closed", async () => {
    const file = root.openFile("log", { append: true, create: "exclusive" });
    file.append("x\n");
    await file.syncAsync();
    await root.syncAsync();
    file.close();
    expect(await asyncCodeOf(() => file.syncAsync())).toBe("closed");
  });
});
