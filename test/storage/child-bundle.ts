/**
 * Child processes for the storage tests run the real library code. Node 20 cannot load
 * TypeScript, so each child entry is bundled once per test file with rolldown (already a
 * vitest dependency) into the repository's ignored `tmp/` directory, where the addon
 * import (`#binding`) still resolves through package.json.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { build } from "rolldown";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, "..", "..");

/** A bundled child entry; `remove()` deletes the bundle. */
export interface BundledChild {
  file: string;
  remove(): void;
}

/** Options of {@link bundleChild}. */
export interface BundleOptions {
  /** Where the bundle is written (default: the repository's ignored `tmp/storage-tests`). */
  outDir?: string;
  /** A module to load instead of the addon import (`#binding`), e.g. a pinned copy of the addon. */
  binding?: string;
}

/**
 * Bundles `<childrenDir>/<name>.ts` (default: `test/storage/children`) into a runnable ESM
 * file under the repository's ignored `tmp/`.
 */
export async function bundleChild(name: string, childrenDir = path.join(here, "children"), options: BundleOptions = {}): Promise<BundledChild> {
  const outDir = options.outDir ?? path.join(repoRoot, "tmp", "storage-tests");
  fs.mkdirSync(outDir, { recursive: true });
  const file = path.join(outDir, `${name}-${process.pid}-${Date.now().toString(36)}.mjs`);
  const remove = (): void => fs.rmSync(file, { force: true });
  try {
    await build({
      input: path.join(childrenDir, `${name}.ts`),
      output: { file, format: "esm" },
      platform: "node",
      external: ["#binding"],
      logLevel: "silent",
      write: true,
    });
    if (options.binding !== undefined) {
      const bundled = fs.readFileSync(file, "utf8");
      if (!bundled.includes(`"#binding"`)) throw new Error("the bundle does not import #binding");
      fs.writeFileSync(file, bundled.replaceAll(`"#binding"`, JSON.stringify(options.binding)));
    }
  } catch (error) {
    remove();
    throw error;
  }
  return { file, remove };
}

/** Starts `node <bundle> ...args` with piped stdio. */
export function startChild(child: BundledChild, args: readonly string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  return spawn(process.execPath, [child.file, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
}

/**
 * Runs a bundled child that prints `ready` once it has started its work, SIGKILLs it after a
 * random delay of up to `maxDelayMs`, and hands every other stdout line to `onLine`. Resolves
 * once the child is dead; rejects if it ended any other way (its stderr in the message).
 */
export function runUntilRandomKill(child: BundledChild, args: readonly string[], maxDelayMs: number, onLine: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const proc = startChild(child, args);
    let buffered = "";
    let stderr = "";
    proc.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    proc.stdout?.on("data", (chunk: Buffer) => {
      buffered += chunk.toString();
      let newline: number;
      while ((newline = buffered.indexOf("\n")) !== -1) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        if (line === "ready") setTimeout(() => proc.kill("SIGKILL"), Math.random() * maxDelayMs);
        else onLine(line);
      }
    });
    proc.on("error", reject);
    proc.on("close", (status, signal) => {
      if (signal !== "SIGKILL") reject(new Error(`child ended with ${status}/${signal}: ${stderr}`));
      else resolve();
    });
  });
}

/** How a process ended and what it printed. */
export interface ProcessResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command args` to completion without blocking the event loop. */
export function runProcess(command: string, args: readonly string[]): Promise<ProcessResult> {
  return collect(spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] }));
}

/** Runs a bundled child to completion and returns its exit status and output. */
export function runChild(child: BundledChild, args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<ProcessResult> {
  return collect(startChild(child, args, env));
}

function collect(proc: ChildProcess): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    let stdout = "";
    let stderr = "";
    proc.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    proc.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    proc.on("error", reject);
    proc.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}
