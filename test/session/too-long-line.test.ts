/**
 * A session line longer than the longest string the runtime can hold: validation and the
 * audit report it with the typed code `line_too_long` (the audit goes on to the next file),
 * never the runtime's untyped RangeError. The long line is a sparse run of NUL bytes, so the
 * file costs no disk, only the memory of reading it once.
 */
import { constants } from "node:buffer";
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { auditAgentDir, SessionManager, validateSession } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { assistant } from "../manager/helpers.js";

let tmp: { path: string; remove(): void };

beforeEach(() => {
  tmp = makeTempDir("gjc-too-long-line-");
});
afterEach(() => tmp.remove());

const HEADER = `${JSON.stringify({ type: "session", version: 3, id: "0190a0b0-3e82-7000-8000-000000000001", timestamp: "2025-01-01T00:00:00.000Z", cwd: "/work" })}\n`;

/** A session file whose second line is longer than one string can hold. */
function writeTooLong(file: string): void {
  fs.writeFileSync(file, HEADER, { mode: 0o600 });
  fs.truncateSync(file, HEADER.length + constants.MAX_STRING_LENGTH + 16);
}

describe("a line too long for one string", () => {
  it("validateSession reports line_too_long", () => {
    const file = path.join(tmp.path, "long.jsonl");
    writeTooLong(file);
    const report = validateSession(fs.readFileSync(file));
    expect(report.ok).toBe(false);
    expect(report.violations).toEqual([expect.objectContaining({ code: "line_too_long" })]);
  });

  it("the audit reports it as line_too_long and goes on to the other sessions", async () => {
    const agentDir = path.join(tmp.path, "agent");
    const workspace = path.join(tmp.path, "work");
    fs.mkdirSync(workspace);
    const manager = SessionManager.create(workspace, undefined, undefined, { agentDir, terminalId: null });
    manager.appendMessage(assistant("fine"));
    await manager.close();
    const scopeDir = path.dirname(manager.getSessionFile()!);
    writeTooLong(path.join(scopeDir, "2025-01-01T00-00-00-000Z_0190a0b0-3e82-7000-8000-000000000001.jsonl"));
    const report = auditAgentDir(agentDir);
    expect(report.counts.sessions).toBe(2);
    const findings = report.objects.flatMap((object) => object.findings.map((finding) => ({ path: object.path, code: finding.code })));
    expect(findings).toEqual([{ path: expect.stringMatching(/_0190a0b0-3e82-7000-8000-000000000001\.jsonl$/), code: "line_too_long" }]);
  });
});
