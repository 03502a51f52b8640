/** A {@link LineTable}'s entries as {@link EntryKeys}: types from the rows, ids read from their lines when asked. */
import type { EntryKeys } from "./entry-index.js";
import { F_ID, F_PARENT_STRING, F_PIECE, idHash, KIND_BLANK, KIND_INVALID, KIND_OTHER, kindOf, typeOfKind, type LineTable } from "./line-table.js";
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
  readonly distinct: number;
  readonly #table: LineTable;
  readonly #rows: Int32Array;
  /** reads a row's record, checked against the row */
  readonly #read: (row: number) => JsonRecord;
  readonly #repeated: ((id: string) => never) | undefined;
  /** open-addressed by id hash, two words a slot (see {@link #hashed}); built on the first lookup */
  #slots: Int32Array | undefined;
  /** pairs of entry positions whose ids share a hash, found while the slots were filled */
  readonly #sharing: number[] = [];
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
    let ids = 0;
    for (let p = 0; p < rows.length; p++) if ((table.flags(rows[p]!) & F_ID) !== 0) ids += 1;
    this.distinct = ids;
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

  /**
   * Reads the entries whose ids share a hash with an earlier entry's and refuses (through `repeated`) two that hold one
   * id. A writer never indexes such a file; rows that say otherwise were not written by one.
   */
  checkDistinct(): void {
    if (this.#repeated === undefined) return;
    this.#hashed();
    const pairs = this.#sharing;
    for (let k = 0; k < pairs.length; k += 2) {
      const id = this.#read(this.#rows[pairs[k]!]!).id;
      if (this.#read(this.#rows[pairs[k + 1]!]!).id === id) this.#repeated(String(id));
    }
  }

  /** Slot `k` is words `2k` (entry position + 1; 0: free) and `2k + 1` (its id hash), so a probe never leaves the slots. */
  #hashed(): Int32Array {
    if (this.#slots !== undefined) return this.#slots;
    let capacity = 16;
    while (capacity < this.count * 2) capacity *= 2;
    const slots = new Int32Array(capacity * 2);
    const mask = capacity - 1;
    const table = this.#table;
    const sharing = this.#sharing;
    for (let p = 0; p < this.count; p++) {
      const row = this.#rows[p]!;
      if ((table.flags(row) & F_ID) === 0) continue;
      const hash = table.idHash(row);
      let slot = hash & mask;
      // The probe passes every earlier entry with this hash: those pairs are what {@link checkDistinct} reads.
      for (; slots[slot * 2] !== 0; slot = (slot + 1) & mask) if (slots[slot * 2 + 1] === hash) sharing.push(slots[slot * 2]! - 1, p);
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
  const entryRows = new Int32Array(size);
  const positionOfRow = new Int32Array(size).fill(-1);
  const parents = new Int32Array(size);
  const patchRows: number[] = [];
  const unknownRows: number[] = [];
  const patchKinds = [kindOf("header_patch"), kindOf("entry_patch")];
  let count = 0;
  let invalidLines = 0;
  let salvagedLines = 0;
  let lineHasRecord = false;
  for (let row = 0; row < size; row++) {
    const kind = table.kind(row);
    const flags = table.flags(row);
    if (row === 0 || table.line[row] !== table.line[row - 1]) lineHasRecord = false;
    if (kind === KIND_INVALID) invalidLines += 1;
    else if (kind !== KIND_BLANK && (flags & F_PIECE) !== 0 && !lineHasRecord) {
      // A line cut into pieces, one of them a record, is one salvage recovered.
      salvagedLines += 1;
      lineHasRecord = true;
    }
    if (kind === KIND_BLANK || kind === KIND_INVALID || kind === KIND_OTHER || (flags & F_PIECE) !== 0) unknownRows.push(row);
    if (row <= headerRow || kind === KIND_BLANK || kind === KIND_INVALID) continue;
    if (kind === patchKinds[0] || kind === patchKinds[1]) {
      patchRows.push(row);
      continue;
    }
    if ((flags & F_ID) === 0 && unknownRows[unknownRows.length - 1] !== row) unknownRows.push(row);
    const parent = table.parent(row);
    if ((flags & F_PARENT_STRING) !== 0) {
      if (parent < 0 || parent >= row || positionOfRow[parent] === -1 || (table.flags(parent) & F_ID) === 0) return `the parent row of line ${table.line[row]} is not an earlier entry`;
      parents[count] = positionOfRow[parent]!;
    } else parents[count] = -1;
    positionOfRow[row] = count;
    entryRows[count++] = row;
  }
  return { headerRow, entryRows: entryRows.subarray(0, count), positionOfRow, parents: parents.subarray(0, count), patchRows, unknownRows, invalidLines, salvagedLines };
}
