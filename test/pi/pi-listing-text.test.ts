/**
 * The picker's search text of `gjc-session-store/pi` rows is pi's: `allMessagesText` holds the text of every user and
 * assistant message of the file (string content, or the text blocks joined by spaces), joined by spaces, however far
 * into the file they are; tool results, custom and bash messages add nothing. For sessions in the managed scope (also
 * once the persistent listing index, which keeps only the first 4 KiB's text, is warm) and for pi's own `--<cwd>--`
 * files not yet copied.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, describe, expect, it } from "vitest";

import { SessionManager } from "../../src/pi/index.js";
import { useSandboxes } from "../scope/helpers.js";
import { recordingLogger } from "../manager/helpers.js";

const sandbox = useSandboxes();
const managers: SessionManager[] = [];
afterEach(async () => {
  for (const manager of managers.splice(0)) await manager.close().catch(() => {});
});

const usage = { input: 10, output: 20, cacheRead: 0, cacheWrite: 0, totalTokens: 30, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };

/** A real-shaped conversation: a pasted stack trace, tool calls with big outputs, thinking, a bash run, an extension note. */
function conversation(turns: number): { role: string; [key: string]: unknown }[] {
  const out: { role: string; [key: string]: unknown }[] = [];
  out.push({ role: "user", content: `Why does the build fail?\n${"    at compile (/srv/app/build.js:41:13)\n".repeat(200)}`, timestamp: 1 });
  for (let i = 0; i < turns; i++) {
    out.push({
      role: "assistant",
      content: [
        { type: "thinking", thinking: `considering step ${i}` },
        { type: "text", text: `Step ${i}: reading the log` },
        { type: "toolCall", id: `call-${i}`, name: "read", arguments: { path: `/srv/app/log-${i}.txt` } },
      ],
      api: "anthropic-messages",
      provider: "anthropic",
      model: "claude-sonnet-4",
      usage,
      stopReason: "toolUse",
      timestamp: 10 + i * 3,
    });
    out.push({
      role: "toolResult",
      toolCallId: `call-${i}`,
      toolName: "read",
      content: [{ type: "text", text: `log line ${i}\n`.repeat(300) }],
      isError: false,
      timestamp: 11 + i * 3,
    });
    out.push({
      role: "user",
      content: [
        { type: "text", text: `and then turn ${i}?` },
        { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
      ],
      timestamp: 12 + i * 3,
    });
  }
  out.push({ role: "bashExecution", command: "npm test", output: "ok\n".repeat(50), exitCode: 0, cancelled: false, truncated: false, timestamp: 900 });
  out.push({
    role: "assistant",
    content: [{ type: "text", text: "The needle: a missing semicolon in build.js" }],
    api: "anthropic-messages",
    provider: "anthropic",
    model: "claude-sonnet-4",
    usage,
    stopReason: "stop",
    timestamp: 901,
  });
  return out;
}

/** pi 0.73.1's rule, written out here: every user and assistant message's non-empty text, joined by spaces. */
function piSearchText(messages: readonly { role: string; content?: unknown }[]): string {
  const texts: string[] = [];
  for (const message of messages) {
    if (message.role !== "user" && message.role !== "assistant") continue;
    const content = message.content;
    const text =
      typeof content === "string"
        ? content
        : (content as { type: string; text?: string }[])
            .filter((b) => b.type === "text")
            .map((b) => b.text)
            .join(" ");
    if (text) texts.push(text);
  }
  return texts.join(" ");
}

describe("pi rows' allMessagesText", () => {
  it("holds every user and assistant text of a managed session, before and after the listing index is warm", async () => {
    const box = sandbox();
    const options = { terminalId: null, logger: recordingLogger(), agentDir: box.agentDir };
    const manager = SessionManager.create(box.cwd, undefined, options);
    managers.push(manager);
    const messages = conversation(30);
    for (const message of messages) manager.appendMessage(message as Parameters<SessionManager["appendMessage"]>[0]);
    manager.appendCustomMessageEntry("note", "an extension's note, not searched", true);
    await manager.flush();
    expect(fs.statSync(manager.getSessionFile()!).size).toBeGreaterThan(64 * 1024);
    const expected = piSearchText(messages);
    expect(expected).toContain("The needle");

    for (let pass = 0; pass < 2; pass++) {
      const [row] = await SessionManager.list(box.cwd, undefined, undefined, { agentDir: box.agentDir });
      expect(row?.allMessagesText).toBe(expected);
      expect(row?.messageCount).toBe(messages.length);
      const all = await SessionManager.listAll(undefined, { agentDir: box.agentDir });
      expect(all.map((r) => r.allMessagesText)).toEqual([expected]);
    }
  });

  it("holds every user and assistant text of a session pi wrote in its own folder", async () => {
    const box = sandbox();
    const folder = path.join(box.agentDir, "sessions", `--${box.cwd.slice(1).replaceAll("/", "-")}--`);
    fs.mkdirSync(folder, { recursive: true, mode: 0o755 });
    const messages = conversation(12);
    const id = "0190a0b0-3e82-7000-8000-00000000d001";
    const lines: unknown[] = [{ type: "session", version: 3, id, timestamp: "2025-04-01T08:00:00.000Z", cwd: box.cwd }];
    messages.forEach((message, i) =>
      lines.push({ type: "message", id: `m${i}`, parentId: i === 0 ? null : `m${i - 1}`, timestamp: "2025-04-01T08:00:01.000Z", message }),
    );
    const file = path.join(folder, `2025-04-01T08-00-00-000Z_${id}.jsonl`);
    fs.writeFileSync(file, lines.map((line) => JSON.stringify(line)).join("\n") + "\n", { mode: 0o644 });

    const all = await SessionManager.listAll(undefined, { agentDir: box.agentDir });
    expect(all.map((row) => [row.path, row.allMessagesText])).toEqual([[file, piSearchText(messages)]]);
  });
});
