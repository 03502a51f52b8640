import { describe, expect, it } from "vitest";
import { type FileEntry, UNKNOWN_ENTRY } from "../../src/session/schemas.js";
import { expectCode } from "./format-helpers.js";
import { EntryIndex, pathToRoot, SessionTree, SessionTreeError, type SessionTreeNode } from "../../src/session/tree.js";

const fixedClock = (): Date => new Date("2026-01-02T03:04:05.000Z");

function msg(id: string, parentId: string | null, text = id): FileEntry {
  return {
    type: "message",
    id,
    parentId,
    timestamp: "2026-01-01T00:00:00.000Z",
    message: { role: "user", content: text },
  };
}

function idsOf(entries: readonly FileEntry[]): unknown[] {
  return entries.map((entry) => entry.id);
}

/** Flattens a forest depth-first without recursion (trees here can be very deep). */
function flatten(roots: SessionTreeNode[]): SessionTreeNode[] {
  const out: SessionTreeNode[] = [];
  const stack = [...roots].reverse();
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    out.push(node);
    for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]!);
  }
  return out;
}

describe("SessionTree loading", () => {
  it("takes the last entry with an id as the leaf and keeps id-less records", () => {
    const idless = {
      [UNKNOWN_ENTRY]: "invalid_fields",
      type: "custom",
      customType: "workflow-intent-diff",
      data: {},
    } as FileEntry;
    const tree = new SessionTree([msg("a", null), msg("b", "a"), idless]);
    expect(tree.getLeafId()).toBe("b");
    expect(tree.getEntries()).toHaveLength(3);
    expect(tree.getEntries()[2]).toBe(idless);
    expect(idsOf(tree.getPath())).toEqual(["a", "b"]);
  });

  it("lets an unknown entry with an id become the leaf and link the path", () => {
    const future = {
      [UNKNOWN_ENTRY]: "unknown_type",
      type: "hologram",
      id: "f",
      parentId: "a",
    } as FileEntry;
    const tree = new SessionTree([msg("a", null), future]);
    expect(tree.getLeafId()).toBe("f");
    expect(idsOf(tree.getPath())).toEqual(["a", "f"]);
  });

  it("indexes a duplicated id to its last holder, like the leaf", () => {
    const first = msg("d", null, "first");
    const second = msg("d", null, "second");
    const tree = new SessionTree([first, msg("x", "d"), second]);
    expect(tree.getEntry("d")).toBe(second);
    expect(tree.getLeafId()).toBe("d");
    expect(tree.getEntries()).toHaveLength(3);
    expect(new EntryIndex(tree.getEntries()).get("d")).toBe(second);
  });

  it("is empty with a null leaf when there are no entries", () => {
    const tree = new SessionTree();
    expect(tree.getLeafId()).toBeNull();
    expect(tree.getLeafEntry()).toBeUndefined();
    expect(tree.getPath()).toEqual([]);
    expect(tree.getTree()).toEqual([]);
  });
});

describe("SessionTree.append", () => {
  it("chains each entry to the leaf and makes it the new leaf", () => {
    const tree = new SessionTree([], { now: fixedClock });
    const a = tree.append({ type: "message", message: { role: "user", content: "hi" } });
    const b = tree.append({ type: "thinking_level_change", thinkingLevel: "high" });
    expect(a.parentId).toBeNull();
    expect(b.parentId).toBe(a.id);
    expect(tree.getLeafId()).toBe(b.id);
    expect(tree.getLeafEntry()).toBe(b);
    expect(a.id).toMatch(/^[0-9a-f]{8}$/);
    expect(a.timestamp).toBe("2026-01-02T03:04:05.000Z");
    expect(Object.keys(a)).toEqual(["type", "id", "parentId", "timestamp", "message"]);
  });

  it("owns id, parentId and timestamp even when the draft carries them", () => {
    const tree = new SessionTree([msg("a", null)], { now: fixedClock });
    const draft = { type: "custom", customType: "x", id: "evil", parentId: "nowhere", timestamp: "t" };
    const entry = tree.append(draft as unknown as { type: "custom"; customType: string });
    expect(entry.id).not.toBe("evil");
    expect(entry.parentId).toBe("a");
    expect(entry.timestamp).toBe("2026-01-02T03:04:05.000Z");
    expect(tree.getEntry("evil")).toBeUndefined();
  });

  it("starts a new root after resetLeaf", () => {
    const tree = new SessionTree([msg("a", null), msg("b", "a")]);
    tree.resetLeaf();
    expect(tree.getLeafId()).toBeNull();
    const root = tree.append({ type: "custom", customType: "x" });
    expect(root.parentId).toBeNull();
    expect(idsOf(tree.getPath())).toEqual([root.id]);
  });

  it("never reuses an id already in the session", () => {
    const tree = new SessionTree();
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) seen.add(tree.append({ type: "custom", customType: "x" }).id);
    expect(seen.size).toBe(2000);
  });
});

describe("SessionTree.branch and branchWithSummary", () => {
  it("moves only the leaf", () => {
    const tree = new SessionTree([msg("a", null), msg("b", "a"), msg("c", "b")]);
    tree.branch("a");
    expect(tree.getLeafId()).toBe("a");
    expect(tree.getEntries()).toHaveLength(3);
    const d = tree.append({ type: "custom", customType: "x" });
    expect(d.parentId).toBe("a");
    expect(idsOf(tree.getPath("c"))).toEqual(["a", "b", "c"]);
  });

  it("refuses an unknown id with a typed error and keeps the leaf", () => {
    const tree = new SessionTree([msg("a", null)]);
    expect(() => tree.branch("zzz")).toThrow(SessionTreeError);
    expectCode(() => tree.branch("zzz"), "unknown_entry");
    expectCode(() => tree.branchWithSummary("zzz", "s"), "unknown_entry");
    expectCode(() => tree.getPath("zzz"), "unknown_entry");
    expect(tree.getLeafId()).toBe("a");
    expect(tree.getEntries()).toHaveLength(1);
  });

  it("records the branch point in the summary entry", () => {
    const tree = new SessionTree([msg("a", null), msg("b", "a")], { now: fixedClock });
    const summary = tree.branchWithSummary("a", "tried b", { details: { n: 1 }, fromExtension: true });
    expect(summary).toMatchObject({
      type: "branch_summary",
      parentId: "a",
      fromId: "a",
      summary: "tried b",
      details: { n: 1 },
      fromExtension: true,
    });
    expect(tree.getLeafId()).toBe(summary.id);
  });

  it('uses fromId "root" and a null parent when branching from before the root', () => {
    const tree = new SessionTree([msg("a", null)]);
    const summary = tree.branchWithSummary(null, "start over");
    expect(summary.fromId).toBe("root");
    expect(summary.parentId).toBeNull();
    expect(Object.keys(summary)).toEqual(["type", "id", "parentId", "timestamp", "fromId", "summary"]);
  });
});

describe("SessionTree labels", () => {
  it("sets, replaces and clears labels in order", () => {
    const tree = new SessionTree([msg("a", null)]);
    tree.appendLabel("a", "checkpoint");
    expect(tree.getLabel("a")).toBe("checkpoint");
    tree.appendLabel("a", "renamed");
    expect(tree.getLabel("a")).toBe("renamed");
    const clear = tree.appendLabel("a", undefined);
    expect(tree.getLabel("a")).toBeUndefined();
    expect("label" in clear).toBe(false);
    expect(JSON.stringify(clear)).not.toContain('"label":');
    tree.appendLabel("a", "again");
    tree.appendLabel("a", "");
    expect(tree.getLabel("a")).toBeUndefined();
  });

  it("resolves labels of loaded files and shows them in the tree", () => {
    const label = (id: string, targetId: string, value?: string): FileEntry =>
      ({ type: "label", id, parentId: null, timestamp: "t", targetId, ...(value === undefined ? {} : { label: value }) }) as FileEntry;
    const tree = new SessionTree([msg("a", null), label("l1", "a", "one"), label("l2", "a", "two"), msg("b", "a"), label("l3", "b", "bee"), label("l4", "b")]);
    expect(tree.getLabel("a")).toBe("two");
    expect(tree.getLabel("b")).toBeUndefined();
    const nodeA = flatten(tree.getTree()).find((node) => node.entry.id === "a")!;
    expect(nodeA.label).toBe("two");
  });

  it("refuses to label an entry that does not exist", () => {
    const tree = new SessionTree([msg("a", null)]);
    expectCode(() => tree.appendLabel("nope", "x"), "unknown_entry");
    expect(tree.getEntries()).toHaveLength(1);
  });
});

describe("SessionTree paths over damaged files", () => {
  it("stops a path at a dangling parent", () => {
    const tree = new SessionTree([msg("a", null), msg("b", "missing"), msg("c", "b")]);
    expect(idsOf(tree.getPath())).toEqual(["b", "c"]);
  });

  it("terminates on a parent cycle and lists each member once", () => {
    const tree = new SessionTree([msg("a", "c"), msg("b", "a"), msg("c", "b"), msg("d", "c")]);
    expect(idsOf(tree.getPath())).toEqual(["a", "b", "c", "d"]);
    expect(idsOf(tree.getPath("b"))).toEqual(["c", "a", "b"]);
  });

  it("terminates on an entry that is its own parent", () => {
    const tree = new SessionTree([msg("s", "s"), msg("t", "s")]);
    expect(idsOf(tree.getPath())).toEqual(["s", "t"]);
    const roots = tree.getTree();
    expect(roots.map((node) => node.entry.id)).toEqual(["s"]);
    expect(roots[0]!.children.map((node) => node.entry.id)).toEqual(["t"]);
  });

  it("walks a leaf that is not in the index", () => {
    const byId = new EntryIndex([msg("a", null)]);
    expect(idsOf(pathToRoot(msg("z", "a"), byId))).toEqual(["a", "z"]);
  });

  it("handles a 100k-deep linear session without recursion limits", () => {
    const entries: FileEntry[] = [];
    for (let i = 0; i < 100_000; i++) entries.push(msg(`e${i}`, i === 0 ? null : `e${i - 1}`));
    const tree = new SessionTree(entries);
    expect(tree.getPath()).toHaveLength(100_000);
    expect(flatten(tree.getTree())).toHaveLength(100_000);
  });
});

describe("SessionTree.getTree", () => {
  it("lists children in file order and treats dangling parents as roots", () => {
    const tree = new SessionTree([msg("a", null), msg("b", "a"), msg("c", "a"), msg("d", "gone"), msg("e", "b"), msg("f", "a")]);
    const roots = tree.getTree();
    expect(roots.map((node) => node.entry.id)).toEqual(["a", "d"]);
    expect(roots[0]!.children.map((node) => node.entry.id)).toEqual(["b", "c", "f"]);
    expect(roots[0]!.children[0]!.children.map((node) => node.entry.id)).toEqual(["e"]);
  });

  it("cuts a cycle at its member that comes first in the file", () => {
    // x -> y -> z -> x, and w hangs off z; the cycle is unreachable from any real root.
    const tree = new SessionTree([msg("r", null), msg("w", "z"), msg("y", "x"), msg("x", "z"), msg("z", "y")]);
    const roots = tree.getTree();
    expect(roots.map((node) => node.entry.id)).toEqual(["r", "y"]);
    const all = flatten(roots)
      .map((node) => node.entry.id)
      .sort();
    expect(all).toEqual(["r", "w", "x", "y", "z"]);
    const y = roots[1]!;
    expect(y.children.map((node) => node.entry.id)).toEqual(["z"]);
  });

  it("leaves shadowed duplicates and id-less records out of the tree", () => {
    const idless = { [UNKNOWN_ENTRY]: "invalid_fields", type: "custom" } as FileEntry;
    const tree = new SessionTree([msg("a", null), msg("a", null, "again"), idless]);
    const nodes = flatten(tree.getTree());
    expect(nodes).toHaveLength(1);
    expect(nodes[0]!.entry).toBe(tree.getEntry("a"));
  });
});

describe("EntryIndex", () => {
  it("behaves as a read-only map from id to the last holder of the id", () => {
    const first = msg("a", null, "first");
    const b = msg("b", "a");
    const second = msg("a", null, "second");
    const index = new EntryIndex([first, b, second]);
    const expected: [string, FileEntry][] = [
      ["a", second],
      ["b", b],
    ];
    expect(index.size).toBe(2);
    expect(index.has("a")).toBe(true);
    expect(index.has("zz")).toBe(false);
    expect(index.get("zz")).toBeUndefined();
    expect([...index]).toEqual(expected);
    expect([...index.entries()]).toEqual(expected);
    expect([...index.keys()]).toEqual(["a", "b"]);
    expect([...index.values()]).toEqual([second, b]);
    const seen: [string, FileEntry][] = [];
    index.forEach((entry, id, map) => {
      expect(map).toBe(index);
      seen.push([id, entry]);
    });
    expect(seen).toEqual(expected);
    expect(Object.prototype.toString.call(index)).toBe("[object EntryIndex]");
    // "b" hangs off the id "a", which now resolves to the later holder.
    expect(pathToRoot(b, index)).toEqual([second, b]);
    expect(index.pathTo(first)).toBeUndefined();
  });
});
