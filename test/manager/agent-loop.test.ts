/**
 * An agent-style loop (scripted model, no network) driving the GJC-shaped API end to end on
 * real files: turns with tool calls, a compaction, navigation back in the tree with a branch
 * summary, labels, a title, close, and a resume whose context is checked message by message
 * against what the live session showed before closing.
 */
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager, type AgentMessage } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { recordingLogger } from "./helpers.js";

let tmp: { path: string; remove(): void };
beforeEach(() => {
  tmp = makeTempDir("gjc-agent-loop-");
});
afterEach(() => tmp.remove());

/** A scripted model: answers a prompt with one tool call, then with text once the tool result is in. */
function scriptedModel(context: readonly unknown[]): AgentMessage {
  const last = context[context.length - 1] as { role: string; content?: unknown; toolCallId?: string };
  const turn = context.filter((m) => (m as { role: string }).role === "assistant").length;
  const base = { role: "assistant", provider: "scripted", model: "loop-1", timestamp: 1000 + turn, usage: { input: 10, output: 5 } };
  if (last.role === "user") {
    return {
      ...base,
      content: [{ type: "toolCall", id: `call-${turn}`, name: "read", arguments: { path: `file-${turn}.ts` } }],
      stopReason: "toolUse",
    } as AgentMessage;
  }
  return { ...base, content: [{ type: "text", text: `done after ${last.toolCallId}` }], stopReason: "stop" } as AgentMessage;
}

/** One user turn: prompt, model, tool, model, appended through the manager as an agent does. */
function runTurn(manager: SessionManager, prompt: string): string[] {
  const ids = [manager.appendMessage({ role: "user", content: [{ type: "text", text: prompt }], timestamp: 1 } as AgentMessage)];
  for (;;) {
    const reply = scriptedModel(manager.buildSessionContext().messages);
    ids.push(manager.appendMessage(reply));
    const call = (reply as unknown as { content: { type: string; id?: string; name?: string }[] }).content.find((c) => c.type === "toolCall");
    if (call === undefined) return ids;
    ids.push(
      manager.appendMessage({
        role: "toolResult",
        toolCallId: call.id,
        toolName: call.name,
        content: [{ type: "text", text: `contents of ${call.id}` }],
        isError: false,
        timestamp: 2,
      } as AgentMessage),
    );
  }
}

const roles = (messages: readonly unknown[]) => messages.map((m) => (m as { role: string }).role);

describe("an agent loop on the GJC-shaped API", () => {
  it("appends, compacts, navigates, labels, closes and resumes to the same context", async () => {
    const sessionDir = path.join(tmp.path, "sessions");
    const extras = { terminalId: null, logger: recordingLogger() };
    const manager = SessionManager.create("/repo", sessionDir, undefined, extras);
    manager.appendModelChange("scripted/loop-1");
    manager.appendThinkingLevelChange("medium");

    const first = runTurn(manager, "read the first file");
    const second = runTurn(manager, "now the second");
    expect(first).toHaveLength(4);
    expect(roles(manager.buildSessionContext().messages)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "assistant",
      "user",
      "assistant",
      "toolResult",
      "assistant",
    ]);

    // Compaction: keep the second turn, summarise the first.
    const compaction = manager.appendCompaction("The user had the first file read.", "first file read", second[0]!, 4000);
    const afterCompaction = runTurn(manager, "and a third");
    let context = manager.buildSessionContext().messages;
    expect(roles(context)).toEqual(["compactionSummary", "user", "assistant", "toolResult", "assistant", "user", "assistant", "toolResult", "assistant"]);

    // Navigate back to the end of the first turn, leaving a summary of the abandoned path.
    manager.appendLabelChange(first[3]!, "first answer");
    const summary = manager.branchWithSummary(first[3]!, "Tried a second and third file; abandoned.", { files: 2 });
    expect(manager.getEntry(summary)).toMatchObject({ parentId: first[3], fromId: first[3] });
    const alternative = runTurn(manager, "instead, read something else");
    expect(manager.getBranch().map((e) => e.id)).toEqual([manager.getEntries()[0]!.id, manager.getEntries()[1]!.id, ...first, summary, ...alternative]);
    expect(manager.getChildren(first[3]!).map((e) => e.id)).toEqual([second[0], summary]);
    expect(await manager.setSessionName("agent loop", "user")).toBe(true);
    context = manager.buildSessionContext().messages;
    expect(roles(context)).toEqual(["user", "assistant", "toolResult", "assistant", "branchSummary", "user", "assistant", "toolResult", "assistant"]);
    const live = manager.buildSessionContext();
    const tree = manager.getTree();
    const file = manager.getSessionFile()!;
    const leaf = manager.getLeafId();
    await manager.close();

    const resumed = await SessionManager.continueRecent("/repo", sessionDir, undefined, undefined, undefined, extras);
    expect(resumed.getSessionFile()).toBe(file);
    expect(resumed.getLeafId()).toBe(leaf);
    expect(resumed.getSessionName()).toBe("agent loop");
    expect(resumed.titleSource).toBe("user");
    expect(resumed.getLabel(first[3]!)).toBe("first answer");
    expect(resumed.buildSessionContext()).toEqual(live);
    expect(resumed.buildSessionContext()).toMatchObject({ thinkingLevel: "medium", models: { default: "scripted/loop-1" } });
    expect(resumed.getTree()).toEqual(tree);

    // The resumed session keeps going; the abandoned path is one branch away.
    resumed.branch(afterCompaction[3]!);
    expect(roles(resumed.buildSessionContext().messages)[0]).toBe("compactionSummary");
    expect(resumed.getBranch().some((e) => e.id === compaction)).toBe(true);
    resumed.branch(alternative[3]!);
    const more = runTurn(resumed, "one more");
    await resumed.close();
    const reopened = await SessionManager.open(file, undefined, undefined, undefined, undefined, { ...extras, readOnly: true });
    expect(reopened.getLeafId()).toBe(more[3]);
    expect(reopened.buildSessionContext().messages.slice(0, live.messages.length)).toEqual(live.messages);
  });
});
