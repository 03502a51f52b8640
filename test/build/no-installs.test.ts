// No test and no script that `npm test` or `npm pack` runs installs system packages: `.ci/run`
// is the one place that does; the rest check for a tool and fail or skip, saying which is missing.
import fs from "node:fs";
import path from "node:path";
import { expect, it } from "vitest";

import { REPO_ROOT } from "../helpers/processes.js";

const INSTALLERS = /\b(apt-get|apt|aptitude|dnf|yum|zypper|apk|pacman|brew)\s+(-\S+\s+)*(install|add|-S)\b/;

function filesUnder(dir: string, keep: (name: string) => boolean): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(full, keep));
    else if (keep(entry.name)) out.push(full);
  }
  return out;
}

it("only .ci/run installs system packages", () => {
  const scripts = filesUnder(path.join(REPO_ROOT, "scripts"), () => true);
  const tests = filesUnder(path.join(REPO_ROOT, "test"), (name) => /\.(ts|mjs|cjs|js|sh)$/.test(name)).filter((file) => file !== path.join(REPO_ROOT, "test", "build", "no-installs.test.ts"));
  const offenders = [...scripts, ...tests].filter((file) => INSTALLERS.test(fs.readFileSync(file, "utf8"))).map((file) => path.relative(REPO_ROOT, file));
  const packageScripts = (JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;
  const npmScripts = Object.entries(packageScripts).filter(([, command]) => INSTALLERS.test(command)).map(([name]) => `package.json scripts.${name}`);
  expect([...offenders, ...npmScripts]).toEqual([]);
  expect(fs.readFileSync(path.join(REPO_ROOT, ".ci", "run"), "utf8")).toMatch(INSTALLERS);
});
