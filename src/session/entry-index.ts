/** The id index of a session tree (last holder of an id wins), with parent positions and deferred entries. */
import { entryIdOf, type FileEntry, parentIdOf } from "./schemas.js";

/** Key of a tree-only member; the session index does not re-export this module, so only `tree.ts` reaches them. */
export const RECORDS: unique symbol = Symbol("records");
/** See {@link RECORDS}. */
export const APPEND: unique symbol = Symbol("append");
/** See {@link RECORDS}. */
export const ATTACH: unique symbol = Symbol("attach");

/** The `type`, `id` and `parentId` of entries not read yet, by file position, without a string or map entry each. */
export interface EntryKeys {
  readonly count: number;
  typeAt(position: number): string;
  idAt(position: number): string | undefined;
  /** whether the entry at `position` has a string id (without making the string) */
  hasId(position: number): boolean;
  /** the position of the last entry in file order whose id is `id`, or -1 */
  positionOf(id: string): number;
  /** a test that is false only for positions whose entry surely does not hold `id` (so a search reads only the rest) */
  holderFilter(id: string): (position: number) => boolean;
  /** the positions (ascending) of the entries of one of `types`, found without reading entries */
  positionsOfTypes(types: ReadonlySet<string>): number[];
  /** a test of whether the entry at `position` is of one of `types`, without reading it */
  typeFilter(types: ReadonlySet<string>): (position: number) => boolean;
  /** per position, the position of the last holder of its parent id, or -1; the index takes it over and updates it */
  readonly parents: Int32Array;
  /** the parent ids that no entry holds */
  readonly unresolved: ReadonlySet<string>;
  /** number of distinct ids */
  readonly distinct: number;
}

/** Entries known by their keys before they are read, and a way to read them (each read once, then kept). */
export interface DeferredEntries {
  readonly keys: EntryKeys;
  /** The records at `positions` (ascending), in that order; may throw (unreadable or changed file), keeping nothing. */
  load(positions: ArrayLike<number>): FileEntry[];
}

/**
 * A read-only map from id to the last entry in file order carrying it, keeping each entry's parent
 * position so a long path is walked by array reads, not `Map` probes. A duplicated id or a parent
 * appearing after its child marks the positions stale; the next walk recomputes them once.
 */
export class EntryIndex implements ReadonlyMap<string, FileEntry> {
  /** by position; the deferred ones (before {@link #base}) stay undefined until read, appended ones are always here */
  readonly #entries: (FileEntry | undefined)[] = [];
  /** keys of the deferred positions `0..keys.count` */
  #keys: EntryKeys | undefined;
  #base = 0;
  /** id to position, for the positions after {@link #keys} */
  readonly #positions = new Map<string, number>();
  /** ids of those positions that a deferred position holds too */
  #shadowed = 0;
  /** parent position per entry position; -1 for a root or a parent that is not indexed */
  #parents: Int32Array = new Int32Array(64);
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

  /** Tree-only: the records in order (every deferred one read), shared with the tree. */
  get [RECORDS](): readonly FileEntry[] {
    if (this.#missing > 0) {
      const positions: number[] = [];
      for (let i = 0; i < this.#entries.length; i++) if (this.#entries[i] === undefined) positions.push(i);
      this.#read(positions);
    }
    return this.#entries as FileEntry[];
  }

  /** Tree-only: adds the next record in file order. */
  [APPEND](entry: FileEntry): void {
    const position = this.#entries.push(entry) - 1;
    const id = entryIdOf(entry);
    const parent = parentIdOf(entry);
    let parentPosition = -1;
    if (typeof parent === "string") {
      const found = this.positionOf(parent);
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
    this.#positions.set(id, position);
    // A duplicate moves the id to a new holder; a late arrival resolves an earlier child.
    if (heldAfter || heldDeferred || (this.#unresolved.size > 0 && this.#unresolved.has(id))) this.#stale = true;
    this.#lastId = id;
    this.#lastPosition = position;
  }

  /** Tree-only: adds every record of `deferred` (an empty index only), none read yet. */
  [ATTACH](deferred: DeferredEntries): void {
    const { keys } = deferred;
    this.#deferred = deferred;
    this.#keys = keys;
    this.#base = keys.count;
    // Sized by its last slot, not by `length`: a length of a million fills a million holes at once, which costs a
    // resume of a long session more than the path it reads; the few slots a resume fills are cheap either way.
    if (keys.count > 0) this.#entries[keys.count - 1] = undefined;
    this.#missing = keys.count;
    this.#parents = keys.parents;
    this.#unresolved = new Set(keys.unresolved);
    let last = keys.count - 1;
    while (last >= 0 && !keys.hasId(last)) last -= 1;
    if (last >= 0) {
      this.#lastId = keys.idAt(last);
      this.#lastPosition = last;
    }
  }

  /** The position of the last holder of `id`. */
  positionOf(id: string): number | undefined {
    if (id === this.#lastId) return this.#lastPosition;
    const found = this.#positions.get(id);
    if (found !== undefined || this.#keys === undefined) return found;
    const deferred = this.#keys.positionOf(id);
    return deferred === -1 ? undefined : deferred;
  }

  /** The records at `positions`, reading together those that are deferred. */
  entriesAt(positions: ArrayLike<number>): FileEntry[] {
    if (this.#missing > 0) {
      const wanted: number[] = [];
      let ascending = true;
      for (let k = 0; k < positions.length; k++) {
        const position = positions[k]!;
        if (this.#entries[position] !== undefined) continue;
        if (wanted.length > 0 && position <= wanted[wanted.length - 1]!) ascending = false;
        wanted.push(position);
      }
      // Paths ask in ascending order: only another order pays for the sort.
      if (wanted.length > 0) this.#read(ascending ? wanted : [...new Set(wanted)].sort((a, b) => a - b));
    }
    const out = new Array<FileEntry>(positions.length);
    for (let k = 0; k < positions.length; k++) out[k] = this.#entries[positions[k]!]!;
    return out;
  }

  #read(positions: readonly number[]): void {
    const records = this.#deferred!.load(positions);
    for (let k = 0; k < positions.length; k++) this.#entries[positions[k]!] = records[k]!;
    this.#missing -= positions.length;
    if (this.#missing === 0) this.#deferred = undefined;
  }

  #at(position: number): FileEntry {
    return this.#entries[position] ?? this.entriesAt([position])[0]!;
  }

  /** Number of records (indexed or not). */
  get count(): number {
    return this.#entries.length;
  }

  /** The `type` of the record at `position`. */
  typeAt(position: number): string {
    return position < this.#base ? this.#keys!.typeAt(position) : this.#entries[position]!.type;
  }

  /**
   * The positions (ascending) of the records of one of `types`, or (with `within`) the indices `i` of `within` whose
   * record `within[i]` is; unread records are told by their keys, never read for it.
   */
  positionsOfTypes(types: ReadonlySet<string>, within?: ArrayLike<number>): number[] {
    if (within !== undefined) {
      // One pass along the path, each deferred entry tested by its keys: a long path is not matched against every entry.
      const deferred = this.#keys?.typeFilter(types);
      const out: number[] = [];
      for (let i = 0; i < within.length; i++) {
        const position = within[i]!;
        if (position < this.#base ? deferred!(position) : types.has(this.#entries[position]!.type)) out.push(i);
      }
      return out;
    }
    const found = this.#keys === undefined ? [] : this.#keys.positionsOfTypes(types);
    for (let position = this.#base; position < this.#entries.length; position++) if (types.has(this.#entries[position]!.type)) found.push(position);
    return found;
  }

  /** The string `id` of the record at `position` (a deferred one is read, and kept). */
  idAt(position: number): string | undefined {
    if (position < this.#base && this.#entries[position] === undefined && !this.#keys!.hasId(position)) return undefined;
    return entryIdOf(this.#at(position));
  }

  /**
   * The last `i` below `before` whose entry `positions[i]` holds `id`, or -1. Entries not read yet are read only when
   * their keys do not rule the id out, so a search along a long path reads the few lines that may hold it.
   */
  findOnPath(positions: ArrayLike<number>, id: string, before: number): number {
    const mayHold = this.#keys?.holderFilter(id);
    for (let i = before - 1; i >= 0; i--) {
      const position = positions[i]!;
      if (position < this.#base && this.#entries[position] === undefined && !mayHold!(position)) continue;
      if (this.idAt(position) === id) return i;
    }
    return -1;
  }

  /** The path from the root to `leaf` by parent positions; `undefined` when `leaf` does not hold its id or on a cycle. */
  pathTo(leaf: FileEntry): FileEntry[] | undefined {
    const id = entryIdOf(leaf);
    const start = id === undefined ? undefined : this.positionOf(id);
    if (start === undefined || this.#entries[start] !== leaf) return undefined;
    const positions = this.pathPositions(start);
    return positions === undefined ? undefined : this.entriesAt(positions);
  }

  /** Positions from the root down to `start` by parent positions; `undefined` on a cycle. */
  pathPositions(start: number): Int32Array | undefined {
    if (this.#stale) this.#recompute();
    const parents = this.#parents;
    const bound = this.count;
    let length = 0;
    for (let at = start; at !== -1; at = parents[at]!) if (++length > bound) return undefined;
    // Typed: a plain array this long would be a slow dictionary-backed one.
    const path = new Int32Array(length);
    for (let at = start, slot = length - 1; at !== -1; at = parents[at]!, slot--) path[slot] = at;
    return path;
  }

  #recompute(): void {
    this.#unresolved = new Set();
    for (let position = 0; position < this.count; position++) {
      const parent = parentIdOf(this.#at(position));
      const found = typeof parent === "string" ? this.positionOf(parent) : undefined;
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
    const position = this.positionOf(id);
    return position === undefined ? undefined : this.#at(position);
  }

  /** True when some entry has the id `id`. */
  has(id: string): boolean {
    return this.positionOf(id) !== undefined;
  }

  /** Calls `callback` for every id and its entry, in order of first appearance of the id. */
  forEach(callback: (value: FileEntry, key: string, map: ReadonlyMap<string, FileEntry>) => void, thisArg?: unknown): void {
    for (const [id, entry] of this.entries()) callback.call(thisArg, entry, id, this);
  }

  /** `[id, entry]` pairs, in order of first appearance of the id. */
  *entries(): MapIterator<[string, FileEntry]> {
    for (const id of this.keys()) yield [id, this.#at(this.positionOf(id)!)];
  }

  /** The ids, in order of first appearance. */
  *keys(): MapIterator<string> {
    const keys = this.#keys;
    if (keys !== undefined) {
      const seen = new Set<string>();
      const records = this[RECORDS];
      for (let position = 0; position < keys.count; position++) {
        const id = entryIdOf(records[position]!);
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
 * The path from the root down to `leaf` through `byId`, stopping at a missing parent or a cycle's
 * first repeat; only a path longer than the index (which must repeat) is walked with a visited set.
 */
export function pathToRoot(leaf: FileEntry, byId: ReadonlyMap<string, FileEntry>): FileEntry[] {
  const fast = byId instanceof EntryIndex ? byId.pathTo(leaf) : undefined;
  if (fast !== undefined) return fast;
  const path: FileEntry[] = [];
  let seen: Set<FileEntry> | undefined;
  for (let node: FileEntry | undefined = leaf; node !== undefined && seen?.has(node) !== true; node = parentEntry(node, byId)) {
    if (seen === undefined && path.length > byId.size) {
      // Longer than the index, so it repeats: walked again from the leaf, up to the first repeat.
      seen = new Set();
      path.length = 0;
      node = leaf;
    }
    seen?.add(node);
    path.push(node);
  }
  return path.reverse();
}

function parentEntry(entry: FileEntry, byId: ReadonlyMap<string, FileEntry>): FileEntry | undefined {
  const parent = parentIdOf(entry);
  return typeof parent === "string" ? byId.get(parent) : undefined;
}
