/**
 * A session file's line table: one fixed-width row per line (per piece of a salvaged line), no
 * object or string per row. A row is six 32-bit words: the line's byte length, the row of the
 * entry's parent, the CRC-32 of the line, a hash of the record's id, its kind and flags, and a check
 * word over the other five, the row's number and the transcript's identity, set when the rows are
 * sealed for the sidecar. Offsets and line numbers are not stored: each row starts one byte after
 * the line of the row before ends (a piece of the same line shares its line), so rows tile the file
 * by construction.
 */

/** 32-bit words per row. */
export const ROW_WORDS = 6;

/** The seed of the rows' check words for the transcript `dev`/`ino`: rows of another file fail their checks. */
export function rowSeed(dev: string, ino: string): number {
  return idHash(`${dev}:${ino}`);
}

/** The check word of row `row` (its words at `w` of `words`) under `seed`: FNV-1a over its five words and number. */
function rowCheck(words: Int32Array, w: number, row: number, seed: number): number {
  // Unrolled: this runs over every row of a long session on each open.
  let hash = Math.imul(seed ^ row, 0x01000193);
  hash = Math.imul(hash ^ words[w]!, 0x01000193);
  hash = Math.imul(hash ^ words[w + 1]!, 0x01000193);
  hash = Math.imul(hash ^ words[w + 2]!, 0x01000193);
  hash = Math.imul(hash ^ words[w + 3]!, 0x01000193);
  return Math.imul(hash ^ words[w + 4]!, 0x01000193);
}

/**
 * Record types a row names by code, from {@link FIRST_TYPE_KIND} on. The order is part of the line
 * index's file format: types are only ever added at the end. Any other type is {@link KIND_OTHER}.
 */
const RECORD_KINDS = [
  "session",
  "message",
  "model_change",
  "thinking_level_change",
  "service_tier_change",
  "compaction",
  "branch_summary",
  "custom",
  "custom_message",
  "label",
  "ttsr_injection",
  "session_init",
  "mode_change",
  "mcp_tool_selection",
  "discovered_builtin_tool_selection",
  "configured_model_chain",
  "session_info",
  "header_patch",
  "entry_patch",
] as const;

/** No row: a word of zeros (the torn end of a sidecar) names no line. */
export const KIND_NONE = 0;
/** A line the loader skips as blank (white space only). */
export const KIND_BLANK = 1;
/** A piece of a line that holds no record. */
export const KIND_INVALID = 2;
/** A record whose type is not in the code list (its line is read to learn it). */
export const KIND_OTHER = 3;
const FIRST_TYPE_KIND = 4;
/** One past the largest kind. */
export const KIND_END = FIRST_TYPE_KIND + RECORD_KINDS.length;
const KIND_OF = new Map<string, number>(RECORD_KINDS.map((type, k) => [type, FIRST_TYPE_KIND + k]));

/** Flag: another piece of the line of the row before (same place, same length). */
export const F_CONT = 1;
/** Flag: the line is cut into pieces by salvage (not one record parsed whole). */
export const F_PIECE = 2;
/** Flag: the record has a string `id`. */
export const F_ID = 4;
/** Flag: `parentId` is `null`. */
export const F_PARENT_NULL = 8;
/** Flag: `parentId` is a string (an entry's parent is then the row in the parent word). */
export const F_PARENT_STRING = 16;
/** Flag: line 1 starts with a UTF-8 byte order mark, which the row's place skips. */
export const F_BOM = 32;
/** Every flag a row may carry. */
export const ALL_FLAGS = 63;

/** The kind of a record of `type`. */
export function kindOf(type: unknown): number {
  return typeof type === "string" ? (KIND_OF.get(type) ?? KIND_OTHER) : KIND_INVALID;
}

/** The type a kind names; `undefined` for a blank, invalid or other line. */
export function typeOfKind(kind: number): string | undefined {
  return kind >= FIRST_TYPE_KIND && kind < KIND_END ? RECORD_KINDS[kind - FIRST_TYPE_KIND] : undefined;
}

/** The 32-bit FNV-1a hash of a string's UTF-16 units: how a row names an id without holding it. */
export function idHash(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash;
}

/** The flags of a record's `id` and `parentId`. */
export function keyFlags(id: unknown, parentId: unknown): number {
  return (typeof id === "string" ? F_ID : 0) | (parentId === null ? F_PARENT_NULL : typeof parentId === "string" ? F_PARENT_STRING : 0);
}

/** A row's fields, as {@link LineTable.push} takes them. */
export interface RowFields {
  length: number;
  parent: number;
  crc: number;
  idHash: number;
  kind: number;
  flags: number;
}

/** The rows of a file and, computed from them, where each row's line is. */
export class LineTable {
  /** the rows, {@link ROW_WORDS} words each: length, parent row, crc, id hash, kind | flags << 8, check */
  words: Int32Array;
  /** byte offset of each row's line */
  offset: Float64Array;
  /** the rows that are a further piece of the line before (salvage only, so nearly always none), ascending */
  readonly #pieces: number[] = [];
  #size = 0;

  constructor(words = new Int32Array(64 * ROW_WORDS), rows = 0) {
    this.words = words;
    this.offset = new Float64Array(Math.max(64, rows));
  }

  /** Number of rows. */
  get size(): number {
    return this.#size;
  }

  /** Room for `rows` rows. */
  reserve(rows: number): void {
    if (rows * ROW_WORDS > this.words.length) {
      const words = new Int32Array(Math.max(rows, Math.ceil((this.words.length / ROW_WORDS) * 1.5)) * ROW_WORDS);
      words.set(this.words.subarray(0, this.#size * ROW_WORDS));
      this.words = words;
    }
    if (rows > this.offset.length) {
      const offset = new Float64Array(Math.max(rows, Math.ceil(this.offset.length * 1.5)));
      offset.set(this.offset.subarray(0, this.#size));
      this.offset = offset;
    }
  }

  /** Adds a row whose line starts at `offset`. */
  push(offset: number, row: RowFields): void {
    const at = this.#size;
    this.reserve(at + 1);
    this.offset[at] = offset;
    const w = at * ROW_WORDS;
    const { words } = this;
    words[w] = row.length;
    words[w + 1] = row.parent;
    words[w + 2] = row.crc;
    words[w + 3] = row.idHash;
    words[w + 4] = row.kind | (row.flags << 8);
    words[w + 5] = 0;
    if ((row.flags & F_CONT) !== 0) this.#pieces.push(at);
    this.#size = at + 1;
  }

  /**
   * Takes the first `rows` rows of {@link words} (read from a sidecar sealed with `seed`), placing each line one byte
   * after the line before (a further piece of a line in its place). A row of zeros (a torn end) ends the table there;
   * a row that fails its check word or is malformed refuses the whole table. Parent rows are checked where entries
   * are known, by {@link classifyRows}.
   * @returns the rows taken, or why the table is refused
   */
  adopt(rows: number, seed: number): number | string {
    const { words, offset } = this;
    let at = 0;
    let row = 0;
    for (; row < rows; row++) {
      const w = row * ROW_WORDS;
      const length = words[w]! >>> 0;
      const word = words[w + 4]!;
      if (word === 0 && words[w + 5] === 0) break;
      if (rowCheck(words, w, row, seed) !== words[w + 5]) return `row ${row} fails its check`;
      const kind = word & 0xff;
      const flags = word >>> 8;
      if (kind === KIND_NONE || kind >= KIND_END || flags > ALL_FLAGS) return `row ${row} is malformed`;
      const malformed =
        ((flags & F_ID) === 0 && words[w + 3] !== 0) ||
        ((flags & F_PARENT_STRING) === 0 && words[w + 1] !== -1) ||
        ((flags & F_BOM) !== 0 && (row !== 0 || (flags & F_CONT) !== 0)) ||
        (kind === KIND_BLANK && (flags & ~F_BOM) !== 0) ||
        (kind === KIND_INVALID && (flags & (F_PIECE | F_ID | F_PARENT_STRING)) !== F_PIECE);
      if (malformed) return `row ${row} is malformed`;
      if ((flags & F_CONT) !== 0) {
        // Another piece of the line before: same place, same bytes, both cut by salvage.
        const before = w - ROW_WORDS;
        if (row === 0 || (flags & F_PIECE) === 0 || ((words[before + 4]! >>> 8) & F_PIECE) === 0) return `row ${row} is malformed`;
        if (words[before] !== words[w] || words[before + 2] !== words[w + 2]) return `row ${row} is malformed`;
        offset[row] = offset[row - 1]!;
        this.#pieces.push(row);
        continue;
      }
      if (row === 0 && (flags & F_BOM) !== 0) at = 3;
      if (at + length > Number.MAX_SAFE_INTEGER) return `row ${row} is malformed`;
      offset[row] = at;
      at += length + 1;
    }
    this.#size = row;
    return row;
  }

  /** The 1-based line number of row `row`'s line: every row starts a line but a further piece of one. */
  lineOf(row: number): number {
    const pieces = this.#pieces;
    let low = 0;
    let high = pieces.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (pieces[mid]! <= row) low = mid + 1;
      else high = mid;
    }
    return row + 1 - low;
  }

  /** Sets the row count to `size`: dropping a tail. */
  truncate(size: number): void {
    this.#size = size;
    while (this.#pieces.length > 0 && this.#pieces[this.#pieces.length - 1]! >= size) this.#pieces.pop();
  }
  /** The line's byte length (no line feed). */
  length(row: number): number {
    return this.words[row * ROW_WORDS]! >>> 0;
  }

  /** The row of the entry's parent; -1 for none. */
  parent(row: number): number {
    return this.words[row * ROW_WORDS + 1]!;
  }

  /** Sets the row of the entry's parent. */
  setParent(row: number, parent: number): void {
    this.words[row * ROW_WORDS + 1] = parent;
  }

  /** CRC-32 of the line's bytes, signed. */
  crc(row: number): number {
    return this.words[row * ROW_WORDS + 2]!;
  }

  /** {@link idHash} of the record's id (0 without one). */
  idHash(row: number): number {
    return this.words[row * ROW_WORDS + 3]!;
  }

  kind(row: number): number {
    return this.words[row * ROW_WORDS + 4]! & 0xff;
  }

  flags(row: number): number {
    return (this.words[row * ROW_WORDS + 4]! >>> 8) & 0xff;
  }

  /** Whether the row is a record (of a known or other type). */
  isRecord(row: number): boolean {
    return this.kind(row) >= KIND_OTHER;
  }

  /** The row of the first record, where a session header belongs; `size` when no row holds one. */
  firstRecordRow(): number {
    let row = 0;
    while (row < this.#size && !this.isRecord(row)) row += 1;
    return row;
  }

  /** The byte just after the line of the last row (0 when there is none). */
  get end(): number {
    const last = this.#size - 1;
    return last < 0 ? 0 : this.offset[last]! + this.length(last) + 1;
  }

  /**
   * Rows `from..to` as the bytes the sidecar holds (host byte order), their check words set under `seed` for the
   * rows' numbers in the sidecar: `first` for row `from` (a table of appended rows starts at 0 in memory).
   */
  sealed(from: number, to: number, seed: number, first = from): Buffer {
    const { words } = this;
    for (let row = from; row < to; row++) words[row * ROW_WORDS + 5] = rowCheck(words, row * ROW_WORDS, first + row - from, seed);
    return Buffer.from(words.buffer, words.byteOffset + from * ROW_WORDS * 4, (to - from) * ROW_WORDS * 4);
  }
}
