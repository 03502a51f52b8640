/**
 * GJC's resume over a workspace's legacy sessions and its linked worktrees, on real files: the
 * picker lists a legacy session without touching it; a strict open for the managed destination
 * copies it into the scope first (copy-retain) and opens the copy, or refuses under the `disabled`
 * policy or past the artifact limits, which `continueRecent` throws as GJC's typed errors; this terminal's breadcrumb left in a
 * linked git worktree is followed from the main checkout (the session keeps its worktree cwd), one
 * left in another repository is not, and one naming a legacy file copied since leads to the copy.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionArtifactCapacityError, SessionManager, SessionMigrationPolicyError } from "../../src/gjc/index.js";
import { writeBreadcrumb } from "../../src/manager/breadcrumbs.js";
import { areLinkedWorktrees } from "../../src/gjc/resume-candidates.js";
import type { AgentMessage } from "../../src/index.js";
import { writeLegacySession } from "../migration/fixtures.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: { path: string; remove(): void };
let agentDir: string;
let workspace: string;
beforeEach(() => {
  tmp = makeTempDir("gjc-legacy-resume-");
  agentDir = path.join(tmp.path, "agent");
  workspace = path.join(tmp.path, "work");
  fs.mkdirSync(workspace, { mode: 0o700 });
});
afterEach(() => tmp.remove());

const options = (terminalId: string | null = null) => ({ agentDir, terminalId });
const sessionsRoot = () => path.join(agentDir, "sessions");
const snapshot = (file: string) => ({ bytes: fs.readFileSync(file), mtimeNs: fs.statSync(file, { bigint: true }).mtimeNs });

async function persisted(cwd: string, prompt: string, terminalId: string | null = null): Promise<string> {
  const manager = SessionManager.create(cwd, SessionManager.managedDestination(cwd, agentDir), undefined, options(terminalId));
  manager.appendMessage({ role: "user", content: [{ type: "text", text: prompt }], timestamp: 1 } as AgentMessage);
  await manager.ensureOnDisk();
  await manager.flush();
  const file = manager.getSessionFile()!;
  await manager.close();
  return file;
}

describe("legacy sessions of a managed workspace", () => {
  it("are listed for the picker as they are, and a strict open copies one into the scope before opening it", async () => {
    const current = await persisted(workspace, "a managed session");
    const legacy = writeLegacySession(sessionsRoot(), workspace, { lines: 40 });
    const before = snapshot(legacy);

    const rows = await SessionManager.listManagedForResumePickerReadOnly(workspace, agentDir);
    expect(rows.map((row) => row.path).sort()).toEqual([current, legacy].sort());
    const row = rows.find((r) => r.path === legacy)!;
    expect(row.firstMessage).toBe("line 0");
    expect(snapshot(legacy)).toEqual(before);

    const inspection = await SessionManager.inspectSessionTailReadOnly(legacy);
    if (inspection.kind === "error") throw new Error(inspection.reason);
    const destination = SessionManager.managedDestination(workspace, agentDir);
    const opened = await SessionManager.openExistingStrict(inspection.identity, destination, undefined, undefined, undefined, options());
    if (opened.kind === "error") throw new Error(opened.reason);
    const copy = opened.manager.getSessionFile()!;
    expect(path.dirname(copy)).toBe(path.dirname(current));
    expect(path.basename(copy)).toBe(path.basename(legacy));
    expect(opened.manager.getEntries()).toHaveLength(40);
    expect(fs.statSync(copy).mode & 0o777).toBe(0o600);
    opened.manager.appendMessage({ role: "user", content: [{ type: "text", text: "goes on in the copy" }], timestamp: 2 } as AgentMessage);
    opened.manager.appendMessage({
      role: "assistant",
      content: [{ type: "text", text: "ok" }],
      provider: "p",
      model: "m",
      timestamp: 3,
      usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
      stopReason: "stop",
    } as AgentMessage);
    await opened.manager.close();
    expect(fs.readFileSync(copy, "utf8")).toContain("goes on in the copy");
    expect(snapshot(legacy)).toEqual(before);
    // Copied now: the picker shows the session once, at its copy.
    const after = await SessionManager.listManagedForResumePickerReadOnly(workspace, agentDir);
    expect(after.map((r) => r.path).sort()).toEqual([current, copy].sort());
  });

  it("under the disabled policy: refused by the strict open, thrown typed by continueRecent, nothing copied", async () => {
    const legacy = writeLegacySession(sessionsRoot(), workspace);
    const before = snapshot(legacy);
    const destination = SessionManager.managedDestination(workspace, agentDir);
    const inspection = await SessionManager.inspectSessionTailReadOnly(legacy);
    if (inspection.kind === "error") throw new Error(inspection.reason);
    expect(await SessionManager.openExistingStrict(inspection.identity, destination, undefined, "disabled", undefined, options())).toEqual({
      kind: "error",
      reason: "legacy_migration_disabled",
    });
    await expect(SessionManager.continueRecent(workspace, destination, undefined, "disabled", undefined, options())).rejects.toBeInstanceOf(
      SessionMigrationPolicyError,
    );
    expect(fs.readdirSync(destination.sessionDir).filter((name) => name.endsWith(".jsonl"))).toEqual([]);
    expect(snapshot(legacy)).toEqual(before);

    const resumed = await SessionManager.continueRecent(workspace, undefined, undefined, undefined, undefined, options());
    expect(resumed.getSessionFile()).toBe(path.join(destination.sessionDir, path.basename(legacy)));
    expect(resumed.getEntries()).toHaveLength(3);
    await resumed.close();
    expect(snapshot(legacy)).toEqual(before);
  });

  it("whose artifacts pass the migration limits: refused with GJC's capacity message, thrown typed by continueRecent, nothing copied", async () => {
    const legacy = writeLegacySession(sessionsRoot(), workspace);
    const artifacts = legacy.slice(0, -".jsonl".length);
    fs.mkdirSync(artifacts, { mode: 0o755 });
    // One more entry than a migration copies (50,000).
    for (let i = 0; i <= 50_000; i++) fs.writeFileSync(path.join(artifacts, `${i}.bash.log`), "");
    const destination = SessionManager.managedDestination(workspace, agentDir);
    const inspection = await SessionManager.inspectSessionTailReadOnly(legacy);
    if (inspection.kind === "error") throw new Error(inspection.reason);
    expect(await SessionManager.openExistingStrict(inspection.identity, destination, undefined, undefined, undefined, options())).toEqual({
      kind: "error",
      reason: "artifact_capacity_exceeded",
      message: "Legacy session artifacts exceed the migration capacity (50,000 files or 512 MiB).",
    });
    await expect(SessionManager.continueRecent(workspace, destination, undefined, undefined, undefined, options())).rejects.toBeInstanceOf(
      SessionArtifactCapacityError,
    );
    expect(fs.readdirSync(destination.sessionDir).filter((name) => !name.startsWith("."))).toEqual([]);
  }, 120_000);

  it("a breadcrumb naming a legacy file copied since resumes the copy, not the newest session", async () => {
    const legacy = writeLegacySession(sessionsRoot(), workspace, { id: "intended-session" });
    const first = await SessionManager.continueRecent(workspace, undefined, undefined, undefined, undefined, options());
    const copy = first.getSessionFile()!;
    await first.close();
    fs.unlinkSync(legacy);
    await persisted(workspace, "a newer session");
    writeBreadcrumb(agentDir, "pane-1", workspace, legacy);

    const resumed = await SessionManager.continueRecent(workspace, undefined, undefined, undefined, undefined, options("pane-1"));
    expect(resumed.getSessionId()).toBe("intended-session");
    expect(resumed.getSessionFile()).toBe(copy);
    await resumed.close();
  });
});

describe("a breadcrumb naming a session file no longer there", () => {
  it("resumes the one session of the scope with that file name, not the newest", async () => {
    const intended = await persisted(workspace, "the session this terminal was in");
    const legacyDir = path.dirname(writeLegacySession(sessionsRoot(), workspace, { id: "unrelated-legacy" }));
    const gone = path.join(legacyDir, path.basename(intended));
    await persisted(workspace, "a newer session");
    writeBreadcrumb(agentDir, "pane-2", workspace, gone);

    const resumed = await SessionManager.continueRecent(workspace, undefined, undefined, undefined, undefined, options("pane-2"));
    expect(resumed.getSessionFile()).toBe(intended);
    await resumed.close();
  });

  it("takes the newest when no single session of the scope has that name", async () => {
    await persisted(workspace, "an older session");
    const newest = await persisted(workspace, "the newest session");
    writeBreadcrumb(agentDir, "pane-3", workspace, path.join(sessionsRoot(), "--gone--", "2026-01-01T00-00-00-000Z_gone.jsonl"));

    const resumed = await SessionManager.continueRecent(workspace, undefined, undefined, undefined, undefined, options("pane-3"));
    expect(resumed.getSessionFile()).toBe(newest);
    await resumed.close();
  });
});

function git(cwd: string, ...args: string[]): void {
  execFileSync("git", ["-c", "user.email=t@example.com", "-c", "user.name=t", ...args], { cwd, stdio: "ignore" });
}

describe("breadcrumbs across linked git worktrees", () => {
  it("resume a worktree's session from the main checkout with its worktree cwd, and ignore another repository's", async () => {
    const repo = path.join(tmp.path, "repo");
    const worktree = path.join(tmp.path, "repo-worktrees", "feat");
    const other = path.join(tmp.path, "other");
    for (const dir of [repo, other]) {
      fs.mkdirSync(dir, { mode: 0o700 });
      git(dir, "init", "-q");
      git(dir, "commit", "-q", "--allow-empty", "-m", "init");
    }
    git(repo, "worktree", "add", "-q", "-b", "feat", worktree, "HEAD");
    expect(areLinkedWorktrees(worktree, repo)).toBe(true);
    expect(areLinkedWorktrees(path.join(worktree, "src"), repo)).toBe(true);
    expect(areLinkedWorktrees(repo, repo)).toBe(false);
    expect(areLinkedWorktrees(other, repo)).toBe(false);

    const inWorktree = await persisted(worktree, "work on the feature");
    writeBreadcrumb(agentDir, "pane-2", worktree, inWorktree);
    const resumed = await SessionManager.continueRecent(repo, undefined, undefined, undefined, undefined, options("pane-2"));
    expect(resumed.getSessionFile()).toBe(inWorktree);
    expect(resumed.getCwd()).toBe(worktree);
    await resumed.close();

    const inOther = await persisted(other, "another project");
    writeBreadcrumb(agentDir, "pane-3", other, inOther);
    const fresh = await SessionManager.continueRecent(repo, undefined, undefined, undefined, undefined, options("pane-3"));
    expect(fresh.getSessionFile()).not.toBe(inOther);
    expect(fresh.getEntries()).toEqual([]);
    await fresh.close();
  });
});
