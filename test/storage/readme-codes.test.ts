// The README's "StorageError codes" table lists exactly the storage layer's codes.
import fs from "node:fs";
import path from "node:path";

import { describe, expect, it } from "vitest";

import { STORAGE_ERROR_CODES } from "../../src/index.js";
import { REPO_ROOT } from "../helpers/processes.js";

describe("README documents every StorageError code", () => {
  it("has one table row per code and no row for a code that does not exist", () => {
    const readme = fs.readFileSync(path.join(REPO_ROOT, "README.md"), "utf8");
    const start = readme.indexOf("### StorageError codes");
    expect(start).toBeGreaterThan(0);
    const rest = readme.slice(start + 1);
    const end = rest.search(/\n#{2,3} /);
    const section = end === -1 ? rest : rest.slice(0, end);
    const rows = [...section.matchAll(/^\| `([a-z0-9_]+)` \|/gm)].map((m) => m[1]);
    expect([...rows].sort()).toEqual([...STORAGE_ERROR_CODES].sort());
  });
});
