/**
 * node-gyp (`npm run build:native`) and cmake-js (`npm run build:cmake`) build one addon
 * from one source list: binding.gyp. These tests build both in a scratch copy of the
 * package, load both results, and prove that each compiled exactly binding.gyp's list.
 */
import fs from "node:fs";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { REPO_ROOT, run, type ChildResult } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { ADDON_FILE, callAddon, copyBuildInputs, npmRun } from "./package-copy.js";

const GYP_SOURCES = path.join(REPO_ROOT, "scripts", "gyp-sources.cjs");

function gypList(os: "linux" | "mac" | "win", field = "sources", script = GYP_SOURCES): string[] {
  const result = run(process.execPath, [script, os, field]);
  if (result.status !== 0) throw new Error(`gyp-sources failed: ${result.stderr}`);
  return result.stdout.split("\n").filter(Boolean);
}

/** Every file below `dir` whose name ends in `suffix`, relative to `base`. */
function filesBelow(dir: string, suffix: string, base: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesBelow(full, suffix, base));
    else if (entry.name.endsWith(suffix)) out.push(path.relative(base, full));
  }
  return out;
}

const sorted = (values: readonly string[]): string[] => [...values].sort();

describe("two build systems, one addon", () => {
  let scratch: ReturnType<typeof makeTempDir>;
  let gyp: ChildResult;
  let cmake: ChildResult;

  beforeAll(() => {
    scratch = makeTempDir("gjc-build-systems-");
    copyBuildInputs(scratch.path);
    // One after the other: both are CPU-bound and the machines have two cores.
    gyp = npmRun(scratch.path, "build:native");
    cmake = npmRun(scratch.path, "build:cmake");
  }, 1_200_000);

  afterAll(() => scratch?.remove());

  it("node-gyp and cmake-js both build an addon that loads and answers the same", () => {
    expect(gyp.status, gyp.stderr).toBe(0);
    expect(cmake.status, cmake.stderr).toBe(0);
    const builds = [
      path.join(scratch.path, "build", "Release", ADDON_FILE),
      path.join(scratch.path, "build-cmake", "Release", ADDON_FILE),
    ];
    const answers = builds.map((addon) =>
      callAddon<{ good: boolean; dotdot: boolean; reserved: boolean; identity: unknown }>(
        addon,
        `{ good: b.isValidName("a.jsonl", "posix"), dotdot: b.isValidName("..", "posix"),
           reserved: b.isValidName("con.txt", "windows"), identity: b.directoryIdentity(process.cwd()) }`,
        scratch.path,
      ),
    );
    expect(answers[0]).toMatchObject({ good: true, dotdot: false, reserved: false });
    expect(answers[0]?.identity).toMatchObject({ platform: "linux", canonicalPath: scratch.path });
    expect(answers[1]).toEqual(answers[0]);
  });

  it("each build compiled exactly binding.gyp's sources for this platform", () => {
    const listed = sorted(gypList("linux"));
    // node-gyp: one object per source under obj.target/<target>/.
    const objRoot = path.join(scratch.path, "build", "Release", "obj.target", "gjc_session_store");
    const gypCompiled = filesBelow(objRoot, ".o", objRoot).map((o) => o.replace(/\.o$/, ".cc"));
    expect(sorted(gypCompiled)).toEqual(listed);
    // cmake-js: compile_commands.json names every translation unit.
    const commands = JSON.parse(
      fs.readFileSync(path.join(scratch.path, "build-cmake", "compile_commands.json"), "utf8"),
    ) as Array<{ file: string }>;
    const cmakeCompiled = commands.map((c) => path.relative(scratch.path, path.resolve(scratch.path, c.file)));
    expect(sorted(cmakeCompiled)).toEqual(listed);
  });
});

describe("binding.gyp is the one source list", () => {
  it("lists every C++ source under native/ for some platform, and only files that exist", () => {
    const listed = new Set([...gypList("linux"), ...gypList("mac"), ...gypList("win")]);
    const present = filesBelow(path.join(REPO_ROOT, "native"), ".cc", REPO_ROOT);
    expect(sorted([...listed])).toEqual(sorted(present));
  });

  it("keeps each platform's own files to that platform", () => {
    const byOs = { linux: gypList("linux"), mac: gypList("mac"), win: gypList("win") };
    expect(byOs.linux.filter((s) => /\/(darwin|win32)\//.test(s))).toEqual([]);
    expect(byOs.mac.filter((s) => /\/(linux|win32)\//.test(s))).toEqual([]);
    expect(byOs.win.filter((s) => /\/(linux|darwin|posix)\//.test(s))).toEqual([]);
    expect(gypList("win", "libraries")).toContain("advapi32.lib");
  });

  it("refuses a gyp condition it does not understand instead of skipping it", () => {
    const scratch = makeTempDir("gjc-gyp-sources-");
    try {
      fs.mkdirSync(path.join(scratch.path, "scripts"));
      const script = path.join(scratch.path, "scripts", "gyp-sources.cjs");
      fs.copyFileSync(GYP_SOURCES, script);
      const gypText = fs.readFileSync(path.join(REPO_ROOT, "binding.gyp"), "utf8");
      const altered = gypText.replace(`"OS=='linux'"`, `"OS=='linux' and target_arch=='x64'"`);
      expect(altered).not.toBe(gypText);
      fs.writeFileSync(path.join(scratch.path, "binding.gyp"), altered);
      const result = run(process.execPath, [script, "linux", "sources"]);
      expect(result.status).toBe(2);
      expect(result.stderr).toContain("unsupported gyp condition");
    } finally {
      scratch.remove();
    }
  });
});
