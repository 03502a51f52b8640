// The README's quick start does what it says when run as written in a fresh home: its block
// (the first TypeScript block, under "## Quick start"), compiled and run on its own, leaves
// exactly one session in the workspace's managed scope below ~/.gjc/agent, holding the two
// messages, and the resumed session is that file.
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { compileSnippets, readmeSection, readmeTsSnippets, runSnippet } from "../helpers/readme.js";
import { makeTempDir } from "../helpers/temp.js";

let home: ReturnType<typeof makeTempDir>;

beforeEach(() => {
  home = makeTempDir("gjc-quickstart-");
});
afterEach(() => {
  home.remove();
});

describe("README quick start", () => {
  it("is the first TypeScript block, under '## Quick start'", () => {
    const section = readmeSection("## Quick start");
    expect(section, "the README has a '## Quick start' section").toBeDefined();
    const first = readmeTsSnippets()[0];
    expect(first).toBeDefined();
    expect(section).toContain(first?.code);
  });

  it("runs as written and leaves one session with both messages in the workspace's managed scope", () => {
    const quickStart = readmeTsSnippets()[0];
    if (quickStart === undefined) throw new Error("no TypeScript block in the README");
    const compiled = compileSnippets([quickStart]);
    try {
      expect(compiled.compile.status, compiled.compile.stdout).toBe(0);
      const workspace = path.join(home.path, "work");
      fs.mkdirSync(workspace);
      const result = runSnippet(compiled.scripts[0] as string, workspace, home.path);
      expect(result.status, result.stderr).toBe(0);

      const sessionsRoot = path.join(home.path, ".gjc", "agent", "sessions");
      const scopes = fs.readdirSync(sessionsRoot).filter((n) => n.startsWith("v2-"));
      expect(scopes).toHaveLength(1);
      const scopeDir = path.join(sessionsRoot, scopes[0] as string);
      const files = fs.readdirSync(scopeDir).filter((n) => n.endsWith(".jsonl"));
      expect(files).toHaveLength(1);
      const file = path.join(scopeDir, files[0] as string);
      const records = fs
        .readFileSync(file, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { type: string; message?: { role: string } });
      expect(records[0]?.type).toBe("session");
      expect(records.filter((r) => r.type === "message").map((r) => r.message?.role)).toEqual(["user", "assistant"]);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      expect(result.stdout.trim().split(" ")).toEqual([file, "2", "2"]);
    } finally {
      compiled.remove();
    }
  });
});
