#!/usr/bin/env node
"use strict";
// prebuildify ships only the addon's .node file. On Linux node-gyp also builds the SQLite
// extension that opens the history database through a held directory descriptor
// (native/sqlite/pinned_vfs.c); this copies it to prebuilds/linux-<arch>/, where
// src/native looks for it when build/Release is absent. Elsewhere there is nothing to copy.
const fs = require("node:fs");
const path = require("node:path");

if (process.platform !== "linux") process.exit(0);
const root = path.join(__dirname, "..");
const built = path.join(root, "build", "Release", "gjc_pinned_vfs.so");
if (!fs.existsSync(built)) {
  process.stderr.write(`copy-pinned-vfs: ${built} is missing; run npm run build:native\n`);
  process.exit(1);
}
const dir = path.join(root, "prebuilds", `linux-${process.arch}`);
fs.mkdirSync(dir, { recursive: true });
fs.copyFileSync(built, path.join(dir, "gjc_pinned_vfs.so"));
process.stdout.write(`copy-pinned-vfs: wrote ${path.relative(root, path.join(dir, "gjc_pinned_vfs.so"))}\n`);
