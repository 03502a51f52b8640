/**
 * The addon loader (src/native/binding.cjs) when no build matches: importing the package
 * still works, the first call that needs the addon throws our coded `native_unavailable`
 * error (never node-gyp-build's raw message), and the process carries on. Real child
 * processes, with node-gyp-build's own environment overrides standing in for another
 * platform (it reads npm_config_platform / npm_config_arch; PREBUILDS_ONLY skips build/).
 */
import fs from "node:fs";
import path from "node:path";

import { describe, expect, it } from "vitest";

import { REPO_ROOT, run } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";

const INDEX = path.join(REPO_ROOT, "dist", "index.js");

interface Outcome {
  readonly imported: boolean;
  readonly memory: number;
  readonly errors: { name: string; code: string; message: string; platform: string; arch: string; napiVersion: number; cause: string }[];
  readonly after: string;
}

/** Imports the built package in a child with `env`, calls the addon twice, reports what happened. */
function probe(env: NodeJS.ProcessEnv): Outcome {
  const script = `
const m = await import(${JSON.stringify(INDEX)});
const errors = [];
for (let i = 0; i < 2; i++) {
  try { m.resolveManagedScopeOrThrow({ cwd: process.argv[1], agentDir: process.argv[1] + "/agent", mode: "write" }); } catch (e) {
    errors.push({ name: e.name, code: e.code, message: e.message, platform: e.platform, arch: e.arch, napiVersion: e.napiVersion, cause: String(e.cause?.message) });
  }
}
// The pure layers need no addon: an in-memory session works on the same import.
const s = m.SessionManager.inMemory("/");
s.appendMessage({ role: "user", content: [{ type: "text", text: "hi" }], timestamp: 1 });
process.stdout.write(JSON.stringify({ imported: true, memory: s.buildSessionContext().messages.length, errors, after: "still running" }));`;
  const base = makeTempDir("gjc-loader-");
  try {
    const result = run(process.execPath, ["--input-type=module", "-e", script, base.path], { env: { ...process.env, ...env } });
    expect(result.status, result.stderr).toBe(0);
    return JSON.parse(result.stdout) as Outcome;
  } finally {
    base.remove();
  }
}

describe("native_unavailable", () => {
  it("another platform: import works, each addon call throws the coded error naming platform, arch, ABI and the fix", () => {
    const outcome = probe({ PREBUILDS_ONLY: "1", npm_config_platform: "aix", npm_config_arch: "ppc64" });
    expect(outcome.imported).toBe(true);
    expect(outcome.memory).toBe(1);
    expect(outcome.after).toBe("still running");
    expect(outcome.errors).toHaveLength(2);
    for (const error of outcome.errors) {
      expect(error).toMatchObject({ name: "NativeUnavailableError", code: "native_unavailable", platform: "aix", arch: "ppc64" });
      expect(error.napiVersion).toBe(Number(process.versions.napi));
      expect(error.message).toContain("aix-ppc64");
      expect(error.message).toContain(`ABI ${process.versions.modules}`);
      expect(error.message).toContain(`Node-API ${process.versions.napi}`);
      expect(error.message).toContain("npm rebuild gjc-session-store");
      expect(error.message).not.toMatch(/^No native build/);
      // node-gyp-build's own words stay available as the cause, for a bug report.
      expect(error.cause).toContain("No native build was found");
    }
  });

  it("an empty package directory (no build/, no prebuilds/): the same coded error for this platform", () => {
    const empty = makeTempDir("gjc-loader-empty-");
    try {
      // node-gyp-build's <NAME>_PREBUILD override points the lookup at a directory with nothing in it.
      const outcome = probe({ GJC_SESSION_STORE_PREBUILD: empty.path });
      expect(outcome.errors).toHaveLength(2);
      expect(outcome.errors[0]).toMatchObject({ code: "native_unavailable", platform: process.platform, arch: process.arch });
      expect(outcome.errors[0]?.message).toContain(`${process.platform}-${process.arch}`);
      expect(outcome.memory).toBe(1);
    } finally {
      empty.remove();
    }
  });

  it("the control: with the build in place the same calls succeed", () => {
    const outcome = probe({});
    expect(outcome.errors).toEqual([]);
  });
});

/**
 * The build for the running libc: node-gyp-build would tell musl only by /etc/alpine-release.
 * A package copy with no build/ and prebuilds/linux-<arch>/ as each test lays it out, one of the
 * two libc names holding this machine's real addon and the other bytes no loader accepts, so
 * which one was loaded shows in whether loading works. LIBC is the override node-gyp-build and
 * detect-libc also honour; without it the running process is asked (this machine: glibc).
 */
describe.runIf(process.platform === "linux")("the prebuild for the running libc", () => {
  interface Loaded {
    readonly loaded?: boolean;
    readonly vfs?: string;
    readonly code?: string;
    readonly libc?: string;
    readonly message?: string;
  }

  function loadIn(shipped: Partial<Record<"glibc" | "musl", "real" | "broken">>, env: NodeJS.ProcessEnv): Loaded {
    const pkg = makeTempDir("gjc-loader-libc-");
    try {
      fs.mkdirSync(path.join(pkg.path, "src", "native"), { recursive: true });
      fs.copyFileSync(path.join(REPO_ROOT, "src", "native", "binding.cjs"), path.join(pkg.path, "src", "native", "binding.cjs"));
      fs.symlinkSync(path.join(REPO_ROOT, "node_modules"), path.join(pkg.path, "node_modules"), "dir");
      const dir = path.join(pkg.path, "prebuilds", `linux-${process.arch}`);
      fs.mkdirSync(dir, { recursive: true });
      for (const [libc, kind] of Object.entries(shipped)) {
        const addon = path.join(dir, `gjc-session-store.${libc}.node`);
        if (kind === "real") fs.copyFileSync(path.join(REPO_ROOT, "build", "Release", "gjc_session_store.node"), addon);
        else fs.writeFileSync(addon, "not an ELF object\n");
        fs.copyFileSync(path.join(REPO_ROOT, "build", "Release", "gjc_pinned_vfs.so"), path.join(dir, `gjc_pinned_vfs.${libc}.so`));
      }
      const script = `const b = require(${JSON.stringify(path.join(pkg.path, "src", "native", "binding.cjs"))});
let out;
try { b.load(); out = { loaded: true, vfs: b.pinnedVfsPath() }; } catch (e) { out = { code: e.code, libc: e.libc, message: e.message }; }
process.stdout.write(JSON.stringify(out));`;
      const env0: NodeJS.ProcessEnv = { ...process.env };
      delete env0.LIBC;
      const result = run(process.execPath, ["-e", script], { env: { ...env0, ...env } });
      expect(result.status, result.stderr).toBe(0);
      const out = JSON.parse(result.stdout) as Loaded;
      return out.vfs === undefined ? out : { ...out, vfs: path.relative(pkg.path, out.vfs) };
    } finally {
      pkg.remove();
    }
  }

  const vfs = (libc: string) => path.join("prebuilds", `linux-${process.arch}`, `gjc_pinned_vfs.${libc}.so`);

  it("musl loads the musl build, with the SQLite extension built beside it", () => {
    expect(loadIn({ glibc: "broken", musl: "real" }, { LIBC: "musl" })).toEqual({ loaded: true, vfs: vfs("musl") });
  });

  it("glibc, asked of the running process, loads the glibc build and never the musl one", () => {
    expect(loadIn({ glibc: "real", musl: "broken" }, {})).toEqual({ loaded: true, vfs: vfs("glibc") });
    const wrong = loadIn({ glibc: "broken", musl: "real" }, {});
    expect(wrong).toMatchObject({ code: "native_unavailable", libc: "glibc" });
    expect(wrong.message).toContain("the addon failed to load");
  });

  it("libc() answers the running process's libc (LIBC honoured) for the install script, and loads no addon", () => {
    const script = `const b = require(${JSON.stringify(path.join(REPO_ROOT, "src", "native", "binding.cjs"))});
const libc = b.libc();
const mapped = require("fs").readFileSync("/proc/self/maps", "utf8").includes(".node");
process.stdout.write(JSON.stringify({ libc, mapped }));`;
    const answer = (env: NodeJS.ProcessEnv): unknown => {
      const env0: NodeJS.ProcessEnv = { ...process.env };
      delete env0.LIBC;
      const result = run(process.execPath, ["-e", script], { env: { ...env0, ...env } });
      expect(result.status, result.stderr).toBe(0);
      return JSON.parse(result.stdout);
    };
    // This machine runs glibc; a musl process is the CI stage's (scripts/smoke-musl.sh).
    expect(answer({})).toEqual({ libc: "glibc", mapped: false });
    expect(answer({ LIBC: "musl" })).toEqual({ libc: "musl", mapped: false });
    expect(answer({ npm_config_platform: "darwin" })).toEqual({ libc: "", mapped: false });
  });

  it("a runtime whose report names no glibc version, or that has no report, is not taken for musl: the mapped libc decides", () => {
    const stubs = makeTempDir("gjc-loader-report-");
    try {
      const noVersion = path.join(stubs.path, "no-version.cjs");
      fs.writeFileSync(noVersion, "process.report.getReport = () => ({ header: {} });\n");
      const noReport = path.join(stubs.path, "no-report.cjs");
      fs.writeFileSync(noReport, 'Object.defineProperty(process, "report", { value: undefined });\n');
      for (const stub of [noVersion, noReport]) {
        expect(loadIn({ glibc: "real", musl: "broken" }, { NODE_OPTIONS: `--require ${stub}` }), stub).toEqual({ loaded: true, vfs: vfs("glibc") });
      }
    } finally {
      stubs.remove();
    }
  });

  it("no build for this libc: native_unavailable names the libc and what is shipped", () => {
    const out = loadIn({ glibc: "real" }, { LIBC: "musl" });
    expect(out).toMatchObject({ code: "native_unavailable", libc: "musl" });
    expect(out.message).toContain(`linux-${process.arch} (musl)`);
    expect(out.message).toContain("no prebuilt addon matches and none was compiled at install");
    expect(out.message).toContain(`Prebuilt: linux-${process.arch} (glibc).`);
  });
});
