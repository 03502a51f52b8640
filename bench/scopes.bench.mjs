// Managed scope benchmark.
//
//   npm run bench:scopes
//
// resolveManagedScope (read mode) in microseconds, cold (a workspace resolved for the first
// time in this process, scope absent) and warm (the same cwd again, scope and binding
// present), beside the floor fs.realpathSync of the same cwd.
//
// (Migration has its own benchmark: bench/migration.bench.mjs.)

import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const { resolveManagedScope } = await import("../dist/index.js");

const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "gjc-bench-scopes-")));
fs.chmodSync(root, 0o700);
const agentDir = path.join(root, "agent");

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function micro(fn) {
  const t = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t) / 1000;
}

function line(label, value, unit, floorLabel, floor) {
  const ratio = floor > 0 ? (value / floor).toFixed(2) : "n/a";
  console.log(`${label.padEnd(44)} ${value.toFixed(1).padStart(10)} ${unit}   ${floorLabel} ${floor.toFixed(1)} ${unit}   ratio ${ratio}x`);
}

try {
  console.log(
    `load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}, ${os.cpus().length} cpus`,
  );
  const cold = [];
  const coldFloor = [];
  for (let i = 0; i < 200; i++) {
    const cwd = path.join(root, "ws", `w${i}`);
    fs.mkdirSync(cwd, { recursive: true });
    coldFloor.push(micro(() => fs.realpathSync(cwd)));
  }
  for (let i = 0; i < 200; i++) {
    const cwd = path.join(root, "ws", `w${i}`);
    cold.push(micro(() => resolveManagedScope({ cwd, agentDir })));
  }
  const cwd = path.join(root, "ws", "w0");
  const prepared = resolveManagedScope({ cwd, agentDir, mode: "write" });
  if (prepared.kind !== "resolved") throw new Error(prepared.code);
  const warm = [];
  const warmFloor = [];
  for (let i = 0; i < 2000; i++) {
    warmFloor.push(micro(() => fs.realpathSync(cwd)));
    warm.push(micro(() => resolveManagedScope({ cwd, agentDir })));
  }
  line("resolveManagedScope cold (scope absent)", median(cold), "µs", "realpathSync", median(coldFloor));
  line("resolveManagedScope warm (scope + binding)", median(warm), "µs", "realpathSync", median(warmFloor));
} finally {
  fs.rmSync(root, { recursive: true, force: true });
}
