// Every TypeScript block of the README compiles (tsc, strict, against the built package as a
// consumer imports it) and runs to exit status 0, in document order, in one fresh home
// directory whose workspace also holds a legacy-layout session, so the migration snippet has
// something to migrate (and must migrate it).
import fs from "node:fs";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { legacyDirectoryNames, listSessionCandidates, resolveManagedScope, SessionManager } from "../src/index.js";
import { compileSnippets, readmeBlocks, readmeTsSnippets, runSnippet, type CompiledSnippets } from "./helpers/readme.js";
import { makeTempDir } from "./helpers/temp.js";

const snippets = readmeTsSnippets();
let home: ReturnType<typeof makeTempDir>;
let workspace: string;
let agentDir: string;
let compiled: CompiledSnippets;

let legacyId: string;

/** The migration states listed for the legacy session (a migrated source is listed as its copy). */
async function legacyStates(): Promise<string[]> {
  const resolved = resolveManagedScope({ cwd: workspace, agentDir });
  if (resolved.kind === "error") throw new Error(resolved.code);
  const listing = await listSessionCandidates(resolved.scope);
  if (listing.kind === "error") throw new Error(listing.code);
  return listing.candidates.filter((c) => c.sessionId === legacyId).map((c) => c.migrationState);
}

beforeAll(async () => {
  home = makeTempDir("gjc-readme-snippets-");
  workspace = path.join(home.path, "work");
  fs.mkdirSync(workspace, { mode: 0o700 });
  agentDir = path.join(home.path, ".gjc", "agent");
  const resolved = resolveManagedScope({ cwd: workspace, agentDir });
  if (resolved.kind === "error") throw new Error(resolved.code);
  const legacyDir = path.join(resolved.scope.sessionsRoot, legacyDirectoryNames(resolved.scope)[0] as string);
  const legacy = SessionManager.create(workspace, legacyDir, undefined, { terminalId: null });
  legacy.appendMessage({ role: "user", content: "a question from before the v2 layout", timestamp: Date.now() });
  legacy.appendMessage({ role: "assistant", content: "an answer stored the old way", timestamp: Date.now() });
  legacyId = legacy.getSessionId();
  await legacy.close();
  compiled = compileSnippets(snippets);
});
afterAll(() => {
  compiled?.remove();
  home?.remove();
});

describe("README snippets", () => {
  it("holds TypeScript only in ts blocks, and some", () => {
    expect(snippets.length).toBeGreaterThan(5);
    const langs = new Set(readmeBlocks().map((b) => b.lang));
    expect([...langs].filter((l) => !["ts", "typescript", "sh", "text"].includes(l))).toEqual([]);
  });

  it("compile with tsc --strict against the package", () => {
    expect(compiled.compile.status, compiled.compile.stdout + compiled.compile.stderr).toBe(0);
  });

  it("run in order to exit status 0, the migration snippet migrating the workspace's legacy session", async () => {
    expect(await legacyStates()).toEqual(["legacy_unmigrated"]);
    snippets.forEach((snippet, i) => {
      const result = runSnippet(compiled.scripts[i] as string, workspace, home.path);
      expect(result.status, `README.md:${snippet.line}: ${result.stderr}`).toBe(0);
    });
    expect(await legacyStates()).toEqual(["migrated_v2"]);
  });
});
