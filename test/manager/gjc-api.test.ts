/**
 * The GJC 0.15-shaped surface of SessionManager, through the public entry, on real files:
 * factories and destinations, appends returning ids in GJC's parameter orders, accessors
 * returning copies, session switches (setSessionFile, newSession with an id, branched
 * sessions carrying labels, fork), moveTo between managed scopes, ensureOnDisk, and the
 * module functions.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import {
  FileSessionStorage,
  MemorySessionStorage,
  SessionManager,
  findMostRecentSession,
  getRecentSessions,
  loadEntriesFromFile,
  resolveResumableSession,
  type SessionManagerOptions,
} from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { useSandboxes } from "../scope/helpers.js";
import { assistant, codeOfAsync, readRecords, recordingLogger, user } from "./helpers.js";

let tmp: { path: string; remove(): void };
let dir: string;
let extras: SessionManagerOptions;
const sandbox = useSandboxes();
const create = (cwd = "/work") => SessionManager.create(cwd, dir, undefined, extras);

beforeEach(() => {
  tmp = makeTempDir("gjc-api-");
  dir = path.join(tmp.path, "sessions");
  extras = { terminalId: null, logger: recordingLogger() };
});
afterEach(() => tmp.remove());

describe("factories and destinations", () => {
  it("accepts a string, an explicit token and a managed token; refuses look-alikes", async () => {
    const viaString = SessionManager.create("/w", dir, undefined, extras);
    expect(path.dirname(viaString.getSessionFile()!)).toBe(dir);
    expect(viaString.getSessionDir()).toBe(dir);
    const token = SessionManager.explicitDestination(dir);
    expect(SessionManager.create("/w", token, undefined, extras).getSessionDir()).toBe(dir);
    expect(await codeOfAsync(() => SessionManager.create("/w", { kind: "explicit", sessionDir: dir, directory: dir }))).toBe("untrusted_destination");
    expect(await codeOfAsync(() => SessionManager.create("/w", { ...token }))).toBe("untrusted_destination");
    expect(await codeOfAsync(() => SessionManager.explicitDestination("relative"))).toBe("invalid_options");

    const box = sandbox();
    const managed = SessionManager.managedDestination(box.cwd, box.agentDir);
    expect(managed.sessionDir).toBe(SessionManager.getDefaultSessionDir(box.cwd, box.agentDir));
    expect(SessionManager.getDefaultSessionDirReadOnly(box.cwd, box.agentDir)).toBe(managed.sessionDir);
    const inScope = SessionManager.create(box.cwd, managed, undefined, { terminalId: null });
    expect(path.dirname(inScope.getSessionFile()!)).toBe(managed.sessionDir);
    expect(fs.statSync(managed.sessionDir).mode & 0o777).toBe(0o700);
  });

  it("refuses a non-file storage for the managed scope and unknown policy values", async () => {
    const box = sandbox();
    const memory = new MemorySessionStorage({ root: "/" });
    expect(await codeOfAsync(() => SessionManager.create(box.cwd, undefined, memory))).toBe("managed_storage_unsupported");
    expect(await codeOfAsync(() => SessionManager.managedDestination(box.cwd, box.agentDir, memory))).toBe("managed_storage_unsupported");
    expect(await codeOfAsync(() => SessionManager.getDefaultSessionDir(box.cwd, box.agentDir, memory))).toBe("managed_storage_unsupported");
    expect(await SessionManager.listAll(memory, box.agentDir)).toEqual([]);
    const file = path.join(dir, "x.jsonl");
    expect(await codeOfAsync(() => SessionManager.open(file, dir, undefined, "never" as never))).toBe("invalid_options");
    expect(await codeOfAsync(() => SessionManager.open(file, dir, undefined, "disabled", "sometimes" as never))).toBe("invalid_options");
    const opened = await SessionManager.open(file, dir, undefined, "disabled", "off", extras);
    expect(opened.getLoadReport().loaded).toBe(false);
    await opened.close();
  });

  it("open without a destination uses the file's directory; new FileSessionStorage() works there", async () => {
    const writer = create("/p");
    writer.appendMessage(user("q"));
    writer.appendMessage(assistant("a"));
    await writer.close();
    const file = writer.getSessionFile()!;
    const reopened = await SessionManager.open(file, undefined, new FileSessionStorage(), undefined, undefined, extras);
    expect(reopened.getSessionDir()).toBe(dir);
    expect(reopened.getCwd()).toBe("/p");
    expect(reopened.getEntries()).toHaveLength(2);
    await reopened.close();
  });

  it("inMemory takes a cwd and a storage and never writes", async () => {
    const storage = new MemorySessionStorage({ root: "/" });
    const manager = SessionManager.inMemory("/m", storage);
    manager.appendMessage(assistant("a"));
    await manager.flush();
    expect(storage.listFilesSync("/")).toEqual([]);
    expect([manager.isPersisted(), manager.getSessionDir(), manager.getSessionFile()]).toEqual([false, "", undefined]);
    expect(await manager.newSession()).toBeUndefined();
    expect(await manager.fork()).toBeUndefined();
  });

  it("list, listAll, getRecentSessions and findMostRecentSession return GJC's shapes", async () => {
    const a = create("/a");
    a.appendMessage(assistant("first"));
    await a.close();
    const b = create("/b");
    b.appendMessage(assistant("second"));
    await b.close();
    fs.utimesSync(a.getSessionFile()!, 1000, 1000);
    const listed = await SessionManager.list("/ignored", dir);
    expect(listed.map((s) => s.path)).toEqual([b.getSessionFile(), a.getSessionFile()]);
    expect(await SessionManager.list("/ignored", path.join(tmp.path, "missing"))).toEqual([]);
    expect((await getRecentSessions(dir, 1)).map((s) => s.id)).toEqual([b.getSessionId()]);
    expect(await findMostRecentSession(dir)).toBe(b.getSessionFile());
    expect(await findMostRecentSession(path.join(tmp.path, "missing"))).toBeNull();
    const box = sandbox();
    const managed = SessionManager.create(box.cwd, undefined, undefined, { agentDir: box.agentDir, terminalId: null });
    managed.appendMessage(assistant("m"));
    await managed.close();
    expect((await SessionManager.list(box.cwd, undefined, undefined, { agentDir: box.agentDir })).map((s) => s.path)).toEqual([managed.getSessionFile()]);
    expect((await SessionManager.listAll(undefined, box.agentDir)).map((s) => s.path)).toEqual([managed.getSessionFile()]);
  });
});

describe("appends return ids in GJC's parameter orders", () => {
  it("writes each entry type with GJC's fields", async () => {
    const manager = create();
    const q = manager.appendMessage(user("q"));
    const a = manager.appendMessage(assistant("a"));
    expect(manager.getLeafId()).toBe(a);
    const compaction = manager.appendCompaction("long summary", "short", q, 900, { k: 1 }, true, { keep: true });
    expect(manager.getEntry(compaction)).toMatchObject({
      type: "compaction",
      summary: "long summary",
      shortSummary: "short",
      firstKeptEntryId: q,
      tokensBefore: 900,
      details: { k: 1 },
      fromExtension: true,
      preserveData: { keep: true },
    });
    const model = manager.appendModelChange("p/m", "smol", { previousModel: "p/old", reason: "cheap", thinkingLevel: "high" });
    expect(manager.getEntry(model)).toMatchObject({ model: "p/m", role: "smol", previousModel: "p/old", reason: "cheap", thinkingLevel: "high" });
    expect(manager.buildSessionContext().models.smol).toBe("p/m");
    const cleared = manager.clearModelRole("smol");
    expect(manager.getEntry(cleared)).toMatchObject({ type: "model_change", model: "", role: "smol", cleared: true });
    expect(manager.buildSessionContext().models.smol).toBeUndefined();
    const plain = manager.appendThinkingLevelChange();
    expect(manager.getEntry(plain)).toMatchObject({ thinkingLevel: null });
    expect(manager.getEntry(plain)).not.toHaveProperty("operatorIntent");
    const intent = manager.appendThinkingLevelChange("high", true);
    expect(manager.getEntry(intent)).toMatchObject({ thinkingLevel: "high", operatorIntent: true });
    const mcp = manager.appendMCPToolSelection(["mcp__a"], "corr-1");
    expect(manager.getEntry(mcp)).toMatchObject({ selectedToolNames: ["mcp__a"], mutationCorrelationId: "corr-1" });
    const builtin = manager.appendDiscoveredBuiltinToolSelection(["search"]);
    expect(manager.getEntry(builtin)).not.toHaveProperty("mutationCorrelationId");
    const custom = manager.appendCustomMessageEntry("irc:note", "hello", true, { from: "x" }, undefined, "obs-1");
    expect(manager.getEntry(custom)).toMatchObject({ attribution: "agent", details: { from: "x", observationId: "obs-1" } });
    expect(await codeOfAsync(() => manager.appendCustomMessageEntry("irc:x", "t", true, "text", "user", "obs"))).toBe("invalid_options");
    const ttsr = manager.appendTtsrInjection(["rule"], [{ name: "rule" }], 3);
    expect(manager.getEntry(ttsr)).toMatchObject({ injectedRules: ["rule"], injectedRuleRecords: [{ name: "rule" }], ttsrMessageCount: 3 });
    const ids = [q, a, compaction, model, cleared, plain, intent, mcp, builtin, custom, ttsr];
    expect(new Set(ids).size).toBe(ids.length);
    await manager.close();
    expect(
      readRecords(manager.getSessionFile()!)
        .slice(1)
        .map((r) => r.id),
    ).toEqual(ids);
  });

  it("appendContextClearEntry starts a new root: empty context, history kept", async () => {
    const manager = create();
    manager.appendMessage(user("q"));
    manager.appendMessage(assistant("a"));
    const clear = manager.appendContextClearEntry({ reason: "user" });
    expect(manager.getEntry(clear)).toMatchObject({ type: "custom", customType: "context_clear", parentId: null, data: { reason: "user" } });
    expect(manager.buildSessionContext().messages).toEqual([]);
    manager.appendMessage(user("fresh"));
    expect(manager.buildSessionContext().messages).toHaveLength(1);
    expect(manager.getEntries()).toHaveLength(4);
    await manager.close();
  });
});

describe("accessors", () => {
  it("getBranch, getChildren and getLeafEntry walk the tree and return copies", async () => {
    const manager = create();
    const q = manager.appendMessage(user("q"));
    const a1 = manager.appendMessage(assistant("a1"));
    manager.branch(q);
    const a2 = manager.appendMessage(assistant("a2"));
    expect(manager.getBranch().map((e) => e.id)).toEqual([q, a2]);
    expect(manager.getBranch(a1).map((e) => e.id)).toEqual([q, a1]);
    expect(manager.getBranch("ffffffff")).toEqual([]);
    expect(manager.getChildren(q).map((e) => e.id)).toEqual([a1, a2]);
    expect(manager.getChildren(a2)).toEqual([]);
    expect(manager.getLeafEntry()?.id).toBe(a2);
    manager.resetLeaf();
    expect([manager.getLeafEntry(), manager.getBranch()]).toEqual([undefined, []]);
    const copy = manager.getEntry(q) as unknown as { message: { content: unknown } };
    copy.message.content = "mutated";
    (manager.getEntries()[0] as { id: string }).id = "changed";
    manager.getBranch(a1)[0]!.parentId = "x";
    expect(manager.getEntry(q)).toMatchObject({ id: q, parentId: null, message: { content: [{ type: "text", text: "q" }] } });
    await manager.close();
  });

  it("getBranch stops at a parent cycle in a loaded file", async () => {
    fs.mkdirSync(dir, { mode: 0o700 });
    const file = path.join(dir, "cycle.jsonl");
    const entry = (id: string, parentId: string) =>
      `{"type":"message","id":"${id}","parentId":"${parentId}","timestamp":"t","message":{"role":"user","content":"${id}"}}`;
    fs.writeFileSync(
      file,
      [`{"type":"session","version":5,"id":"s","timestamp":"t","cwd":"/c"}`, entry("aaaa0001", "aaaa0002"), entry("aaaa0002", "aaaa0001"), ""].join("\n"),
      { mode: 0o600 },
    );
    const manager = await SessionManager.open(file, undefined, undefined, undefined, undefined, { ...extras, readOnly: true });
    const branch = manager.getBranch();
    expect(branch.map((e) => e.id).sort()).toEqual(["aaaa0001", "aaaa0002"]);
  });
});

describe("session switches", () => {
  it("setSessionFile loads an existing file, and writes a header at once for a missing or blank one", async () => {
    const first = create("/one");
    first.appendMessage(user("q"));
    first.appendMessage(assistant("a"));
    await first.flush();
    const manager = create("/two");
    manager.appendMessage(assistant("own"));
    await manager.flush();
    const own = manager.getSessionFile()!;
    expect(await codeOfAsync(() => manager.setSessionFile(first.getSessionFile()!))).toBe("session_busy");
    expect(manager.getSessionFile()).toBe(own);
    manager.appendMessage(user("still here"));
    await first.close();
    await manager.setSessionFile(first.getSessionFile()!);
    expect([manager.getSessionId(), manager.getCwd(), manager.getEntries().length]).toEqual([first.getSessionId(), "/one", 2]);
    expect(readRecords(own)).toHaveLength(3);

    const missing = path.join(dir, "missing.jsonl");
    await manager.setSessionFile(missing);
    expect(readRecords(missing)).toEqual([expect.objectContaining({ type: "session", id: manager.getSessionId(), cwd: "/one" })]);
    const blank = path.join(dir, "blank.jsonl");
    fs.writeFileSync(blank, "\n\n", { mode: 0o600 });
    await manager.setSessionFile(blank);
    expect(readRecords(blank)).toEqual([expect.objectContaining({ type: "session", id: manager.getSessionId() })]);
    manager.appendMessage(user("appended"));
    await manager.close();
    expect(readRecords(blank).map((r) => r.type)).toEqual(["session", "message"]);
  });

  it("newSession takes a caller id, validated", async () => {
    const manager = create();
    manager.appendMessage(assistant("a"));
    expect(await codeOfAsync(() => manager.newSession({ id: "../escape" }))).toBe("invalid_session_id");
    expect(await codeOfAsync(() => manager.newSession({ id: "" }))).toBe("invalid_session_id");
    expect(manager.getEntries()).toHaveLength(1);
    const file = await manager.newSession({ id: "my-session.1", parentSession: "lineage" });
    expect(manager.getSessionId()).toBe("my-session.1");
    expect(file).toMatch(/_my-session\.1\.jsonl$/);
    expect(manager.getHeader().parentSession).toBe("lineage");
    manager.appendMessage(assistant("b"));
    await manager.close();
    expect(readRecords(file!)[0]).toMatchObject({ id: "my-session.1" });
  });

  it("createBranchedSession carries the labels of the copied path, drops the rest", async () => {
    const manager = create();
    const q = manager.appendMessage(user("q"));
    manager.appendLabelChange(q, "question");
    const a = manager.appendMessage(assistant("a"));
    manager.appendLabelChange(a, "first");
    manager.appendLabelChange(a, "answer");
    const other = manager.appendMessage(user("later"));
    manager.appendLabelChange(other, "not copied");
    const file = manager.createBranchedSession(a)!;
    const records = readRecords(file);
    expect(records.slice(1, 3).map((r) => [r.id, r.parentId])).toEqual([
      [q, null],
      [a, q],
    ]);
    expect(records.slice(3).map((r) => [r.type, r.targetId, r.label])).toEqual([
      ["label", q, "question"],
      ["label", a, "answer"],
    ]);
    expect([manager.getLabel(q), manager.getLabel(a), manager.getLabel(other)]).toEqual(["question", "answer", undefined]);
    expect(await codeOfAsync(() => manager.createBranchedSession("ffffffff"))).toBe("unknown_entry");
    await manager.close();
  });

  it("fork copies the whole session to a new file with the old id as parent", async () => {
    const manager = create();
    const q = manager.appendMessage(user("q"));
    manager.appendMessage(assistant("a"));
    manager.branch(q);
    manager.appendMessage(assistant("b"));
    await manager.setSessionName("titled", "user");
    const oldId = manager.getSessionId();
    const forked = await manager.fork();
    expect(forked?.oldSessionFile).not.toBe(forked?.newSessionFile);
    expect(manager.getHeader()).toMatchObject({ parentSession: oldId, title: "titled", titleSource: "user" });
    expect(manager.getEntries()).toHaveLength(3);
    expect(readRecords(forked!.newSessionFile)).toHaveLength(4);
    expect(readRecords(forked!.oldSessionFile).some((r) => r.type === "header_patch")).toBe(true);
    await manager.close();
  });

  it("applyCustomMessageEntryUpdates replaces custom_message payloads by id and refuses the rest", async () => {
    const manager = create();
    manager.appendMessage(assistant("a"));
    const note = manager.appendCustomMessageEntry("ext", "long tool output", true, { size: 9 });
    const other = manager.appendCustomEntry("ext", { n: 1 });
    await manager.flush();
    const entry = manager.getEntry(note)!;
    manager.applyCustomMessageEntryUpdates([{ ...entry, content: "[pruned]", details: undefined } as typeof entry]);
    expect(manager.getEntry(note)).toMatchObject({ content: "[pruned]", display: true, attribution: "agent" });
    expect(manager.getEntry(note)).not.toHaveProperty("details");
    expect(await codeOfAsync(() => manager.applyCustomMessageEntryUpdates([manager.getEntry(other)!]))).toBe("invalid_rewrite");
    expect(await codeOfAsync(() => manager.applyCustomMessageEntryUpdates([{ ...entry, content: 5 } as never]))).toBe("invalid_rewrite");
    expect(await codeOfAsync(() => manager.applyEntryMessageUpdates([entry]))).toBe("invalid_rewrite");
    await manager.close();
    const text = fs.readFileSync(manager.getSessionFile()!, "utf8");
    expect(text).toContain("[pruned]");
    expect(text).not.toContain("long tool output");
  });

  it("ensureOnDisk writes a session before any assistant message", async () => {
    const manager = create();
    manager.appendMessage(user("only a question"));
    expect(fs.existsSync(manager.getSessionFile()!)).toBe(false);
    await manager.ensureOnDisk();
    expect(readRecords(manager.getSessionFile()!).map((r) => r.type)).toEqual(["session", "message"]);
    manager.appendMessage(user("next"));
    await manager.ensureOnDisk();
    await manager.close();
    expect(readRecords(manager.getSessionFile()!)).toHaveLength(3);
  });
});

describe("moveTo", () => {
  it("moves a managed session file to the new workspace's scope and records the cwd", async () => {
    const box = sandbox();
    const target = path.join(box.root, "other");
    fs.mkdirSync(target);
    const options = { agentDir: box.agentDir, terminalId: null };
    const manager = SessionManager.create(box.cwd, undefined, undefined, options);
    manager.appendMessage(user("q"));
    manager.appendMessage(assistant("a"));
    await manager.flush();
    const before = manager.getSessionFile()!;
    await manager.moveTo(box.cwd);
    expect(manager.getSessionFile()).toBe(before);
    await manager.moveTo(target);
    const after = manager.getSessionFile()!;
    expect(path.dirname(after)).toBe(SessionManager.getDefaultSessionDirReadOnly(target, box.agentDir));
    expect(path.basename(after)).toBe(path.basename(before));
    expect(fs.existsSync(before)).toBe(false);
    expect(readRecords(after)[0]).toMatchObject({ cwd: target, id: manager.getSessionId() });
    expect(manager.getCwd()).toBe(target);
    manager.appendMessage(user("after the move"));
    await manager.close();
    expect(readRecords(after)).toHaveLength(4);
    expect((await SessionManager.list(target, undefined, undefined, { agentDir: box.agentDir })).map((s) => s.path)).toEqual([after]);
    expect(await SessionManager.list(box.cwd, undefined, undefined, { agentDir: box.agentDir })).toEqual([]);
  });

  it("writes the whole session at the new place when its file was removed, and never touches what now holds the old name", async () => {
    for (const lost of ["removed", "replaced"] as const) {
      const box = sandbox();
      const target = path.join(box.root, "other");
      fs.mkdirSync(target);
      const manager = SessionManager.create(box.cwd, undefined, undefined, { agentDir: box.agentDir, terminalId: null, logger: recordingLogger() });
      manager.appendMessage(user(`pasted ${"context ".repeat(2000)}`));
      manager.appendMessage(assistant("a"));
      manager.appendMessage(user("q2"));
      await manager.flush();
      const before = manager.getSessionFile()!;
      fs.rmSync(before);
      if (lost === "replaced") fs.writeFileSync(before, "someone else's file\n", { mode: 0o600 });
      await manager.moveTo(target);
      const after = manager.getSessionFile()!;
      expect(path.dirname(after)).toBe(SessionManager.getDefaultSessionDirReadOnly(target, box.agentDir));
      expect(readRecords(after).map((record) => record.type)).toEqual(["session", "message", "message", "message"]);
      if (lost === "removed") expect(fs.existsSync(before)).toBe(false);
      else expect(fs.readFileSync(before, "utf8")).toBe("someone else's file\n");
      manager.appendMessage(assistant("after the move"));
      await manager.close();
      expect(readRecords(after)).toHaveLength(5);
    }
  });

  it("moves an unwritten managed session without writing it; an explicit one stays in place", async () => {
    const box = sandbox();
    const target = path.join(box.root, "other");
    fs.mkdirSync(target);
    const managed = SessionManager.create(box.cwd, undefined, undefined, { agentDir: box.agentDir, terminalId: null });
    managed.appendMessage(user("q"));
    await managed.moveTo(target);
    expect(fs.existsSync(managed.getSessionFile()!)).toBe(false);
    managed.appendMessage(assistant("a"));
    await managed.close();
    expect(path.dirname(managed.getSessionFile()!)).toBe(SessionManager.getDefaultSessionDirReadOnly(target, box.agentDir));
    expect(readRecords(managed.getSessionFile()!)[0]).toMatchObject({ cwd: target });

    const explicit = create("/old");
    explicit.appendMessage(assistant("a"));
    await explicit.flush();
    await explicit.moveTo("/new");
    expect(path.dirname(explicit.getSessionFile()!)).toBe(dir);
    expect(readRecords(explicit.getSessionFile()!)[0]).toMatchObject({ cwd: "/new" });
    await explicit.close();
  });
});

describe("loadEntriesFromFile", () => {
  it("gives the header and entries, [] for a missing file or bad header, and throws for a newer version", async () => {
    const manager = create("/l");
    const q = manager.appendMessage(user("q"));
    manager.appendMessage(assistant("a"));
    await manager.close();
    const entries = await loadEntriesFromFile(manager.getSessionFile()!);
    expect(entries.map((e) => e.type)).toEqual(["session", "message", "message"]);
    expect(entries[1]).toMatchObject({ id: q });
    expect(await loadEntriesFromFile(path.join(dir, "missing.jsonl"))).toEqual([]);
    expect(await loadEntriesFromFile(path.join(tmp.path, "no-dir", "x.jsonl"))).toEqual([]);
    const bad = path.join(dir, "bad.jsonl");
    fs.writeFileSync(bad, `{"type":"message","id":"x"}\n`, { mode: 0o600 });
    expect(await loadEntriesFromFile(bad)).toEqual([]);
    const newer = path.join(dir, "newer.jsonl");
    fs.writeFileSync(newer, `{"type":"session","version":6,"id":"s","timestamp":"t","cwd":"/"}\n`, { mode: 0o600 });
    expect(await codeOfAsync(() => loadEntriesFromFile(newer))).toBe("version_too_new");
    expect(await codeOfAsync(() => loadEntriesFromFile(newer, new FileSessionStorage()))).toBe("version_too_new");
  });
});

describe("resolveResumableSession", () => {
  it("matches an id or file-name prefix locally first, then in every managed scope", async () => {
    const box = sandbox();
    const other = path.join(box.root, "other");
    fs.mkdirSync(other);
    const options = { agentDir: box.agentDir, terminalId: null };
    const here = SessionManager.create(box.cwd, undefined, undefined, options);
    here.appendMessage(assistant("here"));
    await here.close();
    const there = SessionManager.create(other, undefined, undefined, options);
    await there.newSession({ id: "zz-elsewhere" });
    there.appendMessage(assistant("there"));
    await there.close();
    const local = await resolveResumableSession(here.getSessionId().slice(0, 8).toUpperCase(), box.cwd, undefined, undefined, box.agentDir);
    expect(local).toMatchObject({ scope: "local", session: { path: here.getSessionFile() } });
    const byName = await resolveResumableSession(path.basename(here.getSessionFile()!).slice(0, 10), box.cwd, undefined, undefined, box.agentDir);
    expect(byName?.session.path).toBe(here.getSessionFile());
    const global = await resolveResumableSession("ZZ-ELSE", box.cwd, undefined, undefined, box.agentDir);
    expect(global).toMatchObject({ scope: "global", session: { id: "zz-elsewhere", path: there.getSessionFile() } });
    expect(await resolveResumableSession("zz-else", box.cwd, path.dirname(here.getSessionFile()!))).toBeUndefined();
    expect(await resolveResumableSession("nothing-like-it", box.cwd, undefined, undefined, box.agentDir)).toBeUndefined();
    expect(await resolveResumableSession("  ", box.cwd, undefined, undefined, box.agentDir)).toBeUndefined();
  });
});
