/**
 * What the two disk storages refuse or enforce beyond the shared contract: links below the
 * root, special files, modes under any umask, and (managed only) owner-only verification.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { FileSessionStorage, type SessionStorage } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { bundleChild, runChild, type BundledChild } from "./child-bundle.js";
import { asyncCodeOf, codeOf, makeStorage, type StorageFixture } from "./storages.js";

describe.each(["file", "managed"] as const)("disk policy: %s", (kind) => {
  let fixture: StorageFixture;
  let storage: SessionStorage;
  let root: string;
  let outside: string;
  const at = (...names: string[]) => path.join(root, ...names);

  beforeEach(() => {
    fixture = makeStorage(kind);
    storage = fixture.storage;
    root = fixture.root;
    outside = path.join(path.dirname(root), "outside");
    fs.mkdirSync(outside, { mode: 0o700 });
    fs.writeFileSync(path.join(outside, "target.jsonl"), "secret\n", { mode: 0o600 });
  });
  afterEach(() => fixture.cleanup());

  it("refuses a directory link below the root for every operation", async () => {
    fs.symlinkSync(outside, at("link"));
    expect(codeOf(() => storage.ensureDirSync(at("link", "sub")))).toBe("symlink_refused");
    expect(codeOf(() => storage.listFilesSync(at("link")))).toBe("symlink_refused");
    expect(codeOf(() => storage.existsSync(at("link", "target.jsonl")))).toBe("symlink_refused");
    expect(await asyncCodeOf(() => storage.readText(at("link", "target.jsonl")))).toBe("symlink_refused");
    expect(codeOf(() => storage.openReaderSync(at("link", "target.jsonl")))).toBe("symlink_refused");
    expect(await asyncCodeOf(() => storage.writeText(at("link", "new.jsonl"), "x"))).toBe("symlink_refused");
    expect(codeOf(() => storage.openWriter(at("link", "target.jsonl")))).toBe("symlink_refused");
    expect(await asyncCodeOf(() => storage.rename(at("link", "target.jsonl"), at("moved.jsonl")))).toBe("symlink_refused");
    expect(await asyncCodeOf(() => storage.unlink(at("link", "target.jsonl")))).toBe("symlink_refused");
    expect(fs.readdirSync(outside)).toEqual(["target.jsonl"]);
    expect(fs.readFileSync(path.join(outside, "target.jsonl"), "utf8")).toBe("secret\n");
  });

  it("refuses a file link at the final component without touching its target", async () => {
    fs.symlinkSync(path.join(outside, "target.jsonl"), at("s.jsonl"));
    fs.symlinkSync(path.join(outside, "dangling.jsonl"), at("d.jsonl"));
    await storage.writeText(at("real.jsonl"), "real\n");
    expect(await asyncCodeOf(() => storage.readText(at("s.jsonl")))).toBe("symlink_refused");
    expect(await asyncCodeOf(() => storage.readTextPrefix(at("s.jsonl"), 10))).toBe("symlink_refused");
    expect(codeOf(() => storage.openReaderSync(at("s.jsonl")))).toBe("symlink_refused");
    expect(codeOf(() => storage.openReaderSync(at("d.jsonl")))).toBe("symlink_refused");
    expect(codeOf(() => storage.statSync(at("s.jsonl")))).toBe("symlink_refused");
    expect(codeOf(() => storage.existsSync(at("s.jsonl")))).toBe("symlink_refused");
    expect(codeOf(() => storage.openWriter(at("s.jsonl")))).toBe("symlink_refused");
    expect(codeOf(() => storage.openWriter(at("d.jsonl")))).toBe("symlink_refused");
    expect(await asyncCodeOf(() => storage.writeText(at("s.jsonl"), "x"))).toBe("symlink_refused");
    expect(await asyncCodeOf(() => storage.unlink(at("s.jsonl")))).toBe("symlink_refused");
    expect(await asyncCodeOf(() => storage.rename(at("s.jsonl"), at("t.jsonl")))).toBe("symlink_refused");
    expect(await asyncCodeOf(() => storage.rename(at("real.jsonl"), at("s.jsonl")))).toBe("symlink_refused");
    expect(fs.readdirSync(outside)).toEqual(["target.jsonl"]);
    expect(fs.readFileSync(path.join(outside, "target.jsonl"), "utf8")).toBe("secret\n");
    expect(fs.lstatSync(at("s.jsonl")).isSymbolicLink()).toBe(true);
  });

  it("refuses a FIFO at a file name without blocking", async () => {
    const made = spawnSync("mkfifo", ["-m", "600", at("fifo.jsonl")]);
    expect(made.status).toBe(0);
    expect(await asyncCodeOf(() => storage.readText(at("fifo.jsonl")))).toBe("not_regular_file");
    expect(codeOf(() => storage.openReaderSync(at("fifo.jsonl")))).toBe("not_regular_file");
    expect(codeOf(() => storage.openWriter(at("fifo.jsonl")))).toBe("not_regular_file");
    expect(storage.statSync(at("fifo.jsonl")).kind).toBe("other");
    expect(storage.listFilesSync(root)).toEqual([]);
  });
});

describe("explicit directory specifics", () => {
  let temp: ReturnType<typeof makeTempDir>;
  beforeEach(() => {
    temp = makeTempDir("gjc-file-");
  });
  afterEach(() => temp.remove());

  it("accepts links above the root but refuses a root that is itself a link", async () => {
    fs.mkdirSync(path.join(temp.path, "real", "store"), { recursive: true, mode: 0o700 });
    fs.symlinkSync(path.join(temp.path, "real"), path.join(temp.path, "alias"));
    const storage = new FileSessionStorage(path.join(temp.path, "alias", "store"));
    await storage.writeText(path.join(storage.root, "f.jsonl"), "x\n");
    expect(fs.readFileSync(path.join(temp.path, "real", "store", "f.jsonl"), "utf8")).toBe("x\n");
    expect(storage.statSync(storage.root).kind).toBe("directory");
    fs.symlinkSync(path.join(temp.path, "real", "store"), path.join(temp.path, "store-link"));
    const linked = new FileSessionStorage(path.join(temp.path, "store-link"));
    expect(await asyncCodeOf(() => linked.writeText(path.join(linked.root, "g.jsonl"), "x"))).toBe("symlink_refused");
    expect(codeOf(() => linked.ensureDirSync(linked.root))).toBe("symlink_refused");
  });

  it("tightens a loose session file it opens for appending", async () => {
    const storage = new FileSessionStorage(temp.path);
    const file = path.join(temp.path, "loose.jsonl");
    fs.writeFileSync(file, "a\n");
    fs.chmodSync(file, 0o644);
    const writer = await storage.openWriter(file);
    await writer.close();
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  });

  it("works in a directory that is not owner-only (the explicit dir is the user's choice)", async () => {
    fs.chmodSync(temp.path, 0o755);
    const storage = new FileSessionStorage(temp.path);
    const writer = await storage.openWriter(path.join(temp.path, "s.jsonl"));
    await writer.writeLine("{}");
    await writer.close();
    expect(fs.statSync(path.join(temp.path, ".gjc-locks")).mode & 0o777).toBe(0o700);
  });
});

describe("managed specifics", () => {
  let fixture: StorageFixture;
  beforeEach(() => {
    fixture = makeStorage("managed");
  });
  afterEach(() => fixture.cleanup());

  it("refuses files and directories that are not owner-only, naming the check in detail", async () => {
    const { storage, root } = fixture;
    fs.writeFileSync(path.join(root, "loose.jsonl"), "x\n", { mode: 0o644 });
    fs.chmodSync(path.join(root, "loose.jsonl"), 0o644);
    fs.mkdirSync(path.join(root, "open-dir"));
    fs.chmodSync(path.join(root, "open-dir"), 0o755);
    fs.writeFileSync(path.join(root, "linked.jsonl"), "x\n", { mode: 0o600 });
    fs.linkSync(path.join(root, "linked.jsonl"), path.join(root, "second-name.jsonl"));
    const loose = await storage.readText(path.join(root, "loose.jsonl")).catch((error: unknown) => error);
    expect(loose).toMatchObject({ code: "unsafe_entry", detail: "mode_mismatch" });
    expect(codeOf(() => storage.openWriter(path.join(root, "loose.jsonl")))).toBe("unsafe_entry");
    expect(codeOf(() => storage.openReaderSync(path.join(root, "loose.jsonl")))).toBe("unsafe_entry");
    expect(codeOf(() => storage.openReaderSync(path.join(root, "second-name.jsonl")))).toBe("unsafe_entry");
    expect(codeOf(() => storage.listFilesSync(path.join(root, "open-dir")))).toBe("unsafe_entry");
    const linked = await storage.readText(path.join(root, "linked.jsonl")).catch((error: unknown) => error);
    expect(linked).toMatchObject({ code: "unsafe_entry", detail: "hardlink_refused" });
    expect(fs.statSync(path.join(root, "loose.jsonl")).mode & 0o777).toBe(0o644);
  });
});

describe("modes under any umask (child processes)", () => {
  let child: BundledChild;
  let temp: ReturnType<typeof makeTempDir>;
  beforeAll(async () => {
    child = await bundleChild("modes");
    temp = makeTempDir("gjc-modes-");
  });
  afterAll(() => {
    child.remove();
    temp.remove();
  });

  it.each(["000", "077", "022"])("creates directories 0700 and files 0600 under umask %s", async (mask) => {
    const result = await runChild(child, [mask, temp.path]);
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    const modes = JSON.parse(result.stdout) as Record<string, string>;
    expect(Object.keys(modes)).toHaveLength(20);
    for (const [entry, mode] of Object.entries(modes)) {
      expect([entry, mode]).toEqual([entry, entry.endsWith(":dir") ? "700" : "600"]);
    }
  });
});

describe("FileSessionStorage without a root", () => {
  it("applies the explicit-directory rules to every path from the file system root", async () => {
    const temp = makeTempDir("gjc-noroot-");
    const base = fs.realpathSync(temp.path);
    try {
      const storage = new FileSessionStorage();
      expect(storage.root).toBe(path.parse(base).root);
      storage.ensureDirSync(path.join(base, "dir"));
      expect(fs.statSync(path.join(base, "dir")).mode & 0o777).toBe(0o700);
      storage.writeTextSync(path.join(base, "dir", "a.jsonl"), "x\n");
      expect(fs.statSync(path.join(base, "dir", "a.jsonl")).mode & 0o777).toBe(0o600);
      fs.symlinkSync(path.join(base, "dir"), path.join(base, "link"));
      expect(await asyncCodeOf(() => storage.readText(path.join(base, "link", "a.jsonl")))).toBe("symlink_refused");
    } finally {
      temp.remove();
    }
  });
});
