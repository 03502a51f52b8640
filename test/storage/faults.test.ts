/**
 * Writer error latching with real faults, in child processes: a file size limit
 * (RLIMIT_FSIZE, EFBIG; needs no privileges) and a full 64 KiB tmpfs (ENOSPC; needs root
 * and a private mount namespace, skipped with a printed reason otherwise).
 */
import fs from "node:fs";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { makeTempDir } from "../helpers/temp.js";
import { hasCommand, isRoot, run, skipBecause } from "../helpers/processes.js";
import { bundleChild, runProcess, type BundledChild } from "./child-bundle.js";
import type { FaultOutcome } from "./fault-outcome.js";

function expectLatched(outcome: FaultOutcome | undefined, errno: string, file: string, reopenable: boolean): void {
  expect(outcome).toBeDefined();
  const result = outcome as FaultOutcome;
  expect(result.written).toBeGreaterThan(10);
  expect([result.code, result.errno]).toEqual(["write_failed", errno]);
  // Every later operation, close included, rejects with the first error itself.
  expect(result.later).toEqual(Array(6).fill("write_failed"));
  expect(result.sameError).toBe(true);
  expect(result.getErrorIsFirst).toBe(true);
  // Logged exactly once, with the file.
  expect(result.logged).toEqual([{ message: "Session persistence error.", path: file, code: "write_failed" }]);
  // Every line whose write succeeded is intact; at most the failing one is torn.
  expect(result.parsedLines).toBe(result.written);
  expect(result.unparsedLines).toBeLessThanOrEqual(1);
  // close() released the lock although the writer had failed.
  if (reopenable) expect(result.reopened).toBe(true);
}

describe("writer error latching under real faults", () => {
  let child: BundledChild;
  let temp: ReturnType<typeof makeTempDir>;
  beforeAll(async () => {
    child = await bundleChild("fault-writer");
    temp = makeTempDir("gjc-faults-");
  });
  afterAll(() => {
    child.remove();
    temp.remove();
  });

  it("latches EFBIG from a file size limit (file and managed)", async () => {
    const dir = path.join(temp.path, "fsize");
    // SIGXFSZ would kill the child; with it ignored the write fails with EFBIG instead.
    // dash counts `ulimit -f` in 512-byte blocks: 128 blocks = 64 KiB per file.
    const result = await runProcess("sh", ["-c", 'trap "" XFSZ; ulimit -f 128; exec "$0" "$@"', process.execPath, child.file, dir, "file,managed"]);
    expect(result.stderr).toBe("");
    const outcomes = JSON.parse(result.stdout) as Record<string, FaultOutcome>;
    expectLatched(outcomes.file, "EFBIG", path.join(dir, "file", "full.jsonl"), true);
    expectLatched(outcomes.managed, "EFBIG", path.join(dir, "managed", "full.jsonl"), true);
  });

  it.for(["file", "managed"])("latches ENOSPC from a full 64 KiB tmpfs (%s)", async (kind, ctx) => {
    if (!isRoot() || !hasCommand("unshare")) skipBecause(ctx, "needs root and unshare for a private tmpfs mount");
    const dir = path.join(temp.path, `tmpfs-${kind}`);
    const probe = run("unshare", ["-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"]);
    if (probe.status !== 0) skipBecause(ctx, `cannot mount a tmpfs in a private namespace: ${probe.stderr.trim()}`);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const result = await runProcess("unshare", [
      "-m",
      "--propagation",
      "private",
      "sh",
      "-c",
      'mount -t tmpfs -o size=64k,mode=0700 tmpfs "$1" && exec "$0" "$2" "$1" "$3"',
      process.execPath,
      dir,
      child.file,
      kind,
    ]);
    expect(result.stderr).toBe("");
    const outcomes = JSON.parse(result.stdout) as Record<string, FaultOutcome>;
    // A full filesystem may also refuse the lock record of a new writer, so reopening is
    // not asserted here; the file-size case above checks it.
    expectLatched(outcomes[kind], "ENOSPC", path.join(dir, kind, "full.jsonl"), false);
  });
});
