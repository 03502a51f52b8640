/**
 * Crash-test child driving a real SessionManager. After every durable step it writes an
 * acknowledgement straight to the pipe, so the parent, which SIGKILLs it at a random moment,
 * knows exactly what was promised.
 *
 * argv: mode ("append" | "rewrite") sessionDir file firstNumber
 * - append: appends `custom` entries numbered from firstNumber, flush() after each, acks "n".
 * - rewrite: sets `data.gen` of every `custom` entry to firstNumber, firstNumber+1, ... with
 *   rewriteEntries (atomic), acks "g" after each.
 */
import fs from "node:fs";

import { SessionManager } from "../../../src/index.js";

const [mode, sessionDir, file, first] = process.argv.slice(2) as [string, string, string, string];
const acknowledge = (line: string) => fs.writeSync(1, line + "\n");
const quiet = { error() {} };
const manager = await SessionManager.open(file, { sessionDir, terminalId: null, logger: quiet });
if (manager.getEntries().length === 0) {
  manager.appendMessage({ role: "assistant", content: [], provider: "p", model: "m", timestamp: 0 });
  await manager.flush();
}
acknowledge("ready");
for (let n = Number(first); ; n++) {
  if (mode === "append") {
    manager.appendCustomEntry("crash", { n, pad: "x".repeat(n % 200) });
    await manager.flush();
  } else {
    await manager.rewriteEntries((entry) =>
      entry.type === "custom" ? { ...entry, data: { ...(entry.data as object), gen: n } } : undefined,
    );
  }
  acknowledge(String(n));
}
