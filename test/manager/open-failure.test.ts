// An open that fails after the writer lock was taken (here: the blob store behind a link
// while resolving the session's image references) must release the lock: the session is
// usable again as soon as the cause is gone, not `session_busy` for the rest of the process.
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { assistant } from "./helpers.js";

const IMAGE = Buffer.alloc(4096, 9).toString("base64");

let tmp: ReturnType<typeof makeTempDir>;
let agentDir: string;
let cwd: string;

beforeEach(() => {
  tmp = makeTempDir();
  agentDir = path.join(tmp.path, "agent");
  fs.mkdirSync(agentDir, { mode: 0o700 });
  cwd = path.join(tmp.path, "work");
  fs.mkdirSync(cwd);
});
afterEach(() => tmp.remove());

async function sessionWithImage(): Promise<string> {
  const manager = SessionManager.create(cwd, undefined, undefined, { agentDir, terminalId: null });
  manager.appendMessage({ role: "user", content: [{ type: "image", data: IMAGE, mimeType: "image/png" }], timestamp: 1 });
  manager.appendMessage(assistant("a picture"));
  await manager.close();
  return manager.getSessionFile() as string;
}

describe("an open that fails after taking the writer lock", () => {
  it("releases the lock, so the next open succeeds once the cause is gone", async () => {
    const file = await sessionWithImage();
    const blobs = path.join(agentDir, "blobs");
    const outside = path.join(tmp.path, "outside");
    fs.mkdirSync(outside, { mode: 0o700 });
    fs.renameSync(blobs, `${blobs}.real`);
    fs.symlinkSync(outside, blobs);
    await expect(SessionManager.open(file, undefined, undefined, undefined, undefined, { agentDir, terminalId: null })).rejects.toMatchObject({
      code: "symlink_refused",
    });
    expect(fs.readdirSync(outside)).toEqual([]);
    fs.unlinkSync(blobs);
    fs.renameSync(`${blobs}.real`, blobs);
    const reopened = await SessionManager.open(file, undefined, undefined, undefined, undefined, { agentDir, terminalId: null });
    try {
      const first = reopened.getEntries()[0] as unknown as { message: { content: { data: string }[] } };
      expect(first.message.content[0]?.data).toBe(IMAGE);
    } finally {
      await reopened.close();
    }
  });
});
