// Every answer the ACL gate can get from fgetxattr, injected with an LD_PRELOAD shim in a
// child process (production code has no test hooks). Only ENOTSUP/EOPNOTSUPP may pass, and
// only when type, owner and mode on the same descriptor pass.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { SecureDir } from "../../src/index.js";
import { ACL_TAG as T, aclHex, extendedAcl, MINIMAL_ACL, type AclEntry } from "../helpers/acl.js";
import { buildTools, runWithAddon, type Tools } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";

const E = os.constants.errno;
let tools: Tools;
let tmp: ReturnType<typeof makeTempDir>;
let store: string;

beforeAll(() => {
  tools = buildTools();
  tmp = makeTempDir();
  store = path.join(tmp.path, "store");
  const root = SecureDir.openRoot(store, { create: true });
  root.openDir("dir", { create: true }).close();
  root.openFile("file", { write: true, create: "exclusive" }).close();
  fs.writeFileSync(path.join(store, "wide"), "x", { mode: 0o644 });
  fs.chmodSync(path.join(store, "wide"), 0o644);
  fs.symlinkSync(path.join(store, "file"), path.join(store, "link"));
  root.close();
});
afterAll(() => tmp.remove());

interface Outcome {
  readonly code?: string;
  readonly errno?: number;
  readonly attribute?: string;
  readonly accessAcl?: string;
  readonly defaultAcl?: string;
}

/** Opens `name` below the store in a child with the shim loaded and `faults` set. */
function openUnderFaults(kind: "file" | "dir", name: string, faults: Record<string, string>): Outcome {
  const body = `
    const root = b.openRoot(${JSON.stringify(store)});
    if (root.failed) return { stage: "root", ...root };
    const h = ${kind === "dir" ? `b.openDir(root, ${JSON.stringify(name)})` : `b.openFile(root, ${JSON.stringify(name)})`};
    return h.failed ? h : verify(h);`;
  // The root directory's two ACL reads pass untouched; the faults hit the object under test.
  const outcome = runWithAddon<Outcome & { stage?: string }>(body, { LD_PRELOAD: tools.faultShim, GJC_FAULT_XATTR_SKIP: "2", ...faults });
  expect(outcome.stage).toBeUndefined();
  return outcome;
}

const noFault = {};

describe("fgetxattr errno injection (files)", () => {
  it("without faults the file passes with evidence absent", () => {
    expect(openUnderFaults("file", "file", noFault)).toEqual({ accessAcl: "absent", defaultAcl: "not_applicable" });
  });

  const table: Array<[string, number, Outcome]> = [
    ["EOPNOTSUPP", E.EOPNOTSUPP, { accessAcl: "unsupported", defaultAcl: "not_applicable" }],
    ["EACCES", E.EACCES, { code: "acl_denied", errno: E.EACCES, attribute: "access_acl" }],
    ["EPERM", E.EPERM, { code: "acl_denied", errno: E.EPERM, attribute: "access_acl" }],
    ["EIO", E.EIO, { code: "acl_io_error", errno: E.EIO, attribute: "access_acl" }],
    ["ERANGE", E.ERANGE, { code: "acl_unknown", errno: E.ERANGE, attribute: "access_acl" }],
    ["EBADF", E.EBADF, { code: "acl_unknown", errno: E.EBADF, attribute: "access_acl" }],
    ["ENOMEM", E.ENOMEM, { code: "acl_unknown", errno: E.ENOMEM, attribute: "access_acl" }],
    ["EINVAL", E.EINVAL, { code: "acl_unknown", errno: E.EINVAL, attribute: "access_acl" }],
    ["E2BIG", E.E2BIG, { code: "acl_unknown", errno: E.E2BIG, attribute: "access_acl" }],
  ];
  for (const [name, errno, expected] of table) {
    it(`${name} -> ${expected.code ?? "passes as unsupported"}`, () => {
      const outcome = openUnderFaults("file", "file", { GJC_FAULT_XATTR_ERRNO: String(errno) });
      if (expected.code) {
        expect({ code: outcome.code, errno: outcome.errno, attribute: outcome.attribute }).toEqual(expected);
      } else {
        expect(outcome).toEqual(expected);
      }
    });
  }

  it("ENOTSUP passes only because type, owner and mode passed: 0644 and a link are still refused", () => {
    const faults = { GJC_FAULT_XATTR_ERRNO: String(E.EOPNOTSUPP) };
    expect(openUnderFaults("file", "wide", faults).code).toBe("mode_mismatch");
    expect(openUnderFaults("file", "link", faults).code).toBe("symlink_refused");
    expect(openUnderFaults("dir", "file", faults).code).toBe("not_directory");
  });
});

describe("malformed and present bytes (files)", () => {
  const cases: Record<string, string> = {
    "short": "0200",
    "bad version": aclHex(MINIMAL_ACL, 1),
    "unknown tag": aclHex([[T.USER_OBJ, 6], [0x40, 0], [T.GROUP_OBJ, 0], [T.OTHER, 0]]),
    "bad order": aclHex([[T.GROUP_OBJ, 0], [T.USER_OBJ, 6], [T.OTHER, 0]]),
    "perm above 7": aclHex([[T.USER_OBJ, 15], [T.GROUP_OBJ, 0], [T.OTHER, 0]]),
    "duplicate USER_OBJ": aclHex([[T.USER_OBJ, 6], [T.USER_OBJ, 6], [T.GROUP_OBJ, 0], [T.OTHER, 0]]),
    "missing MASK": aclHex([[T.USER_OBJ, 6], [T.USER, 4, 5], [T.GROUP_OBJ, 0], [T.OTHER, 0]]),
  };
  for (const [name, hex] of Object.entries(cases)) {
    it(`${name} -> acl_malformed`, () => {
      expect(openUnderFaults("file", "file", { GJC_FAULT_XATTR_HEX: hex }).code).toBe("acl_malformed");
    });
  }

  it("an ACL too big for the first read buffer is read again in full and still classified", () => {
    const many: AclEntry[] = [[T.USER_OBJ, 6]];
    for (let uid = 1; uid <= 200; uid++) many.push([T.USER, 4, uid]);
    many.push([T.GROUP_OBJ, 0], [T.MASK, 4], [T.OTHER, 0]);
    expect(aclHex(many).length / 2).toBeGreaterThan(1024);
    expect(openUnderFaults("file", "file", { GJC_FAULT_XATTR_HEX: aclHex(many) }).code).toBe("acl_present");
    const broken = aclHex(many).slice(0, -16) + aclHex([[T.USER_OBJ, 6]]).slice(8);
    expect(openUnderFaults("file", "file", { GJC_FAULT_XATTR_HEX: broken }).code).toBe("acl_malformed");
  });

  it("a minimal or an extended ACL returned as bytes -> acl_present", () => {
    expect(openUnderFaults("file", "file", { GJC_FAULT_XATTR_HEX: aclHex(MINIMAL_ACL) }).code).toBe("acl_present");
    expect(openUnderFaults("file", "file", { GJC_FAULT_XATTR_HEX: aclHex(extendedAcl()) }).code).toBe("acl_present");
  });
});

describe("directories: access and default answers must agree", () => {
  it("ENOTSUP for both passes as unsupported/unsupported", () => {
    expect(openUnderFaults("dir", "dir", { GJC_FAULT_XATTR_ERRNO: String(E.EOPNOTSUPP) })).toEqual({
      accessAcl: "unsupported",
      defaultAcl: "unsupported",
    });
  });

  it("ENOTSUP for one name and ENODATA for the other -> acl_unknown", () => {
    for (const only of ["system.posix_acl_access", "system.posix_acl_default"]) {
      const outcome = openUnderFaults("dir", "dir", { GJC_FAULT_XATTR_ERRNO: String(E.EOPNOTSUPP), GJC_FAULT_XATTR_NAME: only });
      expect(outcome.code, only).toBe("acl_unknown");
    }
  });

  it("an error on the default ACL alone is reported for default_acl", () => {
    const outcome = openUnderFaults("dir", "dir", { GJC_FAULT_XATTR_ERRNO: String(E.EIO), GJC_FAULT_XATTR_NAME: "system.posix_acl_default" });
    expect([outcome.code, outcome.attribute]).toEqual(["acl_io_error", "default_acl"]);
  });
});
