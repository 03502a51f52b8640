/**
 * A scripted agent loop that calls `gjc-session-store/pi` the way pi 0.73.1's agent does
 * (createAgentSession, prompts with tool calls, model and thinking changes, compaction, tree
 * navigation with summaries and labels, session names) and the way its AgentSessionRuntime
 * does (synchronous open with a cwd override, create + newSession with a parent, fork through
 * createBranchedSession and another synchronous open). No network, no awaits where pi has
 * none, no close (pi never closes). The file is checked against memory after every turn, and
 * the resumed context against the live one.
 */
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager as GjcSessionManager } from "../../src/index.js";
import { SessionManager, loadEntriesFromFile, type SessionContext, type SessionEntry } from "../../src/pi/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { recordingLogger } from "../manager/helpers.js";

let tmp: { path: string; remove(): void };
let sessionDir: string;
const extras = () => ({ terminalId: null, logger: recordingLogger() });
beforeEach(() => {
  tmp = makeTempDir("gjc-pi-loop-");
  sessionDir = path.join(tmp.path, "sessions");
});
afterEach(() => tmp.remove());

const DEFAULT_MODEL = { provider: "faux", modelId: "faux-1" };
let clock = 1_700_000_000_000;
const tick = () => (clock += 1000);

const text = (t: string) => [{ type: "text" as const, text: t }];

/** The agent side of pi: state rebuilt from the manager, one scripted model. */
class ScriptedAgent {
  messages: SessionContext["messages"] = [];
  model = DEFAULT_MODEL;
  thinkingLevel = "off";

  constructor(readonly sm: SessionManager) {
    // createAgentSession: is there a thinking entry on the branch, and what does the session hold?
    const hasThinking = sm.getBranch().some((entry) => entry.type === "thinking_level_change");
    const context = sm.buildSessionContext();
    this.messages = context.messages;
    if (context.model !== null) this.model = context.model;
    else sm.appendModelChange(this.model.provider, this.model.modelId);
    if (hasThinking) this.thinkingLevel = context.thinkingLevel;
    else sm.appendThinkingLevelChange((this.thinkingLevel = "medium"));
    expect(sm.getSessionId()).toMatch(/./);
  }

  #rebuild(): void {
    const context = this.sm.buildSessionContext();
    this.messages = context.messages;
    if (context.model !== null) this.model = context.model;
    this.thinkingLevel = context.thinkingLevel;
  }

  /** One turn: user, assistant with a tool call, tool result, final assistant (message_end each). */
  prompt(question: string, withTool = true): void {
    // _checkCompaction before each prompt: the latest compaction on the branch.
    this.sm.getBranch().filter((entry) => entry.type === "compaction");
    const turn = [{ role: "user" as const, content: text(question), timestamp: tick() }];
    const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, cost: { total: 0.01 } };
    const base = { role: "assistant" as const, provider: this.model.provider, model: this.model.modelId, api: "faux", usage, stopReason: "stop" };
    const out: unknown[] = [...turn];
    if (withTool) {
      out.push({
        ...base,
        content: [{ type: "toolCall", id: `call-${clock}`, name: "read", arguments: { path: "a.txt" } }],
        stopReason: "toolUse",
        timestamp: tick(),
      });
      out.push({ role: "toolResult", toolCallId: `call-${clock - 1000}`, toolName: "read", content: text("file body"), isError: false, timestamp: tick() });
    }
    out.push({ ...base, content: text(`answer to ${question}`), timestamp: tick() });
    for (const message of out) this.sm.appendMessage(message as never);
    this.messages = this.sm.buildSessionContext().messages;
  }

  setModel(provider: string, modelId: string): void {
    this.sm.appendModelChange(provider, modelId);
    this.model = { provider, modelId };
  }

  setThinkingLevel(level: string): void {
    if (level === this.thinkingLevel) return;
    this.sm.appendThinkingLevelChange(level);
    this.thinkingLevel = level;
  }

  /** compact(): keep from the latest user message on. */
  compact(): string {
    const pathEntries = this.sm.getBranch();
    const firstKept = [...pathEntries].reverse().find((entry) => entry.type === "message" && (entry.message as { role: string }).role === "user")!;
    const id = this.sm.appendCompaction("summary of the early work", firstKept.id as string, 1234, { readFiles: ["a.txt"], modifiedFiles: [] }, false);
    // session_compact event payload
    expect(this.sm.getEntries().at(-1)!.id).toBe(id);
    this.#rebuild();
    return id;
  }

  /** navigateTree(target, { summarize, label }). */
  navigateTree(targetId: string, options: { summarize?: boolean; label?: string } = {}): void {
    const oldLeaf = this.sm.getLeafId()!;
    const target = this.sm.getEntry(targetId)!;
    // collectEntriesForBranchSummary walks both branches and up through getEntry.
    const oldBranch = this.sm.getBranch(oldLeaf);
    const targetBranch = new Set(this.sm.getBranch(targetId).map((entry) => entry.id));
    const abandoned = oldBranch.filter((entry) => !targetBranch.has(entry.id));
    for (let at: SessionEntry | undefined = target; typeof at?.parentId === "string"; at = this.sm.getEntry(at.parentId as string)) void at;
    // A user message is re-edited: the new leaf is its parent.
    const isUser = target.type === "message" && (target.message as { role: string }).role === "user";
    const newLeaf = isUser ? target.parentId : targetId;
    if (options.summarize === true) {
      const summaryId = this.sm.branchWithSummary((newLeaf as string | undefined) ?? null, `left ${abandoned.length} entries`, { readFiles: [] }, false);
      if (options.label !== undefined) this.sm.appendLabelChange(summaryId, options.label);
    } else {
      if (newLeaf === null || newLeaf === undefined) this.sm.resetLeaf();
      else this.sm.branch(newLeaf as string);
      if (options.label !== undefined) this.sm.appendLabelChange(targetId, options.label);
    }
    expect(this.sm.getLeafId()).not.toBe(oldLeaf);
    this.#rebuild();
  }

  setSessionName(name: string): string | undefined {
    this.sm.appendSessionInfo(name);
    return this.sm.getSessionName();
  }
}

/** The file holds exactly what memory holds, right now (no await: writes are synchronous). */
function expectOnDisk(sm: SessionManager): void {
  const records = loadEntriesFromFile(sm.getSessionFile()!);
  expect(records[0]).toMatchObject({ type: "session", id: sm.getSessionId() });
  expect(records.slice(1)).toEqual(sm.getEntries());
}

describe("a pi-style agent loop on gjc-session-store/pi", () => {
  it("runs, navigates, compacts, names, and resumes through a synchronous open with the same context", async () => {
    const cwd = path.join(tmp.path, "project");
    const sm = SessionManager.create(cwd, sessionDir, extras());
    const agent = new ScriptedAgent(sm);
    agent.prompt("first question");
    expectOnDisk(sm);
    agent.setModel("faux", "faux-2");
    agent.setThinkingLevel("high");
    agent.prompt("second question");
    expectOnDisk(sm);
    const firstUser = sm.getEntries().find((entry) => entry.type === "message")!.id;

    // /tree: back to the first question with a summary and a label, then on from there.
    agent.navigateTree(firstUser as string, { summarize: true, label: "retry" });
    agent.prompt("first question, asked again", false);
    expectOnDisk(sm);
    const summary = sm.getEntries().find((entry) => entry.type === "branch_summary")!;
    expect(sm.getLabel(summary.id as string)).toBe("retry");
    expect(sm.getTree()[0]!.children.length).toBeGreaterThan(0);

    agent.prompt("third question");
    agent.compact();
    agent.prompt("after compaction");
    expect(agent.messages[0]).toMatchObject({ role: "compactionSummary", summary: "summary of the early work" });
    expect(agent.setSessionName("  Loop session ")).toBe("Loop session");
    // The switch to faux-2 is on the abandoned branch: this path continues with faux-1.
    expect(sm.buildSessionContext().model).toEqual({ provider: "faux", modelId: "faux-1" });
    expect(sm.getEntries().some((entry) => entry.type === "model_change" && entry.modelId === "faux-2")).toBe(true);
    agent.setModel("faux", "faux-3");
    agent.prompt("on faux-3", false);
    expect(sm.buildSessionContext().model).toEqual({ provider: "faux", modelId: "faux-3" });
    expectOnDisk(sm);

    const live = sm.buildSessionContext();
    const file = sm.getSessionFile()!;
    const leaf = sm.getLeafId();

    // AgentSessionRuntime.switchSession: open(path, undefined, cwdOverride), used at once.
    const resumed = SessionManager.open(file, undefined, "/moved/project", extras());
    expect(resumed.getSessionFile()).toBe(file);
    expect(resumed.getCwd()).toBe("/moved/project");
    expect(resumed.getLeafId()).toBe(leaf);
    expect(resumed.buildSessionContext()).toEqual(live);
    expect(resumed.getSessionName()).toBe("Loop session");
    const again = new ScriptedAgent(resumed);
    expect([again.model, again.thinkingLevel, again.messages]).toEqual([live.model, live.thinkingLevel, live.messages]);
    // The resume added nothing: the session had its model and thinking entries.
    expect(resumed.getEntries()).toHaveLength(loadEntriesFromFile(file).length - 1);
    again.prompt("continued after resume");
    expectOnDisk(resumed);

    // Another reader, through the main entry, sees the same conversation.
    const reader = await GjcSessionManager.open(file, undefined, undefined, undefined, undefined, { ...extras(), readOnly: true });
    expect(reader.getEntries()).toEqual(resumed.getEntries());
    expect(reader.getUsageStatistics().input).toBeGreaterThan(0);
    await reader.close();
    await resumed.close();
  });

  it("AgentSessionRuntime's newSession and fork: synchronous create/newSession/createBranchedSession/open", async () => {
    const cwd = path.join(tmp.path, "project");
    const sm = SessionManager.create(cwd, sessionDir, extras());
    const agent = new ScriptedAgent(sm);
    agent.prompt("one");
    agent.prompt("two");
    const currentFile = sm.getSessionFile()!;

    // newSession({ parentSession }): getSessionDir, create, newSession, getSessionFile, context.
    const dir = sm.getSessionDir();
    const next = SessionManager.create(cwd, dir, extras());
    const nextFile = next.newSession({ parentSession: currentFile });
    expect(nextFile).toBe(next.getSessionFile());
    expect(next.getHeader().parentSession).toBe(currentFile);
    expect(next.buildSessionContext().messages).toEqual([]);
    new ScriptedAgent(next).prompt("fresh start");
    expectOnDisk(next);

    // fork(entryId) of a persisted session with a target leaf.
    const target = sm.getEntries().filter((entry) => entry.type === "message")[3]!;
    expect(sm.getEntry(target.id as string)).toEqual(target);
    expect(sm.isPersisted()).toBe(true);
    const forkDir = sm.getSessionDir();
    const forker = SessionManager.open(currentFile, forkDir, undefined, extras());
    const branchedFile = forker.createBranchedSession(target.id as string);
    expect(branchedFile).toBeTruthy();
    const forked = SessionManager.open(branchedFile!, forkDir, undefined, extras());
    expect(forked.getSessionFile()).toBe(branchedFile);
    expect(forked.getHeader().parentSession).toBe(currentFile);
    expect(forked.getBranch().map((entry) => entry.id)).toEqual(sm.getBranch(target.id as string).map((entry) => entry.id));
    const forkedAgent = new ScriptedAgent(forked);
    expect(forkedAgent.model).toEqual(DEFAULT_MODEL);
    forkedAgent.prompt("on the fork");
    expectOnDisk(forked);
    // The original file is untouched by the fork and still loads whole.
    expect(loadEntriesFromFile(currentFile).slice(1)).toEqual(sm.getEntries());
    await next.close();
    await forked.close();
  });
});
