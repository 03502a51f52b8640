/**
 * Child of the `/pi` process tests, as `pi -c` starts: `SessionManager.continueRecent(cwd)` with pi's agent directory
 * from `PI_CODING_AGENT_DIR`, one exchange appended when it started a new session, then one JSON line (its file, id,
 * entry count and what it passed over). It never closes (pi does not): it holds its file until it is killed.
 * argv: cwd
 */
import { SessionManager } from "../../../src/pi/index.js";

const [cwd] = process.argv.slice(2) as [string];
const skipped: string[] = [];
const manager = SessionManager.continueRecent(cwd, undefined, { terminalId: null, onSkipped: (s) => skipped.push(...s.map((x) => x.code)) });
const resumed = manager.getEntries().length;
if (resumed === 0) {
  manager.appendMessage({ role: "user", content: [{ type: "text", text: `a question from ${process.pid}` }], timestamp: Date.now() });
  manager.appendMessage({ role: "assistant", content: [{ type: "text", text: "an answer" }], provider: "faux", model: "faux-1", timestamp: Date.now() });
}
process.stdout.write(`${JSON.stringify({ file: manager.getSessionFile(), id: manager.getHeader().id, resumed, skipped })}\n`);
setInterval(() => {}, 1_000);
