#!/usr/bin/env node
// Runs after `tsc -p tsconfig.build.json` (npm run build / prepare): replaces the entry
// points tsc wrote to dist/ (the package, ./pi, ./gjc and the CLI) by rolldown bundles sharing one
// chunk, so importing the package reads a handful of files instead of ~130 modules, which was
// most of the import cost left once zod loads on first use. The .d.ts files stay as tsc
// wrote them. Dependencies, the addon loader (#binding) and runtime built-ins stay imports,
// so they resolve in the user's install as before.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { build } from "rolldown";

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
// The directory is an argument only for trying a bundle beside the real dist/.
const dist = path.resolve(process.argv[2] ?? path.join(root, "dist"));
const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));
const packages = [pkg.dependencies, pkg.peerDependencies, pkg.optionalDependencies].flatMap((deps) => Object.keys(deps ?? {}));
const external = [/^node:/, /^bun:/, "#binding", ...packages.map((name) => new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}(/|$)`))];

const ENTRIES = { index: "index.js", "pi/index": "pi/index.js", "gjc/index": "gjc/index.js", "cli/main": "cli/main.js" };
for (const file of Object.values(ENTRIES)) {
  const at = path.join(dist, file);
  // A bundle as input would import the chunks this run replaces: tsc must have run since.
  if (!fs.existsSync(at) || fs.readFileSync(at, "utf8").includes("./chunks/")) {
    process.stderr.write(`bundle-dist: ${at} is missing or already bundled; run tsc -p tsconfig.build.json first\n`);
    process.exit(1);
  }
}

const out = fs.mkdtempSync(path.join(path.dirname(dist), ".dist-bundle-"));
try {
  await build({
    input: Object.fromEntries(Object.entries(ENTRIES).map(([name, file]) => [name, path.join(dist, file)])),
    external,
    platform: "node",
    logLevel: "warn",
    output: { dir: out, format: "esm", sourcemap: true, chunkFileNames: "chunks/[name]-[hash].js" },
  });
  // The bundles replace tsc's entry files; the per-module files stay for the tools that
  // load one layer by path (scripts/test-win32.sh's runner, the benchmarks). The package's
  // exports name only the entries, so a user never loads both copies.
  fs.rmSync(path.join(dist, "chunks"), { recursive: true, force: true });
  fs.cpSync(out, dist, { recursive: true });
  fs.chmodSync(path.join(dist, ENTRIES["cli/main"]), 0o755);
} finally {
  fs.rmSync(out, { recursive: true, force: true });
}
