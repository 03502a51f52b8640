/**
 * Messages typed by role: what an agent appends must have a role the types name (checked by
 * the typecheck of this file: each `@ts-expect-error` fails the build if the line compiles),
 * while a message with any role read from a file stays readable.
 */
import { describe, expect, it } from "vitest";
import { buildSessionContext } from "../../src/session/context.js";
import { type AgentMessage, type StoredAgentMessage } from "../../src/session/messages.js";
import type { MessageEntry } from "../../src/session/schemas.js";
import { SessionTree } from "../../src/session/tree.js";
import { header, jsonl, loaded } from "./format-helpers.js";

/** Stands for an append method: it takes exactly what an agent may append. */
function appendable(message: AgentMessage): AgentMessage {
  return message;
}

describe("AgentMessage", () => {
  it("accepts every role the peers append, and refuses a misspelt one at compile time", () => {
    const messages: AgentMessage[] = [
      { role: "user", content: "hi", timestamp: 1 },
      { role: "assistant", content: [{ type: "text", text: "yo" }], provider: "p", model: "m", usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 } },
      { role: "toolResult", toolCallId: "c", toolName: "task", content: [], isError: false, details: { usage: {} } },
      { role: "bashExecution", command: "ls", output: "", exitCode: 0, cancelled: false, truncated: false },
      { role: "pythonExecution", code: "1", output: "1" },
      { role: "fileMention", files: [{ path: "a.md", content: "x" }] },
      { role: "custom", customType: "ext", content: "note", display: true },
      { role: "hookMessage", customType: "pre", content: "ran" },
      { role: "branchSummary", summary: "s", fromId: "root", timestamp: 1 },
      { role: "compactionSummary", summary: "s", tokensBefore: 3, timestamp: 1 },
    ];
    expect(messages.map(appendable)).toHaveLength(10);

    // @ts-expect-error a misspelt role is not an AgentMessage
    appendable({ role: "asistant", content: [] });
    // @ts-expect-error a tool result needs its tool call id and tool name
    appendable({ role: "toolResult", content: [] });
    const tree = new SessionTree();
    // @ts-expect-error the tree's message drafts take AgentMessage too
    tree.append({ type: "message", message: { role: "asistant", content: [] } });
    expect(tree.getEntries()).toHaveLength(1);
  });

  it("a message of an unknown role read from a file stays a typed, readable message entry", () => {
    const session = loaded(
      jsonl(header(), {
        type: "message",
        id: "aaaa0001",
        parentId: null,
        timestamp: "2026-01-01T00:00:00.000Z",
        message: { role: "reviewerNote", text: "from a newer agent" },
      }),
    );
    expect(session.unknownEntries).toBe(0);
    const entry = session.entries[0] as MessageEntry;
    const stored: StoredAgentMessage = entry.message;
    expect(stored).toEqual({ role: "reviewerNote", text: "from a newer agent" });
    expect(buildSessionContext(session.entries).messages).toEqual([stored]);
  });
});
