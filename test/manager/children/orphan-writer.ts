/**
 * Writer child of the orphaned-file test: writes a session, flushes, prints `ready <file>`, and waits for a line on
 * stdin while another process removes or replaces the file. Then it goes on as an agent would (many more entries, a
 * flush, more entries, a close) and prints what each step did as JSON.
 *
 * argv: storage ("file" | "managed") sessionDir
 */
import fs from "node:fs";
import readline from "node:readline";

import { GjcError, ManagedSessionStorage, SessionManager } from "../../../src/index.js";

const [kind, sessionDir] = process.argv.slice(2) as ["file" | "managed", string];
const logged: string[] = [];
const logger = { error: (_message: string, details: { code: string }) => void logged.push(details.code) };
const storage = kind === "managed" ? ManagedSessionStorage.open(sessionDir, { logger }) : undefined;
const manager = SessionManager.create("/work/project", sessionDir, storage, { terminalId: null, logger });

// Tool output sized like a real agent's: a few KiB per result.
const output = (n: number) => `line ${n}: ${"drwxr-xr-x  2 user user 4096 Jan  1 00:00 src\n".repeat(40)}`;
function turn(n: number): void {
  manager.appendMessage({ role: "user", content: [{ type: "text", text: `step ${n}: list the sources again` }], timestamp: n } as never);
  manager.appendMessage({
    role: "assistant",
    provider: "p",
    model: "m",
    content: [{ type: "toolCall", id: `call-${n}`, name: "bash", arguments: { command: "ls -la" } }],
    timestamp: n,
  } as never);
  manager.appendMessage({
    role: "toolResult",
    toolCallId: `call-${n}`,
    toolName: "bash",
    content: [{ type: "text", text: output(n) }],
    isError: false,
    timestamp: n,
  } as never);
}

const outcome = async (step: () => unknown) => {
  try {
    await step();
    return { code: "ok" };
  } catch (error) {
    if (!(error instanceof GjcError)) throw error;
    const cause = error.cause as { code?: string; detail?: string } | undefined;
    return { code: error.code, cause: cause?.code, detail: cause?.detail, message: error.message };
  }
};

for (let n = 0; n < 30; n++) turn(n);
await manager.flush();
const file = manager.getSessionFile()!;
fs.writeSync(1, `ready ${file}\n`);
const lines = readline.createInterface({ input: process.stdin });
await new Promise<void>((resolve) => lines.once("line", () => resolve()));
lines.close();

let afterTurns = 0;
const turns = await outcome(() => {
  // Past the line index's row batch, so a batch would be written between flushes.
  for (let n = 30; n < 60; n++, afterTurns++) turn(n);
});
const flush = await outcome(() => manager.flush());
const later = [
  await outcome(() => manager.appendMessage({ role: "user", content: "one more", timestamp: 61 } as never)),
  await outcome(() => manager.setSessionName("renamed")),
  await outcome(() => manager.rewriteEntries()),
  await outcome(() => manager.flush()),
];
const close = await outcome(() => manager.close());
storage?.close();
fs.writeSync(1, `${JSON.stringify({ turns, afterTurns, flush, later, close, inMemory: manager.getEntries().length, logged })}\n`);
