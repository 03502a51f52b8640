/**
 * Fault child: appends ~1 KB records through each disk storage until the filesystem
 * refuses (a full tmpfs, or RLIMIT_FSIZE), then probes how the writer behaves after its
 * first failure. Reports JSON on stdout.
 *
 * argv: dir kinds (comma-separated: file,managed)
 */
import fs from "node:fs";
import path from "node:path";

import { StorageError } from "../../../src/storage/index.js";
import type { FaultOutcome } from "../fault-outcome.js";
import { openStorage } from "./open-storage.js";

const [dir, kinds] = process.argv.slice(2) as [string, string];
const outcomes: Record<string, FaultOutcome> = {};
const record = "y".repeat(1000);

async function rejection(step: () => Promise<unknown>): Promise<unknown> {
  try {
    await step();
  } catch (error) {
    return error;
  }
  return undefined;
}

for (const kind of kinds.split(",")) {
  const logged: FaultOutcome["logged"] = [];
  const logger = { error: (message: string, details: { path: string; code: string }) => logged.push({ message, path: details.path, code: details.code }) };
  const root = path.join(dir, kind);
  const storage = openStorage(kind, root, logger);
  const file = path.join(root, "full.jsonl");
  const writer = await storage.openWriter(file);
  let written = 0;
  let first: unknown;
  for (; written < 100_000; written++) {
    first = await rejection(() => writer.writeLine(JSON.stringify({ n: written, record })));
    if (first !== undefined) break;
  }
  const later: unknown[] = [
    await rejection(() => writer.writeLine("{}")),
    await rejection(() => writer.write({})),
    await rejection(() => writer.flush()),
    await rejection(() => writer.fsync()),
    await rejection(() => writer.rewrite(["{}\n"])),
    await rejection(() => writer.close()),
  ];
  let parsedLines = 0;
  let unparsedLines = 0;
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    if (line === "") continue;
    try {
      JSON.parse(line);
      parsedLines++;
    } catch {
      unparsedLines++;
    }
  }
  let reopened = false;
  try {
    const again = await storage.openWriter(file);
    await again.close();
    reopened = true;
  } catch {
    reopened = false;
  }
  outcomes[kind] = {
    written,
    ...(first instanceof StorageError ? { code: first.code, ...(first.errno === undefined ? {} : { errno: first.errno }) } : {}),
    later: later.map((error) => (error instanceof StorageError ? error.code : String(error))),
    sameError: later.every((error) => error === first),
    getErrorIsFirst: writer.getError() === first,
    logged,
    parsedLines,
    unparsedLines,
    reopened,
  };
}
process.stdout.write(JSON.stringify(outcomes));
