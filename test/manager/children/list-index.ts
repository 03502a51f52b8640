/**
 * Child that lists one session directory with the default options (persistent index on,
 * no in-process cache) and prints the listing and what became of the directory's index.
 * Run under another uid, it shows what that uid may read and write.
 *
 * argv: sessionDir
 */
import fs from "node:fs";
import path from "node:path";

import { listSessions } from "../../../src/index.js";
import { LISTING_INDEX_FILE_NAME } from "../../../src/manager/index.js";

const [sessionDir] = process.argv.slice(2) as [string];
const listing = await listSessions(sessionDir, { cache: false });
let index: { uid: number; mode: number; size: number } | null = null;
try {
  const stat = fs.lstatSync(path.join(sessionDir, LISTING_INDEX_FILE_NAME));
  index = { uid: stat.uid, mode: stat.mode & 0o7777, size: stat.size };
} catch {
  index = null;
}
fs.writeSync(1, JSON.stringify({ titles: listing.sessions.map((session) => session.title ?? null), skipped: listing.skipped, index }));
