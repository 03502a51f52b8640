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
    const { ids, types } = entries;
    for (let i = ids.length - 1; i >= 0; i--) {
      if (ids[i] !== undefined) {
        tree.#leafId = ids[i]!;
        break;
      }
    }
    const labels: number[] = [];
    const infos: number[] = [];
    types.forEach((type, i) => {
      if (ids[i] === undefined) return;
      if (type === "label") labels.push(i);
      else if (type === "session_info") infos.push(i);
    });
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

/** Keys of the index's tree-only members; not exported, so only this module can reach them. */
const RECORDS: unique symbol = Symbol("records");
const APPEND: unique symbol = Symbol("append");
const ATTACH: unique symbol = Symbol("attach");
const AT: unique symbol = Symbol("at");

/**
 * Entries known by their keys before they are read: the `id`, `parentId` and `type` of each
 * record in file order (as {@link entryIdOf} and {@link parentIdOf} would give them), and a
 * way to read the records themselves. A tree built over such entries reads a record the
 * first time something needs it, and keeps it from then on.
 */
export interface DeferredEntries {
  /** Taken over by the tree (appends extend them): hand over arrays no one else keeps. */
  readonly ids: readonly (string | undefined)[];
  readonly parentIds: readonly (string | null | undefined)[];
  readonly types: readonly string[];
  /**
   * The records at `positions` (ascending), in that order. May throw (an unreadable or
   * changed file); nothing is kept then.
   */
  load(positions: readonly number[]): FileEntry[];
}

/**
 * The id index of a {@link SessionTree}: a read-only map from id to the last entry in file
 * order carrying it, which also keeps, for every entry position, the position of its parent.
 *
 * Walking a 100k-entry path through a `Map` costs a hash probe and several cache misses per
 * step (tens of milliseconds); walking parent positions costs an array read. The positions
 * are maintained as entries are added: the common case, a parent that is the entry added just
 * before, needs no lookup at all. Data that would make a stored position wrong (a duplicated
 * id, or a parent that appears after its child) marks the positions stale, and the next walk
 * recomputes them once.
 *
 * Entries may be deferred (see {@link DeferredEntries}): only their keys are held, and a
 * record is read when a lookup, a walk or a listing first reaches it.
 */
export class EntryIndex implements ReadonlyMap<string, FileEntry> {
  readonly #entries: (FileEntry | undefined)[] = [];
  #ids: (string | undefined)[] = [];
  #parentIds: (string | null | undefined)[] = [];
  #types: string[] = [];
  readonly #positions = new Map<string, number>();
  /** Parent position per entry position; -1 for a root or a parent that is not indexed. */
  #parents: number[] = [];
  /** Parent ids that were not indexed when their child was added. */
  #unresolved = new Set<string>();
  #stale = false;
  #lastId: string | undefined;
  #lastPosition = -1;
  #deferred: DeferredEntries | undefined;
  /** positions not read yet */
  #missing = 0;

  /** Indexes `entries` (file order); the list is copied, the entry objects are shared. */
  constructor(entries: Iterable<FileEntry> = []) {
    for (const entry of entries) this[APPEND](entry);
  }

  /** Module-private: the records in order (every deferred one read), shared with the owning tree. */
  get [RECORDS](): readonly FileEntry[] {
    if (this.#missing > 0) {
      const positions: number[] = [];
      for (let i = 0; i < this.#entries.length; i++) if (this.#entries[i] === undefined) positions.push(i);
      this.#read(positions);
    }
    return this.#entries as FileEntry[];
  }

  /** Module-private: adds the next record in file order. */
  [APPEND](entry: FileEntry): void {
    this.#entries.push(entry);
    this.#addKeys(entryIdOf(entry), parentIdOf(entry), entry.type);
  }

  /** Module-private: adds every record of `deferred` (an empty index only), none read yet. */
  [ATTACH](deferred: DeferredEntries): void {
    this.#deferred = deferred;
    const { ids, parentIds, types } = deferred;
    const count = ids.length;
    this.#entries.length = count;
    this.#missing = count;
    // The same bookkeeping as #addKeys, in one tight pass; the columns are taken, not copied.
    this.#ids = ids as (string | undefined)[];
    this.#parentIds = parentIds as (string | null | undefined)[];
    this.#types = types as string[];
    const parents = new Array<number>(count);
    const positions = this.#positions;
    let lastId: string | undefined;
    let lastPosition = -1;
    for (let i = 0; i < count; i++) {
      const parent = parentIds[i];
      let parentPosition = -1;
      if (typeof parent === "string") {
        if (parent === lastId) parentPosition = lastPosition;
        else {
          const found = positions.get(parent);
          if (found === undefined) this.#unresolved.add(parent);
          else parentPosition = found;
        }
      }
      parents[i] = parentPosition;
      const id = ids[i];
      if (id === undefined) continue;
      const before = positions.size;
      positions.set(id, i);
      if (positions.size === before || (this.#unresolved.size > 0 && this.#unresolved.has(id))) this.#stale = true;
      lastId = id;
      lastPosition = i;
    }
    this.#parents = parents;
    this.#lastId = lastId;
    this.#lastPosition = lastPosition;
  }

  /** Module-private: the records at `positions`, read where they are deferred. */
  [AT](positions: readonly number[]): FileEntry[] {
    if (this.#missing > 0) {
      const wanted = positions.filter((position) => this.#entries[position] === undefined);
      if (wanted.length > 0) this.#read([...new Set(wanted)].sort((a, b) => a - b));
    }
    return positions.map((position) => this.#entries[position]!);
  }

  #read(positions: readonly number[]): void {
    const records = this.#deferred!.load(positions);
    positions.forEach((position, k) => {
      this.#entries[position] = records[k]!;
    });
    this.#missing -= positions.length;
    if (this.#missing === 0) this.#deferred = undefined;
  }

  #at(position: number): FileEntry {
    return this.#entries[position] ?? this[AT]([position])[0]!;
  }

  #addKeys(id: string | undefined, parent: string | null | undefined, type: string): void {
    const position = this.#ids.push(id) - 1;
    this.#parentIds.push(parent);
    this.#types.push(type);
    let parentPosition = -1;
    if (typeof parent === "string") {
      if (parent === this.#lastId) parentPosition = this.#lastPosition;
      else {
        const found = this.#positions.get(parent);
        if (found === undefined) this.#unresolved.add(parent);
        else parentPosition = found;
      }
    }
    this.#parents.push(parentPosition);
    if (id === undefined) return;
    const before = this.#positions.size;
    this.#positions.set(id, position);
    // A duplicate moves the id to a new holder; a late arrival resolves an earlier child.
    if (this.#positions.size === before || (this.#unresolved.size > 0 && this.#unresolved.has(id))) {
      this.#stale = true;
    }
    this.#lastId = id;
    this.#lastPosition = position;
  }

  /** The records at `positions`, reading together those that are deferred. */
  entriesAt(positions: readonly number[]): FileEntry[] {
    return this[AT](positions);
  }

  /** Number of records (indexed or not). */
  get count(): number {
    return this.#ids.length;
  }

  /** The `type` of the record at `position`. */
  typeAt(position: number): string {
    return this.#types[position]!;
  }

  /** The string `id` of the record at `position`. */
  idAt(position: number): string | undefined {
    return this.#ids[position];
  }

  /** The position of the entry indexed under `id`. */
  positionOf(id: string): number | undefined {
    return this.#positions.get(id);
  }

  /**
   * The path from the root to `leaf` by parent positions, or `undefined` when `leaf` is not
   * the indexed holder of its id or the parents form a cycle (the caller then takes the
   * general walk, which handles both).
   */
  pathTo(leaf: FileEntry): FileEntry[] | undefined {
    const id = entryIdOf(leaf);
    const start = id === undefined ? undefined : this.#positions.get(id);
    if (start === undefined || this.#entries[start] !== leaf) return undefined;
    const positions = this.pathPositions(start);
    return positions === undefined ? undefined : this[AT](positions);
  }

  /** Positions from the root down to `start` by parent positions; `undefined` on a cycle. */
  pathPositions(start: number): number[] | undefined {
    if (this.#stale) this.#recompute();
    const parents = this.#parents;
    const bound = this.#ids.length;
    let length = 0;
    for (let at = start; at !== -1; at = parents[at]!) {
      if (++length > bound) return undefined;
    }
    const path = new Array<number>(length);
    for (let at = start, slot = length - 1; at !== -1; at = parents[at]!, slot--) path[slot] = at;
    return path;
  }

  #recompute(): void {
    this.#unresolved = new Set();
    this.#parents = this.#parentIds.map((parent) => {
      if (typeof parent !== "string") return -1;
      const found = this.#positions.get(parent);
      if (found === undefined) this.#unresolved.add(parent);
      return found ?? -1;
    });
    this.#stale = false;
  }

  /** Number of distinct ids. */
  get size(): number {
    return this.#positions.size;
  }

  /** The last entry in file order whose id is `id`. */
  get(id: string): FileEntry | undefined {
    const position = this.#positions.get(id);
    return position === undefined ? undefined : this.#at(position);
  }

  /** True when some entry has the id `id`. */
  has(id: string): boolean {
    return this.#positions.has(id);
  }

  /** Calls `callback` for every id and its entry, in order of first appearance of the id. */
  forEach(
    callback: (value: FileEntry, key: string, map: ReadonlyMap<string, FileEntry>) => void,
    thisArg?: unknown,
  ): void {
    for (const [id, entry] of this.entries()) callback.call(thisArg, entry, id, this);
  }

  /** `[id, entry]` pairs, in order of first appearance of the id. */
  *entries(): MapIterator<[string, FileEntry]> {
    for (const [id, position] of this.#positions) yield [id, this.#at(position)];
  }

  /** The ids, in order of first appearance. */
  keys(): MapIterator<string> {
    return this.#positions.keys();
  }

  /** The indexed entries, in order of first appearance of their id. */
  *values(): MapIterator<FileEntry> {
    for (const position of this.#positions.values()) yield this.#at(position);
  }

  /** Same as {@link EntryIndex.entries}. */
  [Symbol.iterator](): MapIterator<[string, FileEntry]> {
    return this.entries();
  }

  /** `"EntryIndex"`, for `Object.prototype.toString`. */
  get [Symbol.toStringTag](): string {
    return "EntryIndex";
  }
}

/**
 * Maps each id to the last entry in file order that carries it: the rule {@link SessionTree}
 * uses, so that the leaf found by id and the leaf found by position agree on duplicated ids.
 */
export function indexEntries(entries: Iterable<FileEntry>): EntryIndex {
  return new EntryIndex(entries);
}

/**
 * The path from the root down to `leaf`, following `parentId` through `byId`. Stops at a
 * missing parent, and at the first repeated entry when the parents form a cycle.
 *
 * Linear in the path length. The common acyclic case runs without a visited set: a path
 * longer than the index has entries must repeat one, and only then is it walked again with
 * one.
 */
export function pathToRoot(leaf: FileEntry, byId: ReadonlyMap<string, FileEntry>): FileEntry[] {
  if (byId instanceof EntryIndex) {
    const fast = byId.pathTo(leaf);
    if (fast !== undefined) return fast;
  }
  const path: FileEntry[] = [];
  const bound = byId.size + 1;
  for (let node: FileEntry | undefined = leaf; node !== undefined; node = parentEntry(node, byId)) {
    if (path.length === bound) return pathToRootGuarded(leaf, byId);
    path.push(node);
  }
  return path.reverse();
}

function pathToRootGuarded(leaf: FileEntry, byId: ReadonlyMap<string, FileEntry>): FileEntry[] {
  const path: FileEntry[] = [];
  const seen = new Set<FileEntry>();
  for (let node: FileEntry | undefined = leaf; node !== undefined; node = parentEntry(node, byId)) {
    if (seen.has(node)) break;
    seen.add(node);
    path.push(node);
  }
  return path.reverse();
}

function parentEntry(entry: FileEntry, byId: ReadonlyMap<string, FileEntry>): FileEntry | undefined {
  const parent = parentIdOf(entry);
  return typeof parent === "string" ? byId.get(parent) : undefined;
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
