// Every bad object the secure layer must refuse, with its code. This file is also re-run as
// an unprivileged uid (test/fs/unprivileged.test.ts), since root hides permission errors.
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SecureDir } from "../../src/index.js";
import { codeOf } from "../helpers/errors.js";
import { isRoot, run, skipBecause } from "../helpers/processes.js";
import { makeTempDir, withUmask } from "../helpers/temp.js";

let tmp: ReturnType<typeof makeTempDir>;
let root: SecureDir;
let outside: string;
const SECRET = "outside secret";

beforeEach(() => {
  tmp = makeTempDir();
  root = SecureDir.openRoot(path.join(tmp.path, "store"), { create: true });
  outside = path.join(tmp.path, "outside");
  fs.mkdirSync(outside, { mode: 0o700 });
  fs.writeFileSync(path.join(outside, "secret"), SECRET, { mode: 0o600 });
});
afterEach(() => {
  root.close();
  tmp.remove();
});

function inStore(...names: string[]): string {
  return path.join(root.path, ...names);
}

function outsideUntouched(): void {
  expect(fs.readdirSync(outside)).toEqual(["secret"]);
  expect(fs.readFileSync(path.join(outside, "secret"), "utf8")).toBe(SECRET);
}

describe("symbolic links at every position", () => {
  const kinds = {
    "to an outside directory": () => outside,
    "to an inside directory": () => inStore("real"),
    "to an outside file": () => path.join(outside, "secret"),
    dangling: () => path.join(outside, "missing"),
    "in a loop": () => inStore("loop"),
  } as const;

  beforeEach(() => {
    root.openDir("real", { create: true }).close();
  });

  for (const [kind, target] of Object.entries(kinds)) {
    it(`refuses a link ${kind} as a directory, a file, and a create target`, () => {
      const name = kind === "in a loop" ? "loop" : "link";
      fs.symlinkSync(target(), inStore(name));
      expect(codeOf(() => root.openDir(name))).toBe("symlink_refused");
      expect(codeOf(() => root.openDir(name, { create: true }))).toBe("symlink_refused");
      expect(codeOf(() => root.openDir(name, { repair: true }))).toBe("symlink_refused");
      expect(codeOf(() => root.openFile(name))).toBe("symlink_refused");
      expect(codeOf(() => root.openFile(name, { write: true, create: "if-missing" }))).toBe("symlink_refused");
      expect(codeOf(() => root.openFile(name, { append: true, create: "exclusive" }))).toBe("already_exists");
      expect(codeOf(() => root.openFile(name, { repair: true }))).toBe("symlink_refused");
      expect(codeOf(() => SecureDir.openRoot(inStore(name)))).toBe("symlink_refused");
      expect(root.stat(name).type).toBe("symlink");
      outsideUntouched();
    });
  }

  it("a trailing separator or any separator in a name is invalid_name, before any syscall", () => {
    fs.symlinkSync(outside, inStore("link"));
    for (const name of ["link/", "link/secret", "../outside", "..", ".", "", "a\0b", "x".repeat(256)]) {
      expect(
        codeOf(() => root.openDir(name)),
        JSON.stringify(name),
      ).toBe("invalid_name");
      expect(
        codeOf(() => root.openFile(name, { create: "if-missing", write: true })),
        name,
      ).toBe("invalid_name");
      expect(
        codeOf(() => root.writeFileAtomic(name, "x")),
        name,
      ).toBe("invalid_name");
      expect(
        codeOf(() => root.stat(name)),
        name,
      ).toBe("invalid_name");
      expect(
        codeOf(() => root.unlink(name)),
        name,
      ).toBe("invalid_name");
      expect(
        codeOf(() => root.publishNoReplace(name, "ok")),
        name,
      ).toBe("invalid_name");
    }
    outsideUntouched();
  });

  it("writeFileAtomic over a link replaces the link, never the file it points to", () => {
    fs.symlinkSync(path.join(outside, "secret"), inStore("state"));
    expect(codeOf(() => root.writeFileAtomic("state", "x", { noReplace: true }))).toBe("already_exists");
    root.writeFileAtomic("state", "mine");
    expect(root.stat("state").type).toBe("file");
    outsideUntouched();
  });
});

describe("wrong object types", () => {
  it("a file where a directory is expected is not_directory", () => {
    root.writeFileAtomic("f", "x");
    expect(codeOf(() => root.openDir("f"))).toBe("not_directory");
    expect(codeOf(() => root.openDir("f", { create: true }))).toBe("not_directory");
    expect(codeOf(() => SecureDir.openRoot(inStore("f")))).toBe("not_directory");
  });

  it("a directory where a file is expected is not_regular_file", () => {
    root.openDir("d", { create: true }).close();
    expect(codeOf(() => root.openFile("d"))).toBe("not_regular_file");
    expect(codeOf(() => root.openFile("d", { write: true }))).toBe("not_regular_file");
    expect(codeOf(() => root.openFile("d", { append: true, create: "if-missing" }))).toBe("not_regular_file");
  });

  it("a FIFO is not_regular_file and never blocks, for reading and for writing", () => {
    expect(run("mkfifo", ["-m", "600", inStore("fifo")]).status).toBe(0);
    const started = Date.now();
    expect(codeOf(() => root.openFile("fifo"))).toBe("not_regular_file");
    expect(codeOf(() => root.openFile("fifo", { write: true }))).toBe("not_regular_file");
    expect(codeOf(() => root.openFile("fifo", { append: true, create: "if-missing" }))).toBe("not_regular_file");
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("a socket is not_regular_file", async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(inStore("sock"), resolve));
    try {
      fs.chmodSync(inStore("sock"), 0o600);
      expect(codeOf(() => root.openFile("sock"))).toBe("not_regular_file");
      expect(codeOf(() => root.openFile("sock", { write: true }))).toBe("not_regular_file");
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("a device is not_regular_file (and /dev/null through a link is symlink_refused)", (ctx) => {
    fs.symlinkSync("/dev/null", inStore("null-link"));
    expect(codeOf(() => root.openFile("null-link", { write: true }))).toBe("symlink_refused");
    if (!isRoot()) skipBecause(ctx, "mknod of a character device needs root");
    expect(run("mknod", ["-m", "600", inStore("null"), "c", "1", "3"]).status).toBe(0);
    expect(codeOf(() => root.openFile("null"))).toBe("not_regular_file");
    expect(codeOf(() => root.openFile("null", { write: true }))).toBe("not_regular_file");
  });
});

describe("links, modes and owners", () => {
  it("a hardlinked managed file is hardlink_refused, at open and on a held descriptor", () => {
    const held = root.openFile("f", { write: true, create: "exclusive" });
    fs.linkSync(inStore("f"), inStore("f2"));
    expect(codeOf(() => root.openFile("f"))).toBe("hardlink_refused");
    expect(codeOf(() => held.verify())).toBe("hardlink_refused");
    expect(codeOf(() => root.openFile("f", { repair: true }))).toBe("hardlink_refused");
    held.close();
  });

  const dirModes = [0o701, 0o710, 0o750, 0o755, 0o770, 0o500, 0o1700, 0o2700];
  for (const mode of dirModes) {
    it(`directory mode 0${mode.toString(8)} is mode_mismatch and repairable`, () => {
      fs.mkdirSync(inStore("d"));
      fs.chmodSync(inStore("d"), mode);
      expect(codeOf(() => root.openDir("d"))).toBe("mode_mismatch");
      const fixed = root.openDir("d", { repair: true });
      expect(fixed.verify().accessAcl).toBe("absent");
      expect(fs.statSync(inStore("d")).mode & 0o7777).toBe(0o700);
      fixed.close();
    });
  }

  const fileModes = [0o640, 0o400, 0o660, 0o644, 0o4600, 0o700];
  for (const mode of fileModes) {
    it(`file mode 0${mode.toString(8)} is mode_mismatch and repairable`, () => {
      fs.writeFileSync(inStore("f"), "x");
      fs.chmodSync(inStore("f"), mode);
      expect(codeOf(() => root.openFile("f"))).toBe("mode_mismatch");
      const fixed = root.openFile("f", { repair: true });
      expect(fixed.verify()).toEqual({ accessAcl: "absent", defaultAcl: "not_applicable" });
      expect(fs.statSync(inStore("f")).mode & 0o7777).toBe(0o600);
      fixed.close();
    });
  }

  it("a held file that was removed is identity_mismatch on its next verify", () => {
    const held = root.openFile("gone", { write: true, create: "exclusive" });
    fs.unlinkSync(inStore("gone"));
    expect(codeOf(() => held.verify())).toBe("identity_mismatch");
    held.close();
  });

  it("a directory the OS will not let us open is permission_denied (root may open it, and repairs it)", () => {
    fs.mkdirSync(inStore("locked"));
    fs.chmodSync(inStore("locked"), 0o000);
    if (isRoot()) {
      // Root passes the permission check, so the policy check is what refuses it.
      expect(codeOf(() => root.openDir("locked"))).toBe("mode_mismatch");
      root.openDir("locked", { repair: true }).close();
      expect(fs.statSync(inStore("locked")).mode & 0o7777).toBe(0o700);
    } else {
      expect(codeOf(() => root.openDir("locked"))).toBe("permission_denied");
      expect(codeOf(() => root.openDir("locked", { repair: true }))).toBe("permission_denied");
    }
  });

  it("a held directory whose mode changes fails its next verify", () => {
    const sub = root.openDir("d", { create: true });
    fs.chmodSync(inStore("d"), 0o755);
    expect(codeOf(() => sub.verify())).toBe("mode_mismatch");
    expect(sub.repair().accessAcl).toBe("absent");
    sub.close();
  });

  it("created objects come out exactly 0700/0600 under umask 000 and a setgid parent", () => {
    const sgid = path.join(tmp.path, "sgid");
    fs.mkdirSync(sgid);
    // setgid, but not writable by others: a world-writable ancestor is insecure_ancestor.
    fs.chmodSync(sgid, 0o2755);
    withUmask(0, () => {
      const store = SecureDir.openRoot(path.join(sgid, "a", "b"), { create: true });
      const sub = store.openDir("sub", { create: true });
      sub.openFile("f", { write: true, create: "exclusive" }).close();
      sub.writeFileAtomic("g", "x");
      for (const p of ["a", "a/b", "a/b/sub"]) expect(fs.statSync(path.join(sgid, p)).mode & 0o7777).toBe(0o700);
      for (const p of ["a/b/sub/f", "a/b/sub/g"]) expect(fs.statSync(path.join(sgid, p)).mode & 0o7777).toBe(0o600);
      sub.close();
      store.close();
    });
  });

  it("a foreign owner is owner_mismatch and is never repaired", (ctx) => {
    if (!isRoot()) skipBecause(ctx, "chown to another uid needs root");
    fs.mkdirSync(inStore("d"), { mode: 0o700 });
    fs.writeFileSync(inStore("f"), "x", { mode: 0o644 });
    fs.chownSync(inStore("d"), 65534, 65534);
    fs.chownSync(inStore("f"), 65534, 65534);
    expect(codeOf(() => root.openDir("d"))).toBe("owner_mismatch");
    expect(codeOf(() => root.openDir("d", { create: true }))).toBe("owner_mismatch");
    expect(codeOf(() => root.openDir("d", { repair: true }))).toBe("owner_mismatch");
    expect(codeOf(() => root.openFile("f"))).toBe("owner_mismatch");
    expect(codeOf(() => root.openFile("f", { repair: true }))).toBe("owner_mismatch");
    expect(fs.statSync(inStore("f")).mode & 0o7777).toBe(0o644);
    expect(fs.statSync(inStore("f")).uid).toBe(65534);
    fs.chownSync(root.path, 65534, 65534);
    expect(codeOf(() => root.verify())).toBe("owner_mismatch");
    expect(codeOf(() => SecureDir.openRoot(root.path))).toBe("owner_mismatch");
  });
});
