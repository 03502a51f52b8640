/**
 * Crash-test child for the line index. After every durable step it acknowledges on the pipe;
 * the parent SIGKILLs it at a random moment.
 *
 * argv: mode ("append" | "rebuild") file firstNumber damage
 * - append: opens the session (index caught up or used), appends user messages numbered
 *   (`message.n`) from firstNumber, flush() after each, acks "n".
 * - rebuild: first damages the index (cut to `damage` bytes, or removed when that is 0), so
 *   the open rebuilds and republishes it, then appends as above.
 */
import fs from "node:fs";
import path from "node:path";

import { SessionManager } from "../../../src/index.js";

const [mode, file, first, damage] = process.argv.slice(2) as [string, string, string, string];
const acknowledge = (line: string) => fs.writeSync(1, line + "\n");
const quiet = { error() {} };
acknowledge("ready");
if (mode === "rebuild") {
  const sidecar = path.join(path.dirname(file), `.gjc-lines.${path.basename(file)}.v6`);
  const cut = Number(damage);
  if (cut === 0) fs.rmSync(sidecar, { force: true });
  else if (fs.existsSync(sidecar)) fs.truncateSync(sidecar, Math.min(cut, fs.statSync(sidecar).size));
}
const manager = await SessionManager.open(file, path.dirname(file), undefined, undefined, undefined, { terminalId: null, logger: quiet });
for (let n = Number(first); ; n++) {
  manager.appendMessage({ role: "user", content: "crash", n, pad: "x".repeat(n % 300) } as never);
  if (n % 3 === 0) manager.appendMessage({ role: "assistant", provider: "p", model: "m", content: [], timestamp: n } as never);
  await manager.flush();
  acknowledge(String(n));
}
