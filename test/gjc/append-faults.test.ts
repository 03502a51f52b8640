/**
 * GJC's append errors under a real fault: a file size limit makes a line's write fail with
 * EFBIG in a child process (no privileges needed). The failing append throws
 * `SessionAppendPersistenceError` (`current_append`, the new entry's id, which stays in memory);
 * every later append is refused with `prior_failure`.
 */
import { spawn } from "node:child_process";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { makeTempDir } from "../helpers/temp.js";
import type { BundledChild } from "../storage/child-bundle.js";
import { bundleManagerChild } from "../manager/child.js";

let child: BundledChild;
let tmp: { path: string; remove(): void };
beforeAll(async () => {
  child = await bundleManagerChild("append-fault", path.join(import.meta.dirname, "children"));
  tmp = makeTempDir("gjc-append-faults-");
});
afterAll(() => {
  child?.remove();
  tmp?.remove();
});

function runLimited(dir: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // dash counts `ulimit -f` in 512-byte blocks: 128 blocks = 64 KiB per file.
    const proc = spawn("sh", ["-c", 'trap "" XFSZ; ulimit -f 128; exec "$0" "$@"', process.execPath, child.file, dir], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    proc.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    proc.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    proc.on("error", reject);
    proc.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

describe("append persistence errors on the /gjc face", () => {
  it("the failing append reports current_append with its entry; later ones prior_failure", async () => {
    const result = await runLimited(path.join(tmp.path, "sessions"));
    expect(result.status, result.stderr).toBe(0);
    const outcome = JSON.parse(result.stdout) as {
      returned: number;
      failure: { kind: string; code: string; phase: string; entryId: string | null; causeCode: string; errno: string | null };
      inMemory: boolean;
      later: { kind: string; phase?: string; entryId?: string | null }[];
    };
    // 64 KiB holds about 30 of these entries: the failure came well after the start.
    expect(outcome.returned).toBeGreaterThan(10);
    expect(outcome.failure).toMatchObject({
      kind: "append",
      code: "append_persistence_failed",
      phase: "current_append",
      causeCode: "persistence_failed",
      errno: "EFBIG",
    });
    expect(typeof outcome.failure.entryId).toBe("string");
    expect(outcome.inMemory).toBe(true);
    expect(outcome.later).toEqual(
      Array(3).fill({
        kind: "append",
        code: "append_persistence_failed",
        phase: "prior_failure",
        entryId: null,
        causeCode: "persistence_failed",
        errno: "EFBIG",
      }),
    );
  });
});
