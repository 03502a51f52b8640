/**
 * OpenAI Responses replay metadata on the `/gjc` face, over real session files: an assistant
 * message read back from disk comes without its `openaiResponsesHistory` payload and without its
 * thinking signatures (in the model's context, in entry copies, through the read hook); one this
 * manager appended during the live connection keeps both until the session is loaded again; other
 * providers' messages are untouched; the file is never rewritten for it.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { getSessionContextForInternalRead, SessionManager } from "../../src/gjc/index.js";
import type { AgentMessage } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: { path: string; remove(): void };
let sessions: string;
beforeEach(() => {
  tmp = makeTempDir("gjc-replay-metadata-");
  sessions = path.join(tmp.path, "sessions");
  fs.mkdirSync(sessions, { mode: 0o700 });
});
afterEach(() => tmp.remove());

const options = () => ({ terminalId: null, agentDir: path.join(tmp.path, "agent") });

const usage = { input: 10, output: 20, cacheRead: 0, cacheWrite: 0, totalTokens: 30, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };

function codexAnswer(text: string, turn: number): AgentMessage {
  return {
    role: "assistant",
    content: [
      { type: "thinking", thinking: `reasoning about turn ${turn}`, thinkingSignature: `encrypted-reasoning-${turn}-${"s".repeat(2_000)}` },
      { type: "text", text },
    ],
    api: "openai-responses",
    provider: "openai-codex",
    model: "gpt-5-codex",
    providerPayload: {
      type: "openaiResponsesHistory",
      provider: "openai-codex",
      items: [{ type: "reasoning", id: `rs_${turn}`, encrypted_content: "e".repeat(4_000) }],
    },
    usage,
    stopReason: "stop",
    timestamp: turn,
  } as unknown as AgentMessage;
}

function claudeAnswer(text: string, turn: number): AgentMessage {
  return {
    role: "assistant",
    content: [
      { type: "thinking", thinking: "claude thinking", thinkingSignature: "claude-signature" },
      { type: "text", text },
    ],
    api: "anthropic-messages",
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    usage,
    stopReason: "stop",
    timestamp: turn,
  } as unknown as AgentMessage;
}

const prompt = (text: string, turn: number) => ({ role: "user", content: [{ type: "text", text }], timestamp: turn }) as AgentMessage;

type Shape = { role: string; providerPayload?: unknown; content?: { type: string; thinkingSignature?: string }[] };
const assistants = (messages: readonly unknown[]) => (messages as Shape[]).filter((m) => m.role === "assistant");
const signatures = (message: Shape) => (message.content ?? []).filter((b) => b.type === "thinking").map((b) => b.thinkingSignature);

describe("OpenAI Responses replay metadata", () => {
  it("is dropped from what a loaded session gives back, kept for the live connection's own messages, and never rewritten", async () => {
    const session = SessionManager.create(tmp.path, sessions, undefined, options());
    session.appendMessage(prompt("refactor the parser", 1));
    session.appendMessage(codexAnswer("done with the parser", 2));
    session.appendMessage(prompt("and the lexer", 3));
    session.appendMessage(claudeAnswer("lexer too", 4));
    // During the live connection the payload is what the next request replays.
    const live = assistants(session.buildSessionContext().messages);
    expect(live[0]!.providerPayload).toMatchObject({ type: "openaiResponsesHistory" });
    expect(signatures(live[0]!)[0]).toMatch(/^encrypted-reasoning-2/);
    await session.flush();
    const file = session.getSessionFile()!;
    await session.close();
    const bytes = fs.readFileSync(file);

    const resumed = await SessionManager.open(file, undefined, undefined, undefined, undefined, options());
    for (const messages of [resumed.buildSessionContext().messages, getSessionContextForInternalRead(resumed).messages]) {
      const [codex, claude] = assistants(messages);
      expect(codex!.providerPayload).toBeUndefined();
      expect(signatures(codex!)).toEqual([undefined]);
      expect(JSON.stringify(codex)).not.toMatch(/providerPayload|thinkingSignature|encrypted/);
      expect(codex!.content).toContainEqual({ type: "text", text: "done with the parser" });
      expect(claude!.content).toContainEqual({ type: "thinking", thinking: "claude thinking", thinkingSignature: "claude-signature" });
    }
    const entries = resumed
      .getEntries()
      .map((e) => (e as { message?: Shape }).message)
      .filter((m) => m !== undefined);
    expect(assistants(entries).map((m) => m.providerPayload)).toEqual([undefined, undefined]);
    expect(
      assistants(
        resumed
          .getActivePathEntriesCanonical()
          .map((e) => (e as { message?: Shape }).message)
          .filter((m) => m !== undefined),
      )[0]!.providerPayload,
    ).toBeUndefined();

    // A new live turn keeps its own payload; the loaded one stays without.
    resumed.appendMessage(prompt("now the tests", 5));
    resumed.appendMessage(codexAnswer("tests written", 6));
    const after = assistants(resumed.buildSessionContext().messages);
    expect(after.map((m) => m.providerPayload === undefined)).toEqual([true, true, false]);
    expect(signatures(after[2]!)[0]).toMatch(/^encrypted-reasoning-6/);
    await resumed.close();
    // Appends only: the lines written before are the bytes they were.
    expect(fs.readFileSync(file).subarray(0, bytes.length)).toEqual(bytes);

    const again = await SessionManager.open(file, undefined, undefined, undefined, undefined, options());
    expect(assistants(again.buildSessionContext().messages).map((m) => m.providerPayload)).toEqual([undefined, undefined, undefined]);
    await again.close();
  });
});
