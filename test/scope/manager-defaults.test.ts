import fs from "node:fs";
import path from "node:path";

import { describe, expect, it } from "vitest";

import { ScopeError, SessionManager, resolveManagedScope } from "../../src/index.js";
import { assistant, user } from "../manager/helpers.js";
import { legacyName, writeLegacySession } from "../migration/fixtures.js";
import { treeState, useSandboxes, type Sandbox } from "./helpers.js";

const sandbox = useSandboxes();

function scopeDir(box: Sandbox): string {
  const r = resolveManagedScope({ cwd: box.cwd, agentDir: box.agentDir });
  if (r.kind !== "resolved") throw new Error(r.code);
  return r.scope.directoryPath;
}

describe("SessionManager defaults to the managed scope of the cwd", () => {
  it("create writes only into the v2 scope, never the legacy layout", async () => {
    const box = sandbox();
    const manager = SessionManager.create(box.cwd, undefined, undefined, { agentDir: box.agentDir, terminalId: null });
    manager.appendMessage(user("q"));
    manager.appendMessage(assistant("a"));
    await manager.close();
    const file = manager.getSessionFile();
    expect(path.dirname(file ?? "")).toBe(scopeDir(box));
    expect(fs.statSync(file ?? "").mode & 0o777).toBe(0o600);
    const roots = fs.readdirSync(path.join(box.agentDir, "sessions"));
    expect(roots).toEqual([path.basename(scopeDir(box))]);
    expect(roots.some((n) => n === legacyName(box.cwd))).toBe(false);
  });

  it("continueRecent, list and listAll use the same scope; list writes nothing but its listing cache", async () => {
    const box = sandbox();
    expect(await SessionManager.list(box.cwd, undefined, undefined, { agentDir: box.agentDir })).toEqual([]);
    expect(fs.existsSync(box.agentDir)).toBe(false);
    const first = await SessionManager.continueRecent(box.cwd, undefined, undefined, undefined, undefined, { agentDir: box.agentDir, terminalId: null });
    first.appendMessage(user("q"));
    first.appendMessage(assistant("a"));
    await first.close();
    // The listing cache (a disposable dot file) may appear, and its rename touches its
    // directory's times; nothing else may change: no session, scope, lock or binding.
    const withoutCache = (state: Record<string, string>): Record<string, string> =>
      Object.fromEntries(
        Object.entries(state)
          .filter(([file]) => !path.basename(file).startsWith(".gjc-listing-index"))
          .map(([file, value]) => [file, value.endsWith(":") ? value.split(":").slice(0, 2).join(":") : value]),
      );
    const before = withoutCache(treeState(box.agentDir));
    const listing = await SessionManager.list(box.cwd, undefined, undefined, { agentDir: box.agentDir });
    expect(listing.map((s) => s.path)).toEqual([first.getSessionFile()]);
    expect((await SessionManager.listAll(undefined, box.agentDir)).map((s) => s.path)).toEqual([first.getSessionFile()]);
    expect(withoutCache(treeState(box.agentDir))).toEqual(before);
    const again = await SessionManager.continueRecent(box.cwd, undefined, undefined, undefined, undefined, { agentDir: box.agentDir, terminalId: null });
    expect(again.getSessionFile()).toBe(first.getSessionFile());
    await again.close();
  });

  it("legacy sessions are not resumed by default writers (they are listed through candidates)", async () => {
    const box = sandbox();
    writeLegacySession(path.join(box.agentDir, "sessions"), box.cwd);
    // The older tool left the agent directory and sessions/ 0755: a reader refuses what a writer repairs.
    await expect(SessionManager.list(box.cwd, undefined, undefined, { agentDir: box.agentDir })).rejects.toMatchObject({ detail: "mode_mismatch" });
    SessionManager.create(box.cwd, undefined, undefined, { agentDir: box.agentDir, terminalId: null });
    expect(await SessionManager.list(box.cwd, undefined, undefined, { agentDir: box.agentDir })).toEqual([]);
  });

  it("an explicit session dir bypasses scope derivation", async () => {
    const box = sandbox();
    const explicit = path.join(box.root, "explicit");
    const manager = SessionManager.create(box.cwd, explicit, undefined, { agentDir: box.agentDir, terminalId: null });
    manager.appendMessage(user("q"));
    manager.appendMessage(assistant("a"));
    await manager.close();
    expect(path.dirname(manager.getSessionFile() ?? "")).toBe(explicit);
    expect(fs.existsSync(path.join(box.agentDir, "sessions"))).toBe(false);
  });

  it("scope failures surface as ScopeError codes", () => {
    const box = sandbox();
    expect(() => SessionManager.create(path.join(box.cwd, "missing"), undefined, undefined, { agentDir: box.agentDir })).toThrow(ScopeError);
    try {
      SessionManager.create(path.join(box.cwd, "missing"), undefined, undefined, { agentDir: box.agentDir });
    } catch (error) {
      expect((error as ScopeError).code).toBe("cwd_missing");
    }
  });
});
