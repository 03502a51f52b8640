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

/** How long a build may take before its lock counts as abandoned (a builder was killed). */
const BUILD_LOCK_STALE_MS = 5 * 60_000;
const BUILD_WAIT_MS = 10 * 60_000;

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * The path of `cli/main.js` of a build of the current sources, compiling it if no test file
 * has yet. One test file builds (holding `<root>.lock`, made by an atomic mkdir) while the
 * others wait for the result: six compilers at once on a two-core machine would each take
 * minutes. The build is published by renaming its staging directory.
 */
export function builtCli(): string {
  if (built !== undefined) return built;
  const root = path.join(os.tmpdir(), `gjc-cli-build-${sourceDigest()}`);
  const main = path.join(root, "dist", "cli", "main.js");
  const lock = `${root}.lock`;
  const deadline = Date.now() + BUILD_WAIT_MS;
  while (!fs.existsSync(main)) {
    try {
      fs.mkdirSync(lock);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const held = fs.statSync(lock, { throwIfNoEntry: false });
      if (held !== undefined && Date.now() - held.mtimeMs > BUILD_LOCK_STALE_MS) fs.rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`gave up waiting for another test file to build the CLI (${lock})`);
      sleepSync(250);
      continue;
    }
    try {
      if (!fs.existsSync(main)) compileInto(root);
    } finally {
      fs.rmSync(lock, { recursive: true, force: true });
    }
  }
  const now = new Date();
  fs.utimesSync(root, now, now); // in use: keeps pruneOldBuilds of another run away from it
  built = main;
  return main;
}

function compileInto(root: string): void {
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
    fs.rmSync(staging, { recursive: true, force: true });
    throw new Error(`building the CLI failed: ${result.stdout}${result.stderr}`);
  }
  fs.chmodSync(staging, 0o755); // readable by the unprivileged uid of the permission tests
  fs.renameSync(staging, root);
  pruneOldBuilds(root);
}

/** Removes builds of earlier sources that no run has touched for an hour. */
function pruneOldBuilds(current: string): void {
  const dir = path.dirname(current);
  for (const name of fs.readdirSync(dir)) {
    const full = path.join(dir, name);
    if (!name.startsWith("gjc-cli-build-") || full === current || name.endsWith(".lock")) continue;
    const st = fs.lstatSync(full, { throwIfNoEntry: false });
    if (st !== undefined && Date.now() - st.mtimeMs > 3_600_000) fs.rmSync(full, { recursive: true, force: true });
  }
}

/** Timeout for a `beforeAll` that calls {@link builtCli}: it may wait for a whole build. */
export const BUILD_HOOK_TIMEOUT_MS = 11 * 60_000;

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
    // `show --json` of a session of 10^4 entries prints megabytes.
    maxBuffer: 256 * 1024 * 1024,
  });
}
