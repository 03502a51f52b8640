/**
 * SessionManager on the real filesystem: deferred persistence, reopen, tree moves, titles,
 * rewrites, sessions that start from others, and read-only opens.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager, type SessionManagerOptions } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { assistant, codeOfAsync, readRecords, recordingLogger, user } from "./helpers.js";

let tmp: { path: string; remove(): void };
let sessionDir: string;
let extras: SessionManagerOptions;
const create = (cwd = "/work", dir = sessionDir) => SessionManager.create(cwd, dir, undefined, extras);
const open = (file: string, readOnly = false) => SessionManager.open(file, sessionDir, undefined, undefined, undefined, { ...extras, readOnly });

beforeEach(() => {
  tmp = makeTempDir("gjc-manager-");
  sessionDir = path.join(tmp.path, "sessions");
  extras = { terminalId: null, logger: recordingLogger() };
});
afterEach(() => tmp.remove());

describe("deferred persistence", () => {
  it("writes nothing before the first assistant message, then everything", async () => {
    const manager = create("/work/project");
    const file = manager.getSessionFile()!;
    manager.appendModelChange("example/model");
    manager.appendMessage(user("hello"));
    expect(await manager.setSessionName("First try", "user")).toBe(true);
    await manager.flush();
    expect(fs.existsSync(file)).toBe(false);

    manager.appendMessage(assistant("hi"));
    await manager.flush();
    const records = readRecords(file);
    expect(records.map((r) => r.type)).toEqual(["session", "model_change", "message", "message"]);
    expect(records[0]).toMatchObject({ version: 5, cwd: "/work/project", title: "First try", titleSource: "user" });
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);

    manager.appendMessage(user("more"));
    await manager.close();
    expect(readRecords(file)).toHaveLength(5);
  });

  it("reopens to the same entries, leaf and context; open appends nothing", async () => {
    const manager = create();
    const first = manager.appendMessage(user("q"));
    manager.appendMessage(assistant("a"));
    manager.appendThinkingLevelChange("high");
    manager.branch(first);
    manager.appendMessage(assistant("other answer"));
    const context = manager.buildSessionContext();
    await manager.close();
    const file = manager.getSessionFile()!;
    const before = fs.readFileSync(file);

    const reopened = await open(file);
    expect(reopened.getEntries()).toHaveLength(4);
    expect(reopened.getLeafId()).toBe(manager.getLeafId());
    expect(reopened.buildSessionContext()).toEqual(context);
    await reopened.close();
    expect(fs.readFileSync(file).equals(before)).toBe(true);
  });

  it("an in-memory session never writes and reports no file", async () => {
    const manager = SessionManager.inMemory("/x");
    manager.appendMessage(user("q"));
    manager.appendMessage(assistant("a"));
    await manager.flush();
    expect(manager.getSessionFile()).toBeUndefined();
    expect(manager.isPersisted()).toBe(false);
    expect(manager.getSessionDir()).toBe("");
    expect(manager.getCwd()).toBe("/x");
    expect(manager.getEntries()).toHaveLength(2);
    expect(fs.existsSync(sessionDir)).toBe(false);
    expect(SessionManager.inMemory().getCwd()).toBe(process.cwd());
  });
});

describe("tree moves", () => {
  it("resetLeaf starts a new root and branchWithSummary records where it came from", async () => {
    const manager = create();
    const a = manager.appendMessage(user("a"));
    manager.appendMessage(assistant("b"));
    manager.resetLeaf();
    expect(manager.getLeafId()).toBeNull();
    const root = manager.appendMessage(user("new root"));
    expect(manager.getEntry(root)?.parentId).toBeNull();
    const summary = manager.branchWithSummary(a, "left the root path");
    expect(manager.getEntry(summary)).toMatchObject({ parentId: a, fromId: a, summary: "left the root path" });
    const fromRoot = manager.branchWithSummary(null, "from the very start");
    expect(manager.getEntry(fromRoot)).toMatchObject({ parentId: null, fromId: "root" });
    const label = manager.appendLabelChange(a, "checkpoint");
    expect(manager.getLeafId()).toBe(label);
    expect(manager.getLabel(a)).toBe("checkpoint");
    expect(await codeOfAsync(() => manager.branch("ffffffff"))).toBe("unknown_entry");
    await manager.close();
    const reopened = await open(manager.getSessionFile()!);
    expect(reopened.getTree().map((node) => node.entry.id)).toEqual(manager.getTree().map((node) => node.entry.id));
    expect(reopened.getLabel(a)).toBe("checkpoint");
    await reopened.close();
  });

  it("every append type round-trips through the file", async () => {
    const manager = create();
    const m = manager.appendMessage(assistant("start"));
    manager.appendModelChange("p/m", "smol", { reason: "cheap" });
    manager.appendServiceTierChange("flex");
    manager.appendCompaction("summary", "short", m, 1234);
    manager.appendBranchSummary("root", "summary of branch");
    manager.appendCustomEntry("ext", { state: 1 });
    manager.appendCustomMessageEntry("ext", "injected", true, undefined, "agent");
    manager.appendTtsrInjection(["rule-a"]);
    manager.appendSessionInit({ systemPrompt: "sys", task: "t", tools: ["read"] });
    manager.appendModeChange("plan", { planFile: "/tmp/plan.md" });
    manager.appendMCPToolSelection(["srv.tool"]);
    manager.appendDiscoveredBuiltinToolSelection(["search"]);
    await manager.close();
    const types = readRecords(manager.getSessionFile()!).map((r) => r.type);
    expect(types.slice(1)).toEqual([
      "message",
      "model_change",
      "service_tier_change",
      "compaction",
      "branch_summary",
      "custom",
      "custom_message",
      "ttsr_injection",
      "session_init",
      "mode_change",
      "mcp_tool_selection",
      "discovered_builtin_tool_selection",
    ]);
    const reopened = await open(manager.getSessionFile()!, true);
    const context = reopened.buildSessionContext();
    expect(context).toMatchObject({ serviceTier: "flex", mode: "plan", injectedTtsrRules: ["rule-a"] });
    expect(context.models.smol).toBe("p/m");
    expect(reopened.getEntries().every((entry) => !Object.getOwnPropertySymbols(entry).length)).toBe(true);
  });
});

describe("reads hand out copies", () => {
  it("changing an entry of getTree (on any branch) changes neither the session nor the next tree", async () => {
    const manager = create();
    const question = manager.appendMessage(user(`explain the failure ${"with the full log ".repeat(200)}`));
    manager.appendMessage(assistant("first answer"));
    manager.branch(question);
    const custom = manager.appendCustomEntry("extension", { nested: { value: "original" } });
    const tree = manager.getTree();
    const poison = (node: (typeof tree)[number]): void => {
      const entry = node.entry as { message?: { content: unknown }; data?: { nested: { value: string } } };
      if (entry.message !== undefined) entry.message.content = "poisoned";
      if (entry.data !== undefined) entry.data.nested.value = "poisoned";
      node.children.forEach(poison);
    };
    tree.forEach(poison);
    expect(manager.getEntry(question)).toMatchObject({ message: { content: user(`explain the failure ${"with the full log ".repeat(200)}`).content } });
    expect(manager.getEntry(custom)).toMatchObject({ data: { nested: { value: "original" } } });
    expect(JSON.stringify(manager.getTree())).not.toContain("poisoned");
    expect(JSON.stringify(manager.buildSessionContext())).not.toContain("poisoned");
    await manager.close();
  });
});

describe("session names", () => {
  it("sanitizes, bounds, and keeps a user title over an automatic one", async () => {
    const manager = create();
    manager.appendMessage(assistant("a"));
    expect(await manager.setSessionName("  auto\u0007 \n title\u009b ")).toBe(true);
    expect(manager.getHeader()).toMatchObject({ title: "auto title", titleSource: "auto" });
    expect([manager.getSessionName(), manager.titleSource]).toEqual(["auto title", "auto"]);
    expect(await manager.setSessionName("x".repeat(5000), "user")).toBe(true);
    expect(manager.getHeader().title).toHaveLength(1000);
    expect(await manager.setSessionName("later auto", "auto")).toBe(false);
    expect(manager.getHeader().title).toHaveLength(1000);
    expect(await manager.setSessionName("\u0000\u0001  ", "user")).toBe(false);
    expect(manager.titleSource).toBe("user");
    await manager.close();
    const records = readRecords(manager.getSessionFile()!);
    // The file existed before either title: both are appended patches, the ignored one is not.
    expect(records.filter((r) => r.type === "header_patch")).toHaveLength(2);
    const reopened = await open(manager.getSessionFile()!, true);
    expect(reopened.getHeader()).toMatchObject({ titleSource: "user" });
    expect(reopened.getHeader().title).toHaveLength(1000);
  });
});

describe("applyEntryMessageUpdates and rewriteEntries", () => {
  it("replaces message payloads, rewrites atomically on request, keeps the leaf, refuses non-messages", async () => {
    const manager = create();
    manager.appendMessage(user("q"));
    const answer = manager.appendMessage(assistant("secret token"));
    const leaf = manager.appendCustomEntry("ext", { n: 1 });
    await manager.flush();
    const entry = manager.getEntry(answer)!;
    manager.applyEntryMessageUpdates([{ ...entry, message: assistant("[redacted]") } as typeof entry]);
    expect(manager.getLeafId()).toBe(leaf);
    expect(fs.readFileSync(manager.getSessionFile()!, "utf8")).toContain("secret token");
    await manager.rewriteEntries();
    expect(fs.readFileSync(manager.getSessionFile()!, "utf8")).not.toContain("secret token");
    expect(await codeOfAsync(() => manager.applyEntryMessageUpdates([manager.getEntry(leaf)!]))).toBe("invalid_rewrite");
    expect(await codeOfAsync(() => manager.applyEntryMessageUpdates([{ ...entry, id: "00000000" }]))).toBe("invalid_rewrite");
    await manager.close();
    const reopened = await open(manager.getSessionFile()!, true);
    expect(JSON.stringify(reopened.getEntry(answer))).toContain("[redacted]");
  });
});

describe("new, branched and forked sessions", () => {
  it("newSession starts an empty session with lineage; the old file is released", async () => {
    const manager = create("/p");
    manager.appendMessage(assistant("a"));
    const oldFile = manager.getSessionFile()!;
    const newFile = await manager.newSession({ parentSession: oldFile });
    expect(newFile).toBe(manager.getSessionFile());
    expect(manager.getEntries()).toHaveLength(0);
    expect(manager.getHeader()).toMatchObject({ parentSession: oldFile, cwd: "/p" });
    expect(manager.getSessionFile()).not.toBe(oldFile);
    // Released: another writer may open the old file now.
    const other = await open(oldFile);
    await other.close();
    await manager.close();
  });

  it("createBranchedSession copies only the path to the leaf", async () => {
    const manager = create();
    const q = manager.appendMessage(user("q"));
    const a = manager.appendMessage(assistant("a"));
    manager.branch(q);
    manager.appendMessage(assistant("abandoned"));
    const source = manager.getSessionFile()!;
    const file = manager.createBranchedSession(a);
    expect(file).toBeDefined();
    expect(file).not.toBe(source);
    // Written before the call returned.
    expect(
      readRecords(file!)
        .map((r) => r.id)
        .slice(1),
    ).toEqual([q, a]);
    expect(manager.getEntries().map((e) => e.id)).toEqual([q, a]);
    expect(manager.getHeader().parentSession).toBe(source);
    await manager.close();
    expect(
      readRecords(file!)
        .map((r) => r.id)
        .slice(1),
    ).toEqual([q, a]);
  });

  it("forkFrom copies another directory's session into this one", async () => {
    const otherDir = path.join(tmp.path, "other");
    const source = create("/elsewhere", otherDir);
    source.appendMessage(user("q"));
    source.appendMessage(assistant("a"));
    await source.setSessionName("named", "user");
    await source.close();
    const fork = await SessionManager.forkFrom(source.getSessionFile()!, "/here", sessionDir, undefined, undefined, undefined, extras);
    await fork.flush();
    expect(fork.getHeader()).toMatchObject({ cwd: "/here", parentSession: source.getSessionId(), title: "named", titleSource: "user" });
    expect(fork.getSessionId()).not.toBe(source.getSessionId());
    expect(path.dirname(fork.getSessionFile()!)).toBe(sessionDir);
    expect(readRecords(fork.getSessionFile()!)).toHaveLength(3);
    await fork.close();
  });
});

describe("read-only and closed managers", () => {
  it("refuses mutations with typed codes", async () => {
    const manager = create();
    manager.appendMessage(assistant("a"));
    await manager.close();
    const readOnly = await open(manager.getSessionFile()!, true);
    expect(await codeOfAsync(() => readOnly.appendMessage(user("x")))).toBe("read_only");
    expect(await codeOfAsync(() => readOnly.setSessionName("x"))).toBe("read_only");
    expect(await codeOfAsync(() => manager.appendMessage(user("x")))).toBe("closed");
    expect(await codeOfAsync(() => manager.flush())).toBe("closed");
    expect(await codeOfAsync(() => SessionManager.create("/w", "relative"))).toBe("invalid_options");
  });
});
