/** A {@link LineTable}'s entries as {@link EntryKeys}: types from the rows, ids read from their lines when asked. */
import type { EntryKeys } from "./entry-index.js";
import {
  F_CONT,
  F_ID,
  F_PARENT_STRING,
  F_PIECE,
  idHash,
  KIND_BLANK,
  KIND_END,
  KIND_INVALID,
  KIND_OTHER,
  kindOf,
  ROW_WORDS,
  typeOfKind,
  type LineTable,
} from "./line-table.js";
import type { JsonRecord } from "./salvage.js";

/**
 * {@link EntryKeys} over the entries at `rows` (entry position to table row) of `table`, whose
 * parent positions are `parents`. The table holds no id, only its hash: an id is read from its line
 * through `read` (which checks the line against its row), and the id-to-position map is built from
 * the hashes on the first lookup, each hit confirmed by reading the line. No id is held twice and
 * every parent is resolved (a file that is otherwise is never opened through its rows).
 */
export class TableKeys implements EntryKeys {
  readonly count: number;
  readonly parents: Int32Array;
  readonly unresolved: ReadonlySet<string> = new Set();
  readonly #table: LineTable;
  readonly #rows: Int32Array;
  /** reads a row's record, checked against the row */
  readonly #read: (row: number) => JsonRecord;
  readonly #repeated: ((id: string) => never) | undefined;
  /** open-addressed by id hash, two words a slot (see {@link #hashed}); built on the first lookup */
  #slots: Int32Array | undefined;
  /** the last id asked about and its answer: an append asks twice (is the new id free, then adding it) */
  #asked: string | undefined;
  #answer = -1;

  /**
   * `read` gives a row's record, checked against its row. `repeated`, when given, is called (and throws) when two
   * entries turn out to hold one id; without it the last holder is the answer, as in a full load.
   */
  constructor(table: LineTable, rows: Int32Array, parents: Int32Array, read: (row: number) => JsonRecord, repeated?: (id: string) => never) {
    this.#repeated = repeated;
    this.#table = table;
    this.#rows = rows;
    this.parents = parents;
    this.#read = read;
    this.count = rows.length;
  }

  /** Counted when asked for (rarely: a listing of the ids); an open never needs it. */
  get distinct(): number {
    let ids = 0;
    for (let p = 0; p < this.count; p++) if (this.hasId(p)) ids += 1;
    return ids;
  }

  /** The table row of entry `position`. */
  rowAt(position: number): number {
    return this.#rows[position]!;
  }

  typeAt(position: number): string {
    const row = this.#rows[position]!;
    return typeOfKind(this.#table.kind(row)) ?? (this.#read(row).type as string);
  }

  idAt(position: number): string | undefined {
    return this.hasId(position) ? (this.#read(this.#rows[position]!).id as string) : undefined;
  }

  hasId(position: number): boolean {
    return (this.#table.flags(this.#rows[position]!) & F_ID) !== 0;
  }

  holderFilter(id: string): (position: number) => boolean {
    const hash = idHash(id);
    const table = this.#table;
    const rows = this.#rows;
    return (position) => table.idHash(rows[position]!) === hash && (table.flags(rows[position]!) & F_ID) !== 0;
  }

  positionsOfTypes(types: ReadonlySet<string>): number[] {
    const wanted = this.typeFilter(types);
    const out: number[] = [];
    // One pass over the kind words: this runs over every entry of a long session on each open.
    for (let position = 0; position < this.count; position++) if (wanted(position)) out.push(position);
    return out;
  }

  typeFilter(types: ReadonlySet<string>): (position: number) => boolean {
    const wanted = new Uint8Array(KIND_END);
    for (let kind = 0; kind < KIND_END; kind++) if (types.has(typeOfKind(kind) ?? "")) wanted[kind] = 1;
    const { words } = this.#table;
    const rows = this.#rows;
    // A type without a code is read from its line (rare: types newer than this library).
    return (position) => {
      const kind = words[rows[position]! * ROW_WORDS + 4]! & 0xff;
      return wanted[kind] === 1 || (kind === KIND_OTHER && types.has(this.typeAt(position)));
    };
  }

  /** The table row of the entry holding `id`; -1 for none. */
  rowOf(id: string): number {
    const position = this.positionOf(id);
    return position === -1 ? -1 : this.#rows[position]!;
  }

  positionOf(id: string): number {
    if (id === this.#asked) return this.#answer;
    const slots = this.#hashed();
    const hash = idHash(id);
    const mask = (slots.length >> 1) - 1;
    let answer = -1;
    for (let slot = hash & mask; slots[slot * 2] !== 0; slot = (slot + 1) & mask) {
      if (slots[slot * 2 + 1] !== hash) continue;
      const position = slots[slot * 2]! - 1;
      if (this.#read(this.#rows[position]!).id !== id) continue;
      // Every holder is read: a second one proves the rows describe a file whose ids are not unique.
      if (answer !== -1) this.#repeated?.(id);
      answer = Math.max(answer, position);
    }
    this.#asked = id;
    this.#answer = answer;
    return answer;
  }

  /** Slot `k` is words `2k` (entry position + 1; 0: free) and `2k + 1` (its id hash), so a probe never leaves the slots. */
  #hashed(): Int32Array {
    if (this.#slots !== undefined) return this.#slots;
    let capacity = 16;
    while (capacity < this.count * 2) capacity *= 2;
    const slots = new Int32Array(capacity * 2);
    const mask = capacity - 1;
    const table = this.#table;
    for (let p = 0; p < this.count; p++) {
      const row = this.#rows[p]!;
      if ((table.flags(row) & F_ID) === 0) continue;
      const hash = table.idHash(row);
      let slot = hash & mask;
      while (slots[slot * 2] !== 0) slot = (slot + 1) & mask;
      slots[slot * 2] = p + 1;
      slots[slot * 2 + 1] = hash;
    }
    this.#slots = slots;
    return slots;
  }
}

/** How the rows of a table divide into a session's header, entries and patches; see {@link classifyRows}. */
export interface RowClasses {
  /** the first record's row (the header's); the table's size when there is none */
  headerRow: number;
  /** entry position to row */
  entryRows: Int32Array;
  /** row to entry position (entry rows only) */
  positionOfRow: Int32Array;
  /** each entry's parent position, or -1 */
  parents: Int32Array;
  patchRows: number[];
  /** rows whose lines an open must read to know what they hold: blank, invalid, salvaged, of another type, entries without an id */
  unknownRows: number[];
  invalidLines: number;
  salvagedLines: number;
}

/**
 * Classifies the first `size` rows of `table`; `string` (why) when their parent rows cannot be
 * a tree's: a parent that is not an earlier entry with an id, or an entry that names a parent without one.
 */
export function classifyRows(table: LineTable, size = table.size): RowClasses | string {
  const headerRow = Math.min(table.firstRecordRow(), size);
  const { words } = table;
  const entryRows = new Int32Array(size);
  const positionOfRow = new Int32Array(size).fill(-1);
  const parents = new Int32Array(size);
  const patchRows: number[] = [];
  const unknownRows: number[] = [];
  const headerPatch = kindOf("header_patch");
  const entryPatch = kindOf("entry_patch");
  let count = 0;
  let invalidLines = 0;
  let salvagedLines = 0;
  let lineHasRecord = false;
  // One pass over the words themselves: this runs over every row of a long session on each open.
  for (let row = 0; row < size; row++) {
    const w = row * ROW_WORDS;
    const word = words[w + 4]!;
    const kind = word & 0xff;
    const flags = word >>> 8;
    if ((flags & F_CONT) === 0) lineHasRecord = false;
    const unknown = kind === KIND_BLANK || kind === KIND_INVALID || kind === KIND_OTHER || (flags & F_PIECE) !== 0;
    if (unknown) {
      unknownRows.push(row);
      if (kind === KIND_INVALID) invalidLines += 1;
      else if (kind !== KIND_BLANK && (flags & F_PIECE) !== 0 && !lineHasRecord) {
        // A line cut into pieces, one of them a record, is one salvage recovered.
        salvagedLines += 1;
        lineHasRecord = true;
      }
    }
    if (row <= headerRow || kind === KIND_BLANK || kind === KIND_INVALID) continue;
    if (kind === headerPatch || kind === entryPatch) {
      patchRows.push(row);
      continue;
    }
    if ((flags & F_ID) === 0 && !unknown) unknownRows.push(row);
    if ((flags & F_PARENT_STRING) !== 0) {
      const parent = words[w + 1]!;
      if (parent < 0 || parent >= row || positionOfRow[parent] === -1 || ((words[parent * ROW_WORDS + 4]! >>> 8) & F_ID) === 0) {
        return `the parent row of line ${table.lineOf(row)} is not an earlier entry`;
      }
      parents[count] = positionOfRow[parent]!;
    } else parents[count] = -1;
    positionOfRow[row] = count;
    entryRows[count++] = row;
  }
  return {
    headerRow,
    entryRows: entryRows.subarray(0, count),
    positionOfRow,
    parents: parents.subarray(0, count),
    patchRows,
    unknownRows,
    invalidLines,
    salvagedLines,
  };
}
