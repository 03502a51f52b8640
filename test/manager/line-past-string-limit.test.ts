/**
 * A session file holding a line past 2^31 bytes (a sparse run of NUL bytes, on tmpfs where there is one):
 * every path that reads it ends with the typed `line_too_long` after holding at most one string's worth of
 * it, and `continueRecent` passes over it as it passes over a refused file, so the workspace still resumes.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { afterEach, beforeAll, describe, expect, it } from "vitest";

import { auditAgentDir, SessionManager, validateSession, type SkippedSession } from "../../src/index.js";
import { MAX_LINE_BYTES } from "../../src/session/index.js";
import { BUILD_HOOK_TIMEOUT_MS, builtCli, runCli } from "../cli/helpers.js";
import { makeTempDir } from "../helpers/temp.js";
import { assistant, user } from "./helpers.js";

const PAST_2_31 = 2 ** 31 + 4096;

/** tmpfs keeps a sparse file in no memory at all; elsewhere the system temp directory (sparse too on common filesystems). */
const BASE = fs.existsSync("/dev/shm") && fs.statSync("/dev/shm").isDirectory() ? "/dev/shm" : os.tmpdir();

const temps: { remove(): void }[] = [];
afterEach(() => temps.splice(0).forEach((t) => t.remove()));

function box(): { root: string; agentDir: string; cwd: string } {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(BASE, "gjc-long-line-")));
  fs.chmodSync(dir, 0o700);
  temps.push({ remove: () => fs.rmSync(dir, { recursive: true, force: true }) });
  const cwd = path.join(dir, "work");
  fs.mkdirSync(cwd);
  return { root: dir, agentDir: path.join(dir, "agent"), cwd };
}

/** A real session of the workspace, then one more whose third line is `bytes` NUL bytes long (sparse) followed by a good line. */
async function withLongLine(where: ReturnType<typeof box>, bytes: number): Promise<{ good: string; long: string }> {
  const options = { agentDir: where.agentDir, terminalId: null };
  const good = SessionManager.create(where.cwd, undefined, undefined, options);
  good.appendMessage(user("Summarise the design document in three bullet points."));
  good.appendMessage(assistant("1. Layers. 2. Descriptors. 3. Fail closed."));
  await good.close();
  const later = SessionManager.create(where.cwd, undefined, undefined, options);
  later.appendMessage(user("Now fetch the release notes page."));
  later.appendMessage(assistant("Fetched."));
  await later.close();
  const long = later.getSessionFile() as string;
  const size = fs.statSync(long).size;
  fs.truncateSync(long, size + bytes);
  fs.appendFileSync(
    long,
    `\n${JSON.stringify({ type: "custom", id: "after001", parentId: null, timestamp: "2026-03-01T10:00:00.000Z", customType: "note" })}\n`,
  );
  // Newest by time, so continueRecent tries it first.
  const later2 = new Date(Date.now() + 60_000);
  fs.utimesSync(long, later2, later2);
  return { good: good.getSessionFile() as string, long };
}

describe("a line past 2^31 bytes", () => {
  beforeAll(() => void builtCli(), BUILD_HOOK_TIMEOUT_MS);

  it("validateSession refuses bytes holding a line past the bound without decoding it", () => {
    const header = `${JSON.stringify({ type: "session", version: 3, id: "0190a0b0-3e82-7000-8000-000000000001", timestamp: "2026-03-01T10:00:00.000Z", cwd: "/work" })}\n`;
    const bytes = Buffer.alloc(header.length + MAX_LINE_BYTES + 1);
    bytes.write(header);
    const report = validateSession(bytes);
    expect(report.ok).toBe(false);
    expect(report.violations).toEqual([expect.objectContaining({ code: "line_too_long" })]);
  });

  it("audit (API and CLI), show and context end with line_too_long; continueRecent passes over the file and resumes the other", async () => {
    const where = box();
    const { good, long } = await withLongLine(where, PAST_2_31);
    expect(fs.statSync(long).size).toBeGreaterThan(PAST_2_31);

    const report = auditAgentDir(where.agentDir);
    const findings = report.objects.flatMap((o) => o.findings.map((f) => ({ path: o.path, code: f.code })));
    expect(findings).toEqual([{ path: path.relative(where.agentDir, long), code: "line_too_long" }]);

    const audit = runCli(["--agent-dir", where.agentDir, "audit", "--json"]);
    expect(audit.stderr).toBe("");
    expect(JSON.parse(audit.stdout).objects.flatMap((o: { findings: { code: string }[] }) => o.findings.map((f) => f.code))).toEqual(["line_too_long"]);
    for (const command of ["show", "context"]) {
      const result = runCli(["--agent-dir", where.agentDir, command, long]);
      expect(result.status, `${command}: ${result.stderr}`).toBe(1);
      expect(result.stderr).toContain("line_too_long");
    }

    let skipped: readonly SkippedSession[] = [];
    const resumed = await SessionManager.continueRecent(where.cwd, undefined, undefined, undefined, undefined, {
      agentDir: where.agentDir,
      terminalId: null,
      onSkipped: (s) => (skipped = s),
    });
    expect(skipped).toEqual([{ path: long, code: "line_too_long" }]);
    expect(resumed.getSessionFile()).toBe(good);
    expect(resumed.getEntries()).toHaveLength(2);
    await resumed.close();
    // Five readers of a 2 GiB file, two of them CLI processes: most of a minute on two idle cores, so the
    // default minute is no bound on a loaded machine; this one still ends a hang.
  }, 600_000);
});
