/**
 * The history contract (driver-contract-cases.ts) on this process's SQLite driver. Under
 * Node 20 that is better-sqlite3; run this file under another Node binary, or with
 * GJC_SQLITE_DRIVER set, to check another driver:
 *   GJC_SQLITE_DRIVER=node:sqlite <node 22.13+> node_modules/vitest/vitest.mjs run test/history/driver-contract.test.ts
 */
import { afterEach, beforeEach, describe, it } from "vitest";

import { HistoryStorage } from "../../src/history/index.js";
import { sqliteDriver } from "../../src/history/sqlite-driver.js";
import { makeTempDir } from "../helpers/temp.js";
import { CONTRACT_CASES } from "./driver-contract-cases.js";

let tmp: ReturnType<typeof makeTempDir>;
beforeEach(() => {
  tmp = makeTempDir("gjc-history-contract-");
});
afterEach(() => {
  HistoryStorage.resetInstance();
  tmp.remove();
});

describe(`history contract on ${sqliteDriver().name} (${process.versions.bun === undefined ? `Node ${process.versions.node}` : `Bun ${process.versions.bun}`})`, () => {
  for (const contractCase of CONTRACT_CASES) it(contractCase.name, () => contractCase.run(tmp.path));
});
