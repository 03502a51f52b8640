import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SecureDir, SecureFsError } from "../../src/index.js";
import { codeOf } from "../helpers/errors.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: ReturnType<typeof makeTempDir>;
beforeEach(() => {
  tmp = makeTempDir();
});
afterEach(() => tmp.remove());

describe("SecureDir.openRoot", () => {
  it("creates missing components 0700 and verifies the root", () => {
    const rootPath = path.join(tmp.path, "a", "b", "c");
    const root = SecureDir.openRoot(rootPath, { create: true });
    expect(root.verify()).toEqual({ accessAcl: "absent", defaultAcl: "absent" });
    for (const p of ["a", "a/b", "a/b/c"]) {
      expect(fs.statSync(path.join(tmp.path, p)).mode & 0o7777).toBe(0o700);
    }
    root.close();
    expect(root.closed).toBe(true);
    expect(codeOf(() => root.verify())).toBe("closed");
  });

  it("fails with not_found without create, and canonicalises ancestors", () => {
    expect(codeOf(() => SecureDir.openRoot(path.join(tmp.path, "missing")))).toBe("not_found");
    fs.mkdirSync(path.join(tmp.path, "real", "root"), { recursive: true, mode: 0o700 });
    fs.symlinkSync(path.join(tmp.path, "real"), path.join(tmp.path, "alias"));
    const root = SecureDir.openRoot(path.join(tmp.path, "alias", "root"));
    expect(root.list()).toEqual([]);
    root.close();
  });

  it("refuses a root that is itself a symlink, and a relative path resolves first", () => {
    fs.mkdirSync(path.join(tmp.path, "target"), { mode: 0o700 });
    fs.symlinkSync(path.join(tmp.path, "target"), path.join(tmp.path, "link"));
    expect(codeOf(() => SecureDir.openRoot(path.join(tmp.path, "link")))).toBe("symlink_refused");
    expect(codeOf(() => SecureDir.openRoot(path.join(tmp.path, "link") + "/"))).toBe("symlink_refused");
    expect(codeOf(() => SecureDir.openRoot(""))).toBe("invalid_argument");
  });

  it("refuses a root that is not owner-only", () => {
    fs.mkdirSync(path.join(tmp.path, "open"), { mode: 0o755 });
    fs.chmodSync(path.join(tmp.path, "open"), 0o755);
    expect(codeOf(() => SecureDir.openRoot(path.join(tmp.path, "open")))).toBe("mode_mismatch");
  });
});

describe("SecureDir operations", () => {
  let root: SecureDir;
  beforeEach(() => {
    root = SecureDir.openRoot(path.join(tmp.path, "store"), { create: true });
  });
  afterEach(() => root.close());

  it("lists only the names that start with a prefix when given one", () => {
    for (const name of ["a.jsonl", ".gjc-tmp-0001", ".gjc-tmp-0002", ".gjc-tmpfile", "é-ünïcode"])
      root.openFile(name, { write: true, create: "exclusive" }).close();
    root.openDir(".gjc-tmp-dir", { create: true }).close();
    const names = (prefix?: string) =>
      root
        .list(prefix)
        .map((entry) => `${entry.name}:${entry.type}`)
        .sort();
    expect(names(".gjc-tmp-")).toEqual([".gjc-tmp-0001:file", ".gjc-tmp-0002:file", ".gjc-tmp-dir:directory"]);
    expect(names("é")).toEqual(["é-ünïcode:file"]);
    expect(names("none")).toEqual([]);
    expect(names("")).toEqual(names());
    expect(names()).toHaveLength(6);
    expect(codeOf(() => root.list(7 as unknown as string))).toBe("invalid_argument");
  });

  it("opens and creates directories and files; list and stat see them", () => {
    const sub = root.openDir("sessions", { create: true });
    expect(root.openDir("sessions", { create: true }).verify().accessAcl).toBe("absent");
    const file = sub.openFile("s.jsonl", { append: true, create: "exclusive" });
    expect(file.verify()).toEqual({ accessAcl: "absent", defaultAcl: "not_applicable" });
    expect(file.append('{"a":1}\n')).toBe(8);
    expect(file.append(Buffer.from('{"b":2}\n'))).toBe(8);
    file.sync();
    expect(file.stat()).toMatchObject({ type: "file", size: 16, nlink: 1, mode: 0o600 });
    expect(file.readAll({ maxBytes: 100 }).toString()).toBe('{"a":1}\n{"b":2}\n');
    expect(file.readPrefix(7).toString()).toBe('{"a":1}');
    expect(file.readAt(8, 100).toString()).toBe('{"b":2}\n');
    expect(codeOf(() => file.readAll({ maxBytes: 15 }))).toBe("too_large");
    expect(file.readAll({ maxBytes: 16 }).byteLength).toBe(16);
    file.close();
    expect(codeOf(() => file.append("x"))).toBe("closed");
    expect(root.list()).toEqual([{ name: "sessions", type: "directory" }]);
    expect(sub.stat("s.jsonl")).toMatchObject({ type: "file", size: 16, mode: 0o600 });
    expect(sub.stat("s.jsonl").ino).toBe(String(fs.statSync(path.join(tmp.path, "store/sessions/s.jsonl")).ino));
    expect(sub.stat()).toMatchObject({ type: "directory", mode: 0o700, ino: String(fs.statSync(sub.path).ino) });
    sub.sync();
    sub.close();
  });

  it("walks a relative path of entry names in one call, verifying every directory", () => {
    const deep = root.openDir(["a", "b", "c"], { create: true });
    deep.writeFileAtomic("f", "deep");
    deep.close();
    for (const p of ["a", "a/b", "a/b/c"]) expect(fs.statSync(path.join(root.path, p)).mode & 0o7777).toBe(0o700);
    const file = root.openFile(["a", "b", "c", "f"]);
    expect(file.readAll({ maxBytes: 10 }).toString()).toBe("deep");
    expect(file.path).toBe(path.join(root.path, "a/b/c/f"));
    file.close();
    fs.chmodSync(path.join(root.path, "a/b"), 0o755);
    expect(codeOf(() => root.openFile(["a", "b", "c", "f"]))).toBe("mode_mismatch");
    fs.chmodSync(path.join(root.path, "a/b"), 0o700);
    fs.symlinkSync(path.join(root.path, "a"), path.join(root.path, "link"));
    expect(codeOf(() => root.openFile(["link", "b", "c", "f"]))).toBe("symlink_refused");
    expect(codeOf(() => root.openDir(["a", "..", "a"]))).toBe("invalid_name");
    expect(codeOf(() => root.openDir(["a", "b/c"]))).toBe("invalid_name");
    expect(codeOf(() => root.openFile(["a", "missing", "f"], { write: true, create: "if-missing" }))).toBe("not_found");
    expect(codeOf(() => root.openFile([]))).toBe("invalid_argument");
    // Deferring the sync of a creation that is not asked for is a caller mistake.
    expect(codeOf(() => root.openDir("a", { deferSync: true }))).toBe("invalid_argument");
  });

  it("one options argument per open: contradictory options are refused before anything is touched", () => {
    const refused = [
      () => root.openDir("x", { create: true, repair: true }),
      () => root.openDir("x", { create: true, owned: true }),
      () => root.openDir("x", { repair: true, owned: true }),
      () => SecureDir.openRoot(path.join(root.path, "x"), { create: true, repair: true }),
      () => SecureDir.openRoot(path.join(root.path, "x"), { owned: true, create: true }),
      () => root.openFile("x", { repair: true, create: "if-missing" }),
      () => root.openFile("x", { write: true, create: "sometimes" as "exclusive" }),
    ];
    for (const open of refused) expect(codeOf(open)).toBe("invalid_argument");
    expect(fs.existsSync(path.join(root.path, "x"))).toBe(false);
    // Each policy still applies on its own, to the last name only.
    root.openDir(["x", "y"], { create: true }).close();
    fs.chmodSync(path.join(root.path, "x", "y"), 0o750);
    expect(codeOf(() => root.openDir(["x", "y"]))).toBe("mode_mismatch");
    root.openDir(["x", "y"], { owned: true }).close();
    expect(fs.statSync(path.join(root.path, "x", "y")).mode & 0o7777).toBe(0o750);
    root.openDir(["x", "y"], { repair: true }).close();
    expect(fs.statSync(path.join(root.path, "x", "y")).mode & 0o7777).toBe(0o700);
  });

  it("create modes: exclusive refuses an existing name, if-missing opens and verifies it", () => {
    root.openFile("f", { write: true, create: "exclusive" }).close();
    expect(codeOf(() => root.openFile("f", { write: true, create: "exclusive" }))).toBe("already_exists");
    const again = root.openFile("f", { write: true, create: "if-missing" });
    expect(again.write("hello", 0)).toBe(5);
    expect(again.write("J", 0)).toBe(1);
    const buf = Buffer.alloc(5);
    expect(again.read(buf, { position: 0 })).toBe(5);
    expect(buf.toString()).toBe("Jello");
    again.close();
    expect(codeOf(() => root.openFile("missing"))).toBe("not_found");
    expect(codeOf(() => root.openDir("missing"))).toBe("not_found");
  });

  it("writeFileAtomic replaces or refuses to replace, leaving no temporary behind", () => {
    root.writeFileAtomic("state.json", "one");
    root.writeFileAtomic("state.json", Buffer.from("two"));
    expect(fs.readFileSync(path.join(root.path, "state.json"), "utf8")).toBe("two");
    expect(codeOf(() => root.writeFileAtomic("state.json", "three", { noReplace: true }))).toBe("already_exists");
    expect(fs.readFileSync(path.join(root.path, "state.json"), "utf8")).toBe("two");
    root.writeFileAtomic("new.json", "fresh", { noReplace: true });
    expect(
      root
        .list()
        .map((e) => e.name)
        .sort(),
    ).toEqual(["new.json", "state.json"]);
    expect(fs.statSync(path.join(root.path, "new.json")).mode & 0o7777).toBe(0o600);
  });

  it("publishNoReplace moves a file only onto a free name", () => {
    root.writeFileAtomic("a", "A");
    root.writeFileAtomic("b", "B");
    expect(codeOf(() => root.publishNoReplace("a", "b"))).toBe("already_exists");
    expect(fs.readFileSync(path.join(root.path, "b"), "utf8")).toBe("B");
    root.publishNoReplace("a", "c");
    expect(
      root
        .list()
        .map((e) => e.name)
        .sort(),
    ).toEqual(["b", "c"]);
    expect(codeOf(() => root.publishNoReplace("a", "d"))).toBe("not_found");
  });

  it("list refuses a directory holding a name that is not UTF-8 (not_utf8) instead of altering it", () => {
    root.writeFileAtomic("ok", "x");
    fs.writeFileSync(Buffer.concat([Buffer.from(`${root.path}/`), Buffer.from([0x66, 0xe9])]), "latin-1 name");
    expect(codeOf(() => root.list())).toBe("not_utf8");
  });

  it("a name or path with a lone surrogate is invalid_argument, never silently altered", () => {
    expect(codeOf(() => root.openFile("bad\ud800name", { write: true, create: "exclusive" }))).toBe("invalid_argument");
    expect(codeOf(() => root.openDir(["ok", "\udc00"], { create: true }))).toBe("invalid_argument");
    expect(codeOf(() => SecureDir.openRoot(`${root.path}/\ud800`, { create: true }))).toBe("invalid_argument");
    expect(root.list()).toEqual([]);
    expect(root.openFile("pair\ud83d\ude00", { write: true, create: "exclusive" }).stat().type).toBe("file");
  });

  it("unlink removes files and refuses directories", () => {
    root.writeFileAtomic("f", "x");
    root.openDir("d", { create: true }).close();
    root.unlink("f");
    expect(codeOf(() => root.unlink("d"))).toBe("not_regular_file");
    expect(codeOf(() => root.unlink("f"))).toBe("not_found");
  });

  it("SecureFsError carries code, Node-style errno and syscall, and the path only in message/path", () => {
    let caught: unknown;
    try {
      root.openFile("absent");
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(SecureFsError);
    const error = caught as SecureFsError;
    expect(error.code).toBe("not_found");
    expect(error.errno).toBe(-2);
    expect(error.errnoName).toBe("ENOENT");
    expect(error.syscall).toBe("openat");
    expect(error.operation).toBe("openFile");
    expect(error.path).toBe(path.join(root.path, "absent"));
    expect(error.message).toContain(path.join(root.path, "absent"));
    expect(error.code).not.toContain("/");
  });
});
