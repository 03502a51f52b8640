// The README's "Audit finding codes" table lists exactly the exported finding codes.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

import { AUDIT_FINDING_CODES, AUDIT_FIXABLE_CODES } from "../../src/index.js";
import { REPO_ROOT } from "../helpers/processes.js";

function section(title: string): string {
  const readme = fs.readFileSync(path.join(REPO_ROOT, "README.md"), "utf8");
  const start = readme.indexOf(title);
  expect(start).toBeGreaterThan(0);
  const rest = readme.slice(start + title.length);
  const end = rest.search(/\n#{2,3} /);
  return end === -1 ? rest : rest.slice(0, end);
}

describe("README documents every audit finding code", () => {
  it("has one row per code, and marks exactly the fixable ones", () => {
    const rows = [...section("### Audit finding codes").matchAll(/^\| `([a-z0-9_]+)` \| (error|warning) \| (.*) \|$/gm)];
    expect(rows.map((m) => m[1]).sort()).toEqual([...AUDIT_FINDING_CODES].sort());
    const fixable = rows.filter((m) => (m[3] as string).includes("fixable")).map((m) => m[1]);
    expect(fixable.sort()).toEqual([...AUDIT_FIXABLE_CODES].sort());
  });

  it("starts with the two commands", () => {
    const lines = fs.readFileSync(path.join(REPO_ROOT, "README.md"), "utf8").split("\n");
    expect(lines.slice(3, 5).map((l) => l.split("#")[0]?.trim())).toEqual(["npm install && npm run demo", "npm install && npm test"]);
  });
});
