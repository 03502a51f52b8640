/**
 * The manager's latched persistence failure under a real fault: a file size limit makes a
 * write fail with EFBIG in a child process (no privileges needed).
 */
import { spawn } from "node:child_process";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { makeTempDir } from "../helpers/temp.js";
import type { BundledChild } from "../storage/child-bundle.js";
import { bundleManagerChild } from "./child.js";

let child: BundledChild;
let tmp: { path: string; remove(): void };
beforeAll(async () => {
  child = await bundleManagerChild("fault-manager");
  tmp = makeTempDir("gjc-manager-faults-");
});
afterAll(() => {
  child?.remove();
  tmp?.remove();
});

function runLimited(dir: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // dash counts `ulimit -f` in 512-byte blocks: 128 blocks = 64 KiB per file.
    const proc = spawn("sh", ["-c", 'trap "" XFSZ; ulimit -f 128; exec "$0" "$@"', process.execPath, child.file, dir], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    proc.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    proc.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    proc.on("error", reject);
    proc.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

describe("latched persistence failure", () => {
  it("surfaces EFBIG on the next call, rethrows it everywhere, logs once, loses no entry", async () => {
    const dir = path.join(tmp.path, "sessions");
    const result = await runLimited(dir);
    expect(result.status, result.stderr).toBe(0);
    const outcome = JSON.parse(result.stdout) as {
      returned: number;
      inMemory: number;
      first: string;
      causeCode: string;
      causeErrno: string;
      later: string[];
      sameError: boolean;
      logged: { message: string; path: string; code: string }[];
      file: string;
      parsed: number;
      unparsed: number;
    };
    // 64 KiB holds about 30 of these entries; the failure came well after the start.
    expect(outcome.returned).toBeGreaterThan(10);
    expect([outcome.first, outcome.causeCode, outcome.causeErrno]).toEqual(["persistence_failed", "write_failed", "EFBIG"]);
    expect(outcome.later).toEqual(Array(5).fill("persistence_failed"));
    expect(outcome.sameError).toBe(true);
    // Every entry an append returned is still in memory, including the one whose write failed.
    expect(outcome.inMemory).toBe(outcome.returned);
    expect(outcome.logged).toEqual([{ message: "Session persistence error.", path: outcome.file, code: "write_failed" }]);
    // On disk: every line before the failing one is whole; only the failing one may be torn.
    expect(outcome.parsed).toBeGreaterThanOrEqual(outcome.returned - 1);
    expect(outcome.unparsed).toBeLessThanOrEqual(1);
  });
});
