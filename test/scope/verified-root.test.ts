/**
 * Every entry point reaches managed data from the verified agent directory: `ManagedSessionStorage.open`
 * on a scope path refuses a linked agent directory or `sessions/` (nothing lands in the link's target),
 * and the listings refuse a loose or ACL-bearing agent directory or `sessions/` with the fs-layer code a
 * writer meets before it repairs, also as an unprivileged uid that owns the tree.
 */
import fs from "node:fs";
import path from "node:path";

import { beforeAll, describe, expect, it } from "vitest";

import { ManagedSessionStorage, ScopeError, SessionManager, StorageError, type SkippedSession } from "../../src/index.js";
import { aclHex, extendedAcl } from "../helpers/acl.js";
import { thrownBy } from "../helpers/errors.js";
import { buildTools, hasCommand, isRoot, run, skipBecause } from "../helpers/processes.js";
import { BUILD_HOOK_TIMEOUT_MS, builtCli, runCli } from "../cli/helpers.js";
import { useSandboxes, type Sandbox } from "./helpers.js";

const UNPRIVILEGED = 65534;

const sandbox = useSandboxes();

/** Gives `dir` an extended access ACL (a named user with no rights, the mode unchanged); false where the filesystem stores none. */
function addAcl(dir: string): boolean {
  return run(buildTools().setXattr, [dir, "system.posix_acl_access", aclHex(extendedAcl(UNPRIVILEGED))]).status === 0;
}

/** A writer's preparation repairs what the user owns (the ACLs and modes of the agent directory and `sessions/`). */
function repairByWriting(box: Sandbox): void {
  SessionManager.create(box.cwd, undefined, undefined, { agentDir: box.agentDir, terminalId: null });
}

const USAGE = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };

/** A sandbox holding one persisted session in the workspace's scope; returns the scope directory. */
async function withSession(box: Sandbox): Promise<string> {
  const manager = SessionManager.create(box.cwd, undefined, undefined, { agentDir: box.agentDir, terminalId: null });
  manager.appendMessage({ role: "user", content: "list the files of the repository, then explain the build", timestamp: 1 });
  manager.appendMessage({
    role: "assistant",
    content: [{ type: "text", text: "The repository builds with tsc and a bundler step." }],
    api: "messages",
    provider: "p",
    model: "m",
    usage: USAGE,
    stopReason: "stop",
    timestamp: 2,
  });
  const file = manager.getSessionFile() as string;
  await manager.close();
  return path.dirname(file);
}

function expectStorageRefusal(open: () => unknown, detail: string): void {
  const thrown = thrownBy(open);
  expect(thrown).toBeInstanceOf(StorageError);
  // A link has its own storage code; every other refusal is `unsafe_entry`, the fs-layer code in `detail`.
  expect(thrown).toMatchObject({ code: detail === "symlink_refused" ? detail : "unsafe_entry", detail });
}

/** What the listings say about the sandbox: `list`'s error detail (or count) and `listAll`'s skip codes (or count). */
async function listings(box: Sandbox): Promise<{ list: string | number; listAll: string[] | number }> {
  let list: string | number;
  try {
    list = (await SessionManager.list(box.cwd, undefined, undefined, { agentDir: box.agentDir })).length;
  } catch (error) {
    expect(error).toBeInstanceOf(ScopeError);
    list = (error as ScopeError).detail;
  }
  let skipped: readonly SkippedSession[] = [];
  const all = await SessionManager.listAll(undefined, box.agentDir, { onSkipped: (s) => (skipped = s) });
  return { list, listAll: all.length > 0 ? all.length : skipped.map((s) => s.detail ?? s.code) };
}

describe("ManagedSessionStorage.open walks from the agent directory", () => {
  it("opens a real scope and refuses a linked agent directory or sessions/, writing nothing in the target", async () => {
    const box = sandbox();
    const scopeDir = await withSession(box);
    const scopeName = path.basename(scopeDir);
    const storage = ManagedSessionStorage.open(scopeDir);
    expect(storage.listFilesSync(scopeDir)).toHaveLength(1);
    storage.close();

    // The agent directory moved aside and a link left in its place.
    const real = path.join(box.root, "real-agent");
    fs.renameSync(box.agentDir, real);
    fs.symlinkSync(real, box.agentDir);
    const before = fs.readdirSync(path.join(real, "sessions", scopeName));
    expectStorageRefusal(() => ManagedSessionStorage.open(scopeDir), "symlink_refused");
    expectStorageRefusal(() => ManagedSessionStorage.open(path.join(box.agentDir, "sessions", scopeName, "sub"), { create: true }), "symlink_refused");
    expectStorageRefusal(() => ManagedSessionStorage.open(path.join(box.agentDir, "sessions")), "symlink_refused");
    expect(fs.readdirSync(path.join(real, "sessions", scopeName))).toEqual(before);

    // A real agent directory whose sessions/ is a link.
    fs.unlinkSync(box.agentDir);
    fs.mkdirSync(box.agentDir, { mode: 0o700 });
    fs.symlinkSync(path.join(real, "sessions"), path.join(box.agentDir, "sessions"));
    expectStorageRefusal(() => ManagedSessionStorage.open(scopeDir), "symlink_refused");
    expectStorageRefusal(() => ManagedSessionStorage.open(path.join(box.agentDir, "sessions", scopeName, "new"), { create: true }), "symlink_refused");
    expect(fs.readdirSync(path.join(real, "sessions", scopeName))).toEqual(before);
  });

  it("refuses a loose or ACL-bearing agent directory or sessions/", async (ctx) => {
    const box = sandbox();
    const scopeDir = await withSession(box);
    for (const dir of [box.agentDir, path.join(box.agentDir, "sessions")]) {
      for (const mode of [0o755, 0o750, 0o711]) {
        fs.chmodSync(dir, mode);
        expectStorageRefusal(() => ManagedSessionStorage.open(scopeDir), "mode_mismatch");
        fs.chmodSync(dir, 0o700);
      }
    }
    for (const dir of [box.agentDir, path.join(box.agentDir, "sessions")]) {
      if (!addAcl(dir)) skipBecause(ctx, "this filesystem stores no POSIX ACL");
      expectStorageRefusal(() => ManagedSessionStorage.open(scopeDir), "acl_present");
      repairByWriting(box);
    }
    expect(ManagedSessionStorage.open(scopeDir).listFilesSync(scopeDir)).toHaveLength(1);
  });
});

describe("listings refuse what writers would have to repair", () => {
  beforeAll(() => void builtCli(), BUILD_HOOK_TIMEOUT_MS);

  it("list throws and listAll skips on a loose agent directory or sessions/; a writer's repair makes both list again", async () => {
    const box = sandbox();
    await withSession(box);
    expect(await listings(box)).toEqual({ list: 1, listAll: 1 });
    for (const dir of [box.agentDir, path.join(box.agentDir, "sessions")]) {
      for (const mode of [0o755, 0o770, 0o701]) {
        fs.chmodSync(dir, mode);
        expect(await listings(box)).toEqual({ list: "mode_mismatch", listAll: ["mode_mismatch"] });
        expect(fs.statSync(dir).mode & 0o7777, "a listing never repairs").toBe(mode);
        fs.chmodSync(dir, 0o700);
      }
    }
    fs.chmodSync(box.agentDir, 0o755);
    repairByWriting(box);
    expect(await listings(box)).toEqual({ list: 1, listAll: 1 });
  });

  it("refuses an ACL-bearing agent directory or sessions/ with acl_present", async (ctx) => {
    const box = sandbox();
    await withSession(box);
    for (const dir of [box.agentDir, path.join(box.agentDir, "sessions")]) {
      if (!addAcl(dir)) skipBecause(ctx, "this filesystem stores no POSIX ACL");
      expect(await listings(box)).toEqual({ list: "acl_present", listAll: ["acl_present"] });
      repairByWriting(box);
    }
    expect(await listings(box)).toEqual({ list: 1, listAll: 1 });
  });

  it("refuses a loose agent directory the same way as an unprivileged uid that owns it (CLI list)", async (ctx) => {
    if (!isRoot()) skipBecause(ctx, "needs root to hand the tree to another uid");
    if (!hasCommand("setpriv")) skipBecause(ctx, "setpriv (util-linux) is not installed");
    const box = sandbox();
    await withSession(box);
    const chownTree = (p: string): void => {
      fs.lchownSync(p, UNPRIVILEGED, UNPRIVILEGED);
      if (fs.lstatSync(p).isDirectory()) for (const name of fs.readdirSync(p)) chownTree(path.join(p, name));
    };
    chownTree(box.root);
    const wrapper = ["setpriv", `--reuid=${UNPRIVILEGED}`, `--regid=${UNPRIVILEGED}`, "--clear-groups"];
    const list = () => runCli(["list", "--all", "--json", "--agent-dir", box.agentDir], { wrapper, env: { HOME: box.root } });
    const ok = list();
    expect(ok.status, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout).sessions).toHaveLength(1);
    for (const dir of [box.agentDir, path.join(box.agentDir, "sessions")]) {
      fs.chmodSync(dir, 0o755);
      const refused = list();
      expect(refused.status).not.toBe(0);
      expect(refused.stdout).toBe("");
      expect(refused.stderr).toContain("mode_mismatch");
      fs.chmodSync(dir, 0o700);
    }
  });
});
