// Audit benchmark: `auditAgentDir` over an agent directory of 10k sessions in 100 scopes,
// printed beside a plain recursive walk of the same tree that reads every file whole (the
// audit also opens each object owner-only, parses every session and hashes every blob).
//
//   npm run bench:audit             builds, generates the tree in the temp dir, measures, removes it
//   BENCH_SESSIONS=2000 ...         fewer sessions (spread over the same 100 scopes)
//
// Timings are the best of a few rounds with the page cache warm, the two taking turns.

import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { auditAgentDir, encodeBinding, scopeDigest, scopeDirectoryName } from "../dist/index.js";

const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 10_000);
const SCOPES = 100;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

function line(record) {
  return `${JSON.stringify(record)}\n`;
}

/** A v5 session of a few KB: header, ten messages, one image as a blob reference every 50th. */
function session(cwd, n, blob) {
  let text = line({ type: "session", version: 5, id: `0190a0b0-0000-7000-8000-${String(n).padStart(12, "0")}`, timestamp: "2026-01-01T00:00:00.000Z", cwd });
  let parent = null;
  for (let i = 0; i < 10; i++) {
    const id = `${n.toString(16)}-${i}`;
    const content = [{ type: "text", text: `message ${i} of session ${n}: the tree, the leaf and the compaction `.repeat(4) }];
    if (blob !== undefined && i === 0) content.push({ type: "image", data: `blob:sha256:${blob}`, mimeType: "image/png" });
    text += line({
      type: "message",
      id,
      parentId: parent,
      timestamp: "2026-01-01T00:00:00.000Z",
      message: { role: i % 2 === 0 ? "user" : "assistant", content, timestamp: i },
    });
    parent = id;
  }
  return text;
}

function generate(root) {
  const mkdir = (dir) => fs.mkdirSync(dir, { mode: 0o700 });
  const write = (file, data) => fs.writeFileSync(file, data, { mode: 0o600 });
  mkdir(root);
  mkdir(path.join(root, "sessions"));
  mkdir(path.join(root, "blobs"));
  const blobs = [];
  for (let i = 0; i < SCOPES; i++) {
    const bytes = Buffer.alloc(4096, i);
    const digest = createHash("sha256").update(bytes).digest("hex");
    write(path.join(root, "blobs", digest), bytes);
    blobs.push(digest);
  }
  let n = 0;
  for (let s = 0; s < SCOPES; s++) {
    const canonicalPath = `/bench/workspace-${s}`;
    const digest = scopeDigest("posix", canonicalPath);
    const dir = path.join(root, "sessions", scopeDirectoryName(digest));
    mkdir(dir);
    write(path.join(dir, ".gjc-managed-session-scope.v2.json"), encodeBinding({ platform: "posix", canonicalPath, digest }));
    const count = Math.floor(SESSIONS / SCOPES) + (s < SESSIONS % SCOPES ? 1 : 0);
    for (let k = 0; k < count; k++, n++) {
      write(path.join(dir, `2026-01-01T00-00-00-000Z_${n}.jsonl`), session(canonicalPath, n, k === 0 ? blobs[s] : undefined));
    }
  }
  return n;
}

/** readdir, lstat of every entry and a read of every regular file, never following a link. */
function readWalk(dir) {
  let bytes = 0;
  for (const name of fs.readdirSync(dir)) {
    const full = path.join(dir, name);
    const st = fs.lstatSync(full);
    if (st.isDirectory()) bytes += readWalk(full);
    else if (st.isFile()) bytes += fs.readFileSync(full).length;
  }
  return bytes;
}

/** The best wall and CPU time of each function over ROUNDS rounds, the functions taking turns. */
function bestInTurns(fns) {
  const out = fns.map(() => ({ ms: Infinity, cpu: Infinity }));
  for (let i = 0; i < ROUNDS; i++) {
    fns.forEach((fn, k) => {
      const cpu = process.cpuUsage();
      const start = process.hrtime.bigint();
      fn();
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      const used = process.cpuUsage(cpu);
      out[k].ms = Math.min(out[k].ms, ms);
      out[k].cpu = Math.min(out[k].cpu, (used.user + used.system) / 1000);
    });
  }
  return out;
}

const root = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "gjc-audit-bench-")), "agent");
try {
  const t0 = Date.now();
  const sessions = generate(root);
  console.log(
    `${sessions} sessions in ${SCOPES} scopes (+${SCOPES} blobs), generated in ${Date.now() - t0} ms; load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores`,
  );
  // Warm the page cache and check the tree is clean before timing anything.
  readWalk(root);
  const report = auditAgentDir(root);
  if (!report.clean) throw new Error(`the generated tree is not clean: ${JSON.stringify(report.objects.slice(0, 3))}`);
  const [reads, audit] = bestInTurns([() => readWalk(root), () => auditAgentDir(root)]);
  const row = (label, r) => `  ${label.padEnd(30)} ${r.ms.toFixed(0).padStart(6)} ms  (cpu ${r.cpu.toFixed(0).padStart(5)} ms)`;
  console.log(row("walk + read every file", reads));
  console.log(row("auditAgentDir", audit));
  console.log(`  ${(sessions / (audit.ms / 1000)).toFixed(0)} sessions/s; load average ${os.loadavg()[0].toFixed(1)} at the end`);
} finally {
  fs.rmSync(path.dirname(root), { recursive: true, force: true });
}
