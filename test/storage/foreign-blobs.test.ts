/**
 * A `blobs/` another user owns (left from a once-loose agent directory): the persistence error and the audit
 * both name it with the exact command that moves it aside, and running that command lets image sessions persist.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, describe, expect, it } from "vitest";

import { auditAgentDir, SessionManager, SessionManagerError } from "../../src/index.js";
import { isRoot, run, skipBecause } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { assistant, recordingLogger } from "../manager/helpers.js";

const NOBODY = 65534;

const temps: { remove(): void }[] = [];
afterEach(() => temps.splice(0).forEach((t) => t.remove()));

/** A screenshot-sized PNG-ish payload, large enough to go to the blob store. */
const IMAGE = Buffer.alloc(96 * 1024, 0x5a).toString("base64");

function withImage(text: string) {
  return {
    role: "user" as const,
    content: [
      { type: "text" as const, text },
      { type: "image" as const, data: IMAGE, mimeType: "image/png" },
    ],
    timestamp: 1,
  };
}

describe("a blobs/ owned by another user", () => {
  it("is named in the error and the audit with the command that moves it aside; after it, images persist", async (ctx) => {
    if (!isRoot()) skipBecause(ctx, "needs root to leave a directory owned by another uid");
    const temp = makeTempDir("gjc-foreign-blobs-");
    temps.push(temp);
    const agentDir = path.join(temp.path, "agent");
    const cwd = path.join(temp.path, "work");
    fs.mkdirSync(cwd);
    await SessionManager.create(cwd, undefined, undefined, { agentDir, terminalId: null }).close();
    const blobs = path.join(agentDir, "blobs");
    fs.mkdirSync(blobs, { mode: 0o755 });
    fs.chownSync(blobs, NOBODY, NOBODY);
    const command = `mv -- '${blobs}' '${blobs}.foreign-uid${NOBODY}'`;

    const logger = recordingLogger();
    const manager = SessionManager.create(cwd, undefined, undefined, { agentDir, terminalId: null, logger });
    manager.appendMessage(withImage("What is wrong with this layout?"));
    let failure: unknown;
    try {
      manager.appendMessage(assistant("The sidebar overlaps the header."));
      manager.appendMessage(withImage("And this one?"));
    } catch (error) {
      failure = error;
    }
    expect(failure).toBeInstanceOf(SessionManagerError);
    expect((failure as Error).message).toContain(command);
    expect(logger.calls).toEqual([expect.objectContaining({ code: "unsafe_entry", message: expect.any(String) })]);
    await manager.close().catch(() => undefined);

    const finding = auditAgentDir(agentDir)
      .objects.find((o) => o.path === "blobs")
      ?.findings.find((f) => f.code === "owner_mismatch");
    expect(finding?.message).toContain(command);

    // The command as printed, through a shell.
    const moved = run("sh", ["-c", command]);
    expect(moved.status, moved.stderr).toBe(0);
    expect(fs.statSync(`${blobs}.foreign-uid${NOBODY}`).uid).toBe(NOBODY);
    const after = SessionManager.create(cwd, undefined, undefined, { agentDir, terminalId: null });
    after.appendMessage(withImage("What is wrong with this layout?"));
    after.appendMessage(assistant("The sidebar overlaps the header."));
    await after.close();
    expect(fs.statSync(blobs).mode & 0o7777).toBe(0o700);
    expect(fs.readdirSync(blobs)).toHaveLength(1);
  });
});
