import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { FileEntry } from "../../src/session/schemas.js";
import { EntryIndex, SessionTree, type SessionTreeNode } from "../../src/session/tree.js";

type Op =
  | { kind: "append" }
  | { kind: "branch"; pick: number }
  | { kind: "reset" }
  | { kind: "summary"; pick: number; fromRoot: boolean }
  | { kind: "label"; pick: number; clear: boolean };

const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.constant<Op>({ kind: "append" }), weight: 5 },
  fc.record({ kind: fc.constant("branch" as const), pick: fc.nat() }),
  fc.constant<Op>({ kind: "reset" }),
  fc.record({ kind: fc.constant("summary" as const), pick: fc.nat(), fromRoot: fc.boolean() }),
  fc.record({ kind: fc.constant("label" as const), pick: fc.nat(), clear: fc.boolean() }),
);

function countNodes(roots: SessionTreeNode[]): { count: number; entries: Set<FileEntry> } {
  const entries = new Set<FileEntry>();
  const stack = [...roots];
  let count = 0;
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    count += 1;
    entries.add(node.entry);
    stack.push(...node.children);
  }
  return { count, entries };
}

describe("SessionTree invariants (property)", () => {
  it("keep parents resolvable and the leaf path acyclic under any operation sequence", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const tree = new SessionTree();
        const ids: string[] = [];
        let expectedLeaf: string | null = null;
        for (const step of ops) {
          const target = ids.length === 0 ? undefined : ids[("pick" in step ? step.pick : 0) % ids.length];
          switch (step.kind) {
            case "append":
              expectedLeaf = tree.append({ type: "custom", customType: "p" }).id;
              break;
            case "branch":
              if (target === undefined) continue;
              tree.branch(target);
              expectedLeaf = target;
              break;
            case "reset":
              tree.resetLeaf();
              expectedLeaf = null;
              break;
            case "summary": {
              const from = step.fromRoot || target === undefined ? null : target;
              const entry = tree.branchWithSummary(from, "s");
              expect(entry.parentId).toBe(from);
              expect(entry.fromId).toBe(from ?? "root");
              expectedLeaf = entry.id;
              break;
            }
            case "label":
              if (target === undefined) continue;
              expectedLeaf = tree.appendLabel(target, step.clear ? undefined : "L").id;
              expect(tree.getLabel(target)).toBe(step.clear ? undefined : "L");
              break;
          }
          if (step.kind !== "branch" && step.kind !== "reset") ids.push(expectedLeaf!);
          expect(tree.getLeafId()).toBe(expectedLeaf);
        }

        const entries = tree.getEntries();
        expect(entries).toHaveLength(ids.length);
        expect(new Set(ids).size).toBe(ids.length);
        for (const entry of entries) {
          const parent = entry.parentId;
          expect(parent === null || (typeof parent === "string" && tree.getEntry(parent) !== undefined)).toBe(true);
        }
        const path = tree.getPath();
        if (expectedLeaf === null) {
          expect(path).toEqual([]);
        } else {
          expect(path[path.length - 1]!.id).toBe(expectedLeaf);
          expect(path[0]!.parentId).toBeNull();
          expect(new Set(path).size).toBe(path.length);
          for (let i = 1; i < path.length; i++) expect(path[i]!.parentId).toBe(path[i - 1]!.id);
        }
        const { count, entries: inTree } = countNodes(tree.getTree());
        expect(count).toBe(entries.length);
        expect(inTree.size).toBe(entries.length);
      }),
      { numRuns: 200 },
    );
  });

  it("terminate on arbitrary parent links, cycles and dangling parents included", () => {
    const links = fc.array(fc.option(fc.nat({ max: 30 }), { nil: undefined }), {
      minLength: 1,
      maxLength: 25,
    });
    fc.assert(
      fc.property(links, (parents) => {
        // parent index beyond the list dangles; undefined is an explicit root.
        const entries = parents.map(
          (parent, i) =>
            ({
              type: "custom",
              id: `n${i}`,
              parentId: parent === undefined ? null : `n${parent}`,
              timestamp: "t",
              customType: "p",
            }) as FileEntry,
        );
        const tree = new SessionTree(entries);
        for (const entry of entries) {
          const path = tree.getPath(entry.id as string);
          expect(new Set(path).size).toBe(path.length);
          expect(path[path.length - 1]).toBe(entry);
          for (let i = 1; i < path.length; i++) expect(path[i]!.parentId).toBe(path[i - 1]!.id);
        }
        const { count, entries: inTree } = countNodes(tree.getTree());
        expect(count).toBe(entries.length);
        expect(inTree.size).toBe(entries.length);
      }),
      { numRuns: 300 },
    );
  });

  it("walk parent positions exactly like a plain id-map walk, duplicates and late parents included", () => {
    const record = fc.record({
      id: fc.option(fc.integer({ min: 0, max: 12 }), { nil: undefined }),
      parent: fc.option(fc.integer({ min: 0, max: 14 }), { nil: undefined }),
    });
    fc.assert(
      fc.property(fc.array(record, { minLength: 1, maxLength: 30 }), fc.nat({ max: 5 }), (records, appends) => {
        const entries = records.map(
          ({ id, parent }) =>
            ({
              type: "custom",
              ...(id === undefined ? {} : { id: `k${id}` }),
              parentId: parent === undefined ? null : `k${parent}`,
              timestamp: "t",
              customType: "p",
            }) as FileEntry,
        );
        const tree = new SessionTree(entries);
        for (let i = 0; i < appends; i++) tree.append({ type: "custom", customType: "late" });
        const all = tree.getEntries();
        const plain = new Map<string, FileEntry>();
        for (const entry of all) if (typeof entry.id === "string") plain.set(entry.id, entry);
        const fresh = new EntryIndex(all);
        for (const [id, entry] of plain) {
          const expected = referenceWalk(entry, plain);
          expect(tree.getPath(id)).toEqual(expected);
          expect(fresh.pathTo(entry) ?? referenceWalk(entry, fresh)).toEqual(expected);
          expect(tree.index.get(id)).toBe(entry);
        }
        expect(tree.index.size).toBe(plain.size);
        expect([...tree.index.keys()]).toEqual([...plain.keys()]);
      }),
      { numRuns: 300 },
    );
  });
});

/** Independent reference: follow parents through a map, stop at a repeat or a missing parent. */
function referenceWalk(leaf: FileEntry, byId: ReadonlyMap<string, FileEntry>): FileEntry[] {
  const path: FileEntry[] = [];
  const seen = new Set<FileEntry>();
  let node: FileEntry | undefined = leaf;
  while (node !== undefined && !seen.has(node)) {
    seen.add(node);
    path.push(node);
    node = typeof node.parentId === "string" ? byId.get(node.parentId) : undefined;
  }
  return path.reverse();
}
