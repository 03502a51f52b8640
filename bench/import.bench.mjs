// Import cost of the package, beside a bare Node start, in one run:
//   node bench/import.bench.mjs [runs]      (default 9 runs of each, medians printed)
// Each run is three fresh processes (bare, import only, import then first calls), interleaved
// so machine load hits all alike. Printed: the wall time of `node -e 0`, of a process that imports the package, their
// difference, the in-process `await import()` time, and what the first calls then load on
// demand (the addon, zod). Goal: the import adds at most 40 ms.
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const runs = Number(process.argv[2] ?? 9);
const entry = pathToFileURL(path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "dist", "index.js")).href;

// The child times its own import, then the first call that loads the addon and the first
// that builds the schemas, and reports them as JSON.
const child = `
const ms = (t) => Number(process.hrtime.bigint() - t) / 1e6;
let t = process.hrtime.bigint();
const m = await import(${JSON.stringify(entry)});
const imported = ms(t);
t = process.hrtime.bigint();
const identity = m.workspaceIdentity(process.cwd());
if (identity.kind === "error") throw new Error(identity.message);
const addon = ms(t);
t = process.hrtime.bigint();
m.SessionHeaderSchema.safeParse({ type: "session", id: "x" });
const schemas = ms(t);
process.stdout.write(JSON.stringify({ imported, addon, schemas }));`;

function wall(args) {
  const started = process.hrtime.bigint();
  const result = spawnSync(process.execPath, args, { encoding: "utf8" });
  const elapsed = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.status !== 0) throw new Error(`${args.join(" ")} failed: ${result.stderr}`);
  return { elapsed, stdout: result.stdout };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const bare = [];
const importing = [];
const inside = { imported: [], addon: [], schemas: [] };
for (let i = 0; i < runs; i++) {
  bare.push(wall(["-e", "0"]).elapsed);
  importing.push(wall(["--input-type=module", "-e", `await import(${JSON.stringify(entry)});`]).elapsed);
  const measured = JSON.parse(wall(["--input-type=module", "-e", child]).stdout);
  for (const key of Object.keys(inside)) inside[key].push(measured[key]);
}

const f = (n) => `${n.toFixed(1)} ms`;
const added = median(importing) - median(bare);
console.log(`import cost of gjc-session-store (${process.version}, ${runs} runs each, medians)`);
console.log(`  node -e 0                          ${f(median(bare))}`);
console.log(`  node, importing the package        ${f(median(importing))}`);
console.log(`  added by the import (wall)         ${f(added)}   goal <= 40 ms: ${added <= 40 ? "met" : "NOT met"}`);
console.log(`  in-process await import()          ${f(median(inside.imported))}`);
console.log(`  first call needing the addon       ${f(median(inside.addon))}   (loads it)`);
console.log(`  first schema use                   ${f(median(inside.schemas))}   (loads zod)`);
