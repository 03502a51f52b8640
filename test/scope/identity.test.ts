import fs from "node:fs";
import path from "node:path";

import { afterEach, describe, expect, it } from "vitest";

import { isScopeDirectoryName } from "../../src/index.js";
import { base32Lower, classifyWindowsPath, scopeDigest, scopeDirectoryName, workspaceIdentity } from "../../src/scope/identity.js";
import { makeTempDir } from "../helpers/temp.js";

const temps: { remove(): void }[] = [];
afterEach(() => temps.splice(0).forEach((t) => t.remove()));

describe("identity v1 digest", () => {
  it("matches the peer's test vectors", () => {
    expect(scopeDigest("posix", "/tmp/gjc-parity-check")).toBe("koeefpfylk7nw7dsahoavseb3fz47pfb2627h6qcsty4dlyikvuq");
    expect(scopeDigest("win32", "C:\\gjc\\parity")).toBe("st3lb7larwwpmnhky2rmt4d5d3vdz6g62anb2uzlrbfkcpaktqoq");
  });

  it("is lowercase RFC 4648 base32 without padding", () => {
    expect(base32Lower(Buffer.from("foobar"))).toBe("mzxw6ytboi");
    expect(base32Lower(Buffer.from("f"))).toBe("my");
    expect(base32Lower(new Uint8Array(32))).toHaveLength(52);
  });

  it("names the directory v2-<digest> and recognises only that shape", () => {
    const digest = scopeDigest("posix", "/x");
    expect(scopeDirectoryName(digest)).toBe(`v2-${digest}`);
    expect(isScopeDirectoryName(`v2-${digest}`)).toBe(true);
    expect(isScopeDirectoryName(`v2-${digest.toUpperCase()}`)).toBe(false);
    expect(isScopeDirectoryName(`v2-${digest}a`)).toBe(false);
    expect(isScopeDirectoryName(`--tmp-x--`)).toBe(false);
  });

  it("separates platforms and paths", () => {
    expect(scopeDigest("posix", "/a")).not.toBe(scopeDigest("win32", "/a"));
    expect(scopeDigest("posix", "/a/b-c")).not.toBe(scopeDigest("posix", "/a-b/c"));
  });
});

describe("Windows lexical network rule (pure, every platform)", () => {
  it.each([
    ["\\\\server\\share\\proj", "network"],
    ["//server/share/proj", "network"],
    ["\\\\?\\UNC\\server\\share", "network"],
    ["\\\\?\\unc\\server\\share", "network"],
    ["\\\\.\\C:\\proj", "network"],
    ["\\\\.\\UNC\\server\\share", "network"],
    ["\\\\?\\C:\\proj", "local"],
    ["\\\\?\\Volume{0b1e2f00-0000-0000-0000-000000000000}\\proj", "local"],
    ["C:\\proj", "local"],
    ["C:/proj", "local"],
    ["\\proj", "local"],
  ] as const)("%s -> %s", (spelling, expected) => {
    expect(classifyWindowsPath(spelling)).toBe(expected);
  });

  it("refuses a UNC cwd as win32 before any I/O", () => {
    const result = workspaceIdentity("\\\\server\\share\\does-not-exist", "win32");
    expect(result).toMatchObject({ kind: "error", code: "network_unsupported" });
    expect(workspaceIdentity("\\\\?\\UNC\\server\\share", "win32")).toMatchObject({ code: "network_unsupported" });
  });
});

describe("workspaceIdentity on this system", () => {
  it("gives typed results for missing, non-directory and non-UTF-8 cwds", () => {
    const t = makeTempDir();
    temps.push(t);
    fs.writeFileSync(path.join(t.path, "file"), "x");
    expect(workspaceIdentity(path.join(t.path, "nope"))).toMatchObject({ kind: "error", code: "cwd_missing" });
    expect(workspaceIdentity(path.join(t.path, "file"))).toMatchObject({ kind: "error", code: "cwd_not_directory" });
    expect(workspaceIdentity(`${t.path}/\uD800`)).toMatchObject({ kind: "error", code: "identity_unavailable", cause: "not_utf8" });
    expect(workspaceIdentity(`${t.path}/a\0b`)).toMatchObject({ kind: "error", code: "identity_unavailable" });
  });

  it("hashes the realpath with the posix tag", () => {
    const t = makeTempDir();
    temps.push(t);
    const result = workspaceIdentity(t.path);
    if (result.kind !== "identity") throw new Error(result.code);
    expect(result.identity.platform).toBe(process.platform === "win32" ? "win32" : "posix");
    expect(result.identity.canonicalPath).toBe(fs.realpathSync(t.path));
    expect(result.identity.digest).toBe(scopeDigest("posix", fs.realpathSync(t.path)));
  });
});
