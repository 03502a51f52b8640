/**
 * The entries one peer writes and the other lacks: pi's model_change and session_info, GJC's
 * configured_model_chain, cleared roles and context_clear roots, and fromHook.
 */
import { describe, expect, it } from "vitest";
import { buildSessionContext, type ConfiguredModelChain } from "../../src/session/context.js";
import {
  clearModelRoleDraft,
  configuredModelChainDraft,
  CONTEXT_CLEAR_CUSTOM_TYPE,
  contextClearDraft,
  piModelChangeDraft,
  sessionInfoDraft,
} from "../../src/session/entry-drafts.js";
import { buildPiSessionContext, getSessionInfoName, piModelOfPath } from "../../src/session/context.js";
import { type FileEntry, isUnknownEntry, UNKNOWN_ENTRY } from "../../src/session/schemas.js";
import { SessionTree } from "../../src/session/tree.js";
import { header, jsonl, loaded } from "./format-helpers.js";

const ISO = "2026-03-04T05:06:07.000Z";
const base = { parentId: null, timestamp: ISO };

function newTree(): SessionTree {
  return new SessionTree([], { now: () => new Date(ISO) });
}
function user(tree: SessionTree, text: string): string {
  return tree.append({ type: "message", message: { role: "user", content: text } }).id;
}
function assistant(tree: SessionTree, provider: string, model: string): string {
  return tree.append({ type: "message", message: { role: "assistant", provider, model, content: [] } }).id;
}
function context(tree: SessionTree, leaf: string | null | undefined = tree.getLeafId()) {
  return buildSessionContext(tree.getEntries(), leaf, tree.index);
}
function chain(entries: string[], origin = "model_selection", role = "default"): ConfiguredModelChain {
  return { role, entries, origin, identity: "profile-id", explicitHead: true };
}
function reasonOf(entry: FileEntry | undefined): unknown {
  return entry === undefined ? "missing" : (entry as { [UNKNOWN_ENTRY]?: unknown })[UNKNOWN_ENTRY];
}

describe("model_change in either peer's shape", () => {
  it("types model, or provider and modelId; a record with neither is kept as read", () => {
    const session = loaded(
      jsonl(
        header(),
        { type: "model_change", id: "aaaa0001", ...base, model: "p/m", role: "smol" },
        { type: "model_change", id: "aaaa0002", ...base, parentId: "aaaa0001", provider: "p", modelId: "m2" },
        { type: "model_change", id: "aaaa0003", ...base, parentId: "aaaa0002", provider: "p" },
        { type: "model_change", id: "aaaa0004", ...base, parentId: "aaaa0003", model: 5, provider: "p", modelId: "m" },
      ),
    );
    expect(session.entries.map(reasonOf)).toEqual([undefined, undefined, "invalid_fields", "invalid_fields"]);
  });

  it("a pi change sets the default role; a later GJC clear deletes it and blocks inference", () => {
    const tree = newTree();
    tree.append(piModelChangeDraft("p", "m1"));
    expect(context(tree).models).toEqual({ default: "p/m1" });
    assistant(tree, "q", "answerer");
    expect(context(tree).models).toEqual({ default: "p/m1" });
    tree.append(clearModelRoleDraft("default"));
    assistant(tree, "q", "later");
    expect(context(tree).models).toEqual({});
  });

  it("cleared deletes only its role", () => {
    const tree = newTree();
    tree.append({ type: "model_change", model: "p/big" });
    tree.append({ type: "model_change", model: "p/small", role: "smol" });
    tree.append(clearModelRoleDraft("smol"));
    expect(context(tree).models).toEqual({ default: "p/big" });
    expect(tree.getLeafEntry()).toMatchObject({ type: "model_change", model: "", role: "smol", cleared: true });
  });
});

describe("configured_model_chain", () => {
  it("the newest chain per role on the path is in force, with only the chain's fields", () => {
    const tree = newTree();
    tree.append(configuredModelChainDraft(chain(["a/claude"])));
    tree.append(configuredModelChainDraft(chain(["o/gpt", "g/gemini"], "profile_activation")));
    tree.append(configuredModelChainDraft(chain(["r/rev"], "settings", "reviewer")));
    expect(context(tree).configuredModelChains).toEqual({
      default: chain(["o/gpt", "g/gemini"], "profile_activation"),
      reviewer: chain(["r/rev"], "settings", "reviewer"),
    });
  });

  it("branching before a newer assignment restores the prior one", () => {
    const tree = newTree();
    const first = tree.append(configuredModelChainDraft(chain(["a/claude"]))).id;
    tree.append(configuredModelChainDraft(chain(["o/gpt"])));
    tree.branch(first);
    user(tree, "retry from here");
    expect(context(tree).configuredModelChains.default).toEqual(chain(["a/claude"]));
  });

  it("a role with a model but no chain gets a one-model legacy chain; cleared brings it back", () => {
    const tree = newTree();
    tree.append({ type: "model_change", model: "a/claude", role: "default" });
    tree.append({ type: "model_change", model: "o/gpt", role: "small" });
    tree.append(configuredModelChainDraft(chain(["o/gpt", "g/gemini"])));
    const legacySmall = { role: "small", entries: ["o/gpt"], origin: "legacy_session", explicitHead: true };
    expect(context(tree).configuredModelChains).toEqual({ default: chain(["o/gpt", "g/gemini"]), small: legacySmall });
    tree.append(configuredModelChainDraft({ ...chain([]), origin: "rollback", cleared: true }));
    expect(context(tree).configuredModelChains).toEqual({
      default: { role: "default", entries: ["a/claude"], origin: "legacy_session", explicitHead: true },
      small: legacySmall,
    });
  });

  it("the draft drops a caller's runtime fields and copies the entries", () => {
    const entries = ["a/claude", "o/gpt"];
    const sticky = { ...chain(entries), activeIndex: 1, attemptsUsed: 2 } as ConfiguredModelChain;
    const draft = configuredModelChainDraft(sticky);
    expect(draft).toEqual({ type: "configured_model_chain", ...chain(entries) });
    expect(draft.entries).not.toBe(entries);
    expect(configuredModelChainDraft({ role: "r", entries: [], origin: "o" })).toEqual({
      type: "configured_model_chain",
      role: "r",
      entries: [],
      origin: "o",
    });
  });

  it("a chain without explicitHead (as GJC writes some) is typed; one without origin is not", () => {
    const session = loaded(
      jsonl(
        header(),
        { type: "configured_model_chain", id: "aaaa0001", ...base, role: "reviewer", entries: ["t/r"], origin: "session" },
        { type: "configured_model_chain", id: "aaaa0002", ...base, parentId: "aaaa0001", role: "x", entries: [] },
      ),
    );
    expect(session.entries.map(reasonOf)).toEqual([undefined, "invalid_fields"]);
    expect(buildSessionContext(session.entries, "aaaa0001").configuredModelChains).toEqual({
      reviewer: { role: "reviewer", entries: ["t/r"], origin: "session" },
    });
  });
});

describe("context_clear as a root", () => {
  it("starts an empty context and keeps the history; the next append is its child", () => {
    const tree = newTree();
    user(tree, "old question");
    const before = assistant(tree, "p", "m");
    const clear = tree.append(contextClearDraft({ reason: "user" }), { root: true });
    expect(clear).toMatchObject({ type: "custom", customType: CONTEXT_CLEAR_CUSTOM_TYPE, parentId: null, data: { reason: "user" } });
    expect(tree.getLeafId()).toBe(clear.id);
    expect(context(tree).messages).toEqual([]);
    expect(context(tree).models).toEqual({});
    expect(tree.getEntries()).toHaveLength(3);
    expect(context(tree, before).messages).toHaveLength(2);
    const next = user(tree, "fresh start");
    expect(tree.getEntry(next)?.parentId).toBe(clear.id);
    expect(context(tree).messages.map((message) => message.content)).toEqual(["fresh start"]);
    expect(tree.getTree().map((node) => node.entry.id)).toEqual([tree.getEntries()[0]!.id, clear.id]);
  });

  it("without data the entry has no data key", () => {
    expect(contextClearDraft()).toEqual({ type: "custom", customType: "context_clear" });
    expect(Object.keys(contextClearDraft())).not.toContain("data");
  });
});

describe("fromHook (pi's name for fromExtension)", () => {
  it("branchWithSummary writes it; compaction and branch_summary entries carrying it are typed", () => {
    const tree = newTree();
    const a = user(tree, "a");
    const summary = tree.branchWithSummary(a, "left", { fromHook: true });
    expect(summary).toMatchObject({ type: "branch_summary", fromHook: true });
    expect(summary).not.toHaveProperty("fromExtension");
    const session = loaded(
      jsonl(
        header({ version: 3 }),
        { type: "compaction", id: "aaaa0001", ...base, summary: "s", firstKeptEntryId: "x", tokensBefore: 1, fromHook: true },
        { type: "branch_summary", id: "aaaa0002", ...base, parentId: "aaaa0001", fromId: "root", summary: "b", fromHook: false },
        { type: "compaction", id: "aaaa0003", ...base, parentId: "aaaa0002", summary: "s", tokensBefore: 1, fromHook: "yes" },
      ),
    );
    expect(session.entries.map(reasonOf)).toEqual([undefined, undefined, "invalid_fields"]);
  });
});

describe("pi's model rule", () => {
  const path = (tree: SessionTree) => tree.getPath();

  it("an assistant answer after an explicit change overrides it", () => {
    const tree = newTree();
    tree.append(piModelChangeDraft("p", "chosen"));
    expect(piModelOfPath(path(tree))).toEqual({ provider: "p", modelId: "chosen" });
    assistant(tree, "q", "answered");
    expect(piModelOfPath(path(tree))).toEqual({ provider: "q", modelId: "answered" });
    tree.append(piModelChangeDraft("p", "again"));
    expect(piModelOfPath(path(tree))).toEqual({ provider: "p", modelId: "again" });
  });

  it("reads GJC changes: model split at its first slash, other roles ignored, a cleared default is null", () => {
    const tree = newTree();
    expect(piModelOfPath(path(tree))).toBeNull();
    tree.append({ type: "model_change", model: "openrouter/vendor/model-x" });
    expect(piModelOfPath(path(tree))).toEqual({ provider: "openrouter", modelId: "vendor/model-x" });
    tree.append({ type: "model_change", model: "p/small", role: "smol" });
    expect(piModelOfPath(path(tree))).toEqual({ provider: "openrouter", modelId: "vendor/model-x" });
    tree.append(clearModelRoleDraft("default"));
    expect(piModelOfPath(path(tree))).toBeNull();
  });

  it("an assistant message without provider and model names no model", () => {
    const tree = newTree();
    tree.append(piModelChangeDraft("p", "m"));
    tree.append({ type: "message", message: { role: "assistant", content: [] } });
    expect(piModelOfPath(path(tree))).toEqual({ provider: "p", modelId: "m" });
  });

  it("buildPiSessionContext: null leaf is empty, thinking level null reads as off", () => {
    const tree = newTree();
    tree.append({ type: "thinking_level_change", thinkingLevel: "high" });
    user(tree, "hi");
    expect(buildPiSessionContext(tree.getEntries(), null)).toEqual({ messages: [], thinkingLevel: "off", model: null });
    expect(buildPiSessionContext(tree.getEntries()).thinkingLevel).toBe("high");
    tree.append({ type: "thinking_level_change", thinkingLevel: null });
    expect(buildPiSessionContext(tree.getEntries(), undefined, tree.index)).toMatchObject({ thinkingLevel: "off", model: null });
  });
});

describe("session name from session_info entries", () => {
  it("the latest decides, on any branch; names are trimmed; an empty or absent name clears", () => {
    const tree = newTree();
    const root = user(tree, "a");
    tree.append(sessionInfoDraft("  First  "));
    expect(tree.getLeafEntry()).toMatchObject({ type: "session_info", name: "First" });
    expect(getSessionInfoName(tree.getEntries())).toBe("First");
    tree.branch(root);
    tree.append(sessionInfoDraft("On another branch"));
    expect(getSessionInfoName(tree.getEntries())).toBe("On another branch");
    tree.append(sessionInfoDraft("   "));
    expect(getSessionInfoName(tree.getEntries())).toBeUndefined();
    tree.append(sessionInfoDraft("Back"));
    expect(tree.getSessionInfoName()).toBe("Back");
    tree.append({ type: "session_info" });
    expect(getSessionInfoName(tree.getEntries())).toBeUndefined();
    expect(tree.getSessionInfoName()).toBeUndefined();
  });

  it("the tree keeps the same answer as the list, from a loaded file on", () => {
    const session = loaded(
      jsonl(
        header(),
        { type: "session_info", id: "aaaa0001", ...base, name: "Loaded" },
        { type: "message", id: "aaaa0002", ...base, parentId: "aaaa0001", message: { role: "user", content: "x" } },
      ),
    );
    const tree = new SessionTree(session.entries);
    expect(tree.getSessionInfoName()).toBe("Loaded");
    expect(new SessionTree().getSessionInfoName()).toBeUndefined();
  });

  it("a session_info whose name is not a string is kept as read and does not decide", () => {
    const session = loaded(
      jsonl(
        header(),
        { type: "session_info", id: "aaaa0001", ...base, name: "Good" },
        { type: "session_info", id: "aaaa0002", ...base, parentId: "aaaa0001", name: 7 },
      ),
    );
    expect(isUnknownEntry(session.entries[1]!)).toBe(true);
    expect(getSessionInfoName(session.entries)).toBe("Good");
    expect(new SessionTree(session.entries).getSessionInfoName()).toBe("Good");
  });
});
