/**
 * Fault child: run under a 64 KiB file size limit (SIGXFSZ ignored), so a write fails with a
 * real EFBIG. Appends until the manager reports the latched failure, then tries every other
 * persisting call and prints what happened as JSON.
 *
 * argv: sessionDir
 */
import fs from "node:fs";

import { GjcError, SessionManager } from "../../../src/index.js";

const [sessionDir] = process.argv.slice(2) as [string];
const logged: { message: string; path: string; code: string }[] = [];
const logger = { error: (message: string, details: { path: string; code: string }) => logged.push({ message, path: details.path, code: details.code }) };
const manager = SessionManager.create("/w", sessionDir, undefined, { terminalId: null, logger });
manager.appendMessage({ role: "assistant", content: [], provider: "p", model: "m", timestamp: 0 });
await manager.flush();

const errors: unknown[] = [];
const codeOf = async (call: () => unknown): Promise<string> => {
  try {
    await call();
    return "resolved";
  } catch (error) {
    errors.push(error);
    return error instanceof GjcError ? error.code : String(error);
  }
};
let returned = 1;
let first = "none";
for (let i = 0; i < 1000 && first === "none"; i++) {
  first = await codeOf(() => manager.appendCustomEntry("fill", { i, pad: "x".repeat(2000) }));
  if (first === "resolved") {
    returned += 1;
    first = "none";
  }
}
const later = [
  await codeOf(() => manager.appendMessage({ role: "user", content: "x" })),
  await codeOf(() => manager.setSessionName("late")),
  await codeOf(() => manager.flush()),
  await codeOf(() => manager.rewriteEntries()),
  await codeOf(() => manager.close()),
];
const cause = (errors[0] as { cause?: { code?: string; errno?: string } }).cause;
const file = manager.getSessionFile()!;
const lines = fs
  .readFileSync(file, "utf8")
  .split("\n")
  .filter((line) => line.length > 0);
let parsed = 0;
for (const line of lines) {
  try {
    JSON.parse(line);
    parsed += 1;
  } catch {
    // a torn last line is expected where the limit cut the write
  }
}
process.stdout.write(
  JSON.stringify({
    returned,
    inMemory: manager.getEntries().length,
    first,
    causeCode: cause?.code,
    causeErrno: cause?.errno,
    later,
    sameError: errors.slice(1, -1).every((error) => error === errors[0]),
    logged,
    file,
    parsed,
    unparsed: lines.length - parsed,
  }),
);
