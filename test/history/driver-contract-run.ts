/**
 * The history contract (driver-contract-cases.ts) as a plain script, for runtimes vitest does
 * not serve (Bun runs this TypeScript as it is):
 *   bun test/history/driver-contract-run.ts
 * Prints one line per case and a closing `N passed, N failed`; exits 1 if any failed.
 */
import { HistoryStorage } from "../../src/history/index.js";
import { sqliteDriver } from "../../src/history/sqlite-driver.js";
import { makeTempDir } from "../helpers/temp.js";
import { CONTRACT_CASES } from "./driver-contract-cases.js";

const runtime = process.versions.bun === undefined ? `Node ${process.versions.node}` : `Bun ${process.versions.bun}`;
process.stdout.write(`history contract on ${sqliteDriver().name} (${runtime})\n`);
let passed = 0;
let failed = 0;
for (const contractCase of CONTRACT_CASES) {
  const tmp = makeTempDir("gjc-history-contract-");
  try {
    await contractCase.run(tmp.path);
    passed += 1;
    process.stdout.write(`  ok  ${contractCase.name}\n`);
  } catch (error) {
    failed += 1;
    process.stdout.write(`  FAIL ${contractCase.name}\n    ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  } finally {
    HistoryStorage.resetInstance();
    tmp.remove();
  }
}
process.stdout.write(`${passed} passed, ${failed} failed\n`);
process.exitCode = failed === 0 ? 0 : 1;
