import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Crash, race and subprocess tests spawn real processes; the machines have 2 cores.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
  },
});
