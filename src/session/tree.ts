/**
 * The session tree: append-only entries linked by `parentId` and one mutable leaf pointer (branching moves it, never
 * what was written). Damaged files hold duplicate ids, missing parents, parent cycles: every walk ends, none throws.
 */

import { GjcError } from "../errors.js";
import { newEntryId } from "./ids.js";
import type { AgentMessage } from "./messages.js";
import { APPEND, ATTACH, EntryIndex, pathToRoot, RECORDS, type DeferredEntries } from "./entry-index.js";
import { entryIdOf, isUnknownEntry, parentIdOf, sessionInfoName } from "./schemas.js";
import type { BranchSummaryEntry, FileEntry, LabelEntry, SessionEntry, SessionInfoEntry } from "./schemas.js";

export { EntryIndex, pathToRoot, type DeferredEntries, type EntryKeys } from "./entry-index.js";

/** Why a tree operation was refused. `unknown_entry`: no entry has the given id. */
export type SessionTreeErrorCode = "unknown_entry";

/** Thrown by {@link SessionTree}; branch on `code`. */
export class SessionTreeError extends GjcError<SessionTreeErrorCode> {}

type BaseField = "id" | "parentId" | "timestamp";

/** The types GJC and pi write with their own fields before id, parent and time (every other type puts those three right after `type`). */
const OWN_FIELDS_FIRST: ReadonlySet<string> = new Set(["custom", "custom_message"]);

/**
 * An entry for {@link SessionTree.append}, without the fields the tree owns. Key remapping, as `Omit` collapses loose types
 * to their index signature; a `message` takes an {@link AgentMessage}, so a misspelt role does not compile.
 */
export type EntryDraft = SessionEntry extends infer E
  ? E extends SessionEntry
    ? { [K in keyof E as K extends BaseField ? never : K]: E[K] } & (E extends { type: "message" } ? { message: AgentMessage } : unknown)
    : never
  : never;

/** The entry {@link SessionTree.append} creates from a draft of type `D`. */
export type AppendedEntry<D extends EntryDraft> = Extract<SessionEntry, { type: D["type"] }>;

/** One node of {@link SessionTree.getTree}: children in file order, the entry's current label if any. */
export interface SessionTreeNode {
  entry: FileEntry;
  children: SessionTreeNode[];
  label: string | undefined;
}

/** A root-to-leaf path read by position: `type` and `id` cost nothing, entries are read when asked for. */
export interface PathView {
  readonly length: number;
  typeAt(i: number): string;
  idAt(i: number): string | undefined;
  /** the entries at path positions `indices` (ascending), read together */
  entriesAt(indices: readonly number[]): FileEntry[];
  /** the last path position before `before` whose entry holds `id` (-1: none), reading only entries that may hold it */
  findId(id: string, before: number): number;
  /** the path positions (ascending) whose entries have one of `types`, found without reading entries */
  indicesOfTypes(types: ReadonlySet<string>): number[];
}

/** A {@link PathView} over `path`. */
export function arrayPathView(path: readonly FileEntry[]): PathView {
  return {
    length: path.length,
    typeAt: (i) => path[i]!.type,
    idAt: (i) => entryIdOf(path[i]!),
    entriesAt: (indices) => indices.map((i) => path[i]!),
    findId: (id, before) => {
      for (let i = before - 1; i >= 0; i--) if (entryIdOf(path[i]!) === id) return i;
      return -1;
    },
    indicesOfTypes: (types) => {
      const out: number[] = [];
      for (let i = 0; i < path.length; i++) if (types.has(path[i]!.type)) out.push(i);
      return out;
    },
  };
}

/** The first value `pick` gives for the `message` records of `0..count`, last first, read in growing batches (it is near the end). */
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

/** The records a tree over deferred entries reads when it is made: labels and display names are known without a walk. */
const NOTED_TYPES: ReadonlySet<string> = new Set(["label", "session_info"]);

/** Options of {@link SessionTree.append}. */
export interface AppendOptions {
  /** Append as a new root (`parentId: null`) that becomes the leaf: the context starts over (GJC's `context_clear`). */
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
 * One session's entries as a tree with a leaf pointer, appends O(1). An id resolves to its *last* holder in file order
 * (earlier ones stay in {@link getEntries}); the leaf is the last entry with a string id (an id-less one would cut the
 * conversation out of the context). `options.now` is the clock of appended timestamps (tests pin it).
 */
export class SessionTree {
  readonly #byId = new EntryIndex();
  readonly #labels = new Map<string, string>();
  /** the latest `session_info` in file order: it alone names the session */
  #sessionInfo: SessionInfoEntry | undefined;
  readonly #now: () => Date;
  #leafId: string | null = null;

  /** @param entries - a loaded session's non-header records in file order (shared, never modified) */
  constructor(entries: Iterable<FileEntry> = [], options: { now?: () => Date } = {}) {
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

  /** A tree over {@link DeferredEntries}: only label and `session_info` records are read now. */
  static deferred(entries: DeferredEntries, options: { now?: () => Date } = {}): SessionTree {
    const tree = new SessionTree([], options);
    const index = tree.#byId;
    index[ATTACH](entries);
    const { keys } = entries;
    for (let i = keys.count - 1; i >= 0 && tree.#leafId === null; i--) if (keys.hasId(i)) tree.#leafId = keys.idAt(i)!;
    const labels: number[] = [];
    const infos: number[] = [];
    for (const i of index.positionsOfTypes(NOTED_TYPES)) if (keys.hasId(i)) (keys.typeAt(i) === "label" ? labels : infos).push(i);
    for (const entry of index.entriesAt(labels)) tree.#note(entry);
    for (let k = infos.length - 1; k >= 0 && tree.#sessionInfo === undefined; k--) tree.#note(index.entriesAt([infos[k]!])[0]!);
    return tree;
  }

  /** Every record in insertion (file) order, including id-less and unknown ones. A live view. */
  getEntries(): readonly FileEntry[] {
    return this.#byId[RECORDS];
  }

  /** The root-to-`leafId` path (default: the leaf) as a {@link PathView}; `undefined` for `null`. @throws {@link SessionTreeError} `unknown_entry` */
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
      entriesAt: (indices) => index.entriesAt(indices.map((i) => positions[i]!)),
      findId: (id, before) => index.findOnPath(positions, id, before),
      indicesOfTypes: (types) => index.positionsOfTypes(types, positions),
    };
  }

  /** The id index (a live view), for {@link buildSessionContext}'s `byId`: its walks read parent positions, not hashes. */
  get index(): EntryIndex {
    return this.#byId;
  }

  /** The resolved label of `id` after every label entry so far, in file order. */
  getLabel(id: string): string | undefined {
    return this.#labels.get(id);
  }

  /** The display name by the latest `session_info`, on any branch (the rule of `getSessionInfoName`). */
  getSessionInfoName(): string | undefined {
    return this.#sessionInfo === undefined ? undefined : sessionInfoName(this.#sessionInfo);
  }

  /** Appends a child of the leaf (or a new root, {@link AppendOptions.root}) as the new leaf; id, parent and time are the tree's. */
  append<D extends EntryDraft>(draft: D, options: AppendOptions = {}): AppendedEntry<D> {
    const id = newEntryId((candidate) => this.#byId.has(candidate));
    const parentId = options.root === true ? null : this.#leafId;
    const timestamp = this.#now().toISOString();
    // The literals fix the line's key order as the peers lay it out (one literal and one spread: an entry built from
    // several spreads serializes far slower); the assignments keep a draft from setting its own id, parent or time.
    const fields: Record<string, unknown> = draft;
    const entry: Record<string, unknown> = OWN_FIELDS_FIRST.has(draft.type)
      ? { type: draft.type, ...fields }
      : { type: draft.type, id, parentId, timestamp, ...fields };
    entry.id = id;
    entry.parentId = parentId;
    entry.timestamp = timestamp;
    this.#add(entry as FileEntry);
    return entry as AppendedEntry<D>;
  }

  /** Moves the leaf to `id`, so the next append branches there; nothing is written. @throws {@link SessionTreeError} `unknown_entry` */
  branch(id: string): void {
    this.#require(id);
    this.#leafId = id;
  }

  /** Clears the leaf: the next append becomes a new root (`parentId: null`). */
  resetLeaf(): void {
    this.#leafId = null;
  }

  /**
   * Moves the leaf to `branchFromId` and appends a `branch_summary` of the path left; `null` makes it a new root with
   * `fromId: "root"`. @throws {@link SessionTreeError} `unknown_entry`
   */
  branchWithSummary(branchFromId: string | null, summary: string, options: BranchSummaryOptions = {}): BranchSummaryEntry {
    if (branchFromId === null) this.resetLeaf();
    else this.branch(branchFromId);
    const draft: Record<string, unknown> = { type: "branch_summary", fromId: branchFromId ?? "root", summary };
    // Absent rather than `undefined`, so the written line carries no empty keys.
    for (const key of ["details", "fromExtension", "fromHook"] as const) if (options[key] !== undefined) draft[key] = options[key];
    return this.append(draft as Extract<EntryDraft, { type: "branch_summary" }>);
  }

  /** Appends a `label` of `targetId` (`undefined` or empty clears it). @throws {@link SessionTreeError} `unknown_entry` */
  appendLabel(targetId: string, label: string | undefined): LabelEntry {
    this.#require(targetId);
    return this.append(label === undefined ? { type: "label", targetId } : { type: "label", targetId, label });
  }

  /**
   * The entries from the root down to `leafId` (default: the leaf; `[]` for `null`), stopping at a missing parent or an
   * entry already visited. @throws {@link SessionTreeError} `unknown_entry` for an id that is not indexed
   */
  getPath(leafId: string | null = this.#leafId): FileEntry[] {
    if (leafId === null) return [];
    return pathToRoot(this.#require(leafId), this.#byId);
  }

  /**
   * The whole tree, children in file order; roots have a `null` or missing parent. A parent cycle is cut at its member
   * first in the file, which becomes a root: a finite forest of every indexed entry (id-less records are not in it).
   */
  getTree(): SessionTreeNode[] {
    const records = this.#byId[RECORDS];
    const nodes: SessionTreeNode[] = [];
    // node index by the position of the holder of its id (its entry's first place in the file), -1 elsewhere
    const nodeAt = new Int32Array(records.length).fill(-1);
    for (const entry of records) {
      const id = entryIdOf(entry);
      if (id === undefined) continue;
      const at = this.#byId.positionOf(id)!;
      if (records[at] === entry && nodeAt[at] === -1) nodeAt[at] = nodes.push({ entry, children: [], label: this.#labels.get(id) }) - 1;
    }
    const n = nodes.length;
    const parents = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const parentId = parentIdOf(nodes[i]!.entry);
      const at = typeof parentId === "string" ? this.#byId.positionOf(parentId) : undefined;
      parents[i] = at === undefined ? -1 : nodeAt[at]!;
    }
    // Walking up from each node in file order meets every cycle once, on a node of the walk under way (no recursion:
    // a linear session of 100k entries is 100k levels deep).
    const walkedBy = new Int32Array(n).fill(-1);
    for (let start = 0; start < n; start++) {
      let i = start;
      for (; i !== -1 && walkedBy[i] === -1; i = parents[i]!) walkedBy[i] = start;
      if (i === -1 || walkedBy[i] !== start) continue;
      let smallest = i;
      for (let j = parents[i]!; j !== i; j = parents[j]!) smallest = Math.min(smallest, j);
      parents[smallest] = -1;
    }
    const roots: SessionTreeNode[] = [];
    for (let i = 0; i < n; i++) (parents[i] === -1 ? roots : nodes[parents[i]!]!.children).push(nodes[i]!);
    return roots;
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
