/**
 * Discovery selection authority: independent MCP and discovered built-in domains, essential
 * built-ins as baseline, empty clears, correlated combined activations, and resume without
 * appends (including v4 files with the legacy combined field).
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager, type SessionManagerOptions, type ToolClassifier } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { assistant, codeOfAsync, readRecords, recordingLogger } from "./helpers.js";

const classifyTool: ToolClassifier = (name) => (name.startsWith("mcp__") ? "mcp" : name === "read" || name === "edit" ? "essential_builtin" : "builtin");

let tmp: { path: string; remove(): void };
let options: SessionManagerOptions;
let sessionDir: string;
const create = (extras: SessionManagerOptions) => SessionManager.create("/w", sessionDir, undefined, extras);

beforeEach(() => {
  tmp = makeTempDir("gjc-manager-selection-");
  sessionDir = path.join(tmp.path, "s");
  options = { terminalId: null, classifyTool, logger: recordingLogger() };
});
afterEach(() => tmp.remove());

function selectionRecords(manager: SessionManager) {
  return manager
    .getEntries()
    .filter((e) => e.type === "mcp_tool_selection" || e.type === "discovered_builtin_tool_selection")
    .map((e) => ({ type: e.type, names: e.selectedToolNames, correlation: e.mutationCorrelationId }));
}

describe("toolNames at session start", () => {
  it("names only MCP tools: MCP authority only, built-in baseline untouched", () => {
    const manager = create({ ...options, toolNames: ["mcp__a", "read"] });
    expect(selectionRecords(manager)).toEqual([{ type: "mcp_tool_selection", names: ["mcp__a"], correlation: undefined }]);
    expect(manager.getToolSelection()).toEqual({ mcp: ["mcp__a"], discoveredBuiltin: undefined });
  });

  it("names only built-ins: discovered built-in authority only, MCP defaults untouched", () => {
    const manager = create({ ...options, toolNames: ["search", "edit"] });
    expect(manager.getToolSelection()).toEqual({ mcp: undefined, discoveredBuiltin: ["search"] });
  });

  it("only essential built-ins establish no authority and persist nothing", () => {
    const manager = create({ ...options, toolNames: ["read", "edit"] });
    expect(manager.getEntries()).toHaveLength(0);
    expect(manager.getToolSelection()).toEqual({ mcp: undefined, discoveredBuiltin: undefined });
  });

  it("an empty list clears both, as two correlated entries, MCP first", () => {
    const manager = create({ ...options, toolNames: [] });
    const records = selectionRecords(manager);
    expect(records.map((r) => [r.type, r.names])).toEqual([
      ["mcp_tool_selection", []],
      ["discovered_builtin_tool_selection", []],
    ]);
    expect(records[0]!.correlation).toBeTypeOf("string");
    expect(records[0]!.correlation).toBe(records[1]!.correlation);
    expect(manager.getToolSelection()).toEqual({ mcp: [], discoveredBuiltin: [] });
  });

  it("names in both domains: one combined activation", async () => {
    const manager = create({ ...options, toolNames: ["search", "mcp__b", "read"] });
    const records = selectionRecords(manager);
    expect(records.map((r) => r.type)).toEqual(["mcp_tool_selection", "discovered_builtin_tool_selection"]);
    expect(records[0]!.correlation).toBe(records[1]!.correlation);
    manager.appendMessage(assistant("a"));
    await manager.close();
    const onDisk = readRecords(manager.getSessionFile()!).slice(1, 3);
    expect(onDisk.map((r) => r.mutationCorrelationId)).toEqual([records[0]!.correlation, records[0]!.correlation]);
  });

  it("non-empty names without a classifier are refused", async () => {
    const { classifyTool: _c, ...bare } = options;
    expect(await codeOfAsync(() => create({ ...bare, toolNames: ["x"] }))).toBe("tool_classifier_required");
    expect(create({ ...bare, toolNames: [] }).getEntries()).toHaveLength(2);
  });

  it("newSession applies its own toolNames to the new session", async () => {
    const manager = create(options);
    await manager.newSession({ toolNames: ["mcp__z"] });
    expect(manager.getToolSelection()).toEqual({ mcp: ["mcp__z"], discoveredBuiltin: undefined });
  });
});

describe("resume", () => {
  it("reconstructs the state without appending anything", async () => {
    const manager = create({ ...options, toolNames: ["mcp__a", "search"] });
    manager.appendMessage(assistant("a"));
    manager.applyToolSelection({ discoveredBuiltin: ["grep_tool"] });
    await manager.close();
    const file = manager.getSessionFile()!;
    const before = fs.readFileSync(file);
    const resumed = await SessionManager.open(file, sessionDir, undefined, undefined, undefined, options);
    expect(resumed.getToolSelection()).toEqual({ mcp: ["mcp__a"], discoveredBuiltin: ["grep_tool"] });
    await resumed.close();
    expect(fs.readFileSync(file).equals(before)).toBe(true);
  });

  it("reads the legacy v4 combined field", async () => {
    const dir = sessionDir;
    fs.mkdirSync(dir, { mode: 0o700 });
    const file = path.join(dir, "v4.jsonl");
    fs.writeFileSync(
      file,
      [
        `{"type":"session","version":4,"id":"s","timestamp":"t","cwd":"/p"}`,
        `{"type":"mcp_tool_selection","id":"aaaa0001","parentId":null,"timestamp":"t","selectedToolNames":["mcp__x"],"selectedDiscoveredBuiltinToolNames":["search"]}`,
        "",
      ].join("\n"),
    );
    const resumed = await SessionManager.open(file, sessionDir, undefined, undefined, undefined, { ...options, readOnly: true });
    expect(resumed.getToolSelection()).toEqual({ mcp: ["mcp__x"], discoveredBuiltin: ["search"] });
  });
});
