/**
 * Crash-test child driving a real SessionManager. After every durable step it writes an
 * acknowledgement straight to the pipe, so the parent, which SIGKILLs it at a random moment,
 * knows exactly what was promised.
 *
 * argv: mode ("append" | "rewrite") sessionDir file firstNumber
 * - append: appends user messages numbered (`message.n`) from firstNumber, flush() after
 *   each, acks "n".
 * - rewrite: sets `message.gen` of every user message to firstNumber, firstNumber+1, ... with
 *   applyEntryMessageUpdates + rewriteEntries (atomic), acks "g" after each.
 */
import fs from "node:fs";

import { SessionManager } from "../../../src/index.js";

const [mode, sessionDir, file, first] = process.argv.slice(2) as [string, string, string, string];
const acknowledge = (line: string) => fs.writeSync(1, line + "\n");
const quiet = { error() {} };
const manager = await SessionManager.open(file, sessionDir, undefined, undefined, undefined, { terminalId: null, logger: quiet });
if (manager.getEntries().length === 0) {
  manager.appendMessage({ role: "assistant", content: [], provider: "p", model: "m", timestamp: 0 });
  await manager.flush();
}
acknowledge("ready");
for (let n = Number(first); ; n++) {
  if (mode === "append") {
    manager.appendMessage({ role: "user", content: "crash", n, pad: "x".repeat(n % 200) });
    await manager.flush();
  } else {
    const updates = manager
      .getEntries()
      .filter((entry) => entry.type === "message" && (entry as { message?: { role?: string } }).message?.role === "user")
      .map((entry) => ({ ...entry, message: { ...(entry as { message: object }).message, gen: n } }) as typeof entry);
    manager.applyEntryMessageUpdates(updates);
    await manager.rewriteEntries();
  }
  acknowledge(String(n));
}
