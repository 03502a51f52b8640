import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

import { SECURE_FS_ERROR_CODES } from "../../src/index.js";
import { REPO_ROOT } from "../helpers/processes.js";

describe("README documents every SecureFsError code", () => {
  it("has one table row per code, and no row for a code that does not exist", () => {
    const readme = fs.readFileSync(path.join(REPO_ROOT, "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("### SecureFsError codes"));
    const rows = [...section.matchAll(/^\| `([a-z0-9_]+)` \|/gm)].map((m) => m[1]);
    expect([...rows].sort()).toEqual([...SECURE_FS_ERROR_CODES].sort());
  });
});
