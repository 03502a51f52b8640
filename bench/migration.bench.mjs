// Migration benchmark: copy-retain migration of a legacy session (a ~200 MB transcript and
// artifact tree of 5,000 files), printed beside `cp -r` of the same tree and `cp -r` + `sync`
// (a copy made durable). The migration also hashes, reads back and fsyncs every file, syncs
// every staging directory, checks the source again and publishes.
//
//   npm run bench:migration
//   BENCH_MB=50 BENCH_ARTIFACTS=1000 BENCH_ROUNDS=1 ...   a smaller session, fewer rounds
//
// Each round copies a session of its own, after a sync, so neither side pays for the other's
// writeback. The median and the best of each side are printed, with the longest event-loop
// stall during the migration.

import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const { resolveManagedScope, listSessionCandidates, openCandidateForWrite } = await import("../dist/index.js");

const MB = Number(process.env.BENCH_MB ?? 200);
const ARTIFACTS = Number(process.env.BENCH_ARTIFACTS ?? 5000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "gjc-bench-migration-")));
fs.chmodSync(root, 0o700);
const agentDir = path.join(root, "agent");

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

try {
  const work = path.join(root, "project");
  fs.mkdirSync(work);
  const scope = resolveManagedScope({ cwd: work, agentDir });
  if (scope.kind !== "resolved") throw new Error(scope.code);
  const legacyRoot = path.join(scope.scope.sessionsRoot, `--${work.slice(1).replace(/[/\\:]/g, "-")}--`);
  const perArtifact = Math.max(1, Math.floor((MB * 1024 * 1024) / 4 / ARTIFACTS));
  const transcriptBytes = MB * 1024 * 1024 - perArtifact * ARTIFACTS;

  /** One legacy session (transcript + artifact tree) in its own legacy directory. */
  function makeLegacySession(round) {
    const legacyDir = `${legacyRoot}${"-".repeat(round)}`;
    fs.mkdirSync(legacyDir, { recursive: true });
    const id = randomUUID();
    const transcript = path.join(legacyDir, `2026-02-16T10-20-30-000Z_${id}.jsonl`);
    const header = `${JSON.stringify({ type: "session", version: 3, id, timestamp: "2026-02-16T10:20:30.000Z", cwd: work })}\n`;
    const entry = `${JSON.stringify({ type: "message", id: "e", parentId: null, timestamp: "2026-02-16T10:20:31.000Z", message: { role: "user", content: "x".repeat(900), timestamp: 1 } })}\n`;
    const fd = fs.openSync(transcript, "w");
    fs.writeSync(fd, header);
    const block = Buffer.from(entry.repeat(Math.ceil((1 << 20) / entry.length)));
    for (let written = header.length; written < transcriptBytes; written += block.length) fs.writeSync(fd, block);
    fs.closeSync(fd);
    const artifactRoot = transcript.slice(0, -".jsonl".length);
    const payload = Buffer.alloc(perArtifact, "a");
    for (let i = 0; i < ARTIFACTS; i++) {
      const dir = path.join(artifactRoot, `d${i % 50}`);
      if (i < 50) fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, `${i}.bash.log`), payload);
    }
    return { legacyDir, transcript, totalMB: (fs.statSync(transcript).size + perArtifact * ARTIFACTS) / (1024 * 1024) };
  }

  console.log(
    `load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}, ${os.cpus().length} cpus`,
  );
  const sessions = Array.from({ length: ROUNDS }, (_, round) => makeLegacySession(round));
  const figures = { cp: [], cpSync: [], migrate: [], stall: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const { legacyDir, transcript } = sessions[round];
    execFileSync("sync");
    const t0 = performance.now();
    execFileSync("cp", ["-r", legacyDir, path.join(root, `cp-copy-${round}`)]);
    const cpMs = performance.now() - t0;
    execFileSync("sync");
    figures.cp.push(cpMs);
    figures.cpSync.push(performance.now() - t0);

    const listing = await listSessionCandidates(scope.scope);
    const candidate = listing.candidates.find((c) => c.path === transcript);
    let maxGapMs = 0;
    let lastTick = performance.now();
    const ticker = setInterval(() => {
      const now = performance.now();
      maxGapMs = Math.max(maxGapMs, now - lastTick);
      lastTick = now;
    }, 5);
    const t1 = performance.now();
    const result = await openCandidateForWrite(scope.scope, candidate);
    figures.migrate.push(performance.now() - t1);
    clearInterval(ticker);
    figures.stall.push(maxGapMs);
    if (result.kind !== "opened") throw new Error(`${result.code} ${result.cause}`);
  }
  const totalMB = sessions[0].totalMB;
  const row = (label, values) =>
    `  ${label.padEnd(16)} median ${median(values).toFixed(0).padStart(6)} ms  best ${Math.min(...values)
      .toFixed(0)
      .padStart(6)} ms  ${(totalMB / (median(values) / 1000)).toFixed(0).padStart(5)} MB/s`;
  console.log(`${totalMB.toFixed(0)} MB (${ARTIFACTS} artifact files), ${ROUNDS} rounds`);
  console.log(row("migration", figures.migrate));
  console.log(row("cp -r", figures.cp));
  console.log(row("cp -r + sync", figures.cpSync));
  console.log(`  longest event-loop stall during migration ${Math.max(...figures.stall).toFixed(1)} ms`);
} finally {
  fs.rmSync(root, { recursive: true, force: true });
  execFileSync("sync");
}
