/** A session file's line table: typed-array columns and one byte pool for the ids, no object per row. */
import { SessionFormatError } from "./errors.js";

/** `piece` of a row whose line is one record parsed whole with `JSON.parse`. */
export const WHOLE_LINE = -1;

/** `idLength` of a row without a string id; `parentLength` of a row without a string or null parent. */
export const NO_STRING = -1;
/** `parentLength` of a row whose parent is `null`. */
export const NULL_PARENT = -2;
/** `parentRow` of a row whose parent's row is not known (scanned, not yet resolved). */
export const UNKNOWN_ROW = -2;

const INITIAL_ROWS = 64;
/** The most id bytes a table holds (its ranges are 32-bit). */
const MAX_POOL_BYTES = 0x7fffffff;

/**
 * How a string is held in the pool: the content of its `JSON.stringify` form, one text per
 * string (lone surrogates included), so equal bytes are equal strings; a printable ASCII id is itself.
 */
export function poolText(text: string): string {
  for (let i = 0; i < text.length; i++) if (!isPlainCode(text.charCodeAt(i))) return JSON.stringify(text).slice(1, -1);
  return text;
}

/** Whether a UTF-16 unit is printable ASCII other than `"` and a backslash: held in the pool as one byte. */
function isPlainCode(code: number): boolean {
  return code >= 0x20 && code < 0x7f && code !== 0x22 && code !== 0x5c;
}

function fromPool(pool: Buffer, start: number, length: number): string {
  const text = pool.toString("utf8", start, start + length);
  for (let i = start; i < start + length; i++) if (pool[i] === 0x5c) return JSON.parse(`"${text}"`) as string;
  return text;
}

/** The per-row columns of a {@link LineTable}, grown together. */
const COLUMNS = ["line", "offset", "length", "piece", "crc", "typeCode", "idStart", "idLength", "parentStart", "parentLength", "parentRow", "repeats"] as const;

/**
 * One row per record or invalid piece of a session file, in file order: where its line is, and
 * `type`, `id` and `parentId` (byte ranges of {@link pool}; a parent equal to the previous id shares its range).
 */
export class LineTable {
  /** 1-based physical line number */
  line: Float64Array = new Float64Array(INITIAL_ROWS);
  /** byte offset of the line's first byte (after a byte order mark on line 1) */
  offset: Float64Array = new Float64Array(INITIAL_ROWS);
  /** byte length of the line, without its line feed */
  length: Float64Array = new Float64Array(INITIAL_ROWS);
  /** {@link WHOLE_LINE}, or the position of this piece among the pieces salvage cuts from the line */
  piece: Int32Array = new Int32Array(INITIAL_ROWS);
  /** CRC-32 of the line's bytes (without its feed), as a signed 32-bit value: every read of the line is checked against it */
  crc: Int32Array = new Int32Array(INITIAL_ROWS);
  /** code of the record's `type` in {@link types}; -1 for an invalid piece */
  typeCode: Int32Array = new Int32Array(INITIAL_ROWS);
  /** pool offset of the id's bytes */
  idStart: Int32Array = new Int32Array(INITIAL_ROWS);
  /** byte length of the id, or {@link NO_STRING} */
  idLength: Int32Array = new Int32Array(INITIAL_ROWS);
  /** pool offset of the parent id's bytes */
  parentStart: Int32Array = new Int32Array(INITIAL_ROWS);
  /** byte length of the parent id, {@link NO_STRING} or {@link NULL_PARENT} */
  parentLength: Int32Array = new Int32Array(INITIAL_ROWS);
  /** for an entry row, the row of its parent's last holder, -1 for none, or {@link UNKNOWN_ROW}; spares an open hashing every id */
  parentRow: Int32Array = new Int32Array(INITIAL_ROWS);
  /** 1 for an entry row whose id an earlier entry row holds too, else 0 */
  repeats: Int32Array = new Int32Array(INITIAL_ROWS);
  /** the ids' UTF-8 bytes; valid up to {@link poolSize} */
  pool: Buffer = Buffer.allocUnsafe(1024);
  /** bytes of {@link pool} in use */
  poolSize = 0;
  /** the distinct types, by code */
  readonly types: string[] = [];
  readonly #codes = new Map<string, number>();
  #size = 0;

  /** Number of rows. */
  get size(): number {
    return this.#size;
  }

  /** The code of `type` in {@link types}, added when new. */
  typeCodeOf(type: string): number {
    let code = this.#codes.get(type);
    if (code === undefined) {
      code = this.types.push(type) - 1;
      this.#codes.set(type, code);
    }
    return code;
  }

  /** Room for `rows` rows and `bytes` more pool bytes. */
  reserve(rows: number, bytes: number): void {
    if (rows > this.line.length) {
      const size = Math.max(rows, Math.ceil(this.line.length * 1.5));
      const columns = this as Record<(typeof COLUMNS)[number], Float64Array | Int32Array>;
      for (const name of COLUMNS) {
        const next = new (columns[name].constructor as new (size: number) => Float64Array | Int32Array)(size);
        next.set(columns[name]);
        columns[name] = next;
      }
    }
    if (this.poolSize + bytes > MAX_POOL_BYTES) throw new SessionFormatError("line_too_long", "the file's ids are too long to index");
    if (this.poolSize + bytes > this.pool.length) {
      const pool = Buffer.allocUnsafe(Math.max(this.poolSize + bytes, Math.ceil(this.pool.length * 1.5)));
      this.pool.copy(pool, 0, 0, this.poolSize);
      this.pool = pool;
    }
  }

  /** Adds one row for `piece` of the line at `offset` (`length` bytes, CRC-32 `crc`); `id` and `parentId` as strings. */
  push(line: number, offset: number, length: number, piece: number, crc: number, type: string | undefined, id: string | undefined, parentId: string | null | undefined): void {
    const row = this.#size;
    this.#row(line, offset, length, piece, crc, type === undefined ? -1 : this.typeCodeOf(type));
    const previous = row - 1;
    if (typeof parentId === "string" && previous >= 0 && this.idLength[previous]! >= 0 && this.idIs(previous, parentId)) {
      this.parentStart[row] = this.idStart[previous]!;
      this.parentLength[row] = this.idLength[previous]!;
    } else if (typeof parentId === "string") [this.parentStart[row], this.parentLength[row]] = [this.poolSize, this.#add(parentId)];
    else [this.parentStart[row], this.parentLength[row]] = [0, parentId === null ? NULL_PARENT : NO_STRING];
    if (id === undefined) [this.idStart[row], this.idLength[row]] = [0, NO_STRING];
    else [this.idStart[row], this.idLength[row]] = [this.poolSize, this.#add(id)];
    this.#size = row + 1;
  }

  #row(line: number, offset: number, length: number, piece: number, crc: number, typeCode: number): void {
    const row = this.#size;
    this.reserve(row + 1, 0);
    this.line[row] = line;
    this.offset[row] = offset;
    this.length[row] = length;
    this.piece[row] = piece;
    this.crc[row] = crc | 0;
    this.typeCode[row] = typeCode;
    this.parentRow[row] = UNKNOWN_ROW;
    this.repeats[row] = 0;
  }

  #add(value: string): number {
    // Ids are short: copying a printable ASCII one code by code beats a call into the encoder.
    this.reserve(this.#size + 1, value.length);
    const { pool } = this;
    const at = this.poolSize;
    let i = 0;
    for (; i < value.length; i++) {
      const code = value.charCodeAt(i);
      if (!isPlainCode(code)) break;
      pool[at + i] = code;
    }
    if (i === value.length) {
      this.poolSize += i;
      return i;
    }
    const text = poolText(value);
    const bytes = Buffer.byteLength(text, "utf8");
    this.reserve(this.#size + 1, bytes);
    this.pool.write(text, this.poolSize, "utf8");
    this.poolSize += bytes;
    return bytes;
  }

  /** Sets the row count to `size` (dropping a tail that is scanned again, or taking rows written into the columns). */
  truncate(size: number): void {
    this.#size = size;
    if (size === 0) this.poolSize = 0;
  }

  /** The row of the first record, where a session header belongs; `size` when no row holds one. */
  firstRecordRow(): number {
    let row = 0;
    while (row < this.#size && this.typeCode[row]! < 0) row += 1;
    return row;
  }

  /** The `type` of row `row`; `undefined` for an invalid piece. */
  typeAt(row: number): string | undefined {
    const code = this.typeCode[row]!;
    return code < 0 ? undefined : this.types[code];
  }

  /** The string `id` of row `row`. */
  idAt(row: number): string | undefined {
    const length = this.idLength[row]!;
    return length < 0 ? undefined : fromPool(this.pool, this.idStart[row]!, length);
  }

  /** The `parentId` of row `row`: a string, `null`, or `undefined` when absent or of another type. */
  parentIdAt(row: number): string | null | undefined {
    const length = this.parentLength[row]!;
    if (length === NULL_PARENT) return null;
    return length < 0 ? undefined : fromPool(this.pool, this.parentStart[row]!, length);
  }

  /** Whether the id of row `row` is `text` (compared without making a string). */
  idIs(row: number, text: string): boolean {
    const length = this.idLength[row]!;
    return length >= 0 && this.#holds(this.idStart[row]!, length, text);
  }

  /** Whether the parent id of row `row` is the string `text` (compared without making a string). */
  parentIs(row: number, text: string): boolean {
    const length = this.parentLength[row]!;
    return length >= 0 && this.#holds(this.parentStart[row]!, length, text);
  }

  /** Whether pool bytes `start..start + length` hold `text`. */
  #holds(start: number, length: number, text: string): boolean {
    // Printable ASCII ids (nearly all) are held as they are: compare code by code.
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (!isPlainCode(code)) return fromPool(this.pool, start, length) === text;
      if (i >= length) return false;
      if (this.pool[start + i] !== code) return false;
    }
    return length === text.length;
  }

  /** The byte just after the line of the last row (0 when there is none). */
  get end(): number {
    const last = this.#size - 1;
    return last < 0 ? 0 : this.offset[last]! + this.length[last]! + 1;
  }
}
