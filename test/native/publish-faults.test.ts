// Forced fallbacks of no-replace publication, through an LD_PRELOAD shim over renameat2 and
// linkat: EINVAL from renameat2 must lead to linkat + unlink, and a failing linkat must
// fail closed (never a check-then-rename).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { SecureDir } from "../../src/index.js";
import { buildTools, runWithAddon, type Tools } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";

const E = os.constants.errno;
let tools: Tools;
let tmp: ReturnType<typeof makeTempDir>;
let store: string;
let log: string;

beforeAll(() => {
  tools = buildTools();
});
beforeEach(() => {
  tmp = makeTempDir();
  store = path.join(tmp.path, "store");
  log = path.join(tmp.path, "calls.log");
  const root = SecureDir.openRoot(store, { create: true });
  root.writeFileAtomic("ready", "new content");
  root.writeFileAtomic("taken", "old content");
  root.close();
});
afterEach(() => tmp.remove());

/** Runs one addon call on the store in a child with the shim and `faults`. */
function publishUnderFaults(call: string, faults: Record<string, string>): { code?: string; syscall?: string; errno?: number } | null {
  const body = `
    const root = b.openRoot(${JSON.stringify(store)});
    if (root.failed) throw new Error("root: " + root.code);
    return ${call} ?? null;`;
  return runWithAddon(body, { LD_PRELOAD: tools.faultShim, GJC_FAULT_LOG: log, ...faults });
}

function calls(): string[] {
  return fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n") : [];
}

const read = (name: string) => fs.readFileSync(path.join(store, name), "utf8");

describe("renameat2 unsupported (EINVAL / ENOSYS) -> linkat fallback", () => {
  for (const [name, errno] of [["EINVAL", E.EINVAL], ["ENOSYS", E.ENOSYS]] as const) {
    it(`${name}: publishes through linkat and removes the source`, () => {
      const result = publishUnderFaults(`b.publishNoReplace(root, "ready", "final")`, { GJC_FAULT_RENAMEAT2_ERRNO: String(errno) });
      expect(result).toBeNull();
      expect(calls()).toEqual(["renameat2:errno", "linkat"]);
      expect(read("final")).toBe("new content");
      expect(fs.existsSync(path.join(store, "ready"))).toBe(false);
      expect(fs.statSync(path.join(store, "final")).nlink).toBe(1);
    });
  }

  it("the fallback still never replaces: linkat's EEXIST is already_exists", () => {
    const result = publishUnderFaults(`b.publishNoReplace(root, "ready", "taken")`, { GJC_FAULT_RENAMEAT2_ERRNO: String(E.EINVAL) });
    expect(result).toMatchObject({ code: "already_exists", syscall: "linkat" });
    expect(read("taken")).toBe("old content");
    expect(read("ready")).toBe("new content");
  });

  it("writeFileAtomic with noReplace takes the same fallback", () => {
    const result = publishUnderFaults(`b.writeFileAtomic(root, "fresh", "abc", { noReplace: true })`, { GJC_FAULT_RENAMEAT2_ERRNO: String(E.EINVAL) });
    expect(result).toBeNull();
    expect(read("fresh")).toBe("abc");
    expect(fs.readdirSync(store).sort()).toEqual(["fresh", "ready", "taken"]);
  });
});

describe("linkat failing too -> fail closed", () => {
  for (const [name, errno] of [["EPERM", E.EPERM], ["EOPNOTSUPP", E.EOPNOTSUPP], ["EXDEV", E.EXDEV]] as const) {
    it(`linkat ${name}: io_error, nothing published, nothing replaced, no rename attempted`, () => {
      const result = publishUnderFaults(`b.publishNoReplace(root, "ready", "final")`, {
        GJC_FAULT_RENAMEAT2_ERRNO: String(E.EINVAL),
        GJC_FAULT_LINKAT_ERRNO: String(errno),
      });
      expect(result).toMatchObject({ code: "io_error", syscall: "linkat", errno });
      expect(calls()).toEqual(["renameat2:errno", "linkat:errno"]);
      expect(fs.existsSync(path.join(store, "final"))).toBe(false);
      expect(read("ready")).toBe("new content");
    });
  }

  it("writeFileAtomic fails closed and leaves no temporary file", () => {
    const result = publishUnderFaults(`b.writeFileAtomic(root, "taken", "zzz", { noReplace: true })`, {
      GJC_FAULT_RENAMEAT2_ERRNO: String(E.EINVAL),
      GJC_FAULT_LINKAT_ERRNO: String(E.EPERM),
    });
    expect(result).toMatchObject({ code: "io_error", syscall: "linkat" });
    expect(read("taken")).toBe("old content");
    expect(fs.readdirSync(store).sort()).toEqual(["ready", "taken"]);
  });

  it("an I/O error from renameat2 is io_error with its errno, and no fallback", () => {
    const result = publishUnderFaults(`b.publishNoReplace(root, "ready", "final")`, { GJC_FAULT_RENAMEAT2_ERRNO: String(E.EIO) });
    expect(result).toMatchObject({ code: "io_error", syscall: "renameat2", errno: E.EIO });
    expect(calls()).toEqual(["renameat2:errno"]);
    expect(read("ready")).toBe("new content");
  });

  it("other renameat2 errors are answers, not a reason to fall back", () => {
    const result = publishUnderFaults(`b.publishNoReplace(root, "ready", "final")`, { GJC_FAULT_RENAMEAT2_ERRNO: String(E.EACCES) });
    expect(result).toMatchObject({ code: "permission_denied", syscall: "renameat2" });
    expect(calls()).toEqual(["renameat2:errno"]);
  });
});
