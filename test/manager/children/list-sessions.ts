/**
 * Child that lists one session directory with the default storage and prints the listing as
 * JSON (paths, ids and skip codes). Run under another uid, it shows what that uid may read.
 *
 * argv: sessionDir
 */
import fs from "node:fs";

import { listSessions } from "../../../src/index.js";

const [sessionDir] = process.argv.slice(2) as [string];
const listing = await listSessions(sessionDir, { cache: false });
fs.writeSync(1, JSON.stringify({ ids: listing.sessions.map((session) => session.id), skipped: listing.skipped }));
