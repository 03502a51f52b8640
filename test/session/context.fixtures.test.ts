import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { buildSessionContext } from "../../src/session/context.js";
import { loadSession, type LoadedSession } from "../../src/session/load.js";
import { SessionTree } from "../../src/session/tree.js";

function load(name: string): LoadedSession {
  const bytes = readFileSync(new URL(`../fixtures/peer-sessions/${name}`, import.meta.url));
  const loaded = loadSession(bytes);
  if (loaded.kind !== "loaded") throw new Error(`${name} did not load: ${loaded.kind}`);
  return loaded;
}

function contextOf(loaded: LoadedSession) {
  const tree = new SessionTree(loaded.entries);
  return { tree, context: buildSessionContext(loaded.entries, tree.getLeafId(), tree.index) };
}

describe("context of the peer fixtures", () => {
  it("gajae v4: the id-less custom tail neither becomes the leaf nor empties the context", () => {
    const loaded = load("gajae-code__session-v4.jsonl");
    const { tree, context } = contextOf(loaded);
    expect(loaded.entries).toHaveLength(4);
    expect(tree.getLeafId()).toBe("aaaa0003");
    expect(context.messages).toHaveLength(1);
    expect(context.messages[0]).toMatchObject({ role: "user" });
    expect(context.thinkingLevel).toBe("inherit");
    expect(context.models).toEqual({ default: "example-provider/example-model" });
    // Without an explicit leaf the context starts from the last entry that has an id, too.
    expect(buildSessionContext(loaded.entries, undefined).messages).toHaveLength(1);
  });

  it("pi large-session head: every message is in context, linear after migration", () => {
    const loaded = load("pi-mono__large-session__v1-head20.jsonl");
    const { tree, context } = contextOf(loaded);
    expect(loaded.entries).toHaveLength(19);
    expect(tree.getPath()).toHaveLength(19);
    const messageEntries = loaded.entries.filter((entry) => entry.type === "message");
    expect(context.messages).toHaveLength(messageEntries.length);
    expect(context.messages).toHaveLength(18);
  });

  it("pi before-compaction excerpt: the dangling kept index keeps nothing before the summary", () => {
    const loaded = load("pi-mono__before-compaction__v1-compaction-excerpt.jsonl");
    const { context } = contextOf(loaded);
    expect(loaded.entries).toHaveLength(5);
    expect(context.messages).toHaveLength(5);
    expect(context.messages[0]).toMatchObject({ role: "compactionSummary", tokensBefore: 175004 });
    expect(context.messages.slice(1).map((message) => message.role)).toEqual(["user", "assistant", "user", "assistant"]);
  });

  it("pi inline-image excerpt: the single tool result is the context", () => {
    const loaded = load("pi-mono__compact-root__v1-inline-image-excerpt.jsonl");
    const { context } = contextOf(loaded);
    expect(context.messages).toHaveLength(1);
    expect(context.messages[0]).toMatchObject({ role: "toolResult" });
  });
});
