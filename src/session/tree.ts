/**
 * The session tree: append-only entries linked by `parentId`, plus one mutable pointer (the
 * leaf) that says where the conversation currently is. Branching moves the pointer; nothing
 * that was written is ever changed or removed.
 *
 * Files are not trusted to be well formed. Duplicate ids, parents that do not exist and even
 * parent cycles occur in damaged or hand-edited files, so every walk here terminates and
 * none of them throws on such data.
 */

import { GjcError } from "../errors.js";
import { newEntryId } from "./ids.js";
import type { AgentMessage } from "./messages.js";
import { APPEND, AT, ATTACH, EntryIndex, pathToRoot, RECORDS, type DeferredEntries } from "./entry-index.js";
import {
  entryIdOf,
  type FileEntry,
  isUnknownEntry,
  type LabelEntry,
  parentIdOf,
  type SessionEntry,
  type SessionInfoEntry,
  sessionInfoName,
} from "./schemas.js";

export { EntryIndex, indexEntries, pathToRoot, type DeferredEntries, type EntryKeys } from "./entry-index.js";

/** Why a tree operation was refused. `unknown_entry`: no entry has the given id. */
export type SessionTreeErrorCode = "unknown_entry";

/** Thrown by {@link SessionTree}; branch on `code`. */
export class SessionTreeError extends GjcError<SessionTreeErrorCode> {}

type BaseField = "id" | "parentId" | "timestamp";

/**
 * An entry as a caller hands it to {@link SessionTree.append}: everything except the fields
 * the tree owns (`id`, `parentId`, `timestamp`). Key remapping, not `Omit`, because `Omit`
 * collapses the loose entry types (which carry an index signature) to the index signature.
 * A `message` draft takes an {@link AgentMessage}, not any stored message: a role this
 * version can read but no agent writes (a misspelt one) is refused at compile time.
 */
export type EntryDraft = SessionEntry extends infer E
  ? E extends SessionEntry
    ? { [K in keyof E as K extends BaseField ? never : K]: E[K] } & (E extends { type: "message" }
        ? { message: AgentMessage }
        : unknown)
    : never
  : never;

/** The entry {@link SessionTree.append} creates from a draft of type `D`. */
export type AppendedEntry<D extends EntryDraft> = Extract<SessionEntry, { type: D["type"] }>;

/** One node of {@link SessionTree.getTree}. */
export interface SessionTreeNode {
  entry: FileEntry;
  /** Children in file order. */
  children: SessionTreeNode[];
  /** The entry's current label, if any. */
  label: string | undefined;
}

/**
 * A root-to-leaf path read by position: `type` and `id` cost nothing, an entry is read when
 * asked for. {@link arrayPathView} wraps a path already in memory.
 */
export interface PathView {
  readonly length: number;
  typeAt(i: number): string;
  idAt(i: number): string | undefined;
  /** the entries at path positions `indices` (ascending), read together */
  entriesAt(indices: readonly number[]): FileEntry[];
}

/** A {@link PathView} over `path`. */
export function arrayPathView(path: readonly FileEntry[]): PathView {
  return {
    length: path.length,
    typeAt: (i) => path[i]!.type,
    idAt: (i) => entryIdOf(path[i]!),
    entriesAt: (indices) => indices.map((i) => path[i]!),
  };
}

/**
 * The first value `pick` gives for the `message` records among positions `0..count`, taken
 * from the last backwards, read a few at a time in growing batches: what is looked for (the
 * last assistant message, its model) is nearly always among the last few.
 */
export function findLastMessage<T>(
  count: number,
  typeAt: (i: number) => string,
  read: (indices: number[]) => FileEntry[],
  pick: (entry: FileEntry) => T | undefined,
): T | undefined {
  let batch = 4;
  for (let to = count; to > 0; batch *= 4) {
    const indices: number[] = [];
    for (let i = to - 1; i >= 0 && indices.length < batch; i--) {
      to = i;
      if (typeAt(i) === "message") indices.push(i);
    }
    indices.reverse();
    const entries = read(indices);
    for (let k = entries.length - 1; k >= 0; k--) {
      const found = pick(entries[k]!);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/** Options of a {@link SessionTree}. */
export interface SessionTreeOptions {
  /** Source of the timestamps of appended entries (injectable for deterministic tests). */
  now?: () => Date;
}

/** Options of {@link SessionTree.append}. */
export interface AppendOptions {
  /**
   * Append the entry as a new root (`parentId: null`) instead of as a child of the leaf. It
   * still becomes the leaf, so the context starts over from it while every earlier entry
   * stays in the file (GJC's `context_clear`).
   */
  root?: boolean;
}

/** Optional fields of the `branch_summary` entry written by {@link SessionTree.branchWithSummary}. */
export interface BranchSummaryOptions {
  details?: unknown;
  fromExtension?: boolean;
  /** pi's name for the same flag; written as `fromHook` */
  fromHook?: boolean;
}

/**
 * The entries of one session as a tree with a leaf pointer.
 *
 * - The index maps each id to the *last* entry in file order carrying it, so a duplicated id
 *   resolves the same way the leaf does; earlier holders of the id stay in
 *   {@link getEntries} but are not reachable by id.
 * - The leaf is the last entry in file order that has a string id. Records without an id
 *   (such as an id-less `custom` written by an old tool) are kept but never become the leaf:
 *   a leaf without an id would cut the whole conversation out of the context.
 * - Appends cost O(1): no per-append scan, copy or re-index.
 */
export class SessionTree {
  readonly #byId = new EntryIndex();
  readonly #labels = new Map<string, string>();
  /** The latest `session_info` in file order: it alone decides the session's name. */
  #sessionInfo: SessionInfoEntry | undefined;
  readonly #now: () => Date;
  #leafId: string | null = null;

  /**
   * @param entries - the non-header records of a loaded session in file order (typed and
   *   unknown alike). The array is copied; the entry objects are shared, never modified.
   */
  constructor(entries: Iterable<FileEntry> = [], options: SessionTreeOptions = {}) {
    this.#now = options.now ?? (() => new Date());
    for (const entry of entries) this.#add(entry);
  }

  /** The id of the current leaf, or `null` when the next append starts a new root. */
  getLeafId(): string | null {
    return this.#leafId;
  }

  /** The current leaf entry, or `undefined` when the leaf is `null`. */
  getLeafEntry(): FileEntry | undefined {
    return this.#leafId === null ? undefined : this.#byId.get(this.#leafId);
  }

  /** The entry indexed under `id`. */
  getEntry(id: string): FileEntry | undefined {
    return this.#byId.get(id);
  }

  /**
   * A tree over deferred entries (see {@link DeferredEntries}): only the label and
   * `session_info` records are read now; the rest when first needed.
   */
  static deferred(entries: DeferredEntries, options: SessionTreeOptions = {}): SessionTree {
    const tree = new SessionTree([], options);
    const index = tree.#byId;
    index[ATTACH](entries);
    const { keys } = entries;
    for (let i = keys.count - 1; i >= 0 && tree.#leafId === null; i--) if (keys.hasId(i)) tree.#leafId = keys.idAt(i)!;
    const labels: number[] = [];
    const infos: number[] = [];
    for (let i = 0; i < keys.count; i++) {
      const type = keys.typeAt(i);
      if ((type === "label" || type === "session_info") && keys.hasId(i)) (type === "label" ? labels : infos).push(i);
    }
    for (const entry of index[AT](labels)) tree.#note(entry);
    for (let k = infos.length - 1; k >= 0 && tree.#sessionInfo === undefined; k--) tree.#note(index[AT]([infos[k]!])[0]!);
    return tree;
  }

  /** Every record in insertion (file) order, including id-less and unknown ones. A live view. */
  getEntries(): readonly FileEntry[] {
    return this.#byId[RECORDS];
  }

  /**
   * The root-to-`leafId` path as a {@link PathView} (default: the current leaf), reading only
   * the records a caller asks for; `undefined` for a `null` leaf.
   * @throws {@link SessionTreeError} `unknown_entry` for an id that is not indexed
   */
  pathView(leafId: string | null = this.#leafId): PathView | undefined {
    if (leafId === null) return undefined;
    const start = this.#byId.positionOf(leafId);
    if (start === undefined) throw new SessionTreeError("unknown_entry", `Entry ${leafId} not found`);
    const index = this.#byId;
    const positions = index.pathPositions(start);
    if (positions === undefined) return arrayPathView(this.getPath(leafId));
    return {
      length: positions.length,
      typeAt: (i) => index.typeAt(positions[i]!),
      idAt: (i) => index.idAt(positions[i]!),
      entriesAt: (indices) => index[AT](indices.map((i) => positions[i]!)),
    };
  }

  /**
   * The id index, for {@link buildSessionContext}'s `byId` argument. A live view; walks over
   * it (there and in {@link pathToRoot}) use the parent positions it keeps and cost a few
   * array reads per step instead of a hash lookup.
   */
  get index(): EntryIndex {
    return this.#byId;
  }

  /** The resolved label of `id` after every label entry so far, in file order. */
  getLabel(id: string): string | undefined {
    return this.#labels.get(id);
  }

  /**
   * The session's display name from its `session_info` entries: the latest one added decides,
   * on any branch; an empty or absent name clears it (see `getSessionInfoName`, the same rule
   * over a list).
   */
  getSessionInfoName(): string | undefined {
    return this.#sessionInfo === undefined ? undefined : sessionInfoName(this.#sessionInfo);
  }

  /**
   * Appends one entry as a child of the current leaf (or as a new root, see
   * {@link AppendOptions.root}) and makes it the leaf. The tree assigns a fresh id (unique in
   * this session), the parent and the timestamp; fields of the same names in `draft` are
   * ignored.
   */
  append<D extends EntryDraft>(draft: D, options: AppendOptions = {}): AppendedEntry<D> {
    const id = newEntryId((candidate) => this.#byId.has(candidate));
    const parentId = options.root === true ? null : this.#leafId;
    const timestamp = this.#now().toISOString();
    // The literal fixes the key order of the written line; the assignments after the spread
    // make sure a draft cannot smuggle in its own id, parent or time.
    const head: Record<string, unknown> = { type: draft.type, id, parentId, timestamp };
    const entry: Record<string, unknown> = { ...head, ...draft };
    entry.id = id;
    entry.parentId = parentId;
    entry.timestamp = timestamp;
    this.#add(entry as FileEntry);
    return entry as AppendedEntry<D>;
  }

  /**
   * Moves the leaf to `id` so that the next append branches from there. Nothing is written.
   *
   * @throws {@link SessionTreeError} `unknown_entry`
   */
  branch(id: string): void {
    this.#require(id);
    this.#leafId = id;
  }

  /** Clears the leaf: the next append becomes a new root (`parentId: null`). */
  resetLeaf(): void {
    this.#leafId = null;
  }

  /**
   * Moves the leaf to `branchFromId` and appends a `branch_summary` describing the path that
   * was left. `null` branches from before the first entry; the summary then records `fromId`
   * as the literal `"root"` and becomes a new root itself.
   *
   * @throws {@link SessionTreeError} `unknown_entry`
   */
  branchWithSummary(
    branchFromId: string | null,
    summary: string,
    options: BranchSummaryOptions = {},
  ): AppendedEntry<{ type: "branch_summary"; fromId: string; summary: string }> {
    if (branchFromId === null) this.resetLeaf();
    else this.branch(branchFromId);
    return this.append({
      type: "branch_summary",
      fromId: branchFromId ?? "root",
      summary,
      // Absent rather than `undefined`, so the written line carries no empty keys.
      ...(options.details === undefined ? {} : { details: options.details }),
      ...(options.fromExtension === undefined ? {} : { fromExtension: options.fromExtension }),
      ...(options.fromHook === undefined ? {} : { fromHook: options.fromHook }),
    });
  }

  /**
   * Appends a `label` entry that sets the label of `targetId`, or clears it when `label` is
   * `undefined` or empty.
   *
   * @throws {@link SessionTreeError} `unknown_entry` when `targetId` is not in the tree
   */
  appendLabel(targetId: string, label: string | undefined): LabelEntry {
    this.#require(targetId);
    const draft = label === undefined
      ? ({ type: "label", targetId } as const)
      : ({ type: "label", targetId, label } as const);
    return this.append(draft);
  }

  /**
   * The entries from the root down to `leafId` (default: the current leaf). A walk stops at a
   * missing parent or at an entry it has already visited, so it always terminates.
   *
   * @returns `[]` when the leaf is `null`
   * @throws {@link SessionTreeError} `unknown_entry` for an explicit id that is not indexed
   */
  getPath(leafId: string | null = this.#leafId): FileEntry[] {
    if (leafId === null) return [];
    return pathToRoot(this.#require(leafId), this.#byId);
  }

  /**
   * The whole tree as nodes, children in file order. Roots are entries with a `null` or
   * missing parent. A parent cycle is cut once, at the member that comes first in the file,
   * which then becomes a root: the result is always a finite forest and loses no indexed
   * entry. Records without an id are not part of the tree.
   */
  getTree(): SessionTreeNode[] {
    const nodes = new Map<FileEntry, SessionTreeNode>();
    const order = new Map<SessionTreeNode, number>();
    for (const entry of this.#byId[RECORDS]) {
      const id = entryIdOf(entry);
      if (id === undefined || this.#byId.get(id) !== entry) continue;
      const node: SessionTreeNode = { entry, children: [], label: this.#labels.get(id) };
      nodes.set(entry, node);
      order.set(node, order.size);
    }
    const nodeParent = (node: SessionTreeNode): SessionTreeNode | undefined => {
      const parent = this.#parentOf(node.entry);
      return parent === undefined ? undefined : nodes.get(parent);
    };
    const roots: SessionTreeNode[] = [];
    for (const node of nodes.values()) {
      const parent = nodeParent(node);
      if (parent === undefined || parent === node) roots.push(node);
      else parent.children.push(node);
    }
    const reached = new Set<SessionTreeNode>();
    for (const root of roots) markSubtree(root, reached);
    if (reached.size === nodes.size) return roots;
    // Whatever was not reached hangs off a parent cycle. Cut each cycle at its earliest member.
    for (const node of nodes.values()) {
      if (reached.has(node)) continue;
      const cut = earliestCycleMember(node, nodeParent, order);
      const siblings = nodeParent(cut)!.children;
      siblings.splice(siblings.indexOf(cut), 1);
      roots.push(cut);
      markSubtree(cut, reached);
    }
    return roots.sort((a, b) => order.get(a)! - order.get(b)!);
  }

  #parentOf(entry: FileEntry): FileEntry | undefined {
    const parent = parentIdOf(entry);
    return typeof parent === "string" ? this.#byId.get(parent) : undefined;
  }

  #require(id: string): FileEntry {
    const entry = this.#byId.get(id);
    if (entry === undefined) throw new SessionTreeError("unknown_entry", `Entry ${id} not found`);
    return entry;
  }

  #add(entry: FileEntry): void {
    this.#byId[APPEND](entry);
    const id = entryIdOf(entry);
    if (id === undefined) return;
    this.#leafId = id;
    this.#note(entry);
  }

  /** Takes in what a label or `session_info` record (with an id) says. */
  #note(entry: FileEntry): void {
    if (entry.type === "session_info" && !isUnknownEntry(entry)) this.#sessionInfo = entry as SessionInfoEntry;
    if (entry.type === "label" && !isUnknownEntry(entry)) {
      const { targetId, label } = entry as LabelEntry;
      if (label === undefined || label === "") this.#labels.delete(targetId);
      else this.#labels.set(targetId, label);
    }
  }
}


/** Iterative, because a linear session of 100k entries is a tree 100k levels deep. */
function markSubtree(root: SessionTreeNode, reached: Set<SessionTreeNode>): void {
  const stack = [root];
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    if (reached.has(node)) continue;
    reached.add(node);
    for (const child of node.children) stack.push(child);
  }
}

/** Follows parents from `start` into the cycle it hangs off; returns the member first in file order. */
function earliestCycleMember(
  start: SessionTreeNode,
  parentOf: (node: SessionTreeNode) => SessionTreeNode | undefined,
  order: ReadonlyMap<SessionTreeNode, number>,
): SessionTreeNode {
  const seen = new Set<SessionTreeNode>();
  let node = start;
  while (!seen.has(node)) {
    seen.add(node);
    // A node that was not reached always has a parent: a node without one is a root.
    node = parentOf(node)!;
  }
  let earliest = node;
  for (let member = parentOf(node)!; member !== node; member = parentOf(member)!) {
    if (order.get(member)! < order.get(earliest)!) earliest = member;
  }
  return earliest;
}
