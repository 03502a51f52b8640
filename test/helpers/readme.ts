/**
 * The README's error-code tables, for the tests that check each layer's codes against the
 * documentation: the codes in the first column of one `### <title>` section's table.
 */
import fs from "node:fs";
import path from "node:path";

import { REPO_ROOT } from "./processes.js";

/** The backticked codes opening the table rows of the README section headed `title`; `undefined` when there is no such section. */
export function readmeTableCodes(title: string): string[] | undefined {
  const readme = fs.readFileSync(path.join(REPO_ROOT, "README.md"), "utf8");
  const start = readme.indexOf(`\n${title}\n`);
  if (start === -1) return undefined;
  const rest = readme.slice(start + title.length + 2);
  const end = rest.search(/\n#{2,3} /);
  const section = end === -1 ? rest : rest.slice(0, end);
  return [...section.matchAll(/^\| `([a-z0-9_]+)` \|/gm)].map((m) => m[1] as string);
}
