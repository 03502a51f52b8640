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

/** Where node-gyp-build looks, as it decides it (its environment overrides included). */
function target() {
  const platform = process.env.npm_config_platform || process.platform;
  const arch = process.env.npm_config_arch || process.arch;
  let libc = "";
  if (platform === "linux") {
    const header = process.report && process.report.getReport ? process.report.getReport().header : {};
    libc = process.env.LIBC || (header.glibcVersionRuntime ? "glibc" : "musl");
  }
  return { platform, arch, libc };
}

/** The error a missing or unloadable addon becomes (see README "Install"). */
function unavailable(cause) {
  const { platform, arch, libc } = target();
  let prebuilt = [];
  try {
    prebuilt = fs.readdirSync(path.join(root, "prebuilds")).sort();
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

function load() {
  if (addon === undefined) {
    try {
      addon = require("node-gyp-build")(root);
    } catch (cause) {
      throw wrapUnavailable(unavailable(cause));
    }
  }
  return addon;
}

const PROBES = new Set(["__esModule", "default", "then", "toJSON"]);

module.exports = new Proxy(
  {
    // Set here because this file keeps its real location when the TypeScript is bundled; the
    // SQLite extension built beside the addon is found from it too.
    packageRoot: root,
    // The real addon object, for a caller that must not pay the load inside a traced span.
    load,
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
