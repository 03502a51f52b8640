/**
 * Running helper processes from tests: C tools built on demand, node children that load
 * the addon directly, and privilege checks.
 */
import { spawnSync, type SpawnSyncOptions } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

/** The repository root. */
export const REPO_ROOT = path.resolve(here, "..", "..");

/** The CommonJS loader of the addon, for child processes that load it without TypeScript. */
export const BINDING_LOADER = path.join(REPO_ROOT, "src", "native", "binding.cjs");

/**
 * Source of a `verify` wrapper for child scripts: `verify(h)` returns the failure record or
 * the decoded evidence object, as the TypeScript layer would.
 */
export const EVIDENCE_DECODER = `const EV = ["absent", "unsupported", "not_applicable"];
const verify = (h) => { const r = b.verify(h); return typeof r === "number" ? { accessAcl: EV[Math.floor(r / 3)], defaultAcl: EV[r % 3] } : r; };`;

/** Paths of the C helpers under test/helpers/c, compiled by {@link buildTools}. */
export interface Tools {
  /** LD_PRELOAD library injecting faults into fgetxattr, renameat2, linkat, fsync and more (see fault_shim.c). */
  readonly faultShim: string;
  /** `swap_race <dir> <a> <b> <ms> [<max> [<a2> <b2> ...]]`: RENAME_EXCHANGE loop (see swap_race.c). */
  readonly swapRace: string;
  /** `outside_watch <root>`: inotify observer of a small tree until stdin closes (see outside_watch.c). */
  readonly outsideWatch: string;
  /** `set_xattr <path> <name> <hex>`: raw xattr writer. */
  readonly setXattr: string;
  /** `enosys_exec <syscall,...> <program> [args...]`: runs it where those calls are ENOSYS (see enosys_exec.c). */
  readonly enosysExec: string;
}

let tools: Tools | undefined;

/**
 * Compiles the C helpers with `cc` into a per-user cache directory keyed by their source,
 * so concurrent test files share one build and a changed source rebuilds.
 */
export function buildTools(): Tools {
  if (tools) return tools;
  const src = path.join(here, "c");
  const sources = ["fault_shim.c", "swap_race.c", "set_xattr.c", "outside_watch.c", "enosys_exec.c"];
  const hash = crypto.createHash("sha256");
  for (const s of sources) hash.update(fs.readFileSync(path.join(src, s)));
  const out = path.join(os.tmpdir(), `gjc-test-tools-${process.getuid?.() ?? 0}-${hash.digest("hex").slice(0, 12)}`);
  const built: Tools = {
    faultShim: path.join(out, "fault_shim.so"),
    swapRace: path.join(out, "swap_race"),
    setXattr: path.join(out, "set_xattr"),
    outsideWatch: path.join(out, "outside_watch"),
    enosysExec: path.join(out, "enosys_exec"),
  };
  if (!Object.values(built).every((p) => fs.existsSync(p))) {
    const staging = fs.mkdtempSync(`${out}.staging-`);
    compile(["-shared", "-fPIC", "-o", path.join(staging, "fault_shim.so"), path.join(src, "fault_shim.c"), "-ldl"]);
    compile(["-o", path.join(staging, "swap_race"), path.join(src, "swap_race.c")]);
    compile(["-o", path.join(staging, "set_xattr"), path.join(src, "set_xattr.c")]);
    compile(["-o", path.join(staging, "outside_watch"), path.join(src, "outside_watch.c")]);
    compile(["-o", path.join(staging, "enosys_exec"), path.join(src, "enosys_exec.c")]);
    try {
      fs.renameSync(staging, out);
    } catch {
      // Another test file finished the same build first; theirs is identical.
      fs.rmSync(staging, { recursive: true, force: true });
    }
  }
  tools = built;
  return built;
}

function compile(args: string[]): void {
  const result = spawnSync("cc", ["-O2", "-Wall", ...args], { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`cc ${args.join(" ")} failed: ${result.stderr}`);
}

/** The outcome of a finished child process. */
export interface ChildResult {
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to completion and returns its output. */
export function run(command: string, args: readonly string[], options: SpawnSyncOptions = {}): ChildResult {
  const result = spawnSync(command, args, { encoding: "utf8", timeout: 60_000, ...options });
  return {
    status: result.status,
    signal: result.signal,
    stdout: String(result.stdout ?? ""),
    stderr: String(result.stderr ?? "") + (result.error ? String(result.error) : ""),
  };
}

/**
 * Runs `body` in a fresh node process where `b` is the loaded addon (and `verify` the
 * decoding wrapper of {@link EVIDENCE_DECODER}), and returns what the
 * body's last expression evaluates to, sent back as JSON. `env` is merged over this
 * process's environment (use it for LD_PRELOAD faults).
 */
export function runWithAddon<T = unknown>(body: string, env: NodeJS.ProcessEnv = {}, args: readonly string[] = []): T {
  const script = `const b = require(${JSON.stringify(BINDING_LOADER)});
${EVIDENCE_DECODER}
const out = (() => { ${body} })();
process.stdout.write(JSON.stringify(out === undefined ? null : out));`;
  const result = run(process.execPath, ["-e", script, "--", ...args], { env: { ...process.env, ...env } });
  if (result.status !== 0) throw new Error(`child failed (${result.status}/${result.signal}): ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** True when this process runs as root. */
export function isRoot(): boolean {
  return process.getuid?.() === 0;
}

/** True when a command is on PATH. */
export function hasCommand(name: string): boolean {
  return run("sh", ["-c", `command -v ${name}`]).status === 0;
}

/** The part of vitest's test context that skipping needs. */
export interface SkipContext {
  skip(note?: string): never;
  readonly task: { readonly name: string };
}

/** Skips the running test, printing why (so a skip is never silent in CI logs). */
export function skipBecause(ctx: SkipContext, reason: string): never {
  console.warn(`[skipped] ${ctx.task.name}: ${reason}`);
  return ctx.skip(reason);
}
