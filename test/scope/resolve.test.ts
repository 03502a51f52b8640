import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

import { describe, expect, it } from "vitest";

import { defaultAgentDir, resolveManagedScope, resolveManagedScopeOrThrow, ScopeError, type ManagedScope } from "../../src/index.js";
import { BINDING_FILE_NAME, encodeBinding, scopeDigest } from "../../src/scope/index.js";
import { isRoot } from "../helpers/processes.js";
import { treeState, useSandboxes } from "./helpers.js";

const sandbox = useSandboxes();

function resolved(result: ReturnType<typeof resolveManagedScope>): ManagedScope {
  if (result.kind !== "resolved") throw new Error(`${result.code}/${result.cause}`);
  return result.scope;
}

describe("resolveManagedScope", () => {
  it("read-only resolution writes nothing, not even the agent dir", () => {
    const box = sandbox();
    const before = treeState(box.root);
    const scope = resolved(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir }));
    expect(scope.exists).toBe(false);
    expect(scope.directoryName).toBe(`v2-${scopeDigest("posix", fs.realpathSync(box.cwd))}`);
    expect(treeState(box.root)).toEqual(before);
    // And after the scope exists, reading it changes no inode, mode or mtime.
    resolved(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode: "write" }));
    const prepared = treeState(box.root);
    expect(resolved(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir })).exists).toBe(true);
    expect(treeState(box.root)).toEqual(prepared);
  });

  it("write preparation creates the chain 0700 and a canonical 0600 binding", () => {
    const box = sandbox();
    const scope = resolved(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode: "write" }));
    for (const dir of [box.agentDir, scope.sessionsRoot, scope.directoryPath]) expect(fs.statSync(dir).mode & 0o7777).toBe(0o700);
    const binding = path.join(scope.directoryPath, BINDING_FILE_NAME);
    expect(fs.statSync(binding).mode & 0o7777).toBe(0o600);
    expect(fs.readFileSync(binding, "utf8")).toBe(
      `{"schemaVersion":1,"layoutVersion":2,"identityVersion":1,"platform":"posix","canonicalPath":${JSON.stringify(scope.canonicalCwd)},"identityDigest":"${scope.identityDigest}"}\n`,
    );
    expect(scope.repaired).toEqual([]);
  });

  it("repairs only mode deviations of owned directories, and reports them", () => {
    const box = sandbox();
    fs.mkdirSync(path.join(box.agentDir, "sessions"), { recursive: true, mode: 0o755 });
    fs.chmodSync(box.agentDir, 0o755);
    fs.chmodSync(path.join(box.agentDir, "sessions"), 0o750);
    const scope = resolved(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode: "write" }));
    expect(scope.repaired).toEqual([box.agentDir, path.join(box.agentDir, "sessions")]);
    expect(fs.statSync(box.agentDir).mode & 0o777).toBe(0o700);
    expect(fs.statSync(box.root).mode & 0o777).toBe(0o700); // nothing above the agent dir touched
  });

  it("refuses a symlinked sessions root and a symlink swapped in for the scope directory", () => {
    const box = sandbox();
    const elsewhere = path.join(box.root, "elsewhere");
    fs.mkdirSync(elsewhere, { mode: 0o700 });
    fs.mkdirSync(box.agentDir, { mode: 0o700 });
    fs.symlinkSync(elsewhere, path.join(box.agentDir, "sessions"));
    for (const mode of ["read", "write"] as const) {
      expect(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode })).toMatchObject({ kind: "error", code: "sessions_root_unavailable" });
    }
    fs.unlinkSync(path.join(box.agentDir, "sessions"));
    const scope = resolved(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode: "write" }));
    fs.renameSync(scope.directoryPath, path.join(box.root, "moved"));
    fs.symlinkSync(path.join(box.root, "moved"), scope.directoryPath);
    for (const mode of ["read", "write"] as const) {
      expect(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode })).toMatchObject({ kind: "error", code: "binding_invalid" });
    }
  });

  it("refuses a foreign-owned sessions root and does not repair it (root only)", (ctx) => {
    if (!isRoot()) return ctx.skip("chown needs root");
    const box = sandbox();
    fs.mkdirSync(path.join(box.agentDir, "sessions"), { recursive: true, mode: 0o700 });
    fs.chmodSync(box.agentDir, 0o700);
    fs.chownSync(path.join(box.agentDir, "sessions"), 4242, 4242);
    fs.chmodSync(path.join(box.agentDir, "sessions"), 0o755);
    expect(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode: "write" })).toMatchObject({
      kind: "error",
      code: "sessions_root_unavailable",
      cause: "owner_mismatch",
    });
    const st = fs.statSync(path.join(box.agentDir, "sessions"));
    expect([st.uid, st.mode & 0o777]).toEqual([4242, 0o755]);
  });

  it("refuses a regular file where the sessions root or the scope should be", () => {
    const box = sandbox();
    fs.mkdirSync(box.agentDir, { mode: 0o700 });
    fs.writeFileSync(path.join(box.agentDir, "sessions"), "x");
    expect(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir })).toMatchObject({ code: "sessions_root_unavailable", cause: "not_directory" });
    expect(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode: "write" })).toMatchObject({ code: "sessions_root_unavailable" });
  });

  it("maps cwd failures before touching the agent dir", () => {
    const box = sandbox();
    expect(resolveManagedScope({ cwd: path.join(box.cwd, "missing"), agentDir: box.agentDir, mode: "write" })).toMatchObject({ code: "cwd_missing" });
    fs.writeFileSync(path.join(box.root, "f"), "");
    expect(resolveManagedScope({ cwd: path.join(box.root, "f"), agentDir: box.agentDir, mode: "write" })).toMatchObject({ code: "cwd_not_directory" });
    expect(fs.existsSync(box.agentDir)).toBe(false);
    expect(resolveManagedScope({ cwd: 3 } as never)).toMatchObject({ code: "invalid_request" });
    expect(() => resolveManagedScopeOrThrow({ cwd: path.join(box.cwd, "missing"), agentDir: box.agentDir })).toThrow(ScopeError);
  });

  it("aliases of one directory share a scope; different directories never do", () => {
    const box = sandbox();
    const link = path.join(box.root, "link");
    fs.symlinkSync(box.cwd, link);
    fs.mkdirSync(path.join(box.cwd, "sub"));
    const spellings = [box.cwd, link, `${box.cwd}/.`, `${box.cwd}/sub/..`, `${link}/sub/../.`, `${box.cwd}/`];
    const names = new Set(spellings.map((cwd) => resolved(resolveManagedScope({ cwd, agentDir: box.agentDir })).directoryName));
    expect(names.size).toBe(1);
    fs.mkdirSync(path.join(box.root, "a-b"));
    fs.mkdirSync(path.join(box.root, "a-b", "c"));
    fs.mkdirSync(path.join(box.root, "a"));
    fs.mkdirSync(path.join(box.root, "a", "b-c"));
    const x = resolved(resolveManagedScope({ cwd: path.join(box.root, "a-b", "c"), agentDir: box.agentDir }));
    const y = resolved(resolveManagedScope({ cwd: path.join(box.root, "a", "b-c"), agentDir: box.agentDir }));
    expect(x.directoryName).not.toBe(y.directoryName);
    expect(x.directoryName).not.toBe(resolved(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir })).directoryName);
  });

  it("a bind mount of the workspace resolves to its own canonical path (root only)", (ctx) => {
    if (!isRoot()) return ctx.skip("bind mounts need root");
    const box = sandbox();
    const mountPoint = path.join(box.root, "bound");
    fs.mkdirSync(mountPoint);
    try {
      execFileSync("mount", ["--bind", box.cwd, mountPoint], { stdio: "ignore" });
    } catch {
      console.warn("[skipped] bind mount refused in this container");
      return ctx.skip("mount --bind refused");
    }
    try {
      const direct = resolved(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir }));
      const viaMount = resolved(resolveManagedScope({ cwd: mountPoint, agentDir: box.agentDir }));
      // realpath does not see through a bind mount: the identity is the path it is reached by.
      // Both are stable, distinct, and each stays its own scope.
      expect(viaMount.canonicalCwd).toBe(mountPoint);
      expect(direct.canonicalCwd).toBe(box.cwd);
    } finally {
      execFileSync("umount", [mountPoint]);
    }
  });

  it("defaultAgentDir honours the environment", () => {
    expect(defaultAgentDir({}, "/home/u")).toBe("/home/u/.gjc/agent");
    expect(defaultAgentDir({ GJC_CONFIG_DIR: ".other" }, "/home/u")).toBe("/home/u/.other/agent");
    expect(defaultAgentDir({ PI_CODING_AGENT_DIR: "/p" }, "/home/u")).toBe("/p");
    expect(defaultAgentDir({ GJC_CODING_AGENT_DIR: "/g", PI_CODING_AGENT_DIR: "/p" }, "/home/u")).toBe("/g");
  });

  it("a losing concurrent creator re-validates the winner's binding", () => {
    const box = sandbox();
    const scope = resolved(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode: "write" }));
    // The binding is already there: a second preparation must accept exactly those bytes.
    const before = fs.statSync(path.join(scope.directoryPath, BINDING_FILE_NAME)).ino;
    resolved(resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir, mode: "write" }));
    expect(fs.statSync(path.join(scope.directoryPath, BINDING_FILE_NAME)).ino).toBe(before);
    expect(encodeBinding({ platform: "posix", canonicalPath: scope.canonicalCwd, digest: scope.identityDigest })).toBe(
      fs.readFileSync(path.join(scope.directoryPath, BINDING_FILE_NAME), "utf8"),
    );
  });
});
