#!/usr/bin/env node
"use strict";
// binding.gyp is the one list of the addon's sources, defines and libraries. node-gyp
// reads it natively; CMakeLists.txt, scripts/check-windows.sh and scripts/build-win32.sh
// read it through this script, so no second list exists that could drift.
//
// Usage: node scripts/gyp-sources.cjs <linux|mac|win> <sources|defines|libraries>
// Prints one value per line: the target's own values, then those of every condition
// that holds for the OS. Only the condition forms binding.gyp uses are understood
// (OS=='x' and OS!='x'); anything else is an error, never silently skipped.
const fs = require("node:fs");
const path = require("node:path");

const FIELDS = new Set(["sources", "defines", "libraries"]);
const ADDON_TARGET = "gjc_session_store";

function fail(message) {
  process.stderr.write(`gyp-sources: ${message}\n`);
  process.exit(2);
}

function conditionHolds(expression, os) {
  const m = /^\s*OS\s*(==|!=)\s*'([a-z]+)'\s*$/.exec(expression);
  if (!m) fail(`unsupported gyp condition: ${expression}`);
  return m[1] === "==" ? m[2] === os : m[2] !== os;
}

function collect(block, os, field, out) {
  for (const value of block[field] ?? []) out.push(value);
  for (const condition of block.conditions ?? []) {
    const [expression, whenTrue, whenFalse] = condition;
    const chosen = conditionHolds(expression, os) ? whenTrue : whenFalse;
    if (chosen) collect(chosen, os, field, out);
  }
  return out;
}

function main() {
  const [os, field] = process.argv.slice(2);
  if (!["linux", "mac", "win"].includes(os) || !FIELDS.has(field)) {
    fail("usage: gyp-sources.cjs <linux|mac|win> <sources|defines|libraries>");
  }
  const file = path.join(__dirname, "..", "binding.gyp");
  // gyp allows '#' comment lines; everything else in our binding.gyp is plain JSON.
  const text = fs.readFileSync(file, "utf8").replace(/^\s*#.*$/gm, "");
  let gyp;
  try {
    gyp = JSON.parse(text);
  } catch (error) {
    fail(`binding.gyp must stay JSON (plus # comment lines): ${error.message}`);
  }
  // The addon's target; the other one (gjc_pinned_vfs, a SQLite extension built by node-gyp
  // on Linux only) is not part of the addon.
  const addons = (gyp.targets ?? []).filter((target) => target.target_name === ADDON_TARGET);
  if (addons.length !== 1) fail(`expected one ${ADDON_TARGET} target in binding.gyp, found ${addons.length}`);
  const values = collect(addons[0], os, field, []);
  process.stdout.write(values.map((v) => `${v}\n`).join(""));
}

main();
