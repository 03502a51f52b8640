// CI runs as root, and root passes permission checks that a normal user would fail. So the
// permission-sensitive test files run a second time here as uid/gid 65534 (setpriv), with
// HOME and TMPDIR in a directory that uid owns, and this test asserts that run passed.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";

import { hasCommand, isRoot, REPO_ROOT, run, skipBecause } from "../helpers/processes.js";

const UNPRIVILEGED = 65534;
const FILES = [
  "test/fs/refusals.test.ts",
  "test/fs/ancestors.test.ts",
  "test/scope/agent-root.test.ts",
  "test/fs/acl.test.ts",
  "test/fs/secure-dir.test.ts",
  "test/fs/concurrency.test.ts",
  "test/fs/unmanaged-walk.test.ts",
  "test/fs/write-verified.test.ts",
  "test/fs/source-open.test.ts",
  "test/fs/remove-tree.test.ts",
  "test/migration/plant.test.ts",
  "test/native/ramfs.test.ts",
  "test/native/read-batch.test.ts",
  "test/fs/import-batch.test.ts",
  "test/fs/import-batch-processes.test.ts",
  "test/audit/batch-differential.test.ts",
  "test/history/owner-only.test.ts",
  "test/history/pinned.test.ts",
  "test/storage/blob-store.test.ts",
];

interface VitestJson {
  numPassedTests: number;
  numFailedTests: number;
  testResults: Array<{ assertionResults: Array<{ title: string; status: string }> }>;
}

describe("permission tests as an unprivileged uid", () => {
  it("re-runs the permission test files as uid 65534 and they pass", (ctx) => {
    if (process.env.GJC_UNPRIVILEGED_RUN === "1") skipBecause(ctx, "this is the unprivileged run itself");
    if (!isRoot()) skipBecause(ctx, "not root: the permission tests already ran as this unprivileged uid");
    if (!hasCommand("setpriv")) skipBecause(ctx, "setpriv (util-linux) is not installed");
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "gjc-unprivileged-"));
    try {
      fs.chownSync(home, UNPRIVILEGED, UNPRIVILEGED);
      const results = path.join(home, "results.json");
      const vitest = path.join(REPO_ROOT, "node_modules", "vitest", "vitest.mjs");
      const args = [
        `--reuid=${UNPRIVILEGED}`,
        `--regid=${UNPRIVILEGED}`,
        "--clear-groups",
        "env",
        `HOME=${home}`,
        `TMPDIR=${home}`,
        "GJC_UNPRIVILEGED_RUN=1",
        process.execPath,
        vitest,
        "run",
        // The default config loader writes a bundled config into node_modules, which this
        // uid cannot write.
        "--configLoader",
        "runner",
        "--reporter=json",
        `--outputFile=${results}`,
        ...FILES,
      ];
      const child = run("setpriv", args, { cwd: REPO_ROOT, timeout: 180_000 });
      expect(fs.existsSync(results), child.stderr).toBe(true);
      const report = JSON.parse(fs.readFileSync(results, "utf8")) as VitestJson;
      const tests = report.testResults.flatMap((f) => f.assertionResults);
      const failed = tests.filter((t) => t.status === "failed").map((t) => t.title);
      expect(failed).toEqual([]);
      expect(report.numFailedTests).toBe(0);
      expect(report.numPassedTests).toBeGreaterThanOrEqual(50);
      // Proof that the run really lacked root: the root-only cases skipped themselves.
      const skipped = tests.filter((t) => t.status !== "passed").map((t) => t.title);
      expect(skipped).toContain("a foreign owner is owner_mismatch and is never repaired");
      expect(child.status, child.stderr).toBe(0);
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  }, 240_000);
});
