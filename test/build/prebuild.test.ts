/**
 * `npm run prebuildify` writes prebuilds/linux-x64/, and the package loads from that
 * prebuild alone: an installed copy with no build/ directory and no compiler step finds it
 * through node-gyp-build, exactly as a user installing the published tarball would.
 */
import fs from "node:fs";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { REPO_ROOT, run, type ChildResult } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { copyBuildInputs, npmRun } from "./package-copy.js";

const PLATFORM_DIR = `${process.platform}-${process.arch}`;

/** Loads the package's own loader in `dir` and calls the addon, as a consumer would. */
function loadInstalled(dir: string): ChildResult {
  const script = `const b = require("./src/native/binding.cjs");
process.stdout.write(JSON.stringify({ good: b.isValidName("a.jsonl", "posix"), identity: b.directoryIdentity(process.cwd()) }));`;
  // PREBUILDS_ONLY makes node-gyp-build skip build/ and look only in prebuilds/.
  return run(process.execPath, ["-e", script], { cwd: dir, env: { ...process.env, PREBUILDS_ONLY: "1" } });
}

describe("prebuilds", () => {
  let source: ReturnType<typeof makeTempDir>;
  let installed: ReturnType<typeof makeTempDir>;
  let prebuild: ChildResult;

  beforeAll(() => {
    source = makeTempDir("gjc-prebuild-src-");
    installed = makeTempDir("gjc-prebuild-installed-");
    copyBuildInputs(source.path);
    prebuild = npmRun(source.path, "prebuildify");
  }, 1_200_000);

  afterAll(() => {
    source?.remove();
    installed?.remove();
  });

  it("npm run prebuildify writes one stripped, libc-tagged Node-API addon for this platform, and the pinned SQLite extension", () => {
    expect(prebuild.status, prebuild.stderr).toBe(0);
    const files = fs.readdirSync(path.join(source.path, "prebuilds", PLATFORM_DIR)).sort();
    expect(files).toEqual(process.platform === "linux" ? ["gjc-session-store.glibc.node", "gjc_pinned_vfs.so"] : ["gjc-session-store.glibc.node"]);
    // --strip: the symbol table is gone, so nm finds nothing to list.
    const nm = run("nm", [path.join(source.path, "prebuilds", PLATFORM_DIR, "gjc-session-store.glibc.node")]);
    expect(nm.stderr).toContain("no symbols");
  });

  it("the package loads from the prebuild alone, with no build/ directory", () => {
    // What an install from the tarball holds: the loader, package.json and prebuilds/,
    // with node-gyp-build as the one runtime dependency the loader needs.
    const dir = installed.path;
    fs.mkdirSync(path.join(dir, "src", "native"), { recursive: true });
    fs.copyFileSync(path.join(REPO_ROOT, "package.json"), path.join(dir, "package.json"));
    fs.copyFileSync(path.join(REPO_ROOT, "src", "native", "binding.cjs"), path.join(dir, "src", "native", "binding.cjs"));
    fs.mkdirSync(path.join(dir, "node_modules"));
    fs.cpSync(path.join(REPO_ROOT, "node_modules", "node-gyp-build"), path.join(dir, "node_modules", "node-gyp-build"), {
      recursive: true,
    });
    fs.cpSync(path.join(source.path, "prebuilds"), path.join(dir, "prebuilds"), { recursive: true });
    expect(fs.existsSync(path.join(dir, "build"))).toBe(false);

    const loaded = loadInstalled(dir);
    expect(loaded.status, loaded.stderr).toBe(0);
    expect(JSON.parse(loaded.stdout)).toMatchObject({
      good: true,
      identity: { platform: "linux", canonicalPath: dir },
    });

    // The control: without prebuilds/ the same copy has nothing to load, so the load above
    // can only have come from the prebuild.
    fs.rmSync(path.join(dir, "prebuilds"), { recursive: true });
    const missing = loadInstalled(dir);
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toContain("No native build was found");
  });
});
