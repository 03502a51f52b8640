/**
 * Legacy layouts for the migration tests: transcripts under `--<encoded cwd>--` directories
 * (loose permissions, as older tools made them) with optional artifact directories.
 */
import { createHash, randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { listSessionCandidates, resolveManagedScope, type CandidateListing, type ManagedScope, type SessionCandidate } from "../../src/index.js";

/** The legacy directory name of an absolute POSIX cwd. */
export function legacyName(cwd: string): string {
  return `--${cwd.slice(1).replace(/[/\\:]/g, "-")}--`;
}

/** Writes a legacy transcript for `cwd` into `sessionsRoot/<dirName>`; returns its path. */
export function writeLegacySession(
  sessionsRoot: string,
  cwd: string,
  options: { dirName?: string; id?: string; lines?: number; artifacts?: Record<string, string | Buffer> } = {},
): string {
  const dir = path.join(sessionsRoot, options.dirName ?? legacyName(cwd));
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  const id = options.id ?? randomUUID();
  const file = path.join(dir, `2026-02-16T10-20-30-000Z_${id}.jsonl`);
  const lines = [JSON.stringify({ type: "session", version: 3, id, timestamp: "2026-02-16T10:20:30.000Z", cwd })];
  for (let i = 0; i < (options.lines ?? 3); i++) {
    lines.push(
      JSON.stringify({
        type: "message",
        id: `e${i}`,
        parentId: i === 0 ? null : `e${i - 1}`,
        timestamp: "2026-02-16T10:20:31.000Z",
        message: { role: "user", content: `line ${i}`, timestamp: 1 },
      }),
    );
  }
  fs.writeFileSync(file, `${lines.join("\n")}\n`, { mode: 0o644 });
  if (options.artifacts !== undefined) {
    const root = file.slice(0, -".jsonl".length);
    for (const [rel, data] of Object.entries(options.artifacts)) {
      fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      fs.writeFileSync(path.join(root, rel), data);
    }
  }
  return file;
}

/** Describes the scope of `cwd` for reading its legacy sources (an older tool's agent directory is 0755). */
export function scopeOf(cwd: string, agentDir: string): ManagedScope {
  const result = resolveManagedScope({ cwd, agentDir, mode: "sources" });
  if (result.kind !== "resolved") throw new Error(`${result.code}/${result.cause}`);
  return result.scope;
}

/** Lists candidates, failing the test on a listing error. */
export async function listed(scope: ManagedScope): Promise<CandidateListing> {
  const result = await listSessionCandidates(scope);
  if (result.kind !== "listed") throw new Error(`${result.code}/${result.cause}`);
  return result;
}

/** The single candidate at `file`. */
export async function candidateAt(scope: ManagedScope, file: string): Promise<SessionCandidate> {
  const found = (await listed(scope)).candidates.find((c) => c.path === file);
  if (found === undefined) throw new Error(`no candidate at ${file}`);
  return found;
}

/** sha256 hex of every file below `root` (and the file itself), keyed by relative path. */
export function treeHashes(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (p: string, rel: string) => {
    const st = fs.lstatSync(p);
    if (st.isDirectory()) {
      out[`${rel}/`] = "dir";
      for (const name of fs.readdirSync(p).sort()) walk(path.join(p, name), rel === "" ? name : `${rel}/${name}`);
    } else {
      out[rel] = createHash("sha256").update(fs.readFileSync(p)).digest("hex");
    }
  };
  if (fs.existsSync(root)) walk(root, "");
  return out;
}
