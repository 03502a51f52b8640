/**
 * Scratch copies of the package for build tests. Building inside the repository would wipe
 * `build/` under the feet of every other test file running at the same time, so each
 * build test works on its own copy of the build inputs, with node_modules linked in.
 */
import fs from "node:fs";
import path from "node:path";

import { REPO_ROOT, run, type ChildResult } from "../helpers/processes.js";

/** Everything `npm run build:native` and `build:cmake` read. */
const BUILD_INPUTS = [
  "package.json",
  "binding.gyp",
  "CMakeLists.txt",
  "native",
  "scripts/gyp-sources.cjs",
  "src/native/binding.cjs",
] as const;

/** The addon's file name in every build directory. */
export const ADDON_FILE = "gjc_session_store.node";

/** Copies the build inputs into `dir` and links the repository's node_modules there. */
export function copyBuildInputs(dir: string): void {
  for (const entry of BUILD_INPUTS) {
    fs.cpSync(path.join(REPO_ROOT, entry), path.join(dir, entry), { recursive: true });
  }
  fs.symlinkSync(path.join(REPO_ROOT, "node_modules"), path.join(dir, "node_modules"), "dir");
}

/** Runs `npm run <script>` in `dir` (through npm, so node-gyp finds the installed headers). */
export function npmRun(dir: string, script: string): ChildResult {
  return run("npm", ["run", "--silent", script], { cwd: dir, timeout: 600_000 });
}

/**
 * Loads the addon file at `addonPath` in a fresh node process (cwd `cwd`) and returns the
 * JSON value of `expression`, evaluated with the addon bound to `b`.
 */
export function callAddon<T>(addonPath: string, expression: string, cwd: string): T {
  const script = `const b = require(${JSON.stringify(addonPath)});
process.stdout.write(JSON.stringify(${expression}));`;
  const result = run(process.execPath, ["-e", script], { cwd });
  if (result.status !== 0) throw new Error(`loading ${addonPath} failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}
