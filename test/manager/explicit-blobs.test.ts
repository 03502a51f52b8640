// A session in an explicit directory (`--session-dir`, `open(file, dir)`) stores its large images as
// blobs like a managed one, in `<agentDir>/blobs` of the default agent directory when no `agentDir`
// is given (GJC resolves blobs there for every destination).
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";

import { BlobStore, SessionManager } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { assistant } from "./helpers.js";

let temp: ReturnType<typeof makeTempDir>;
let agentDir: string;
let sessionDir: string;
const savedEnv = { ...process.env };
beforeEach(() => {
  temp = makeTempDir("gjc-explicit-blobs-");
  agentDir = path.join(temp.path, "home-agent");
  sessionDir = path.join(temp.path, "elsewhere", "sessions");
  fs.mkdirSync(sessionDir, { recursive: true, mode: 0o700 });
  delete process.env.PI_CODING_AGENT_DIR;
  delete process.env.GJC_CONFIG_DIR;
  process.env.GJC_CODING_AGENT_DIR = agentDir;
});
afterEach(() => {
  process.env = { ...savedEnv };
  temp.remove();
});

const image = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 37) % 256)).toString("base64");
const withImage = {
  role: "user" as const,
  content: [
    { type: "text", text: "what is in this screenshot?" },
    { type: "image", data: image, mimeType: "image/png" },
  ],
  timestamp: 1,
};

it.each(["create", "open"] as const)(
  "%s with an explicit directory and no agentDir: the image goes to the default agent dir's blobs and resolves on reopen",
  async (how) => {
    const file = path.join(sessionDir, "2026-05-01T10-00-00-000Z_019de3a0-5c00-7a2b-8c3d-4e5f60718299.jsonl");
    const session =
      how === "create"
        ? SessionManager.create(temp.path, sessionDir, undefined, { terminalId: null })
        : await SessionManager.open(file, sessionDir, undefined, undefined, undefined, { terminalId: null });
    session.appendMessage(withImage);
    session.appendMessage(assistant("a terminal with a stack trace"));
    const written = session.getSessionFile()!;
    await session.close();

    const text = fs.readFileSync(written, "utf8");
    expect(text).not.toContain(image);
    const ref = /blob:sha256:([0-9a-f]{64})/.exec(text)?.[1];
    expect(ref).toBeDefined();
    expect((await new BlobStore(path.join(agentDir, "blobs")).getChecked(ref!))?.toString("base64")).toBe(image);
    expect(fs.statSync(path.join(agentDir, "blobs")).mode & 0o777).toBe(0o700);

    const reopened = await SessionManager.open(written, sessionDir, undefined, undefined, undefined, { terminalId: null, readOnly: true });
    expect(reopened.getLoadReport().unresolvedBlobs).toEqual([]);
    expect(JSON.stringify(reopened.getEntries())).toContain(image);
    await reopened.close();
  },
);
