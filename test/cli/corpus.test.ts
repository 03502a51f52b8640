// Every session command of the built CLI, human and --json, over the generated corpus of
// real-shaped sessions in a managed scope, each checked against a full parse of the file.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { buildSessionContext, resolveManagedScopeOrThrow, SecureDir, type FileEntry } from "../../src/index.js";
import { corpusShapes, generateSession, parseSessionText, type GeneratedSession, type ParsedSession } from "../helpers/session-corpus.js";
import { makeTempDir } from "../helpers/temp.js";
import { BUILD_HOOK_TIMEOUT_MS, builtCli, runCli } from "./helpers.js";

let base: { path: string; remove(): void };
let agentDir: string;
let workspace: string;
const corpus: { session: GeneratedSession; parsed: ParsedSession; file: string }[] = [];

const cli = (...args: string[]) => runCli([...args, "--agent-dir", agentDir], { cwd: workspace });

function json<T>(result: { stdout: string; stderr: string; status: number | null }): T {
  expect(result.stderr).toBe("");
  expect(result.status).toBe(0);
  return JSON.parse(result.stdout) as T;
}

beforeAll(() => {
  builtCli();
  base = makeTempDir("gjc-cli-corpus-");
  agentDir = path.join(base.path, "agent");
  workspace = path.join(base.path, "workspace");
  fs.mkdirSync(workspace);
  SecureDir.openRoot(agentDir, { create: true }).close();
  const scope = resolveManagedScopeOrThrow({ cwd: workspace, agentDir, mode: "write" });
  const dir = SecureDir.openRoot(agentDir).openDir(["sessions", scope.directoryName]);
  try {
    for (const shape of corpusShapes(scope.canonicalCwd)) {
      const session = generateSession(shape);
      dir.writeFileAtomic(session.name, session.text);
      corpus.push({ session, parsed: parseSessionText(session.text), file: path.join(scope.directoryPath, session.name) });
    }
  } finally {
    dir.close();
  }
}, BUILD_HOOK_TIMEOUT_MS);

afterAll(() => base?.remove());

interface Listed {
  sessions: { id: string; path: string; displayName: string; firstMessage: string; messageCount: number; messageCountIsEstimate: boolean }[];
}

describe("list over the corpus", () => {
  it.each(["list", "list --all"])("%s --json: every session with its exact first message and message count", (command) => {
    const listed = json<Listed>(cli(...command.split(" "), "--json"));
    expect(listed.sessions).toHaveLength(corpus.length);
    for (const { session, parsed } of corpus) {
      const row = listed.sessions.find((s) => s.id === session.id);
      expect(row, session.name).toBeDefined();
      expect(row?.messageCount, session.name).toBe(parsed.messageCount);
      expect(row?.messageCountIsEstimate, session.name).toBe(false);
      expect(row?.firstMessage, session.name).toBe(parsed.firstMessage);
      expect(row?.displayName, session.name).not.toMatch(/^Untitled/);
    }
  });

  it("list: each row's count is exact (no `+`)", () => {
    const result = cli("list");
    expect(result.status, result.stderr).toBe(0);
    const rows = result.stdout.trim().split("\n").slice(1);
    expect(rows).toHaveLength(corpus.length);
    for (const { session, parsed } of corpus) {
      const row = rows.find((line) => line.split(/\s+/)[2] === session.id.slice(0, 8) || line.includes(` ${session.id.slice(0, 8)}`));
      expect(row, session.name).toBeDefined();
      expect(row).toMatch(new RegExp(`\\s${parsed.messageCount}\\s`));
    }
  });
});

describe.each([0, 1, 2, 3, 4, 5])("show and context of corpus session %i", (index) => {
  const at = () => corpus[index] as (typeof corpus)[number];

  it("show prints every entry once, the leaf marked (entries off the path included)", () => {
    const { session, parsed } = at();
    expect(parsed.offPath).toBeGreaterThan(0);
    const result = cli("show", session.id);
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    expect(result.stdout).toContain(`${parsed.entries.length} entries`);
    const treeLines = result.stdout
      .split("\n")
      .slice(4)
      .filter((line) => line.length > 0);
    expect(treeLines).toHaveLength(parsed.entries.length);
    const leafLines = treeLines.filter((line) => line.includes("◀ leaf"));
    expect(leafLines).toHaveLength(1);
    expect(leafLines[0]).toContain(parsed.leafId?.slice(0, 8));
  });

  it("show --json gives the header, every entry and the leaf", () => {
    const { session, parsed, file } = at();
    const shown = json<{ sessionId: string; file: string; leafId: string; entries: { id: string }[]; header: { version: number } }>(
      cli("show", session.id, "--json"),
    );
    expect(shown.sessionId).toBe(session.id);
    expect(shown.file).toBe(file);
    expect(shown.leafId).toBe(parsed.leafId);
    expect(shown.entries.map((e) => e.id)).toEqual(parsed.entries.map((e) => e.id));
  });

  it("context --json at the leaf and at an abandoned entry matches the context of the full parse", () => {
    const { session, parsed } = at();
    const entries = parsed.entries as unknown as FileEntry[];
    const atLeaf = json<{ leafId: string; context: { messages: unknown[] } }>(cli("context", session.id, "--json"));
    expect(atLeaf.leafId).toBe(parsed.leafId);
    expect(atLeaf.context.messages).toEqual(buildSessionContext(entries, parsed.leafId).messages);
    const onPath = new Set(parsed.pathToLeaf);
    const abandoned = parsed.entries.filter((e) => !onPath.has(e.id as string)).at(-1)?.id as string;
    const there = json<{ leafId: string; context: { messages: unknown[] } }>(cli("context", session.id, "--leaf", abandoned, "--json"));
    expect(there.context.messages).toEqual(buildSessionContext(entries, abandoned).messages);
  });

  it("context (human, by file path) prints one row per context message", () => {
    const { parsed, file } = at();
    const result = cli("context", file);
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    const expected = buildSessionContext(parsed.entries as unknown as FileEntry[], parsed.leafId).messages.length;
    const rows = result.stdout
      .split("\n")
      .slice(3)
      .filter((line) => /^\d+\s/.test(line));
    expect(rows).toHaveLength(expected);
  });
});

describe("the other commands over the corpus", () => {
  it("audit --json: clean, every corpus session checked line by line", () => {
    const result = cli("audit", "--json");
    expect(result.stderr).toBe("");
    const report = JSON.parse(result.stdout) as { clean: boolean; counts: { sessions: number; errors: number } };
    expect(report).toMatchObject({ clean: true, counts: { sessions: corpus.length, errors: 0 } });
    expect(result.status).toBe(0);
    expect(cli("audit").stdout).toContain("clean: no findings");
  });

  it("migrate --dry-run and history find nothing to do", () => {
    const migrate = cli("migrate", "--dry-run");
    expect(migrate.status, migrate.stderr).toBe(0);
    expect(migrate.stderr).toBe("");
    expect(cli("history", "recent").stdout).toBe("no prompts\n");
    expect(json<unknown[]>(cli("history", "search", "parser", "--json"))).toEqual([]);
  });
});

describe("reading leaves the files as they were", () => {
  it("list, show and context rewrite no session file", () => {
    for (const { session, file } of corpus) expect(fs.readFileSync(file, "utf8"), session.name).toBe(session.text);
  });
});
