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
 * The keys of entries not read yet, by position in file order: `type`, `id` and `parentId`
 * (as {@link entryIdOf} and {@link parentIdOf} would give them), the lookup of an id, and
 * every parent already resolved to a position, so that holding them costs no string or map
 * entry per entry.
 */
export interface EntryKeys {
  readonly count: number;
  typeAt(position: number): string;
  idAt(position: number): string | undefined;
  /** whether the entry at `position` has a string id (without making the string) */
  hasId(position: number): boolean;
  parentIdAt(position: number): string | null | undefined;
  /** the position of the last entry in file order whose id is `id`, or -1 */
  positionOf(id: string): number;
  /**
   * Per position, the position of the last holder of its parent id, or -1 (a root, or a parent
   * that is not there). Taken over by the index (it updates them): hand over an array no one else keeps.
   */
  readonly parents: Int32Array;
  /** the parent ids that no entry holds */
  readonly unresolved: ReadonlySet<string>;
  /** number of distinct ids */
  readonly distinct: number;
}

/**
 * Entries known by their keys before they are read, and a way to read the records
 * themselves. A tree built over such entries reads a record the first time something needs
 * it, and keeps it from then on.
 */
export interface DeferredEntries {
  readonly keys: EntryKeys;
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
  /** keys of the deferred positions `0..keys.count`; the arrays below hold the positions after them */
  #keys: EntryKeys | undefined;
  #base = 0;
  readonly #ids: (string | undefined)[] = [];
  readonly #parentIds: (string | null | undefined)[] = [];
  readonly #types: string[] = [];
  /** id to position, for the positions after {@link #keys} */
  readonly #positions = new Map<string, number>();
  /** ids of those positions that a deferred position holds too */
  #shadowed = 0;
  /** Parent position per entry position; -1 for a root or a parent that is not indexed. */
  #parents: Int32Array = new Int32Array(64);
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
    const { keys } = deferred;
    this.#deferred = deferred;
    this.#keys = keys;
    this.#base = keys.count;
    this.#entries.length = keys.count;
    this.#missing = keys.count;
    // Taken over, not copied: the keys are this index's alone.
    this.#parents = keys.parents;
    this.#unresolved = new Set(keys.unresolved);
    for (let i = keys.count - 1; i >= 0; i--) {
      const id = keys.idAt(i);
      if (id === undefined) continue;
      this.#lastId = id;
      this.#lastPosition = i;
      break;
    }
  }

  /** The position of the last holder of `id`. */
  #lookup(id: string): number | undefined {
    if (id === this.#lastId) return this.#lastPosition;
    const found = this.#positions.get(id);
    if (found !== undefined || this.#keys === undefined) return found;
    const deferred = this.#keys.positionOf(id);
    return deferred === -1 ? undefined : deferred;
  }

  #parentIdOf(position: number): string | null | undefined {
    return position < this.#base ? this.#keys!.parentIdAt(position) : this.#parentIds[position - this.#base];
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
    const position = this.#base + this.#ids.push(id) - 1;
    this.#parentIds.push(parent);
    this.#types.push(type);
    let parentPosition = -1;
    if (typeof parent === "string") {
      const found = this.#lookup(parent);
      if (found === undefined) this.#unresolved.add(parent);
      else parentPosition = found;
    }
    if (position >= this.#parents.length) {
      const parents = new Int32Array(Math.max(64, this.#parents.length * 2));
      parents.set(this.#parents);
      this.#parents = parents;
    }
    this.#parents[position] = parentPosition;
    if (id === undefined) return;
    const heldAfter = this.#positions.has(id);
    const heldDeferred = !heldAfter && this.#keys !== undefined && this.#keys.positionOf(id) !== -1;
    if (heldDeferred) this.#shadowed += 1;
    const duplicate = heldAfter || heldDeferred;
    this.#positions.set(id, position);
    // A duplicate moves the id to a new holder; a late arrival resolves an earlier child.
    if (duplicate || (this.#unresolved.size > 0 && this.#unresolved.has(id))) this.#stale = true;
    this.#lastId = id;
    this.#lastPosition = position;
  }

  /** The records at `positions`, reading together those that are deferred. */
  entriesAt(positions: readonly number[]): FileEntry[] {
    return this[AT](positions);
  }

  /** Number of records (indexed or not). */
  get count(): number {
    return this.#base + this.#ids.length;
  }

  /** The `type` of the record at `position`. */
  typeAt(position: number): string {
    return position < this.#base ? this.#keys!.typeAt(position) : this.#types[position - this.#base]!;
  }

  /** The string `id` of the record at `position`. */
  idAt(position: number): string | undefined {
    return position < this.#base ? this.#keys!.idAt(position) : this.#ids[position - this.#base];
  }

  /** The position of the entry indexed under `id`. */
  positionOf(id: string): number | undefined {
    return this.#lookup(id);
  }

  /**
   * The path from the root to `leaf` by parent positions, or `undefined` when `leaf` is not
   * the indexed holder of its id or the parents form a cycle (the caller then takes the
   * general walk, which handles both).
   */
  pathTo(leaf: FileEntry): FileEntry[] | undefined {
    const id = entryIdOf(leaf);
    const start = id === undefined ? undefined : this.#lookup(id);
    if (start === undefined || this.#entries[start] !== leaf) return undefined;
    const positions = this.pathPositions(start);
    return positions === undefined ? undefined : this[AT](positions);
  }

  /** Positions from the root down to `start` by parent positions; `undefined` on a cycle. */
  pathPositions(start: number): number[] | undefined {
    if (this.#stale) this.#recompute();
    const parents = this.#parents;
    const bound = this.count;
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
    for (let position = 0; position < this.count; position++) {
      const parent = this.#parentIdOf(position);
      const found = typeof parent === "string" ? this.#lookup(parent) : undefined;
      if (typeof parent === "string" && found === undefined) this.#unresolved.add(parent);
      this.#parents[position] = found ?? -1;
    }
    this.#stale = false;
  }

  /** Number of distinct ids. */
  get size(): number {
    return (this.#keys?.distinct ?? 0) + this.#positions.size - this.#shadowed;
  }

  /** The last entry in file order whose id is `id`. */
  get(id: string): FileEntry | undefined {
    const position = this.#lookup(id);
    return position === undefined ? undefined : this.#at(position);
  }

  /** True when some entry has the id `id`. */
  has(id: string): boolean {
    return this.#lookup(id) !== undefined;
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
    for (const id of this.keys()) yield [id, this.#at(this.#lookup(id)!)];
  }

  /** The ids, in order of first appearance. */
  *keys(): MapIterator<string> {
    const keys = this.#keys;
    if (keys !== undefined) {
      const seen = new Set<string>();
      for (let position = 0; position < keys.count; position++) {
        const id = keys.idAt(position);
        if (id !== undefined) seen.add(id);
      }
      yield* seen;
    }
    for (const id of this.#positions.keys()) if (keys === undefined || keys.positionOf(id) === -1) yield id;
  }

  /** The indexed entries, in order of first appearance of their id. */
  *values(): MapIterator<FileEntry> {
    for (const [, entry] of this.entries()) yield entry;
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
