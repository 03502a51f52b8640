/**
 * The packed tarball as a user gets it: `npm pack` (whose `prepack` builds prebuilds/) and
 * an install into a clean project with install scripts off and no compiler on PATH, then
 * the smoke script (create, append, flush, reopen, context, list, managed scope). Once with
 * this Node's npm and `--ignore-scripts`, once with npm 12, which runs no dependency install
 * script by default. One tarball serves every test: GJC_PACKAGE_TARBALL names one packed
 * beforehand (CI packs once), else it is packed here.
 */
import fs from "node:fs";
import path from "node:path";

import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { hasCommand, REPO_ROOT, run, skipBecause, type ChildResult } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";

/** npm 12, pinned: the release that stopped running dependency install scripts by default. */
const NPM_12 = "npm@12.2.2";
const SMOKE = path.join(REPO_ROOT, "test", "package", "smoke.mjs");
const NPM_BIN = path.join(path.dirname(process.execPath), "..", "lib", "node_modules", "npm", "bin");
const NPM_CLI = path.join(NPM_BIN, "npm-cli.js");
const TSC = path.join(REPO_ROOT, "node_modules", "typescript", "bin", "tsc");
/** The @types/node the repository compiles with, so the consumer needs nothing new from the registry. */
const TYPES_NODE = `@types/node@${(JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as { devDependencies: Record<string, string> }).devDependencies["@types/node"]}`;
const COMPILERS = ["g++", "c++", "gcc", "cc", "clang", "make", "python3", "python"];

/** What `prepack` (scripts/prebuild.sh) builds the prebuilds with: .ci/run installs them, a test never does. */
const PACK_TOOLS = ["x86_64-w64-mingw32-g++-posix", "cmake"];

let work: ReturnType<typeof makeTempDir>;
let tarball: string;
/** The pack tools missing here when no tarball was packed beforehand: the tests skip, saying which. */
let missingPackTools: string[] = [];
/** A PATH holding only node, npm through it, and sh (npx runs through it): no compiler, make or Python. */
let bareBin: string;

/** Packs the repository once (prepack builds every prebuild), unless CI packed already. */
function packedTarball(): string {
  const given = process.env.GJC_PACKAGE_TARBALL;
  if (given !== undefined && given !== "") return given;
  const out = path.join(work.path, "pack");
  fs.mkdirSync(out);
  const packed = run(process.execPath, [NPM_CLI, "pack", "--silent", "--pack-destination", out], { cwd: REPO_ROOT, timeout: 1_200_000 });
  expect(packed.status, packed.stderr).toBe(0);
  const [name] = fs.readdirSync(out).filter((f) => f.endsWith(".tgz"));
  if (name === undefined) throw new Error(`npm pack wrote no tarball: ${packed.stdout}`);
  return path.join(out, name);
}

/** A clean consumer project: a package.json and the smoke script, nothing installed. */
function consumerProject(name: string): string {
  const dir = path.join(work.path, name);
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name, private: true, type: "module" }));
  fs.copyFileSync(SMOKE, path.join(dir, "smoke.mjs"));
  return dir;
}

/**
 * A consumer's code over the three entry points, compiled with `strict` and without
 * `skipLibCheck`, so every published .d.ts (and everything it imports) is checked.
 */
const STRICT_CONSUMER = `import { GjcError, HistoryStorage, SessionManager, isUnknownEntry, type SessionContext, type SessionEntry } from "gjc-session-store";
import { SessionManager as PiSessionManager } from "gjc-session-store/pi";
import {
  SessionManager as GjcSessionManager, createReadonlySessionManager, getRecentSessions, getSessionContextForInternalRead,
  getSessionMessageEntryId, type ReadonlySessionManager, type RecentSessionInfo,
} from "gjc-session-store/gjc";

export async function main(dir: string): Promise<number> {
  const session = SessionManager.create(dir);
  session.appendMessage({ role: "user", content: [{ type: "text", text: "hi" }], timestamp: Date.now() });
  await session.flush();
  const context: SessionContext = session.buildSessionContext();
  const entries: SessionEntry[] = session.getEntries().filter((e): e is SessionEntry => !isUnknownEntry(e));
  await session.close();
  const pi = PiSessionManager.inMemory(dir);
  let code = "";
  try {
    HistoryStorage.open(dir + "/history.db").close();
  } catch (error) {
    if (error instanceof GjcError) code = error.code;
  }
  const gjc = GjcSessionManager.inMemory(dir);
  const first = gjc.appendMessage({ role: "user", content: "hi", timestamp: Date.now() });
  const linked = getSessionMessageEntryId(getSessionContextForInternalRead(gjc).messages[0]!) === first ? 1 : 0;
  const facade: ReadonlySessionManager = createReadonlySessionManager(gjc);
  const recent: RecentSessionInfo[] = await getRecentSessions(dir);
  await gjc.close();
  return context.messages.length + entries.length + pi.getEntries().length + code.length + linked + facade.getEntries().length + recent.length;
}
`;

function inBareEnv(command: string, args: readonly string[], cwd: string): ChildResult {
  return run(command, args, { cwd, timeout: 600_000, env: { ...process.env, PATH: bareBin } });
}

function expectSmokePasses(project: string): void {
  const smoke = inBareEnv(path.join(bareBin, "node"), ["smoke.mjs"], project);
  expect(smoke.status, `${smoke.stdout}\n${smoke.stderr}`).toBe(0);
  expect(smoke.stdout).toMatch(/smoke \(node [^)]*\): 6 passed, 0 failed/);
}

beforeAll(() => {
  work = makeTempDir("gjc-package-");
  bareBin = path.join(work.path, "bin");
  fs.mkdirSync(bareBin);
  fs.symlinkSync(process.execPath, path.join(bareBin, "node"));
  fs.symlinkSync("/bin/sh", path.join(bareBin, "sh"));
  fs.writeFileSync(path.join(bareBin, "npm"), `#!/bin/sh\nexec "${process.execPath}" "${NPM_CLI}" "$@"\n`, { mode: 0o755 });
  fs.writeFileSync(path.join(bareBin, "npx"), `#!/bin/sh\nexec "${process.execPath}" "${path.join(NPM_BIN, "npx-cli.js")}" "$@"\n`, { mode: 0o755 });
  if (!process.env.GJC_PACKAGE_TARBALL) missingPackTools = PACK_TOOLS.filter((tool) => !hasCommand(tool));
  if (missingPackTools.length === 0) tarball = packedTarball();
}, 1_200_000);

beforeEach((ctx) => {
  if (missingPackTools.length > 0)
    skipBecause(ctx, `npm pack builds the prebuilds with ${missingPackTools.join(", ")}, not installed here (.ci/run installs them)`);
});

afterAll(() => {
  work?.remove();
});

// Each test installs from the registry cache and runs child processes (npm, tsc) bounded by
// their own 600 s timeout; on a loaded 2-core machine one takes well over vitest's default.
describe("the packed tarball", { timeout: 600_000 }, () => {
  it("holds the prebuilt addon for linux-x64 and linux-arm64 (glibc and musl) and win32-x64, stripped, and no build/", () => {
    const listed = run("tar", ["tzf", tarball]).stdout.split("\n").filter(Boolean);
    const prebuilds = listed.filter((f) => f.startsWith("package/prebuilds/")).sort();
    const linux = ["linux-arm64", "linux-x64"].flatMap((dir) =>
      ["gjc-session-store.glibc.node", "gjc-session-store.musl.node", "gjc_pinned_vfs.glibc.so", "gjc_pinned_vfs.musl.so"].map(
        (f) => `package/prebuilds/${dir}/${f}`,
      ),
    );
    expect(prebuilds).toEqual([...linux, "package/prebuilds/win32-x64/gjc-session-store.node"]);
    expect(listed.filter((f) => f.startsWith("package/build/"))).toEqual([]);
    expect(listed).toContain("package/dist/index.js");
    expect(listed).toContain("package/src/native/binding.cjs");
    // The install script (package.json "install") ships with it.
    expect(listed).toContain("package/src/native/install.cjs");

    const unpacked = path.join(work.path, "unpacked");
    fs.mkdirSync(unpacked);
    expect(run("tar", ["xzf", tarball, "-C", unpacked]).status).toBe(0);
    const addon = path.join(unpacked, "package", "prebuilds");
    const file = (f: string): string => run("file", ["-b", path.join(addon, f)]).stdout;
    for (const f of linux) {
      const inside = path.join(unpacked, f);
      // Stripped: the symbol table is gone, so nm finds nothing to list.
      expect(run("nm", [inside]).stderr, f).toContain("no symbols");
      expect(file(path.relative(addon, inside)), f).toMatch(f.includes("arm64") ? /ELF 64-bit.*aarch64/ : /ELF 64-bit.*x86-64/);
    }
    expect(file("win32-x64/gjc-session-store.node")).toMatch(/PE32\+.*x86-64/);
  });

  it("installs with --ignore-scripts and no compiler on PATH, passes the smoke test from the prebuild, and its install script compiles nothing", () => {
    for (const tool of COMPILERS) {
      expect(inBareEnv(path.join(bareBin, "node"), ["-e", `require("child_process").execFileSync(${JSON.stringify(tool)})`], work.path).status).not.toBe(0);
    }
    const project = consumerProject("consumer-ignore-scripts");
    const install = inBareEnv(path.join(bareBin, "npm"), ["install", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline", tarball], project);
    expect(install.status, install.stderr).toBe(0);
    const installed = path.join(project, "node_modules", "gjc-session-store");
    expect(fs.existsSync(path.join(installed, "build"))).toBe(false);
    expectSmokePasses(project);
    // Our install script, when scripts do run: node-gyp-build finds the prebuild and compiles
    // nothing (with no compiler on PATH a compile could only fail, and would leave build/).
    const rebuilt = inBareEnv(path.join(bareBin, "npm"), ["rebuild", "gjc-session-store", "--foreground-scripts"], project);
    expect(rebuilt.status, rebuilt.stderr).toBe(0);
    expect(fs.existsSync(path.join(installed, "build"))).toBe(false);
  });

  it(`installs with ${NPM_12} (dependency install scripts off by default) and passes the smoke test`, () => {
    const project = consumerProject("consumer-npm12");
    const install = inBareEnv(path.join(bareBin, "npx"), ["--yes", NPM_12, "install", "--no-audit", "--no-fund", "--prefer-offline", tarball], project);
    expect(install.status, install.stderr).toBe(0);
    const version = inBareEnv(path.join(bareBin, "npx"), ["--yes", NPM_12, "--version"], project);
    expect(version.stdout.trim()).toBe(NPM_12.slice("npm@".length));
    expect(fs.existsSync(path.join(project, "node_modules", "gjc-session-store", "build"))).toBe(false);
    expectSmokePasses(project);
  });

  it("a consumer compiling with tsc --strict and no skipLibCheck type-checks against the three entry points", () => {
    const project = consumerProject("consumer-strict-types");
    const install = inBareEnv(
      path.join(bareBin, "npm"),
      ["install", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline", tarball, TYPES_NODE],
      project,
    );
    expect(install.status, install.stderr).toBe(0);
    // Only what a user installs: no @types package of our dependencies comes along.
    expect(fs.readdirSync(path.join(project, "node_modules", "@types"))).toEqual(["node"]);
    fs.writeFileSync(path.join(project, "consumer.ts"), STRICT_CONSUMER);
    const config = {
      compilerOptions: { strict: true, module: "NodeNext", moduleResolution: "NodeNext", target: "ES2022", noEmit: true, types: ["node"] },
      include: ["consumer.ts"],
    };
    fs.writeFileSync(path.join(project, "tsconfig.json"), JSON.stringify(config));
    const compiled = inBareEnv(path.join(bareBin, "node"), [TSC, "-p", "tsconfig.json"], project);
    expect(compiled.stdout + compiled.stderr).toBe("");
    expect(compiled.status).toBe(0);
  });
});
