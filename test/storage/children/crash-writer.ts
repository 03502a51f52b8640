/**
 * Crash-test child: appends numbered records to a log (flush after each) and, every few
 * records, atomically rewrites a snapshot file to its next version. After every durable
 * step it prints an acknowledgement line, so the parent, which SIGKILLs it at a random
 * moment, knows exactly what was promised.
 *
 * argv: kind root logPath snapshotPath firstIndex firstVersion
 */
import { logRecord, snapshotChunks } from "../crash-records.js";
import { openStorage } from "./open-storage.js";

const [kind, root, logPath, snapshotPath, firstIndex, firstVersion] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
];
const storage = openStorage(kind, root);
const writer = await storage.openWriter(logPath);
process.stdout.write("ready\n");
let version = Number(firstVersion);
for (let index = Number(firstIndex); ; index++) {
  await writer.writeLine(logRecord(index));
  await writer.flush();
  process.stdout.write(`a ${index}\n`);
  if (index % 3 === 0) {
    version++;
    await storage.replaceAtomic(snapshotPath, snapshotChunks(version));
    process.stdout.write(`r ${version}\n`);
  }
}
