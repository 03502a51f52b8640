/**
 * `gjc-session-store/pi`, method by method, through its public entry on real files: pi's
 * synchronous factories and switches, pi-shaped appends and context, names from
 * `session_info`, label timestamps, pi's listing rows and module functions.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager as GjcSessionManager, type SessionManagerOptions } from "../../src/index.js";
import {
  CURRENT_SESSION_VERSION,
  SessionManager,
  buildSessionContext,
  findMostRecentSession,
  getDefaultSessionDir,
  getLatestCompactionEntry,
  loadEntriesFromFile,
  migrateSessionEntries,
  parseSessionEntries,
} from "../../src/pi/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { useSandboxes } from "../scope/helpers.js";
import { assistant, codeOfAsync, readRecords, recordingLogger, user } from "../manager/helpers.js";

let tmp: { path: string; remove(): void };
let dir: string;
let extras: SessionManagerOptions;
const sandbox = useSandboxes();
const managers: SessionManager[] = [];
/** pi never closes; the tests do, so that the temp directory can go. */
function track(manager: SessionManager): SessionManager {
  managers.push(manager);
  return manager;
}
const create = (cwd = "/work") => track(SessionManager.create(cwd, dir, extras));

beforeEach(() => {
  tmp = makeTempDir("gjc-pi-");
  dir = path.join(tmp.path, "sessions");
  extras = { terminalId: null, logger: recordingLogger() };
});
afterEach(async () => {
  for (const manager of managers.splice(0)) await manager.close().catch(() => {});
  tmp.remove();
});

const answer = (text: string, provider = "prov", model = "m1") => ({ ...assistant(text), provider, model });

describe("factories (all synchronous)", () => {
  it("create writes nothing before the first assistant message, then each append is on disk when it returns", () => {
    const manager = create();
    manager.appendMessage(user("q"));
    const file = manager.getSessionFile()!;
    expect(fs.existsSync(file)).toBe(false);
    const a = manager.appendMessage(answer("a"));
    // No await: pi reads the file (or another process does) right after the append.
    expect(readRecords(file).map((r) => (r.type === "session" ? "session" : r.id))).toEqual(["session", manager.getEntries()[0]!.id, a]);
    const label = manager.appendLabelChange(a, "kept");
    expect(readRecords(file).at(-1)).toMatchObject({ id: label, type: "label", targetId: a, label: "kept" });
    expect(manager.isPersisted()).toBe(true);
    expect(manager.getSessionDir()).toBe(dir);
    // A relative session directory is taken from the process's cwd, as pi's fs calls would.
    const relative = track(SessionManager.create("/work", path.relative(process.cwd(), dir), extras));
    expect(relative.getSessionDir()).toBe(dir);
  });

  it("create without a session directory uses the managed scope (getDefaultSessionDir)", () => {
    const box = sandbox();
    const manager = track(SessionManager.create(box.cwd, undefined, { ...extras, agentDir: box.agentDir }));
    const scope = getDefaultSessionDir(box.cwd, box.agentDir);
    expect(path.dirname(manager.getSessionFile()!)).toBe(scope);
    expect(scope.startsWith(path.join(box.agentDir, "sessions"))).toBe(true);
    expect(fs.statSync(scope).mode & 0o777).toBe(0o700);
    expect(path.basename(scope)).not.toMatch(/^--/);
  });

  it("open is synchronous, honours cwdOverride, and refuses a file another manager writes", async () => {
    const writer = GjcSessionManager.create("/orig", dir, undefined, extras);
    writer.appendMessage(user("q"));
    writer.appendMessage(assistant("a"));
    await writer.flush();
    const file = writer.getSessionFile()!;
    expect(await codeOfAsync(() => SessionManager.open(file, undefined, undefined, extras))).toBe("session_busy");
    await writer.close();
    const opened = track(SessionManager.open(file, undefined, "/override", extras));
    expect(opened).toBeInstanceOf(SessionManager);
    expect([opened.getSessionFile(), opened.getCwd(), opened.getHeader().cwd]).toEqual([file, "/override", "/orig"]);
    expect(opened.getSessionDir()).toBe(dir);
    expect(opened.getEntries()).toHaveLength(2);
    expect(await codeOfAsync(() => SessionManager.open("", undefined, undefined, extras))).toBe("invalid_options");
    const fresh = track(SessionManager.open(path.join(dir, "missing.jsonl"), undefined, undefined, extras));
    expect([fresh.getEntries(), fresh.getCwd()]).toEqual([[], process.cwd()]);
  });

  it("open of a blank file or one with a broken header writes a fresh header at once; a missing path waits", async () => {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const blank = path.join(dir, "blank.jsonl");
    fs.writeFileSync(blank, "", { mode: 0o600 });
    const first = track(SessionManager.open(blank, dir, undefined, extras));
    expect(readRecords(blank)).toEqual([first.getHeader()]);
    // Reopening (a take-over in this process) loads the recovered session.
    const again = track(SessionManager.open(blank, dir, undefined, extras));
    expect(again.getSessionId()).toBe(first.getSessionId());
    // A file that exists without an assistant message is rewritten whole by its first
    // assistant append: that one write is queued, as on the main entry.
    again.appendMessage(answer("a"));
    await again.flush();
    expect(readRecords(blank).map((r) => r.type)).toEqual(["session", "message"]);

    const broken = path.join(dir, "broken.jsonl");
    fs.writeFileSync(broken, '{"type":"message","id":"abc","parentId":"orphaned"}\n', { mode: 0o600 });
    const recovered = track(SessionManager.open(broken, dir, undefined, extras));
    expect(readRecords(broken)).toEqual([recovered.getHeader()]);
    expect(fs.readdirSync(dir).some((name) => name.startsWith("broken.jsonl.invalid-"))).toBe(true);

    const missing = path.join(dir, "later.jsonl");
    const fresh = track(SessionManager.open(missing, dir, undefined, extras));
    expect(fs.existsSync(missing)).toBe(false);
    fresh.appendMessage(answer("a"));
    expect(readRecords(missing)).toHaveLength(2);
  });

  it("a pi open of a file another pi manager of this process is on takes it over", async () => {
    const first = create("/w");
    first.appendMessage(user("q"));
    const a = first.appendMessage(answer("a"));
    const file = first.getSessionFile()!;
    // No close, no await: pi's runtime reopens the current file to fork or resume it.
    const second = track(SessionManager.open(file, undefined, undefined, extras));
    expect(second.getLeafId()).toBe(a);
    expect(await codeOfAsync(() => first.appendMessage(user("late")))).toBe("closed");
    expect(first.getLeafId()).toBe(a);
    second.appendMessage(user("continued"));
    expect(readRecords(file)).toHaveLength(4);
    // setSessionFile takes over the same way; a manager cannot take over its own file.
    const third = create("/w");
    third.setSessionFile(file);
    expect(await codeOfAsync(() => second.appendMessage(user("x")))).toBe("closed");
    expect(await codeOfAsync(() => third.setSessionFile(file))).toBe("session_busy");
    expect(third.getEntries()).toHaveLength(3);
  });

  it("continueRecent opens the newest session with a usable header, else starts one", async () => {
    const none = track(SessionManager.continueRecent("/w", dir, extras));
    expect(none.getEntries()).toEqual([]);
    const older = create();
    older.appendMessage(answer("old"));
    await older.close();
    const newer = create();
    newer.appendMessage(answer("new"));
    const newerFile = newer.getSessionFile()!;
    await newer.close();
    const past = new Date(Date.now() - 60_000);
    fs.utimesSync(older.getSessionFile()!, past, past);
    fs.writeFileSync(path.join(dir, "zz-broken.jsonl"), "not a header\n", { mode: 0o600 });
    expect(findMostRecentSession(dir, extras)).toBe(newerFile);
    expect(findMostRecentSession(path.join(tmp.path, "nowhere"))).toBeNull();
    const resumed = track(SessionManager.continueRecent("/w", dir, extras));
    expect(resumed.getSessionFile()).toBe(newerFile);
  });

  it("forkFrom copies every entry with the source path as parent, written at once; refuses an empty source", async () => {
    const source = create("/src");
    const q = source.appendMessage(user("q"));
    source.appendMessage(answer("a"));
    const sourceFile = source.getSessionFile()!;
    const target = path.join(tmp.path, "forks");
    const fork = track(SessionManager.forkFrom(sourceFile, "/dst", target, extras));
    expect(fork.getSessionId()).not.toBe(source.getSessionId());
    expect([fork.getHeader().parentSession, fork.getCwd()]).toEqual([sourceFile, "/dst"]);
    expect(
      readRecords(fork.getSessionFile()!)
        .slice(1)
        .map((r) => r.id),
    ).toEqual(source.getEntries().map((e) => e.id));
    // Written at once even without an assistant message.
    const unanswered = path.join(dir, "unanswered.jsonl");
    fs.writeFileSync(
      unanswered,
      `${JSON.stringify({ type: "session", version: 3, id: "u1", timestamp: new Date().toISOString(), cwd: "/u" })}\n${JSON.stringify({ type: "message", id: "aaaa0001", parentId: null, timestamp: new Date().toISOString(), message: user("hi") })}\n`,
      { mode: 0o600 },
    );
    const copied = track(SessionManager.forkFrom(unanswered, "/dst", target, extras));
    expect(fs.existsSync(copied.getSessionFile()!)).toBe(true);
    const empty = path.join(dir, "empty.jsonl");
    fs.writeFileSync(empty, "", { mode: 0o600 });
    expect(await codeOfAsync(() => SessionManager.forkFrom(empty, "/dst", target, extras))).toBe("invalid_header");
    expect(await codeOfAsync(() => SessionManager.forkFrom(path.join(dir, "none.jsonl"), "/dst", target, extras))).toBe("invalid_header");
    expect(fork.getEntry(q)).toMatchObject({ type: "message" });
  });

  it("inMemory defaults to process.cwd() and never persists", () => {
    const manager = SessionManager.inMemory();
    expect([manager.getCwd(), manager.getSessionFile(), manager.isPersisted(), manager.getSessionDir()]).toEqual([process.cwd(), undefined, false, ""]);
    manager.appendMessage(answer("a"));
    expect(manager.newSession()).toBeUndefined();
    expect(SessionManager.inMemory("/x").getCwd()).toBe("/x");
  });
});

describe("appends in pi's shapes", () => {
  it("appendModelChange writes provider and modelId; the model follows pi's rule", () => {
    const manager = SessionManager.inMemory("/w");
    expect(manager.buildSessionContext()).toEqual({ messages: [], thinkingLevel: "off", model: null });
    const change = manager.appendModelChange("openai", "gpt-x");
    expect(manager.getEntry(change)).toEqual({
      type: "model_change",
      id: change,
      parentId: null,
      timestamp: expect.any(String),
      provider: "openai",
      modelId: "gpt-x",
    });
    expect(manager.buildSessionContext().model).toEqual({ provider: "openai", modelId: "gpt-x" });
    manager.appendMessage(user("q"));
    // An assistant message after the change names the model pi resumes with.
    manager.appendMessage(answer("a", "anthropic", "claude-y"));
    expect(manager.buildSessionContext().model).toEqual({ provider: "anthropic", modelId: "claude-y" });
    manager.appendModelChange("openai", "gpt-z");
    expect(manager.buildSessionContext().model).toEqual({ provider: "openai", modelId: "gpt-z" });
  });

  it("appendThinkingLevelChange sets the context's level", () => {
    const manager = SessionManager.inMemory("/w");
    const id = manager.appendThinkingLevelChange("high");
    expect(manager.getEntry(id)).toMatchObject({ type: "thinking_level_change", thinkingLevel: "high" });
    expect(manager.buildSessionContext().thinkingLevel).toBe("high");
  });

  it("appendSessionInfo trims; getSessionName follows the latest session_info, an empty one clears", () => {
    const manager = SessionManager.inMemory("/w");
    expect(manager.getSessionName()).toBeUndefined();
    const first = manager.appendSessionInfo("  My session  ");
    expect(manager.getEntry(first)).toMatchObject({ type: "session_info", name: "My session" });
    expect(manager.getLeafId()).toBe(first);
    expect(manager.getSessionName()).toBe("My session");
    const q = manager.appendMessage(user("q"));
    manager.appendSessionInfo("Renamed");
    // The name belongs to the session, not to a branch.
    manager.branch(q);
    expect(manager.getSessionName()).toBe("Renamed");
    manager.appendSessionInfo("   ");
    expect(manager.getSessionName()).toBeUndefined();
  });

  it("appendCompaction takes pi's order and writes fromHook; the context starts with the summary", () => {
    const manager = SessionManager.inMemory("/w");
    manager.appendMessage(user("old"));
    manager.appendMessage(answer("old answer"));
    const kept = manager.appendMessage(user("kept"));
    const id = manager.appendCompaction("summary text", kept, 1234, { readFiles: ["a.ts"] }, true);
    expect(manager.getEntry(id)).toMatchObject({
      type: "compaction",
      summary: "summary text",
      firstKeptEntryId: kept,
      tokensBefore: 1234,
      details: { readFiles: ["a.ts"] },
      fromHook: true,
    });
    expect(manager.getEntry(id)).not.toHaveProperty("fromExtension");
    const plain = manager.appendCompaction("again", kept, 1);
    expect(manager.getEntry(plain)).not.toHaveProperty("fromHook");
    const messages = manager.buildSessionContext().messages;
    expect(messages[0]).toMatchObject({ role: "compactionSummary", summary: "again" });
    expect(messages.slice(1).map((m) => (m as unknown as { content: { text: string }[] }).content[0]!.text)).toEqual(["kept"]);
    expect(manager.getLatestCompactionEntry()?.id).toBe(plain);
    expect(getLatestCompactionEntry(manager.getEntries())?.id).toBe(plain);
  });

  it("branchWithSummary moves the leaf and writes fromHook; null branches from before the root", async () => {
    const manager = SessionManager.inMemory("/w");
    const q = manager.appendMessage(user("q"));
    manager.appendMessage(answer("a"));
    const summary = manager.branchWithSummary(q, "left a branch", { note: 1 }, false);
    expect(manager.getEntry(summary)).toMatchObject({
      type: "branch_summary",
      parentId: q,
      fromId: q,
      summary: "left a branch",
      details: { note: 1 },
      fromHook: false,
    });
    const root = manager.branchWithSummary(null, "from the top");
    expect(manager.getEntry(root)).toMatchObject({ parentId: null, fromId: "root" });
    expect(await codeOfAsync(() => manager.branchWithSummary("ffffffff", "x"))).toBe("unknown_entry");
    // The peers' wording, under the stable code.
    expect(() => manager.branch("nonexistent")).toThrow("Entry nonexistent not found");
    expect(() => manager.createBranchedSession("nonexistent")).toThrow("Entry nonexistent not found");
  });

  it("appendCustomMessageEntry has no attribution; appendCustomEntry stays out of the context", () => {
    const manager = SessionManager.inMemory("/w");
    const custom = manager.appendCustomEntry("ext-state", { n: 1 });
    const message = manager.appendCustomMessageEntry("ext", "shown to the model", true, { k: "v" });
    expect(manager.getEntry(message)).toEqual({
      type: "custom_message",
      id: message,
      parentId: custom,
      timestamp: expect.any(String),
      customType: "ext",
      content: "shown to the model",
      display: true,
      details: { k: "v" },
    });
    expect(buildSessionContext(manager.getEntries()).messages).toHaveLength(1);
  });
});

describe("tree reads", () => {
  it("getBranch, getChildren, getLeafEntry, getEntry, getLabel and getTree with label timestamps", () => {
    let clock = Date.parse("2026-01-01T00:00:00.000Z");
    const manager = SessionManager.create("/w", dir, { ...extras, now: () => new Date((clock += 1000)) });
    track(manager);
    const q = manager.appendMessage(user("q"));
    const a1 = manager.appendMessage(answer("a1"));
    manager.branch(q);
    const a2 = manager.appendMessage(answer("a2"));
    manager.appendLabelChange(q, "first");
    const relabel = manager.appendLabelChange(q, "second");
    manager.appendLabelChange(a1, "gone");
    manager.appendLabelChange(a1, undefined);
    expect(manager.getBranch(a1).map((e) => e.id)).toEqual([q, a1]);
    expect(manager.getBranch("ffffffff")).toEqual([]);
    expect(manager.getChildren(q).map((e) => e.id)).toEqual([a1, a2]);
    expect(manager.getLeafEntry()?.type).toBe("label");
    expect(manager.getEntry(a2)?.id).toBe(a2);
    expect([manager.getLabel(q), manager.getLabel(a1)]).toEqual(["second", undefined]);
    const [root] = manager.getTree();
    expect(root!.entry.id).toBe(q);
    expect(root!.label).toBe("second");
    expect(root!.labelTimestamp).toBe(manager.getEntry(relabel)!.timestamp);
    const a1Node = root!.children.find((n) => n.entry.id === a1)!;
    expect([a1Node.label, a1Node.labelTimestamp]).toEqual([undefined, undefined]);
    manager.resetLeaf();
    expect([manager.getLeafId(), manager.getBranch()]).toEqual([null, []]);
  });
});

describe("switches (all synchronous)", () => {
  it("newSession takes an id and a parent; setSessionFile loads another file; createBranchedSession returns the new path", async () => {
    const manager = create();
    manager.appendMessage(user("q"));
    const a = manager.appendMessage(answer("a"));
    const first = manager.getSessionFile()!;
    const second = manager.newSession({ id: "pi-second", parentSession: first })!;
    expect(typeof second).toBe("string");
    expect([manager.getSessionId(), manager.getHeader().parentSession, manager.getEntries()]).toEqual(["pi-second", first, []]);
    expect(await codeOfAsync(() => manager.newSession({ id: "no/slash" }))).toBe("invalid_session_id");
    manager.appendMessage(answer("b"));
    await manager.flush();
    manager.setSessionFile(first);
    expect(manager.getLeafId()).toBe(a);
    const branched = manager.createBranchedSession(a)!;
    expect(branched).not.toBe(first);
    expect(readRecords(branched)[0]).toMatchObject({ type: "session", parentSession: first });
    expect(manager.getSessionFile()).toBe(branched);
    expect(await codeOfAsync(() => manager.createBranchedSession("ffffffff"))).toBe("unknown_entry");
  });
});

describe("listings", () => {
  it("list and listAll give pi's rows: name from a late session_info, every message counted, progress per file", async () => {
    const box = sandbox();
    const options = { ...extras, agentDir: box.agentDir };
    const manager = track(SessionManager.create(box.cwd, undefined, options));
    manager.appendMessage(user("first question"));
    manager.appendMessage(answer("x".repeat(6000)));
    manager.appendSessionInfo("Late name");
    const other = track(SessionManager.create(box.cwd, undefined, options));
    other.appendMessage(answer("unnamed"));
    await manager.flush();
    await other.flush();
    const progress: [number, number][] = [];
    const rows = await SessionManager.list(box.cwd, undefined, (loaded, total) => progress.push([loaded, total]), { agentDir: box.agentDir });
    expect(progress).toEqual([
      [1, 2],
      [2, 2],
    ]);
    const named = rows.find((row) => row.path === manager.getSessionFile())!;
    expect(named).toMatchObject({ id: manager.getSessionId(), cwd: box.cwd, name: "Late name", messageCount: 2, firstMessage: "first question" });
    expect(named).not.toHaveProperty("title");
    expect(named.modified.getTime()).toBe(2);
    expect(named.allMessagesText.startsWith("first question x")).toBe(true);
    expect(rows.find((row) => row.path === other.getSessionFile())).not.toHaveProperty("name");
    const all = await SessionManager.listAll(undefined, { agentDir: box.agentDir });
    expect(all.map((row) => row.path).sort()).toEqual(rows.map((row) => row.path).sort());
    const explicit = await SessionManager.list(box.cwd, dir);
    expect(explicit).toEqual([]);
  });
});

describe("module functions", () => {
  it("loadEntriesFromFile is synchronous; the format functions are the main entry's", async () => {
    const manager = create();
    manager.appendMessage(answer("a"));
    const file = manager.getSessionFile()!;
    const records = loadEntriesFromFile(file);
    expect(Array.isArray(records)).toBe(true);
    expect(records.map((r) => r.type)).toEqual(["session", "message"]);
    expect(loadEntriesFromFile(path.join(dir, "missing.jsonl"))).toEqual([]);
    expect(CURRENT_SESSION_VERSION).toBe(5);
    const parsed = parseSessionEntries(fs.readFileSync(file, "utf8"));
    expect(parsed).toHaveLength(2);
    const v1 = parseSessionEntries(
      `{"type":"session","id":"s","timestamp":"t","cwd":"/"}\n{"type":"message","timestamp":"t","message":{"role":"user","content":"q","timestamp":1}}\n`,
    );
    migrateSessionEntries(v1);
    expect(v1[0]).toMatchObject({ version: 5 });
    expect(v1[1]).toMatchObject({ id: expect.any(String), parentId: null });
    const context = buildSessionContext(records.slice(1) as never);
    expect(context.model).toEqual({ provider: "prov", modelId: "m1" });
  });
});
