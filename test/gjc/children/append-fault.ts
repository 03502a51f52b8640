/**
 * Fault child for the `/gjc` face: run under a 64 KiB file size limit (SIGXFSZ ignored), so a
 * line's write fails with a real EFBIG. Appends custom messages until one throws, then one more
 * append of each kind, and prints what each threw as JSON.
 *
 * argv: sessionDir
 */
import { SessionManager, SessionAppendPersistenceError } from "../../../src/gjc/index.js";

const [sessionDir] = process.argv.slice(2) as [string];
const logger = { error: () => undefined };
const manager = SessionManager.create("/w", sessionDir, undefined, { terminalId: null, agentDir: "/nonexistent-agent-dir", logger });
manager.appendMessage({ role: "user", content: [{ type: "text", text: "collect the build logs" }], timestamp: 0 } as never);
manager.appendMessage({ role: "assistant", content: [{ type: "text", text: "collecting" }], provider: "p", model: "m", timestamp: 1 } as never);

function describe(error: unknown): Record<string, unknown> {
  if (error instanceof SessionAppendPersistenceError) {
    const cause = error.persistenceError as { code?: string; cause?: { errno?: string } };
    return { kind: "append", code: error.code, phase: error.phase, entryId: error.entryId ?? null, causeCode: cause.code, errno: cause.cause?.errno ?? null };
  }
  return { kind: "other", text: String(error) };
}

let returned = 0;
let failure: Record<string, unknown> | undefined;
for (let i = 0; i < 1000 && failure === undefined; i++) {
  try {
    manager.appendCustomMessageEntry("build-log", `log chunk ${i}\n${"x".repeat(2000)}`, false, { chunk: i });
    returned += 1;
  } catch (error) {
    failure = describe(error);
  }
}
const failedId = failure?.entryId;
const inMemory = typeof failedId === "string" && manager.getEntry(failedId) !== undefined;
const later: Record<string, unknown>[] = [];
for (const append of [
  () => manager.appendMessage({ role: "user", content: "next" } as never),
  () => manager.appendCustomEntry("state", { step: 1 }),
  () => manager.appendModelChange("p/m"),
]) {
  try {
    append();
    later.push({ kind: "returned" });
  } catch (error) {
    later.push(describe(error));
  }
}
process.stdout.write(JSON.stringify({ returned, failure, inMemory, later }));
await manager.close().catch(() => undefined);
