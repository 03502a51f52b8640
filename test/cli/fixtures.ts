/**
 * Agent directories for the audit tests: a small clean tree written through the library
 * (scope with its binding, one session referencing one blob), to which each test adds one
 * problem.
 */
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { resolveManagedScopeOrThrow, SecureDir, type ManagedScope } from "../../src/index.js";
import { BINDING_FILE_NAME } from "../../src/scope/index.js";

/** A clean agent dir and the names inside it that tests plant problems next to. */
export interface AgentFixture {
  readonly agentDir: string;
  readonly workspace: string;
  readonly scope: ManagedScope;
  /** `sessions/<v2-...>`, relative to the agent dir */
  readonly scopeRel: string;
  /** the session file, relative to the agent dir */
  readonly sessionRel: string;
  /** the blob the session references, relative to the agent dir */
  readonly blobRel: string;
}

/** A session file's text: a v5 header and a user message with an image held as a blob ref. */
export function sessionText(cwd: string, options: { blob?: string; version?: unknown; id?: string } = {}): string {
  const id = options.id ?? "0190a0b0-0000-7000-8000-000000000001";
  const header = { type: "session", version: options.version ?? 5, id, timestamp: "2024-05-01T10:00:00.000Z", cwd };
  const content: unknown[] = [{ type: "text", text: "look at this" }];
  if (options.blob !== undefined) content.push({ type: "image", data: `blob:sha256:${options.blob}`, mimeType: "image/png" });
  const message = { type: "message", id: "a1b2c3d4", parentId: null, timestamp: "2024-05-01T10:00:01.000Z", message: { role: "user", content, timestamp: 1 } };
  return `${JSON.stringify(header)}\n${JSON.stringify(message)}\n`;
}

/** Builds a clean agent dir under `base` for a workspace directory `base/work-<name>`. */
export function makeAgentDir(base: string, name = "a"): AgentFixture {
  const agentDir = path.join(base, `agent-${name}`);
  const workspace = path.join(base, `work-${name}`);
  fs.mkdirSync(workspace, { recursive: true });
  SecureDir.openRoot(agentDir, { create: true }).close();
  const scope = resolveManagedScopeOrThrow({ cwd: workspace, agentDir, mode: "write" });
  const bytes = randomBytes(2048);
  const digest = createHash("sha256").update(bytes).digest("hex");
  const root = SecureDir.openRoot(agentDir);
  try {
    const blobs = root.openDir("blobs", { create: true });
    blobs.writeFileAtomic(digest, bytes, { noReplace: true });
    blobs.close();
    const scopeDir = root.openDir(["sessions", scope.directoryName]);
    scopeDir.writeFileAtomic("2024-05-01T10-00-00-000Z_s1.jsonl", sessionText(scope.canonicalCwd, { blob: digest }));
    scopeDir.close();
  } finally {
    root.close();
  }
  const scopeRel = `sessions/${scope.directoryName}`;
  return {
    agentDir,
    workspace,
    scope,
    scopeRel,
    sessionRel: `${scopeRel}/2024-05-01T10-00-00-000Z_s1.jsonl`,
    blobRel: `blobs/${digest}`,
  };
}

/** The absolute path of `rel` in the fixture. */
export function at(fixture: AgentFixture, rel: string): string {
  return path.join(fixture.agentDir, ...rel.split("/"));
}

/** Writes an owner-only (0600) file at `rel`, bypassing the library (for planted problems). */
export function plant(fixture: AgentFixture, rel: string, text: string | Buffer, mode = 0o600): string {
  const file = at(fixture, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  fs.writeFileSync(file, text, { mode });
  fs.chmodSync(file, mode);
  return file;
}

export { BINDING_FILE_NAME };
