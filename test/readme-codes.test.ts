// Every layer's error codes have exactly one row in their README table, and no row names a
// code that does not exist.
import { describe, expect, it } from "vitest";

import { HISTORY_ERROR_CODES, MIGRATION_ERROR_CODES, SECURE_FS_ERROR_CODES, STORAGE_ERROR_CODES } from "../src/index.js";
import { readmeTableCodes } from "./helpers/readme.js";

const TABLES: readonly (readonly [string, readonly string[]])[] = [
  ["### SecureFsError codes", SECURE_FS_ERROR_CODES],
  ["### StorageError codes", STORAGE_ERROR_CODES],
  ["### Scope and migration codes", MIGRATION_ERROR_CODES],
  ["### History error codes", HISTORY_ERROR_CODES],
];

describe("README documents every error code", () => {
  it.each(TABLES)("%s: one row per code, none for a code that does not exist", (title, codes) => {
    const rows = readmeTableCodes(title);
    expect(rows, `README has no "${title}" section`).toBeDefined();
    expect([...(rows ?? [])].sort()).toEqual([...codes].sort());
  });
});
