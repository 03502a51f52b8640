/**
 * Child that opens one session file for writing (taking its writer lock), prints `held`, and
 * keeps it until stdin closes: a second terminal writing the session.
 *
 * argv: sessionFile agentDir
 */
import fs from "node:fs";
import path from "node:path";

import { SessionManager } from "../../../src/index.js";

const [file, agentDir] = process.argv.slice(2) as [string, string];
const manager = await SessionManager.open(file, path.dirname(file), undefined, undefined, undefined, { agentDir, terminalId: null });
fs.writeSync(1, "held\n");
process.stdin.resume();
process.stdin.on("end", () => {
  void manager.close().then(() => process.exit(0));
});
