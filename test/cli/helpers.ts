/**
 * The built CLI for end-to-end tests, and the agent directories they audit.
 *
 * The CLI is compiled (tsc, tsconfig.build.json) into a per-source-version directory under
 * the system temp dir instead of the shared `dist/`: other test files and people rebuild
 * `dist/` at any moment, and a half-written `dist/` would fail these tests at random. The
 * directory holds a copy of package.json (so `#binding` resolves) and links to the
 * repository's `src/` and `node_modules/`; the addon is the repository's own build.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { REPO_ROOT, run, type ChildResult } from "../helpers/processes.js";

function sourceDigest(): string {
  const hash = crypto.createHash("sha256");
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (/\.(ts|cts|cjs)$/.test(entry.name)) hash.update(full).update(fs.readFileSync(full));
    }
  };
  walk(path.join(REPO_ROOT, "src"));
  hash.update(fs.readFileSync(path.join(REPO_ROOT, "package.json")));
  return hash.digest("hex").slice(0, 16);
}

let built: string | undefined;

/**
 * The path of `cli/main.js` of a build of the current sources, compiling it if no test file
 * has yet. Concurrent builders each compile into a staging directory and publish it by
 * rename; the loser discards its copy.
 */
export function builtCli(): string {
  if (built !== undefined) return built;
  const root = path.join(os.tmpdir(), `gjc-cli-build-${sourceDigest()}`);
  const main = path.join(root, "dist", "cli", "main.js");
  if (!fs.existsSync(main)) {
    const staging = fs.mkdtempSync(`${root}.staging-`);
    fs.copyFileSync(path.join(REPO_ROOT, "package.json"), path.join(staging, "package.json"));
    fs.symlinkSync(path.join(REPO_ROOT, "src"), path.join(staging, "src"), "dir");
    fs.symlinkSync(path.join(REPO_ROOT, "node_modules"), path.join(staging, "node_modules"), "dir");
    const tsc = path.join(REPO_ROOT, "node_modules", "typescript", "bin", "tsc");
    // Type errors elsewhere in a tree other people are editing must not hide the CLI: tsc
    // still emits, and the check below is whether main.js exists.
    const result = run(process.execPath, [tsc, "-p", path.join(REPO_ROOT, "tsconfig.build.json"), "--outDir", path.join(staging, "dist")], {
      cwd: REPO_ROOT,
      timeout: 300_000,
    });
    if (!fs.existsSync(path.join(staging, "dist", "cli", "main.js"))) {
      throw new Error(`building the CLI failed: ${result.stdout}${result.stderr}`);
    }
    fs.chmodSync(staging, 0o755); // readable by the unprivileged uid of the permission tests
    try {
      fs.renameSync(staging, root);
    } catch (error) {
      if (!fs.existsSync(main)) throw error;
      fs.rmSync(staging, { recursive: true, force: true }); // another test file published first
    }
  }
  built = main;
  return main;
}

/** Options of {@link runCli}. */
export interface RunCliOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** Run through this wrapper command (e.g. `["setpriv", ...]`); the node command follows. */
  readonly wrapper?: readonly string[];
  readonly timeout?: number;
}

/** Runs the built CLI with `args`; `NO_COLOR` is set unless the caller's env says otherwise. */
export function runCli(args: readonly string[], options: RunCliOptions = {}): ChildResult {
  const node = [process.execPath, builtCli(), ...args];
  const [command, ...rest] = options.wrapper === undefined ? node : [...options.wrapper, ...node];
  return run(command as string, rest, {
    cwd: options.cwd ?? os.tmpdir(),
    env: { ...process.env, NO_COLOR: "1", ...options.env },
    timeout: options.timeout ?? 120_000,
  });
}
