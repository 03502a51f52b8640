"use strict";
// The one place the compiled addon is loaded: CommonJS, because node-gyp-build needs a real
// __dirname. It loads on first use, so importing costs no dlopen and a machine without a
// matching build still imports the package and gets a coded `native_unavailable` error.
const fs = require("node:fs");
const path = require("node:path");

const root = path.join(__dirname, "..", "..");

let addon;
// src/native/index.ts replaces this so the error becomes a GjcError subclass.
let wrapUnavailable = (error) => error;

// The running process's libc, asked once.
let runningLibc;

/** musl's loader per architecture a prebuild ships for. */
const MUSL_LOADERS = { x64: "ld-musl-x86_64.so.1", arm64: "ld-musl-aarch64.so.1" };

/**
 * "glibc" or "musl": the diagnostic report names a glibc version where the process runs on glibc
 * (Node's, and Bun's, which leaves it out on musl). Where it names none, or the runtime has no
 * report, the C library the process has mapped decides, so a runtime whose report merely lacks
 * the field is not taken for musl. "" when neither tells, leaving the choice to node-gyp-build.
 */
function askLibc() {
  const report = process.report && process.report.getReport ? process.report.getReport() : undefined;
  if (report && report.header && report.header.glibcVersionRuntime) return "glibc";
  let mapped = "";
  try {
    mapped = fs.readFileSync("/proc/self/maps", "utf8");
  } catch {
    // no /proc: the report alone decides
  }
  // glibc's file is libc.so.6, or libc-2.NN.so before 2.34; musl is its own loader.
  if (/\/libc(\.so\.6|-2\.\d+\.so)$/m.test(mapped)) return "glibc";
  // Mapped under the name the loader link resolves to (Debian's links to its libc.so).
  const loader = MUSL_LOADERS[process.arch];
  let musl;
  try {
    musl = loader === undefined ? undefined : fs.realpathSync(`/lib/${loader}`);
  } catch {
    musl = undefined;
  }
  if (musl !== undefined && mapped.split("\n").some((line) => line.endsWith(` ${musl}`))) return "musl";
  return report === undefined ? "" : "musl";
}

/** Which build fits, with node-gyp-build's environment overrides (and LIBC) honoured. */
function target() {
  const platform = process.env.npm_config_platform || process.platform;
  const arch = process.env.npm_config_arch || process.arch;
  let libc = "";
  if (platform === "linux") {
    if (runningLibc === undefined) runningLibc = askLibc();
    libc = process.env.LIBC || runningLibc;
  }
  return { platform, arch, libc };
}

/** The error a missing or unloadable addon becomes (see README "Install"). */
function unavailable(cause) {
  const { platform, arch, libc } = target();
  // Each shipped folder with the libc of each build in it, e.g. "linux-x64 (glibc, musl)".
  let prebuilt = [];
  try {
    prebuilt = fs.readdirSync(path.join(root, "prebuilds")).sort().map((folder) => {
      const tags = fs.readdirSync(path.join(root, "prebuilds", folder))
        .map((file) => /^gjc-session-store\.(glibc|musl)\.node$/.exec(file))
        .filter(Boolean)
        .map((match) => match[1])
        .sort();
      return tags.length ? `${folder} (${tags.join(", ")})` : folder;
    });
  } catch {
    // none shipped
  }
  const reason = cause instanceof Error && /No native build was found/.test(cause.message)
    ? "no prebuilt addon matches and none was compiled at install"
    : `the addon failed to load (${cause instanceof Error ? cause.message.split("\n")[0] : String(cause)})`;
  const error = new Error(
    `gjc-session-store: native addon unavailable for ${platform}-${arch}${libc ? ` (${libc})` : ""}, Node ${process.versions.node} ` +
      `(ABI ${process.versions.modules}, Node-API ${process.versions.napi}): ${reason}. ` +
      `Prebuilt: ${prebuilt.length ? prebuilt.join(", ") : "none"}. ` +
      "Elsewhere it compiles from source: with a C++17 compiler, make and Python on PATH run " +
      "`npm rebuild gjc-session-store` (install scripts must be allowed).",
    { cause },
  );
  return Object.assign(error, {
    name: "NativeUnavailableError",
    code: "native_unavailable",
    platform,
    arch,
    libc: libc || undefined,
    abi: process.versions.modules,
    napiVersion: Number(process.versions.napi),
  });
}

// Which build was loaded: the folder of the addon file, for the SQLite extension built with it.
let loadedFrom;

/**
 * On Linux the build for the running libc: node-gyp-build tells musl from glibc only by
 * /etc/alpine-release, so a musl runtime elsewhere (Void, a distroless image, Bun's musl
 * binary) would get the glibc build and fail to load it. The order is node-gyp-build's:
 * a build compiled at install, then the prebuild. Its own overrides (another platform or
 * arch, a prebuild folder of one's own) leave the choice to it, as do other platforms.
 */
function linuxBuild() {
  const { platform, arch, libc } = target();
  if (platform !== "linux" || !libc || process.env.GJC_SESSION_STORE_PREBUILD) return undefined;
  const compiled = path.join(root, "build", "Release", "gjc_session_store.node");
  if (!process.env.PREBUILDS_ONLY && fs.existsSync(compiled)) return compiled;
  const prebuilt = path.join(root, "prebuilds", `linux-${arch}`, `gjc-session-store.${libc}.node`);
  if (fs.existsSync(prebuilt)) return prebuilt;
  throw new Error(`No native build was found for linux-${arch} (${libc}) under ${root}`);
}

function load() {
  if (addon === undefined) {
    try {
      const file = linuxBuild();
      if (file === undefined) {
        addon = require("node-gyp-build")(root);
      } else {
        addon = require(file);
        loadedFrom = path.dirname(file);
      }
    } catch (cause) {
      throw wrapUnavailable(unavailable(cause));
    }
  }
  return addon;
}

/**
 * The SQLite extension (native/sqlite/pinned_vfs.c) built with the loaded addon: beside a
 * compiled one as gjc_pinned_vfs.so, beside a prebuild as gjc_pinned_vfs.<libc>.so.
 * Loads the addon first; undefined where none was built.
 */
function pinnedVfsPath() {
  load();
  if (loadedFrom === undefined) return undefined;
  const { libc } = target();
  const name = path.dirname(loadedFrom) === path.join(root, "prebuilds") ? `gjc_pinned_vfs.${libc}.so` : "gjc_pinned_vfs.so";
  const file = path.join(loadedFrom, name);
  return fs.existsSync(file) ? file : undefined;
}

const PROBES = new Set(["__esModule", "default", "then", "toJSON"]);

module.exports = new Proxy(
  {
    // The real addon object, for a caller that must not pay the load inside a traced span.
    load,
    // Answered here because this file keeps its real location when the TypeScript is bundled.
    pinnedVfsPath,
    // For the install script (install.cjs), which hands it to node-gyp-build; loads nothing.
    libc: () => target().libc,
    setUnavailableError(wrap) {
      wrapUnavailable = wrap;
    },
  },
  {
    get(local, key) {
      if (key in local) return local[key];
      // Module interop (ESM import, bundlers, await) probes these; none is an addon function.
      if (typeof key === "symbol" || PROBES.has(key)) return undefined;
      return load()[key];
    },
    has(local, key) {
      return key in local || key in load();
    },
  },
);
