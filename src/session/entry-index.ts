/**
 * The id index of a session tree: id to entry (last holder wins), parent positions for fast
 * walks, and deferred entries that are read only when first reached. Kept apart from
 * `tree.ts`, which owns the leaf, the labels and every append.
 */
import { entryIdOf, type FileEntry, parentIdOf } from "./schemas.js";

/**
 * Keys of the index's tree-only members. The session index does not re-export this module's
 * symbols, so only the tree (`tree.ts`) reaches them.
 */
export const RECORDS: unique symbol = Symbol("records");
/** See {@link RECORDS}. */
export const APPEND: unique symbol = Symbol("append");
/** See {@link RECORDS}. */
export const ATTACH: unique symbol = Symbol("attach");
/** See {@link RECORDS}. */
export const AT: unique symbol = Symbol("at");

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
