import os from "node:os";
import path from "node:path";

import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Crash, race and subprocess tests spawn real processes; the machines have 2 cores.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Every session stores its blobs below the default agent directory when given none: a test
    // that leaves it out must not write into the home directory of whoever runs the suite.
    env: { GJC_CODING_AGENT_DIR: path.join(os.tmpdir(), `gjc-test-default-agent-${process.getuid?.() ?? "user"}`) },
  },
});
