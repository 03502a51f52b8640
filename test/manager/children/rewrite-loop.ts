/**
 * Child that holds one session file's writer through managed storage and rewrites it with a
 * large buffer over and over, so a SIGKILL lands in the middle of an atomic write and leaves
 * its temporary behind. Prints `writing` before the first rewrite.
 *
 * argv: root fileName megabytes
 */
import fs from "node:fs";
import path from "node:path";

import { ManagedSessionStorage } from "../../../src/index.js";

const [root, name, megabytes] = process.argv.slice(2) as [string, string, string];
const storage = ManagedSessionStorage.open(root);
const writer = storage.openWriter(path.join(root, name));
const bytes = Buffer.alloc(Number(megabytes) * 1024 * 1024, 0x78);
bytes[bytes.length - 1] = 0x0a;
fs.writeSync(1, "writing\n");
for (;;) await writer.rewrite([bytes]);
