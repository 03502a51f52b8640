/**
 * Writer child of the resume concurrency test: resumes one session file again and again, as an
 * agent does (open, one numbered user message and an answer, every `rewriteEvery`th cycle a
 * rewrite of an earlier message, flush, close), and prints each number once its cycle closed.
 *
 * argv: file firstNumber cycles rewriteEvery
 */
import fs from "node:fs";
import path from "node:path";

import { SessionManager, type FileEntry } from "../../../src/index.js";

const [file, first, cycles, rewriteEvery] = process.argv.slice(2) as [string, string, string, string];
const quiet = { error() {} };
const print = (line: string) => fs.writeSync(1, line + "\n");
for (let n = Number(first); n < Number(first) + Number(cycles); n++) {
  const manager = await SessionManager.open(file, path.dirname(file), undefined, undefined, undefined, { terminalId: null, logger: quiet });
  manager.appendMessage({ role: "user", content: [{ type: "text", text: `question ${n} ${"pasted ".repeat(n % 50)}` }], n, timestamp: n } as never);
  manager.appendMessage({ role: "assistant", provider: "p", model: "m", content: [{ type: "text", text: `answer ${n}` }], timestamp: n } as never);
  if (n % Number(rewriteEvery) === Number(rewriteEvery) - 1) {
    // An earlier answer pruned, as an agent trims old tool output: the whole file is rewritten.
    const answers = manager.getEntries().filter((entry: FileEntry) => entry.type === "message" && (entry as { message: { role: string } }).message.role === "assistant");
    const target = answers[Math.floor(answers.length / 2)]!;
    manager.applyEntryMessageUpdates([{ ...target, message: { ...(target as { message: object }).message, content: [{ type: "text", text: `pruned at ${n}` }] } } as FileEntry]);
    await manager.rewriteEntries();
  }
  await manager.flush();
  await manager.close();
  print(String(n));
}
print("done");
