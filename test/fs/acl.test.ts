// Real ACLs stored as raw system.posix_acl_* bytes on the test filesystem. Re-run as an
// unprivileged uid by test/fs/unprivileged.test.ts.
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { SecureDir, SecureFsError } from "../../src/index.js";
import { ACL_TAG, aclHex, extendedAcl, MINIMAL_ACL, type AclEntry } from "../helpers/acl.js";
import { codeOf } from "../helpers/errors.js";
import { buildTools, hasCommand, run, skipBecause, type SkipContext, type Tools } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";

const ACCESS = "system.posix_acl_access";
const DEFAULT = "system.posix_acl_default";

let tools: Tools;
let tmp: ReturnType<typeof makeTempDir>;
let root: SecureDir;
let aclCapable = true;

beforeAll(() => {
  tools = buildTools();
});
beforeEach(() => {
  tmp = makeTempDir();
  root = SecureDir.openRoot(path.join(tmp.path, "store"), { create: true });
  const probe = path.join(tmp.path, "probe");
  fs.writeFileSync(probe, "");
  aclCapable = run(tools.setXattr, [probe, ACCESS, aclHex(extendedAcl(0, 6))]).status === 0;
});
afterEach(() => {
  root.close();
  tmp.remove();
});

function setAcl(target: string, name: string, hex: string): void {
  const result = run(tools.setXattr, [target, name, hex]);
  expect(result.status, result.stderr).toBe(0);
}

function failure(fn: () => unknown): SecureFsError {
  try {
    fn();
  } catch (error) {
    if (error instanceof SecureFsError) return error;
    throw error;
  }
  throw new Error("expected a SecureFsError");
}

function requireAcls(ctx: SkipContext): void {
  if (!aclCapable) skipBecause(ctx, `the filesystem under ${tmp.path} does not store POSIX ACLs`);
}

describe("present ACLs fail the gate", () => {
  it("an access ACL on a file is acl_present (access_acl), on open and on a held descriptor", (ctx) => {
    requireAcls(ctx);
    const held = root.openFile("f", { write: true, create: "exclusive" });
    setAcl(path.join(root.path, "f"), ACCESS, aclHex(extendedAcl(0, 6)));
    expect(fs.statSync(path.join(root.path, "f")).mode & 0o7777).toBe(0o600);
    const error = failure(() => root.openFile("f"));
    expect(error.code).toBe("acl_present");
    expect(error.attribute).toBe("access_acl");
    expect(codeOf(() => held.verify())).toBe("acl_present");
    held.close();
  });

  it("an access ACL on a directory is acl_present (access_acl)", (ctx) => {
    requireAcls(ctx);
    root.openDir("d", { create: true }).close();
    setAcl(path.join(root.path, "d"), ACCESS, aclHex(extendedAcl()));
    const error = failure(() => root.openDir("d"));
    expect([error.code, error.attribute]).toEqual(["acl_present", "access_acl"]);
  });

  it("a default ACL on a directory is acl_present (default_acl)", (ctx) => {
    requireAcls(ctx);
    root.openDir("d", { create: true }).close();
    setAcl(path.join(root.path, "d"), DEFAULT, aclHex(MINIMAL_ACL));
    const error = failure(() => root.openDir("d"));
    expect([error.code, error.attribute]).toEqual(["acl_present", "default_acl"]);
  });

  it("an ACL inherited from a parent's default ACL is acl_present on the child", (ctx) => {
    requireAcls(ctx);
    const parent = path.join(root.path, "d");
    root.openDir("d", { create: true }).close();
    setAcl(parent, DEFAULT, aclHex(extendedAcl()));
    fs.writeFileSync(path.join(parent, "inherited"), "x", { mode: 0o600 });
    fs.mkdirSync(path.join(parent, "subdir"), { mode: 0o700 });
    // Clear the parent (our repair) so only the children carry the inherited ACLs.
    root.openDir("d", { repair: true }).close();
    const d = root.openDir("d");
    expect(codeOf(() => d.openFile("inherited"))).toBe("acl_present");
    expect(codeOf(() => d.openDir("subdir"))).toBe("acl_present");
    d.close();
  });

  it("a large stored ACL (over 1 KiB of entries) is read in full and refused", (ctx) => {
    requireAcls(ctx);
    root.openFile("f", { write: true, create: "exclusive" }).close();
    const entries: AclEntry[] = [[ACL_TAG.USER_OBJ, 6]];
    for (let uid = 1; uid <= 150; uid++) entries.push([ACL_TAG.USER, 4, uid]);
    entries.push([ACL_TAG.GROUP_OBJ, 0], [ACL_TAG.MASK, 0], [ACL_TAG.OTHER, 0]);
    setAcl(path.join(root.path, "f"), ACCESS, aclHex(entries));
    expect(fs.statSync(path.join(root.path, "f")).mode & 0o7777).toBe(0o600);
    expect(codeOf(() => root.openFile("f"))).toBe("acl_present");
  });

  it("a minimal ACL is never stored by the kernel, so it reads as absent", (ctx) => {
    requireAcls(ctx);
    root.openFile("f", { write: true, create: "exclusive" }).close();
    setAcl(path.join(root.path, "f"), ACCESS, aclHex(MINIMAL_ACL));
    expect(root.openFile("f").verify().accessAcl).toBe("absent");
  });

  it("setfacl-written ACLs are refused too", (ctx) => {
    requireAcls(ctx);
    if (!hasCommand("setfacl")) skipBecause(ctx, "setfacl (Debian package acl) is not installed");
    root.openFile("f", { write: true, create: "exclusive" }).close();
    expect(run("setfacl", ["-m", "u:65534:r,m::-", path.join(root.path, "f")]).status).toBe(0);
    expect(codeOf(() => root.openFile("f"))).toBe("acl_present");
  });
});

describe("owner-only apply removes ACLs", () => {
  it("objects created under an ancestor with a default ACL come out without ACLs", (ctx) => {
    requireAcls(ctx);
    const ancestor = path.join(tmp.path, "acl-ancestor");
    fs.mkdirSync(ancestor, { mode: 0o755 });
    setAcl(ancestor, DEFAULT, aclHex(extendedAcl()));
    const store = SecureDir.openRoot(path.join(ancestor, "a", "b"), { create: true });
    expect(store.verify()).toEqual({ accessAcl: "absent", defaultAcl: "absent" });
    store.close();
  });

  it("repair strips access and default ACLs from objects we own", (ctx) => {
    requireAcls(ctx);
    root.openDir("d", { create: true }).close();
    root.openFile("f", { write: true, create: "exclusive" }).close();
    setAcl(path.join(root.path, "d"), DEFAULT, aclHex(extendedAcl()));
    setAcl(path.join(root.path, "d"), ACCESS, aclHex(extendedAcl()));
    setAcl(path.join(root.path, "f"), ACCESS, aclHex(extendedAcl(0, 6)));
    expect(root.openDir("d", { repair: true }).verify()).toEqual({ accessAcl: "absent", defaultAcl: "absent" });
    expect(root.openFile("f", { repair: true }).verify().accessAcl).toBe("absent");
    expect(root.openDir("d").verify().defaultAcl).toBe("absent");
  });
});

describe.skipIf(process.platform !== "linux")("aclOf: the ACLs a repair is about to strip, as stored", () => {
  it("reads access and default ACL bytes exactly, whatever the owner's permission bits, and empty where none is stored", (ctx) => {
    requireAcls(ctx);
    root.openDir("d", { create: true }).close();
    root.openFile("f", { write: true, create: "exclusive" }).close();
    const access = aclHex(extendedAcl(0, 7));
    const dflt = aclHex([
      [ACL_TAG.USER_OBJ, 7],
      [ACL_TAG.GROUP_OBJ, 0],
      [ACL_TAG.GROUP, 5, 65534],
      [ACL_TAG.MASK, 5],
      [ACL_TAG.OTHER, 0],
    ]);
    setAcl(path.join(root.path, "d"), ACCESS, access);
    setAcl(path.join(root.path, "d"), DEFAULT, dflt);
    setAcl(path.join(root.path, "f"), ACCESS, aclHex(extendedAcl(0, 6)));
    // No read permission for the owner: an unprivileged owner could not open it to read, the O_PATH read still works.
    fs.chmodSync(path.join(root.path, "f"), 0o000);
    const d = root.aclOf("d", "directory");
    expect([Buffer.from(d!.access).toString("hex"), Buffer.from(d!.default).toString("hex")]).toEqual([access, dflt]);
    const f = root.aclOf("f", "file");
    expect(Buffer.from(f!.access).toString("hex")).toBe(
      aclHex([
        [ACL_TAG.USER_OBJ, 0],
        [ACL_TAG.USER, 4, 0],
        [ACL_TAG.GROUP_OBJ, 0],
        [ACL_TAG.MASK, 0],
        [ACL_TAG.OTHER, 0],
      ]),
    );
    expect(f!.default).toHaveLength(0);
    root.openDir("plain", { create: true }).close();
    expect(root.aclOf("plain", "directory")).toEqual({ access: Buffer.alloc(0), default: Buffer.alloc(0) });
  });

  it("never follows a link and reads only the kind asked for", () => {
    root.openDir("d", { create: true }).close();
    fs.symlinkSync(path.join(root.path, "d"), path.join(root.path, "link"));
    expect(codeOf(() => root.aclOf("link", "directory"))).toBe("symlink_refused");
    expect(codeOf(() => root.aclOf("d", "file"))).toBe("not_regular_file");
    expect(codeOf(() => root.aclOf("missing", "file"))).toBe("not_found");
  });
});
