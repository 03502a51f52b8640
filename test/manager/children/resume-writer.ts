/**
 * Writer child of the resume concurrency test: resumes one session file again and again, as an
 * agent does, and prints each cycle's number once the cycle closed. A cycle opens the session,
 * appends a numbered user message, now and then an answer it abandons (the user asks again: the
 * leaf goes back to the question, leaving a dead branch), now and then a tool call whose result is
 * a long output (with an image every few), the answer, every `COMPACT_EVERY`th cycle a compaction
 * keeping the last two questions, every `rewriteEvery`th cycle a rewrite of an earlier message;
 * then flushes and closes.
 *
 * argv: file firstNumber cycles rewriteEvery compactEvery
 */
import fs from "node:fs";
import path from "node:path";

import { SessionManager, type FileEntry } from "../../../src/index.js";

/** Cycles between abandoned answers, between tool calls, and tool calls between images. */
const ABANDON_EVERY = 13;
const TOOL_EVERY = 5;
const IMAGE_EVERY = 3;

const [file, first, cycles, rewriteEvery, compactEvery] = process.argv.slice(2) as [string, string, string, string, string];
const COMPACT_EVERY = Number(compactEvery);
const quiet = { error() {} };
const print = (line: string) => fs.writeSync(1, line + "\n");
/** A tool's output as agents log it: many numbered lines, a few hundred KB. */
const output = (n: number) =>
  Array.from({ length: 2_000 + (n % 7) * 500 }, (_, i) => `${n}:${i} ${"src/module/file.ts: matched line of code ".repeat(2)}`).join("\n");
/** A PNG-sized payload (the store keeps large images aside in its blob store). */
const image = (n: number) => Buffer.alloc(96 * 1024, n % 251).toString("base64");
const questionId = (manager: SessionManager, n: number): string | undefined =>
  manager.getBranch().find((entry: FileEntry) => entry.type === "message" && (entry as { message: { n?: number } }).message.n === n)?.id as string | undefined;

for (let n = Number(first); n < Number(first) + Number(cycles); n++) {
  const manager = await SessionManager.open(file, path.dirname(file), undefined, undefined, undefined, { terminalId: null, logger: quiet });
  const question = manager.appendMessage({
    role: "user",
    content: [{ type: "text", text: `question ${n} ${"pasted ".repeat(n % 50)}` }],
    n,
    timestamp: n,
  } as never);
  if (n % ABANDON_EVERY === ABANDON_EVERY - 1) {
    manager.appendMessage({
      role: "assistant",
      provider: "p",
      model: "m",
      content: [{ type: "text", text: `a first answer, abandoned` }],
      timestamp: n,
    } as never);
    manager.branch(question);
  }
  if (n % TOOL_EVERY === 0) {
    const call = `call_${n}`;
    manager.appendMessage({
      role: "assistant",
      provider: "p",
      model: "m",
      content: [{ type: "toolCall", id: call, name: "grep", arguments: { pattern: "line" } }],
      timestamp: n,
    } as never);
    const content: unknown[] = [{ type: "text", text: output(n) }];
    if ((n / TOOL_EVERY) % IMAGE_EVERY === 0) content.push({ type: "image", data: image(n), mimeType: "image/png" });
    manager.appendMessage({ role: "toolResult", toolCallId: call, toolName: "grep", content, isError: false, timestamp: n } as never);
  }
  manager.appendMessage({ role: "assistant", provider: "p", model: "m", content: [{ type: "text", text: `answer ${n}` }], timestamp: n } as never);
  if (n % COMPACT_EVERY === COMPACT_EVERY - 1) {
    const kept = questionId(manager, n - 2);
    if (kept !== undefined) manager.appendCompaction(`summary of the questions before ${n - 2}`, undefined, kept, 50_000);
  }
  if (n % Number(rewriteEvery) === Number(rewriteEvery) - 1) {
    // An earlier answer pruned, as an agent trims old tool output: the whole file is rewritten.
    const answers = manager
      .getEntries()
      .filter((entry: FileEntry) => entry.type === "message" && (entry as { message: { role: string } }).message.role === "assistant");
    const target = answers[Math.floor(answers.length / 2)]!;
    manager.applyEntryMessageUpdates([
      { ...target, message: { ...(target as { message: object }).message, content: [{ type: "text", text: `pruned at ${n}` }] } } as FileEntry,
    ]);
    await manager.rewriteEntries();
  }
  await manager.flush();
  await manager.close();
  print(String(n));
}
print("done");
