/**
 * A pi v3 session read faithfully: pi's model changes and session names are typed entries, the
 * model in context follows them (by the spec's rule, and by pi's for a pi facade), and a
 * rewrite keeps them byte for byte.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { buildSessionContext } from "../../src/session/context.js";
import { piModelChangeDraft, sessionInfoDraft } from "../../src/session/entry-drafts.js";
import { serializeRecord } from "../../src/session/jsonl.js";
import { serializeSessionLines } from "../../src/session/load.js";
import { buildPiSessionContext, getSessionInfoName } from "../../src/session/context.js";
import { isUnknownEntry } from "../../src/session/schemas.js";
import { SessionTree } from "../../src/session/tree.js";
import { computeUsageStatistics } from "../../src/session/usage.js";
import { loaded } from "./format-helpers.js";

const FILE = new URL("../fixtures/pi-sessions/pi-v3-model-switches.jsonl", import.meta.url);
const text = readFileSync(FILE, "utf8");

function session() {
  const result = loaded(text);
  return { result, tree: new SessionTree(result.entries) };
}

describe("a pi v3 file", () => {
  it("types every entry, pi's model_change and session_info included, fields as pi wrote them", () => {
    const { result } = session();
    expect(result.unknownEntries).toBe(0);
    const changes = result.entries.filter((entry) => entry.type === "model_change");
    expect(changes.map((entry) => [entry.provider, entry.modelId])).toEqual([
      ["faux", "faux-1"],
      ["faux", "faux-2"],
      ["faux", "faux-3"],
    ]);
    for (const change of changes) {
      expect(isUnknownEntry(change)).toBe(false);
      expect(change).not.toHaveProperty("model");
      expect(change).not.toHaveProperty("role");
    }
    const infos = result.entries.filter((entry) => entry.type === "session_info");
    expect(infos.map((entry) => [isUnknownEntry(entry), entry.name])).toEqual([
      [false, "First name"],
      [false, "Renamed"],
    ]);
    const compaction = result.entries.find((entry) => entry.type === "compaction");
    expect(compaction).toMatchObject({ fromHook: false, details: { readFiles: ["src/a.ts"] } });
  });

  it("session_info entries are tree entries: they have parents and take part in the path", () => {
    const { tree } = session();
    const path = tree.getPath().map((entry) => entry.type);
    expect(path.filter((type) => type === "session_info")).toHaveLength(2);
    expect(tree.getEntry("6f7a8b9c")?.parentId).toBe("4d5e6f7a");
  });

  it("the spec's context follows pi's model changes; an explicit change blocks later inference", () => {
    const { tree } = session();
    const at = (leaf: string) => buildSessionContext(tree.getEntries(), leaf, tree.index).models;
    expect(at("0a1b2c3d")).toEqual({ default: "faux/faux-1" });
    expect(at("4d5e6f7a")).toEqual({ default: "faux/faux-2" });
    // The leaf: a change to faux-3, then an answer from faux-2.
    expect(at("be2f3a4b")).toEqual({ default: "faux/faux-3" });
    expect(buildSessionContext(tree.getEntries(), "be2f3a4b", tree.index).configuredModelChains).toEqual({
      default: { role: "default", entries: ["faux/faux-3"], origin: "legacy_session", explicitHead: true },
    });
  });

  it("pi's rule: the last of a model change and an assistant answer on the path decides", () => {
    const { tree } = session();
    const pi = (leaf: string) => buildPiSessionContext(tree.getEntries(), leaf, tree.index);
    expect(pi("9c0d1e2f").model).toEqual({ provider: "faux", modelId: "faux-2" });
    expect(pi("ad1e2f3a").model).toEqual({ provider: "faux", modelId: "faux-3" });
    const leaf = pi("be2f3a4b");
    expect(leaf.model).toEqual({ provider: "faux", modelId: "faux-2" });
    expect(leaf.thinkingLevel).toBe("medium");
    // The messages are the spec's: summary, kept entries from the second user message, the rest.
    expect(leaf.messages).toEqual(buildSessionContext(tree.getEntries(), "be2f3a4b", tree.index).messages);
    expect(leaf.messages.map((message) => message.role)).toEqual(["compactionSummary", "user", "assistant", "toolResult", "assistant", "user", "assistant"]);
  });

  it("the session name is the latest session_info's", () => {
    const { result } = session();
    expect(getSessionInfoName(result.entries)).toBe("Renamed");
    expect(getSessionInfoName(result.entries.slice(0, 6))).toBe("First name");
    expect(getSessionInfoName(result.entries.slice(0, 4))).toBeUndefined();
  });

  it("usage totals count assistant usage and the task tool's sub-agent usage", () => {
    const { result } = session();
    expect(computeUsageStatistics(result.entries)).toEqual({
      totals: { input: 690, output: 105, cacheRead: 15, cacheWrite: 1, premiumRequests: 0, cost: 1.6875 },
      skipped: 0,
    });
  });

  it("entries appended from pi's drafts are written as pi writes them, key order included", () => {
    const lines = text.split("\n");
    for (const [index, draft] of [
      [6, piModelChangeDraft("faux", "faux-2")],
      [11, sessionInfoDraft(" Renamed ")],
    ] as const) {
      const original = JSON.parse(lines[index]!) as { id: string; parentId: string; timestamp: string };
      const tree = new SessionTree(
        loaded(text).entries.filter((entry) => entry.id === original.parentId),
        {
          now: () => new Date(original.timestamp),
        },
      );
      const appended = tree.append(draft);
      expect(serializeRecord({ ...appended, id: original.id })).toBe(`${lines[index]}\n`);
    }
  });

  it("a rewrite keeps every pi record byte for byte; only the header version changes", () => {
    const { result } = session();
    const rewritten = serializeSessionLines(result.lines).toString("utf8");
    expect(rewritten).toBe(text.replace('"version":3', '"version":5'));
    const again = loaded(rewritten);
    expect(again.unknownEntries).toBe(0);
    expect(getSessionInfoName(again.entries)).toBe("Renamed");
  });
});
