// Lays out the tree once and keeps it so: prettier for TypeScript, JavaScript and JSON (see
// .prettierrc.json and .prettierignore), clang-format for our C++ under native/ (.clang-format;
// the vendored SQLite headers keep their own layout).
//
//   node scripts/format.mjs           rewrite what is not laid out
//   node scripts/format.mjs --check   list it and exit 1 (test/format.test.ts runs this)
//
// clang-format comes from the system (Debian's clang-format package, which .ci/run installs);
// without it the C++ half is reported as not checked and the exit code says so (2).
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const check = process.argv.includes("--check");
const run = (command, args) => spawnSync(command, args, { cwd: root, encoding: "utf8" });

const prettier = run(process.execPath, [
  path.join(root, "node_modules", "prettier", "bin", "prettier.cjs"),
  check ? "--list-different" : "--write",
  "--log-level",
  "warn",
  ".",
]);
if (prettier.error) throw prettier.error;
const unformatted = check ? prettier.stdout.split("\n").filter(Boolean) : [];
if (prettier.status !== 0 && !(check && prettier.status === 1)) {
  process.stderr.write(prettier.stderr);
  process.exit(prettier.status ?? 1);
}

const tracked = run("git", ["ls-files", "native/*.cc", "native/*.h", "native/*.c"]);
const sources = tracked.status === 0 ? tracked.stdout.split("\n").filter((file) => file.length > 0 && !file.startsWith("native/sqlite/include/")) : [];
let cppChecked = false;
if (run("clang-format", ["--version"]).status === 0) {
  cppChecked = true;
  for (const file of sources) {
    if (!check) {
      const rewritten = run("clang-format", ["-i", file]);
      if (rewritten.status !== 0) throw new Error(`clang-format failed on ${file}: ${rewritten.stderr}`);
      continue;
    }
    const dry = run("clang-format", ["--dry-run", "--Werror", file]);
    if (dry.status !== 0) unformatted.push(file);
  }
}

for (const file of unformatted) console.log(file);
if (!cppChecked) console.error("clang-format not found: the C++ under native/ was not " + (check ? "checked" : "formatted"));
process.exit(unformatted.length > 0 ? 1 : cppChecked ? 0 : 2);
