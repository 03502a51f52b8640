// Identity and filesystem-type answers the test machine cannot produce for real (a network
// filesystem, a missing /proc), injected with the LD_PRELOAD shim in a child process.
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { SecureDir } from "../../src/index.js";
import { buildTools, runWithAddon, type Tools } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";

const E = os.constants.errno;
const NFS_SUPER_MAGIC = "6969";
const SMB2_MAGIC = "fe534d42";
let tools: Tools;
let tmp: ReturnType<typeof makeTempDir>;
let store: string;

beforeAll(() => {
  tools = buildTools();
  tmp = makeTempDir();
  store = path.join(tmp.path, "store");
  const root = SecureDir.openRoot(store, { create: true });
  root.openFile("file", { write: true, create: "exclusive" }).close();
  root.close();
});
afterAll(() => tmp.remove());

const inChild = <T>(body: string, faults: Record<string, string>) =>
  runWithAddon<T>(body, { LD_PRELOAD: tools.faultShim, ...faults });

describe("directoryIdentity under injected OS answers", () => {
  it("a network filesystem is network_unsupported", () => {
    for (const type of [NFS_SUPER_MAGIC, SMB2_MAGIC]) {
      const out = inChild<{ code: string }>(`return b.directoryIdentity(${JSON.stringify(store)});`, { GJC_FAULT_FSTATFS_TYPE: type });
      expect(out.code, type).toBe("network_unsupported");
    }
  });

  it("without /proc answers the realpath fallback is used; when that fails too, identity_unavailable", () => {
    const viaRealpath = inChild<{ canonicalPath: string }>(`return b.directoryIdentity(${JSON.stringify(store)});`, {
      GJC_FAULT_READLINK_ERRNO: String(E.ENOENT),
    });
    expect(viaRealpath.canonicalPath).toBe(store);
    const out = inChild<{ code: string; syscall: string }>(`return b.directoryIdentity(${JSON.stringify(store)});`, {
      GJC_FAULT_READLINK_ERRNO: String(E.ENOENT),
      GJC_FAULT_REALPATH_ERRNO: String(E.EACCES),
    });
    expect(out).toMatchObject({ code: "identity_unavailable", syscall: "realpath" });
  });
});

describe("the ACL gate on a network filesystem", () => {
  it("ENOTSUP proves nothing on NFS/SMB: acl_unknown instead of unsupported", () => {
    const body = `
      const root = b.openRoot(${JSON.stringify(store)});
      if (root.failed) return { stage: "root", ...root };
      const f = b.openFile(root, "file");
      return f.failed ? f : verify(f);`;
    const faults = { GJC_FAULT_XATTR_SKIP: "2", GJC_FAULT_XATTR_ERRNO: String(E.EOPNOTSUPP) };
    expect(inChild(body, faults)).toEqual({ accessAcl: "unsupported", defaultAcl: "not_applicable" });
    const out = inChild<{ code: string; attribute: string }>(body, { ...faults, GJC_FAULT_FSTATFS_TYPE: NFS_SUPER_MAGIC });
    expect(out).toMatchObject({ code: "acl_unknown", attribute: "access_acl" });
  });
});
