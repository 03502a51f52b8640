/**
 * Crash-test child: appends numbered records to a log (flush after each) and, every few
 * records, atomically rewrites a snapshot file to its next version. After every durable
 * step it prints an acknowledgement line, so the parent, which SIGKILLs it at a random
 * moment, knows exactly what was promised.
 *
 * argv: kind root logPath snapshotPath firstIndex firstVersion
 */
import fs from "node:fs";

import { logRecord, snapshotChunks } from "../crash-records.js";
import { openStorage } from "./open-storage.js";

const [kind, root, logPath, snapshotPath, firstIndex, firstVersion] = process.argv.slice(2) as [string, string, string, string, string, string];
// Acknowledgements go straight to the pipe: a stream write could still sit in this
// process's memory when the kill lands, and the parent would under-count what was promised.
const acknowledge = (line: string) => fs.writeSync(1, line + "\n");
const storage = openStorage(kind, root);
const writer = await storage.openWriter(logPath);
const snapshot = storage.openWriter(snapshotPath);
acknowledge("ready");
let version = Number(firstVersion);
for (let index = Number(firstIndex); ; index++) {
  await writer.writeLine(logRecord(index));
  await writer.flush();
  acknowledge(`a ${index}`);
  if (index % 3 === 0) {
    version++;
    await snapshot.rewrite(snapshotChunks(version));
    acknowledge(`r ${version}`);
  }
}
