/**
 * Helpers for the history tests: a bundled child program (real separate processes that use
 * the TypeScript sources), and small SQLite probes.
 */
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { build } from "vite";

import { sqliteDriver, type SqliteConnection } from "../../src/history/sqlite-driver.js";
import { REPO_ROOT, run, type ChildResult } from "../helpers/processes.js";

export { historyCode, historyError } from "./history-error.js";

const here = path.dirname(fileURLToPath(import.meta.url));

let childScript: Promise<string> | undefined;

/**
 * Bundles test/history/child.ts (and the sources it imports) into one ESM file under the
 * temp dir, keyed by the bundle's inputs and the checkout. Packages and the addon loader
 * stay external and are imported by absolute path, and a source's `import.meta.url` stays
 * the source file's (the SQLite driver resolves better-sqlite3 from there), so the bundle
 * runs from anywhere, also as another uid.
 */
export function childProgram(): Promise<string> {
  childScript ??= (async () => {
    const hash = crypto.createHash("sha256");
    // The bundle imports packages and the addon loader by absolute path, so the checkout it
    // was built for is part of its key: a bundle left in the shared temp dir by another
    // clone would import from a tree that may be gone.
    hash.update(REPO_ROOT).update("\0");
    const src = path.join(REPO_ROOT, "src");
    hash.update(fs.readFileSync(path.join(src, "errors.ts")));
    for (const dir of [here, path.join(src, "history"), path.join(src, "fs"), path.join(src, "native")]) {
      for (const name of fs.readdirSync(dir).sort()) {
        if (/\.(ts|cts)$/.test(name)) hash.update(name).update(fs.readFileSync(path.join(dir, name)));
      }
    }
    const outDir = path.join(os.tmpdir(), `gjc-history-child-${hash.digest("hex").slice(0, 16)}`);
    const outFile = path.join(outDir, "child.mjs");
    if (fs.existsSync(outFile)) return outFile;
    const staging = fs.mkdtempSync(`${outDir}.staging-`);
    await build({
      configFile: false,
      logLevel: "silent",
      root: REPO_ROOT,
      plugins: [
        {
          name: "externals-by-absolute-path",
          enforce: "pre",
          resolveId(id) {
            if (id === "#binding") return { id: path.join(REPO_ROOT, "src", "native", "binding.cjs"), external: true };
            return null;
          },
          transform(code, id) {
            if (!id.startsWith(path.join(REPO_ROOT, "src") + path.sep) || !code.includes("import.meta.url")) return null;
            return { code: code.replaceAll("import.meta.url", JSON.stringify(pathToFileURL(id).href)), map: null };
          },
        },
      ],
      build: {
        ssr: path.join(here, "child.ts"),
        outDir: staging,
        emptyOutDir: false,
        minify: false,
        rollupOptions: { output: { format: "esm", entryFileNames: "child.mjs" } },
      },
    });
    // Any directory on the way must be traversable by the unprivileged uid of the
    // read-only test.
    fs.chmodSync(staging, 0o755);
    fs.chmodSync(path.join(staging, "child.mjs"), 0o644);
    try {
      fs.renameSync(staging, outDir);
    } catch {
      fs.rmSync(staging, { recursive: true, force: true });
    }
    return outFile;
  })();
  return childScript;
}

/** Options of {@link runChild}. */
export interface ChildOptions {
  /** Wraps the runtime command (setpriv). */
  readonly prefix?: readonly string[];
  /** Applied first in the child. */
  readonly umask?: number;
  /** The runtime executable (another Node, Bun); default this process's. */
  readonly runtime?: string;
  /** Merged over this process's environment. */
  readonly env?: Readonly<Record<string, string>>;
}

/** Runs the child program with `args` to completion, asynchronously, so several can run at once. */
export async function runChild(args: readonly string[], options: ChildOptions = {}): Promise<ChildResult> {
  const script = await childProgram();
  const prefix = options.prefix ?? [];
  const argv = [...prefix.slice(1), options.runtime ?? process.execPath, script, ...args];
  const command = prefix[0] ?? argv.shift()!;
  const env = { ...process.env, ...options.env, GJC_CHILD_UMASK: options.umask === undefined ? "" : String(options.umask) };
  return new Promise((resolve) => {
    const child = spawn(command, argv, { stdio: ["ignore", "pipe", "pipe"], env });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    child.on("error", (error) => resolve({ status: null, signal: null, stdout, stderr: stderr + String(error) }));
    child.on("exit", (status, signal) => resolve({ status, signal, stdout, stderr }));
  });
}

/** Parses the JSON the child printed last. */
export function childJson<T>(result: ChildResult): T {
  if (result.status !== 0) throw new Error(`child failed (${result.status}/${result.signal}): ${result.stderr}`);
  const lines = result.stdout.trim().split("\n");
  return JSON.parse(lines[lines.length - 1] ?? "null") as T;
}

/** A child started in the background that reports on stdout; resolves once `marker` is printed. */
export async function startChild(args: readonly string[], marker: string): Promise<{ stop(): Promise<number | null> }> {
  const script = await childProgram();
  const child = spawn(process.execPath, [script, ...args], { stdio: ["pipe", "pipe", "inherit"] });
  await new Promise<void>((resolve, reject) => {
    let seen = "";
    child.stdout.on("data", (chunk: Buffer) => {
      seen += chunk.toString("utf8");
      if (seen.includes(marker)) resolve();
    });
    child.on("exit", (code) => reject(new Error(`child exited early with ${code}`)));
  });
  return {
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.on("exit", (code) => resolve(code));
        child.stdin.end();
      }),
  };
}

/** A child answering requests: one JSON line in, one JSON line out (the child's `serve` and `peer` commands). */
export interface ServingChild {
  /** Sends `request` and resolves with the child's answer to it. */
  request<T>(request: unknown): Promise<T>;
  /** Ends stdin, waits for the exit, and resolves with the exit code and the last line printed. */
  stop(): Promise<{ readonly code: number | null; readonly last: unknown }>;
}

/** Starts a serving child and resolves once it printed {"ready":true}; its stderr is kept for the failure message. */
export async function serveChild(args: readonly string[]): Promise<ServingChild> {
  const script = await childProgram();
  const child = spawn(process.execPath, [script, ...args], { stdio: ["pipe", "pipe", "pipe"] });
  const lines: unknown[] = [];
  const waiting: Array<(line: unknown) => void> = [];
  let buffered = "";
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  child.stdout.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    for (let end = buffered.indexOf("\n"); end !== -1; end = buffered.indexOf("\n")) {
      const line: unknown = JSON.parse(buffered.slice(0, end));
      buffered = buffered.slice(end + 1);
      const next = waiting.shift();
      if (next === undefined) lines.push(line);
      else next(line);
    }
  });
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  const nextLine = (): Promise<unknown> =>
    lines.length > 0
      ? Promise.resolve(lines.shift())
      : Promise.race([
          new Promise<unknown>((resolve) => waiting.push(resolve)),
          exited.then((code) => Promise.reject(new Error(`child ${args[0]} exited with ${code}: ${stderr}`))),
        ]);
  const ready = await nextLine();
  if ((ready as { ready?: boolean }).ready !== true) throw new Error(`child ${args[0]} did not start: ${JSON.stringify(ready)}`);
  return {
    async request<T>(request: unknown): Promise<T> {
      child.stdin.write(`${JSON.stringify(request)}\n`);
      return (await nextLine()) as T;
    },
    async stop() {
      child.stdin.end();
      const code = await exited;
      return { code, last: lines.at(-1) };
    },
  };
}

/**
 * Opens a database read-write on this process's SQLite driver (the store's), for probes the
 * API does not offer; `create` allows a new file (for planting one).
 */
export function rawDb(dbPath: string, options: { readonly create?: boolean } = {}): SqliteConnection {
  return sqliteDriver().open(dbPath, { mustExist: options.create !== true });
}

/**
 * FTS5's own consistency check of an external-content index against its table (rank 1 also
 * compares with the content table). Throws SQLITE_CORRUPT_VTAB if they disagree.
 */
export function ftsIntegrityCheck(db: SqliteConnection, table: "history_fts" | "history_infix"): void {
  db.prepare(`INSERT INTO ${table}(${table}, rank) VALUES('integrity-check', 1)`).run();
}

/** Permission bits of `file`. */
export function modeOf(file: string): number {
  return fs.statSync(file).mode & 0o7777;
}

// SQLite's "dead man switch" byte in the -shm file: every open connection holds a shared
// POSIX lock on it; the first connection to open takes it exclusively and resets the index.
const SHM_DMS_OFFSET = 128;
const F_GETLK_PROBE = `
import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
request = struct.pack("hhqqi", fcntl.F_WRLCK, 0, int(sys.argv[2]), 1, 0) + b"\\0" * 8
kind, _, _, _, pid = struct.unpack("hhqqi", fcntl.fcntl(fd, fcntl.F_GETLK, request)[:28])
print(pid if kind != fcntl.F_UNLCK else 0)
`;

/**
 * The pid holding a POSIX lock on the -shm dead-man-switch byte, asked from another process
 * (F_GETLK reports other processes' locks only), or 0 when nobody holds it.
 */
export function shmLockHolder(shmPath: string): number {
  const result = run("python3", ["-c", F_GETLK_PROBE, shmPath, String(SHM_DMS_OFFSET)]);
  if (result.status !== 0) throw new Error(`lock probe failed: ${result.stderr}`);
  return Number(result.stdout.trim());
}
