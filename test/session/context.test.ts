import { describe, expect, it } from "vitest";
import { buildSessionContext } from "../../src/session/context.js";
import { type FileEntry, UNKNOWN_ENTRY } from "../../src/session/schemas.js";
import { EntryIndex, SessionTree } from "../../src/session/tree.js";

const ISO = "2026-03-04T05:06:07.000Z";
const MS = Date.parse(ISO);

function newTree(): SessionTree {
  return new SessionTree([], { now: () => new Date(ISO) });
}

function user(tree: SessionTree, text: string): string {
  return tree.append({ type: "message", message: { role: "user", content: text } }).id;
}

function assistant(tree: SessionTree, text: string, provider = "prov", model = "m1"): string {
  return tree.append({
    type: "message",
    message: { role: "assistant", provider, model, content: [{ type: "text", text }] },
  }).id;
}

function contextOf(tree: SessionTree, leaf: string | null | undefined = tree.getLeafId()) {
  return buildSessionContext(tree.getEntries(), leaf, tree.index);
}

function texts(tree: SessionTree, leaf?: string | null): unknown[] {
  return contextOf(tree, leaf).messages.map((message) => {
    const record = message as Record<string, unknown>;
    if (record.role === "compactionSummary") return `[summary:${String(record.summary)}]`;
    if (record.role === "branchSummary") return `[branch:${String(record.summary)}]`;
    if (record.role === "custom") return `[custom:${String(record.content)}]`;
    const content = record.content;
    return typeof content === "string" ? content : (content as { text: string }[])[0]!.text;
  });
}

function contentOf(message: unknown): unknown {
  return (message as { content?: unknown }).content;
}

function raw(entry: Record<string, unknown>): FileEntry {
  return { timestamp: ISO, ...entry } as FileEntry;
}

describe("buildSessionContext basics", () => {
  it("returns the empty context for a null leaf", () => {
    const tree = newTree();
    user(tree, "hi");
    expect(buildSessionContext(tree.getEntries(), null, tree.index)).toEqual({
      messages: [],
      thinkingLevel: "off",
      serviceTier: undefined,
      models: {},
      configuredModelChains: {},
      injectedTtsrRules: [],
      injectedTtsrRuleRecords: [],
      ttsrMessageCount: 0,
      selectedMCPToolNames: [],
      hasPersistedMCPToolSelection: false,
      selectedDiscoveredBuiltinToolNames: undefined,
      hasPersistedDiscoveredBuiltinToolSelection: false,
      mode: "none",
      modeData: undefined,
    });
  });

  it("passes stored messages through as the same objects, in path order", () => {
    const tree = newTree();
    user(tree, "u1");
    assistant(tree, "a1");
    const context = contextOf(tree);
    expect(texts(tree)).toEqual(["u1", "a1"]);
    const stored = tree.getEntries()[0] as { message: unknown };
    expect(context.messages[0]).toBe(stored.message);
  });

  it("turns custom_message and branch_summary entries into agent messages", () => {
    const tree = newTree();
    const root = user(tree, "u1");
    tree.append({
      type: "custom_message",
      customType: "ext",
      content: "injected",
      display: true,
      details: { d: 1 },
      attribution: "agent",
    });
    expect(contextOf(tree).messages[1]).toEqual({
      role: "custom",
      customType: "ext",
      content: "injected",
      display: true,
      details: { d: 1 },
      attribution: "agent",
      timestamp: MS,
    });
    tree.branchWithSummary(root, "left a branch");
    const messages = contextOf(tree).messages;
    // The custom message is on the abandoned branch now: the summary stands in for it.
    expect(messages).toHaveLength(2);
    expect(messages[1]).toEqual({ role: "branchSummary", summary: "left a branch", fromId: root, timestamp: MS });
  });

  it("drops empty branch summaries and entries that carry no context", () => {
    const tree = newTree();
    user(tree, "u1");
    tree.append({ type: "custom", customType: "state", data: { x: 1 } });
    tree.append({ type: "session_init", systemPrompt: "p", task: "t", tools: [] });
    tree.append({ type: "service_tier_change", serviceTier: "flex" });
    tree.append({ type: "mcp_tool_selection", selectedToolNames: ["s.t"] });
    tree.append({ type: "ttsr_injection", injectedRules: ["r"] });
    tree.append({ type: "model_change", model: "p/m" });
    tree.append({ type: "thinking_level_change", thinkingLevel: "low" });
    tree.append({ type: "mode_change", mode: "plan" });
    tree.appendLabel(tree.getLeafId()!, "l");
    tree.branchWithSummary(tree.getLeafId(), "");
    assistant(tree, "a1");
    expect(texts(tree)).toEqual(["u1", "a1"]);
  });
});

describe("buildSessionContext leaf selection", () => {
  it("uses an explicit leaf in the middle of the path", () => {
    const tree = newTree();
    const u1 = user(tree, "u1");
    assistant(tree, "a1");
    expect(texts(tree, u1)).toEqual(["u1"]);
  });

  it("falls back to the last entry with an id for an undefined or unknown leaf", () => {
    const tree = newTree();
    user(tree, "u1");
    assistant(tree, "a1");
    expect(texts(tree, undefined)).toEqual(["u1", "a1"]);
    expect(texts(tree, "ffffffff")).toEqual(["u1", "a1"]);
  });

  it("does not let an id-less tail record empty the context (gajae v4 shape)", () => {
    const entries: FileEntry[] = [
      raw({ type: "model_change", id: "aaaa0001", parentId: null, model: "example-provider/example-model" }),
      raw({ type: "thinking_level_change", id: "aaaa0002", parentId: "aaaa0001", thinkingLevel: "inherit" }),
      raw({
        type: "message",
        id: "aaaa0003",
        parentId: "aaaa0002",
        message: { role: "user", content: [{ type: "text", text: "hello fixture" }] },
      }),
      { [UNKNOWN_ENTRY]: "invalid_fields", type: "custom", customType: "workflow-intent-diff", data: {} } as FileEntry,
    ];
    const context = buildSessionContext(entries, undefined);
    expect(context.messages).toHaveLength(1);
    expect(context.thinkingLevel).toBe("inherit");
    expect(context.models).toEqual({ default: "example-provider/example-model" });
    expect(new SessionTree(entries).getLeafId()).toBe("aaaa0003");
  });

  it("gives the same result with and without a supplied index", () => {
    const tree = newTree();
    user(tree, "u1");
    tree.append({ type: "compaction", summary: "s", tokensBefore: 1, firstKeptEntryId: tree.getLeafId()! });
    assistant(tree, "a1");
    expect(buildSessionContext(tree.getEntries(), tree.getLeafId())).toEqual(contextOf(tree));
    expect(buildSessionContext([], undefined).messages).toEqual([]);
  });
});

describe("buildSessionContext compaction", () => {
  it("puts the summary first, then the kept entries, then everything after", () => {
    const tree = newTree();
    user(tree, "u1");
    assistant(tree, "a1");
    const u2 = user(tree, "u2");
    assistant(tree, "a2");
    tree.append({
      type: "compaction",
      summary: "S1",
      shortSummary: "short",
      tokensBefore: 1234,
      firstKeptEntryId: u2,
    });
    user(tree, "u3");
    expect(texts(tree)).toEqual(["[summary:S1]", "u2", "a2", "u3"]);
    expect(contextOf(tree).messages[0]).toEqual({
      role: "compactionSummary",
      summary: "S1",
      shortSummary: "short",
      tokensBefore: 1234,
      timestamp: MS,
    });
  });

  it("lets the latest compaction on the path win", () => {
    const tree = newTree();
    const u1 = user(tree, "u1");
    tree.append({ type: "compaction", summary: "S1", tokensBefore: 1, firstKeptEntryId: u1 });
    user(tree, "u2");
    const u3 = user(tree, "u3");
    tree.append({ type: "compaction", summary: "S2", tokensBefore: 2, firstKeptEntryId: u3 });
    assistant(tree, "a3");
    expect(texts(tree)).toEqual(["[summary:S2]", "u3", "a3"]);
  });

  it("keeps across an earlier compaction without replaying its summary", () => {
    const tree = newTree();
    const u1 = user(tree, "u1");
    tree.append({ type: "compaction", summary: "S1", tokensBefore: 1, firstKeptEntryId: u1 });
    user(tree, "u2");
    tree.append({ type: "compaction", summary: "S2", tokensBefore: 2, firstKeptEntryId: u1 });
    expect(texts(tree)).toEqual(["[summary:S2]", "u1", "u2"]);
  });

  it("handles a compaction at the root", () => {
    const tree = newTree();
    tree.append({ type: "compaction", summary: "S0", tokensBefore: 9 });
    user(tree, "u1");
    expect(texts(tree)).toEqual(["[summary:S0]", "u1"]);
  });

  it("keeps nothing before a compaction whose firstKeptEntryId dangles", () => {
    const tree = newTree();
    user(tree, "u1");
    tree.append({ type: "compaction", summary: "S", tokensBefore: 1, firstKeptEntryId: "deadbeef" });
    user(tree, "u2");
    expect(texts(tree)).toEqual(["[summary:S]", "u2"]);
  });

  it("keeps nothing before a compaction whose firstKeptEntryId is absent (v1 dangling index)", () => {
    const tree = newTree();
    user(tree, "u1");
    tree.append({ type: "compaction", summary: "S", tokensBefore: 1 });
    user(tree, "u2");
    expect(texts(tree)).toEqual(["[summary:S]", "u2"]);
  });

  it("ignores a firstKeptEntryId that lies on another branch", () => {
    const tree = newTree();
    const root = user(tree, "u1");
    const other = user(tree, "elsewhere");
    tree.branch(root);
    user(tree, "u2");
    tree.append({ type: "compaction", summary: "S", tokensBefore: 1, firstKeptEntryId: other });
    expect(texts(tree)).toEqual(["[summary:S]"]);
  });

  it("ignores a compaction that is only on an abandoned branch", () => {
    const tree = newTree();
    const root = user(tree, "u1");
    tree.append({ type: "compaction", summary: "S", tokensBefore: 1 });
    tree.branch(root);
    assistant(tree, "a1");
    expect(texts(tree)).toEqual(["u1", "a1"]);
  });

  it("sends preserved remote history as the provider payload instead of kept entries", () => {
    const tree = newTree();
    const u1 = user(tree, "u1");
    const items = [{ type: "message", id: "x" }];
    tree.append({
      type: "compaction",
      summary: "S",
      tokensBefore: 5,
      firstKeptEntryId: u1,
      preserveData: { openaiRemoteCompaction: { provider: "openai", replacementHistory: items } },
    });
    user(tree, "u2");
    const context = contextOf(tree);
    expect(texts(tree)).toEqual(["[summary:S]", "u2"]);
    expect((context.messages[0] as { providerPayload: unknown }).providerPayload).toEqual({
      type: "openaiResponsesHistory",
      provider: "openai",
      items,
    });
  });
});

describe("buildSessionContext runtime state", () => {
  it("follows thinking level and model changes along each branch separately", () => {
    const tree = newTree();
    const root = user(tree, "u1");
    tree.append({ type: "thinking_level_change", thinkingLevel: "high" });
    tree.append({ type: "model_change", model: "prov/big" });
    tree.append({ type: "model_change", model: "prov/small", role: "smol" });
    const branchA = assistant(tree, "a-on-A", "prov", "big");
    tree.branch(root);
    const branchB = assistant(tree, "a-on-B", "other", "m2");

    const a = contextOf(tree, branchA);
    expect(a.thinkingLevel).toBe("high");
    expect(a.models).toEqual({ default: "prov/big", smol: "prov/small" });
    const b = contextOf(tree, branchB);
    expect(b.thinkingLevel).toBe("off");
    expect(b.models).toEqual({ default: "other/m2" });
  });

  it("infers the default model from assistants only until an explicit default change", () => {
    const tree = newTree();
    assistant(tree, "a1", "p1", "x");
    expect(contextOf(tree).models).toEqual({ default: "p1/x" });
    tree.append({ type: "model_change", model: "p2/y", role: "default" });
    assistant(tree, "a2", "p3", "z");
    expect(contextOf(tree).models).toEqual({ default: "p2/y" });
  });

  it("infers the default from the last assistant that names provider and model", () => {
    const tree = newTree();
    tree.append({ type: "model_change", model: "p/s", role: "smol" });
    assistant(tree, "a1", "p1", "x");
    assistant(tree, "a2", "p2", "y");
    tree.append({ type: "message", message: { role: "assistant", content: [], stopReason: "aborted" } });
    user(tree, "u");
    expect(contextOf(tree).models).toEqual({ default: "p2/y", smol: "p/s" });
  });

  it("deletes a role on a cleared model change and treats a null thinking level as off", () => {
    const tree = newTree();
    tree.append({ type: "model_change", model: "p/a", role: "plan" });
    tree.append({ type: "model_change", model: "p/a", role: "plan", cleared: true });
    tree.append({ type: "thinking_level_change", thinkingLevel: "high" });
    tree.append({ type: "thinking_level_change", thinkingLevel: null });
    const context = contextOf(tree);
    expect(context.models).toEqual({});
    expect(context.thinkingLevel).toBe("off");
  });

  it("keeps a model role named __proto__ as a plain key", () => {
    const tree = newTree();
    tree.append({ type: "model_change", model: "p/a", role: "__proto__" });
    const models = contextOf(tree).models;
    expect(Object.getPrototypeOf(models)).toBe(Object.prototype);
    expect(Object.keys(models)).toEqual(["__proto__"]);
  });

  it("tracks service tier, ttsr rules, tool selections and mode", () => {
    const tree = newTree();
    tree.append({ type: "service_tier_change", serviceTier: "flex" });
    tree.append({ type: "ttsr_injection", injectedRules: ["r1", "r2"] });
    tree.append({ type: "ttsr_injection", injectedRules: ["r2", "r3", "r1"] });
    tree.append({ type: "mcp_tool_selection", selectedToolNames: ["a.one"] });
    tree.append({ type: "discovered_builtin_tool_selection", selectedToolNames: ["bm25"] });
    tree.append({ type: "mcp_tool_selection", selectedToolNames: ["a.two"] });
    tree.append({ type: "mode_change", mode: "plan", data: { planFile: "/tmp/p.md" } });
    let context = contextOf(tree);
    expect(context.serviceTier).toBe("flex");
    expect(context.injectedTtsrRules).toEqual(["r1", "r2", "r3"]);
    expect(context.selectedMCPToolNames).toEqual(["a.two"]);
    expect(context.hasPersistedMCPToolSelection).toBe(true);
    expect(context.hasPersistedDiscoveredBuiltinToolSelection).toBe(true);
    expect(context.selectedDiscoveredBuiltinToolNames).toEqual(["bm25"]);
    expect(context.mode).toBe("plan");
    expect(context.modeData).toEqual({ planFile: "/tmp/p.md" });

    tree.append({ type: "service_tier_change", serviceTier: null });
    tree.append({ type: "mcp_tool_selection", selectedToolNames: [], selectedDiscoveredBuiltinToolNames: ["legacy"] });
    tree.append({ type: "mode_change", mode: "none" });
    context = contextOf(tree);
    expect(context.serviceTier).toBeUndefined();
    expect(context.selectedMCPToolNames).toEqual([]);
    expect(context.selectedDiscoveredBuiltinToolNames).toEqual(["legacy"]);
    expect(context.modeData).toBeUndefined();
  });
});

describe("tool selection authority and TTSR records", () => {
  it("a path without selections has none persisted; an empty one is still persisted", () => {
    const tree = newTree();
    user(tree, "hi");
    expect(contextOf(tree)).toMatchObject({ selectedMCPToolNames: [], hasPersistedMCPToolSelection: false, hasPersistedDiscoveredBuiltinToolSelection: false });
    tree.append({ type: "mcp_tool_selection", selectedToolNames: [] });
    expect(contextOf(tree)).toMatchObject({ hasPersistedMCPToolSelection: true, hasPersistedDiscoveredBuiltinToolSelection: false });
    expect(contextOf(tree).selectedDiscoveredBuiltinToolNames).toBeUndefined();
    tree.append({ type: "discovered_builtin_tool_selection", selectedToolNames: [] });
    expect(contextOf(tree)).toMatchObject({ selectedDiscoveredBuiltinToolNames: [], hasPersistedDiscoveredBuiltinToolSelection: true });
  });

  it("keeps one record per rule, the latest record winning, and the latest finite message count", () => {
    const tree = newTree();
    tree.append({ type: "ttsr_injection", injectedRules: ["a", "b"], ttsrMessageCount: 3 });
    tree.append({
      type: "ttsr_injection",
      injectedRules: ["b"],
      injectedRuleRecords: [{ name: "b", lastInjectedAt: 7 }, { name: "c", lastInjectedAt: 9 }, { nameless: true }, "x"],
    });
    tree.append({ type: "ttsr_injection", injectedRules: ["a"], ttsrMessageCount: Number.NaN });
    const context = contextOf(tree);
    expect(context.injectedTtsrRules).toEqual(["a", "b", "c"]);
    expect(context.injectedTtsrRuleRecords).toEqual([
      { name: "a", lastInjectedAt: 0 },
      { name: "b", lastInjectedAt: 7 },
      { name: "c", lastInjectedAt: 9 },
    ]);
    expect(context.ttsrMessageCount).toBe(3);
  });
});

describe("buildSessionContext over damaged files", () => {
  it("terminates on a parent cycle", () => {
    const entries = [
      raw({ type: "message", id: "a", parentId: "c", message: { role: "user", content: "A" } }),
      raw({ type: "message", id: "b", parentId: "a", message: { role: "user", content: "B" } }),
      raw({ type: "message", id: "c", parentId: "b", message: { role: "user", content: "C" } }),
    ];
    expect(buildSessionContext(entries, "c").messages.map(contentOf)).toEqual(["A", "B", "C"]);
  });

  it("starts at the entry whose parent is missing", () => {
    const entries = [
      raw({ type: "message", id: "a", parentId: null, message: { role: "user", content: "A" } }),
      raw({ type: "message", id: "b", parentId: "gone", message: { role: "user", content: "B" } }),
      raw({ type: "message", id: "c", parentId: "b", message: { role: "user", content: "C" } }),
    ];
    expect(buildSessionContext(entries, "c").messages.map(contentOf)).toEqual(["B", "C"]);
  });

  it("links the path through unknown records without taking messages from them", () => {
    const entries = [
      raw({ type: "message", id: "a", parentId: null, message: { role: "user", content: "A" } }),
      { [UNKNOWN_ENTRY]: "unknown_type", type: "hologram", id: "h", parentId: "a", message: { role: "user", content: "H" } } as FileEntry,
      raw({ type: "message", id: "c", parentId: "h", message: { role: "user", content: "C" } }),
    ];
    const context = buildSessionContext(entries, "c", new EntryIndex(entries));
    expect(context.messages.map(contentOf)).toEqual(["A", "C"]);
  });
});
