/**
 * Permission child: under the umask given in argv, creates directories, files, a writer's
 * file, an atomic rewrite, a no-replace publish and a blob through each disk storage, then reports the modes
 * the OS shows for them (as JSON on stdout).
 *
 * argv: umask(octal) tempDir
 */
import fs from "node:fs";
import path from "node:path";

import { BlobStore } from "../../../src/storage/index.js";
import { openStorage } from "./open-storage.js";

const [mask, tempDir] = process.argv.slice(2) as [string, string];
process.umask(Number.parseInt(mask, 8));
const modes: Record<string, string> = {};
for (const kind of ["file", "managed"]) {
  const root = path.join(tempDir, `${kind}-${mask}`, "store");
  const storage = openStorage(kind, root);
  const nested = path.join(root, "a", "b");
  storage.ensureDirSync(nested);
  storage.writeTextSync(path.join(root, "a", "text.txt"), "t");
  await storage.writeText(path.join(root, "a", "async.txt"), "t");
  const writer = await storage.openWriter(path.join(nested, "session.jsonl"));
  await writer.writeLine("{}");
  await writer.rewrite(["{}\n"]);
  await writer.close();
  await storage.writeText(path.join(nested, "rewritten.jsonl"), "{}\n", { noReplace: true });
  await storage.rename(path.join(nested, "rewritten.jsonl"), path.join(root, "a", "moved.jsonl"));
  const blobs = new BlobStore(path.join(root, "blobs"));
  const { hash: digest } = await blobs.put(Buffer.from("blob bytes"));
  const created = [
    root,
    path.join(root, "a"),
    nested,
    path.join(nested, ".gjc-locks"),
    path.join(root, "a", "text.txt"),
    path.join(root, "a", "async.txt"),
    path.join(nested, "session.jsonl"),
    path.join(root, "a", "moved.jsonl"),
    path.join(root, "blobs"),
    path.join(root, "blobs", digest),
  ];
  for (const target of created) {
    const stat = fs.lstatSync(target);
    modes[`${kind}:${path.relative(root, target) || "."}:${stat.isDirectory() ? "dir" : "file"}`] = (stat.mode & 0o7777).toString(8);
  }
}
process.stdout.write(JSON.stringify(modes));
