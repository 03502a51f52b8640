/**
 * Child that opens a session through the `/gjc` face, prepares a successor (`new` written on
 * commit, `branched` or `fork` with its artifacts), prints `prepared <successor file>`, and
 * waits for a SIGKILL that lands between prepare and commit.
 *
 * argv: sessionFile kind(new|branched|fork) agentDir
 */
import fs from "node:fs";
import path from "node:path";

import { SessionManager } from "../../../src/gjc/session-manager.js";

const [file, kind, agentDir] = process.argv.slice(2) as [string, "new" | "branched" | "fork", string];
const manager = await SessionManager.open(file, path.dirname(file), undefined, undefined, undefined, { agentDir, terminalId: null });
let prepared;
if (kind === "new") {
  prepared = await manager.prepareNewSession({ parentSession: file });
  manager.appendPreparedModelChange(prepared, "scripted/handoff-1");
  manager.appendPreparedCustomMessageEntry(prepared, "handoff", "carry on from here", true);
  await manager.ensurePreparedNewSessionOnDisk(prepared);
} else if (kind === "branched") {
  prepared = await manager.prepareBranchedSession(manager.getBranch()[2]!.id as string);
} else {
  prepared = await manager.prepareFork();
}
fs.writeSync(1, `prepared ${prepared?.sessionFile}\n`);
setInterval(() => undefined, 1000);
