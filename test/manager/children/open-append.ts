/**
 * Child that resumes one managed session and appends to it, between two marker stats a tracer
 * can find: open, context, one append, flush, close. A first session of the same scope is opened
 * and closed before the span, so module loading and the addon's first load stay outside it.
 *
 * argv: warmUpFile sessionFile agentDir
 */
import fs from "node:fs";

import { SessionManager } from "../../../src/index.js";

const [warmUp, file, agentDir] = process.argv.slice(2) as [string, string, string];
const options = { agentDir, terminalId: null, logger: { error() {} } };
const mark = (name: string): void => {
  try {
    fs.statSync(`/gjc-trace-${name}`);
  } catch {
    // The marker is the failed lookup itself.
  }
};

const first = await SessionManager.open(warmUp, undefined, undefined, undefined, undefined, options);
first.buildSessionContext();
first.appendMessage({ role: "user", content: [{ type: "text", text: "warm up" }], timestamp: 1 });
await first.flush();
await first.close();

mark("begin");
const manager = await SessionManager.open(file, undefined, undefined, undefined, undefined, options);
const context = manager.buildSessionContext();
manager.appendMessage({ role: "user", content: [{ type: "text", text: "one more turn" }], timestamp: 2 });
await manager.flush();
await manager.close();
mark("end");
fs.writeSync(1, `${context.messages.length}\n`);
