/** A {@link LineTable}'s entry keys as {@link EntryKeys}, ids found by an open-addressing hash over its pool. */
import type { EntryKeys } from "./entry-index.js";
import { poolText, type LineTable } from "./line-table.js";

/** FNV-1a of `bytes[from..to]`. */
function hashOf(bytes: Uint8Array, from: number, to: number): number {
  let hash = 0x811c9dc5;
  for (let i = from; i < to; i++) hash = Math.imul(hash ^ bytes[i]!, 0x01000193);
  return hash;
}

/**
 * The slot holding the entry whose id is `bytes[from..from+length]` (hash `hash`), or the free one
 * for it. A slot is entry position + 1 (0: free) beside the id's hash: a probe reads the pool only on an equal hash.
 */
function findSlot(slots: Int32Array, rows: Int32Array, table: LineTable, bytes: Uint8Array, from: number, length: number, hash: number): number {
  const { pool, idStart, idLength } = table;
  const mask = (slots.length >> 1) - 1;
  for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
    const held = slots[slot << 1]!;
    if (held === 0) return slot;
    if (slots[(slot << 1) + 1] !== hash) continue;
    const row = rows[held - 1]!;
    if (idLength[row] !== length) continue;
    const start = idStart[row]!;
    let i = 0;
    while (i < length && pool[start + i] === bytes[from + i]) i += 1;
    if (i === length) return slot;
  }
}

/** Makes entry `p` (which has an id) the holder of its id; returns its slot, as `~slot` when an earlier entry held the id. */
function claimSlot(slots: Int32Array, rows: Int32Array, table: LineTable, p: number): number {
  const row = rows[p]!;
  const from = table.idStart[row]!;
  const length = table.idLength[row]!;
  const hash = hashOf(table.pool, from, from + length);
  const slot = findSlot(slots, rows, table, table.pool, from, length, hash);
  const held = slots[slot << 1] !== 0;
  slots[slot << 1] = p + 1;
  slots[(slot << 1) + 1] = hash;
  return held ? ~slot : slot;
}

/** Free slots for `count` ids, at most half full. */
function newSlots(count: number): Int32Array {
  let capacity = 16;
  while (capacity < count * 2) capacity *= 2;
  return new Int32Array(capacity * 2);
}

/**
 * {@link EntryKeys} over `rows` (entry position to table row) of `table`. Given resolved `parents`
 * (stored rows, no id repeated), no id is hashed until one is asked for; otherwise every id is
 * hashed now and each row's parent row and repeat flag written back.
 */
export class TableKeys implements EntryKeys {
  readonly count: number;
  readonly parents: Int32Array;
  readonly unresolved = new Set<string>();
  readonly distinct: number;
  readonly #table: LineTable;
  readonly #rows: Int32Array;
  /** see {@link findSlot} */
  #slots: Int32Array | undefined;
  #scratch = Buffer.allocUnsafe(256);
  /** the last id asked about and its answer: an append asks twice (is the new id free, then adding it) */
  #asked: string | undefined;
  #answer = -1;

  constructor(table: LineTable, rows: Int32Array, parents?: Int32Array) {
    this.#table = table;
    this.#rows = rows;
    this.count = rows.length;
    if (parents !== undefined) {
      this.parents = parents;
      let ids = 0;
      for (let p = 0; p < rows.length; p++) if (table.idLength[rows[p]!]! >= 0) ids += 1;
      this.distinct = ids;
      return;
    }
    const { idStart, idLength, parentStart, parentLength, pool, parentRow, repeats } = table;
    // Each entry's slot, so a parent sharing the previous entry's id bytes (a chain) needs no second lookup.
    const slotOf = new Int32Array(rows.length);
    const slots = newSlots(rows.length);
    this.#slots = slots;
    let distinct = 0;
    let ids = 0;
    for (let p = 0; p < rows.length; p++) {
      const row = rows[p]!;
      repeats[row] = 0;
      if (idLength[row]! < 0) continue;
      const slot = claimSlot(slots, rows, table, p);
      ids += 1;
      if (slot >= 0) distinct += 1;
      else repeats[row] = 1;
      slotOf[p] = slot >= 0 ? slot : ~slot;
    }
    this.distinct = distinct;
    const resolved = new Int32Array(rows.length);
    for (let p = 0; p < rows.length; p++) {
      const row = rows[p]!;
      const length = parentLength[row]!;
      if (length < 0) {
        resolved[p] = parentRow[row] = -1;
        continue;
      }
      const from = parentStart[row]!;
      const before = p > 0 ? rows[p - 1]! : -1;
      const chained = before >= 0 && from === idStart[before] && length === idLength[before];
      // With no id held twice, the entry before is the last holder of its own id.
      let holder: number;
      if (chained && distinct === ids) holder = p - 1;
      else {
        const slot = chained ? slotOf[p - 1]! : findSlot(slots, rows, table, pool, from, length, hashOf(pool, from, from + length));
        holder = slots[slot << 1]! - 1;
      }
      if (holder === -1) this.unresolved.add(table.parentIdAt(row) as string);
      resolved[p] = holder;
      parentRow[row] = holder === -1 ? -1 : rows[holder]!;
    }
    this.parents = resolved;
  }

  /** The id hash table, built over every entry's id when first needed. */
  #hashed(): Int32Array {
    if (this.#slots !== undefined) return this.#slots;
    const rows = this.#rows;
    const table = this.#table;
    const slots = newSlots(rows.length);
    this.#slots = slots;
    for (let p = 0; p < rows.length; p++) if (table.idLength[rows[p]!]! >= 0) claimSlot(slots, rows, table, p);
    return slots;
  }

  typeAt(position: number): string {
    return this.#table.typeAt(this.#rows[position]!)!;
  }

  idAt(position: number): string | undefined {
    return this.#table.idAt(this.#rows[position]!);
  }

  hasId(position: number): boolean {
    return this.#table.idLength[this.#rows[position]!]! >= 0;
  }

  parentIdAt(position: number): string | null | undefined {
    return this.#table.parentIdAt(this.#rows[position]!);
  }

  /** The table row of the last entry holding `id`; -1 for none. */
  rowOf(id: string): number {
    const position = this.positionOf(id);
    return position === -1 ? -1 : this.#rows[position]!;
  }

  positionOf(id: string): number {
    if (id === this.#asked) return this.#answer;
    const text = poolText(id);
    const length = Buffer.byteLength(text, "utf8");
    if (this.#scratch.length < length) this.#scratch = Buffer.allocUnsafe(length);
    this.#scratch.write(text, 0, "utf8");
    const slots = this.#hashed();
    const slot = findSlot(slots, this.#rows, this.#table, this.#scratch, 0, length, hashOf(this.#scratch, 0, length));
    this.#asked = id;
    this.#answer = slots[slot << 1]! - 1;
    return this.#answer;
  }
}
