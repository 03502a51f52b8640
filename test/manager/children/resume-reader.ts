/**
 * Reader child of the resume concurrency test: opens the session read-only in a loop until
 * `stopFile` exists; after each open it prints the numbered user messages on the leaf's path,
 * among all entries and in the model's context, and whether the context opens with a compaction's
 * summary (`<acked>|<pathNumbers>|<entryNumbers>|<index note>|<contextNumbers>|summary`), so the
 * parent can check each against what was flushed before the open began.
 *
 * argv: file stopFile
 */
import fs from "node:fs";
import path from "node:path";

import { SessionManager, type FileEntry } from "../../../src/index.js";

const [file, stopFile] = process.argv.slice(2) as [string, string];
const quiet = { error() {} };
const print = (line: string) => fs.writeSync(1, line + "\n");
const numbers = (entries: readonly FileEntry[]): number[] =>
  entries.flatMap((entry) => {
    const n = (entry as { message?: { role?: string; n?: number } }).message;
    return entry.type === "message" && n?.role === "user" && typeof n.n === "number" ? [n.n] : [];
  });
while (!fs.existsSync(stopFile)) {
  // The number acknowledged before this open began: every message up to it must be seen.
  const before = fs.readFileSync(`${file}.acked`, "utf8");
  const manager = await SessionManager.open(file, path.dirname(file), undefined, undefined, undefined, { readOnly: true, terminalId: null, logger: quiet });
  const onPath = numbers(manager.getBranch());
  const all = numbers(manager.getEntries());
  const { messages } = manager.buildSessionContext();
  const inContext = messages.flatMap((message) => {
    const { role, n } = message as { role: string; n?: number };
    return role === "user" && typeof n === "number" ? [n] : [];
  });
  const summarized = messages[0]?.role === "compactionSummary" ? "summary" : "";
  print(`${before}|${onPath.join(",")}|${all.join(",")}|${manager.getLoadReport().lineIndex ?? "full"}|${inContext.join(",")}|${summarized}`);
  await manager.close();
}
print("done");
