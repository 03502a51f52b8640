import fs from "node:fs";
import path from "node:path";

import { describe, expect, it } from "vitest";

import { resolveManagedScope, type ManagedScope } from "../../src/index.js";
import { BINDING_FILE_NAME, checkBindingBytes, decodeBinding, scopeDigest } from "../../src/scope/index.js";
import { isRoot } from "../helpers/processes.js";
import { useSandboxes, type Sandbox } from "./helpers.js";

const sandbox = useSandboxes();

function prepared(): { box: Sandbox; scope: ManagedScope; binding: string; canonical: string } {
  const box = sandbox();
  const result = resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode: "write" });
  if (result.kind !== "resolved") throw new Error(result.code);
  const binding = path.join(result.scope.directoryPath, BINDING_FILE_NAME);
  return { box, scope: result.scope, binding, canonical: fs.readFileSync(binding, "utf8") };
}

/** Both resolutions must fail closed with `code`, and the write preparation must not "fix" the file. */
function expectBoth(box: Sandbox, binding: string, code: string): void {
  const before = fs.lstatSync(binding, { throwIfNoEntry: false });
  for (const mode of ["read", "write"] as const) {
    expect(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode })).toMatchObject({ kind: "error", code });
  }
  const after = fs.lstatSync(binding, { throwIfNoEntry: false });
  expect(after?.ino).toBe(before?.ino);
  expect(after?.mode).toBe(before?.mode);
}

function rewrite(file: string, text: string): void {
  fs.writeFileSync(file, text, { mode: 0o600 });
  fs.chmodSync(file, 0o600);
}

describe("binding tampering fails closed", () => {
  const edits: [string, (canonical: string, scope: ManagedScope) => string][] = [
    ["extra key", (c) => c.replace(/}\n$/, ',"extra":1}\n')],
    [
      "reordered keys",
      (c) => {
        const o = JSON.parse(c);
        return `${JSON.stringify({ layoutVersion: 2, schemaVersion: 1, identityVersion: 1, platform: o.platform, canonicalPath: o.canonicalPath, identityDigest: o.identityDigest })}\n`;
      },
    ],
    ["spaces", (c) => `${JSON.stringify(JSON.parse(c), null, 1)}\n`],
    ["CRLF", (c) => c.replace(/\n$/, "\r\n")],
    ["missing LF", (c) => c.slice(0, -1)],
    ["two LFs", (c) => `${c}\n`],
    ["not JSON", () => "{"],
    ["wrong schema version", (c) => c.replace('"schemaVersion":1', '"schemaVersion":2')],
    ["uppercase digest", (c, s) => c.replace(s.identityDigest, s.identityDigest.toUpperCase())],
  ];
  it.each(edits)("%s -> binding_invalid", (_name, edit) => {
    const { box, scope, binding, canonical } = prepared();
    rewrite(binding, edit(canonical, scope));
    expectBoth(box, binding, "binding_invalid");
  });

  it("another workspace's identity -> binding_conflict", () => {
    const { box, scope, binding } = prepared();
    const other = "/somewhere/else";
    rewrite(
      binding,
      `{"schemaVersion":1,"layoutVersion":2,"identityVersion":1,"platform":"posix","canonicalPath":"${other}","identityDigest":"${scopeDigest("posix", other)}"}\n`,
    );
    expectBoth(box, binding, "binding_conflict");
    expect(scope.exists).toBe(true);
  });

  it("symlinked binding -> binding_invalid (the target is never read)", () => {
    const { box, binding, canonical } = prepared();
    const target = path.join(box.root, "real-binding");
    rewrite(target, canonical);
    fs.unlinkSync(binding);
    fs.symlinkSync(target, binding);
    expectBoth(box, binding, "binding_invalid");
  });

  it("hardlinked binding -> binding_invalid", () => {
    const { box, binding } = prepared();
    fs.linkSync(binding, path.join(box.root, "second-link"));
    expectBoth(box, binding, "binding_invalid");
  });

  it("0644 binding -> binding_invalid, not repaired", () => {
    const { box, binding } = prepared();
    fs.chmodSync(binding, 0o644);
    expectBoth(box, binding, "binding_invalid");
    expect(fs.statSync(binding).mode & 0o777).toBe(0o644);
  });

  it("a directory in its place -> binding_invalid", () => {
    const { box, binding } = prepared();
    fs.unlinkSync(binding);
    fs.mkdirSync(binding, { mode: 0o700 });
    expectBoth(box, binding, "binding_invalid");
  });

  it("a foreign-owned binding -> binding_invalid (root only)", (ctx) => {
    if (!isRoot()) return ctx.skip("chown needs root");
    const { box, binding } = prepared();
    fs.chownSync(binding, 4242, 4242);
    expectBoth(box, binding, "binding_invalid");
  });

  it("a scope directory owned by someone else is refused, not repaired (root only)", (ctx) => {
    if (!isRoot()) return ctx.skip("chown needs root");
    const { box, scope } = prepared();
    fs.chownSync(scope.directoryPath, 4242, 4242);
    for (const mode of ["read", "write"] as const) {
      expect(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode })).toMatchObject({
        kind: "error",
        code: "binding_invalid",
        cause: "owner_mismatch",
      });
    }
    expect(fs.statSync(scope.directoryPath).uid).toBe(4242);
  });

  it("a missing binding in an existing scope is created on write, absent stays absent on read", () => {
    const { box, binding, canonical } = prepared();
    fs.unlinkSync(binding);
    expect(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir })).toMatchObject({ kind: "resolved" });
    expect(fs.existsSync(binding)).toBe(false);
    expect(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode: "write" })).toMatchObject({ kind: "resolved" });
    expect(fs.readFileSync(binding, "utf8")).toBe(canonical);
  });

  it("checkBindingBytes and decodeBinding agree on canonical bytes only", () => {
    const expected = { platform: "win32" as const, canonicalPath: "\\\\?\\Volume{x}\\p", digest: scopeDigest("win32", "\\\\?\\Volume{x}\\p") };
    const bytes = Buffer.from(
      `{"schemaVersion":1,"layoutVersion":2,"identityVersion":1,"platform":"win32","canonicalPath":"\\\\\\\\?\\\\Volume{x}\\\\p","identityDigest":"${expected.digest}"}\n`,
    );
    expect(checkBindingBytes(bytes, expected)).toMatchObject({ kind: "valid" });
    expect(decodeBinding(bytes)?.canonicalPath).toBe(expected.canonicalPath);
    expect(decodeBinding(Buffer.concat([bytes, Buffer.from("\n")]))).toBeUndefined();
  });
});
