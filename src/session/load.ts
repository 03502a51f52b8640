/**
 * Loading a session file's content into a typed, migrated, patched model, and writing the same
 * content back.
 *
 * A load keeps two views of the file. `entries` is the effective state the rest of the library
 * works with (migrated to v5, patches applied). `lines` is the file itself, in order: the header
 * and entries as migrated but unpatched, the patch records, and every invalid piece verbatim.
 * Writing `lines` back (see {@link serializeSessionLines}) therefore produces a v5 file that
 * loads to the same effective state and has lost nothing the original held.
 */
import { SessionFormatError } from "./errors.js";
import { JsonlScanner, scanJsonl, serializeRecord, type InvalidLine, type JsonlStats, type JsonlVisitor } from "./jsonl.js";
import { migrateSession, type HeaderRecord, type MigrationOptions } from "./migrate.js";
import { replayPatches, type PatchReport, type ReplayItem } from "./patches.js";
import type { JsonRecord } from "./salvage.js";
import { entryCheckFor, schemaChecks } from "./schema-check.js";
import {
  CURRENT_SESSION_VERSION,
  PATCH_RECORD_TYPES,
  SessionHeaderSchema,
  UNKNOWN_ENTRY,
  type FileEntry,
  type SessionHeader,
  type UnknownEntryReason,
} from "./schemas.js";
import { collectViolations, type SchemaIssue, type Violation } from "./validate.js";

/**
 * An entry line whose bytes are not valid UTF-8: its bytes, and the JSON text of the record as
 * parsed from them (before migration). A rewrite writes `bytes` back while the effective entry
 * still serializes to `asRead`, so replacement characters never take the place of the bytes.
 */
export interface RawEntryLine {
  readonly bytes: Buffer;
  readonly asRead: string;
}

/** One line of the file, in file order, as a rewrite writes it. */
export type SessionLine =
  | { kind: "header"; line: number; value: SessionHeader }
  | { kind: "entry"; line: number; value: JsonRecord; raw?: RawEntryLine }
  | { kind: "patch"; line: number; value: JsonRecord }
  | ({ kind: "invalid" } & InvalidLine);

/** `lenient` loads whatever can be loaded; `strict` also lists every violation (for audits). */
export type LoadMode = "lenient" | "strict";

/** Options of {@link loadSession}. */
export interface LoadOptions extends MigrationOptions {
  /** defaults to `lenient` */
  mode?: LoadMode;
}

/** A missing file, or one that holds no record and no invalid line (only blank lines). */
export interface EmptySession {
  kind: "empty";
}

/** Why a non-empty file has no usable header. */
export type InvalidHeaderReason =
  /** the file holds no record at all, only invalid lines */
  | "no_record"
  /** the first record's `type` is not `"session"` */
  | "not_a_session_header"
  /** the first record is a header without a string `id` */
  | "missing_id"
  /** the header has `type` and `id` but another field has the wrong type */
  | "malformed_header";

/**
 * A non-empty file whose first record is not a usable session header. The caller must not
 * replace such a file with a fresh session: it may be someone's transcript with a damaged
 * first line.
 */
export interface InvalidHeaderSession {
  kind: "invalid_header";
  reason: InvalidHeaderReason;
  /** the line of the offending record, or `null` when there is none */
  line: number | null;
  /** for `malformed_header`: what is wrong, by path */
  issues: SchemaIssue[];
}

/** A file with a usable header. */
export interface LoadedSession {
  kind: "loaded";
  /** the effective header: migrated to the current version, header patches applied */
  header: SessionHeader;
  /** the effective entries in file order: migrated, entry patches applied, no patch records */
  entries: FileEntry[];
  /**
   * The whole file in order, for a rewrite (migrated, unpatched; patches and invalid kept).
   * One case does not survive a rewrite unchanged in meaning: patch records in a file below v4
   * are not replayed (`version_below_4`), but once written back under a v5 header they would
   * be. No writer produces such files; `patchReport` shows when one is met.
   */
  lines: SessionLine[];
  /** every line or piece of a line that holds no usable record, verbatim */
  invalidLines: InvalidLine[];
  patchReport: PatchReport;
  /** the header version as stored on disk (1 when absent) */
  onDiskVersion: number;
  /** the on-disk version when it was migrated in memory, `null` when already current */
  migratedFrom: number | null;
  /** how many entries are kept as {@link UnknownEntry} records */
  unknownEntries: number;
  stats: JsonlStats;
  /** strict mode only: every violation, in line order */
  violations?: Violation[];
}

/** Everything {@link loadSession} can return. */
export type SessionLoadResult = EmptySession | InvalidHeaderSession | LoadedSession;

const PATCH_TYPES: ReadonlySet<string> = new Set(PATCH_RECORD_TYPES);

/**
 * Refuses a header `version` that is present but not an integer in 1..5. Called before any
 * migration or patch replay, so a newer file is never reinterpreted by this version.
 *
 * @returns the version, 1 when absent
 * @throws SessionFormatError `version_too_new` for an integer above 5, `invalid_version` for
 *   anything else that is not an integer in 1..5 (a string, a fraction, zero, a negative)
 */
export function checkHeaderVersion(header: JsonRecord): number {
  const version = header.version;
  if (version === undefined) return 1;
  if (typeof version === "number" && Number.isInteger(version)) {
    if (version > CURRENT_SESSION_VERSION) {
      throw new SessionFormatError("version_too_new", `session version ${version} is newer than ${CURRENT_SESSION_VERSION}`);
    }
    if (version >= 1) return version;
  }
  throw new SessionFormatError("invalid_version", "session version is not an integer in 1..5");
}

/** Stops the scan early once the first record has disqualified the file. */
class StopScan {
  constructor(readonly result: InvalidHeaderSession) {}
}

/**
 * Loads a session file's content. `null`/`undefined` stand for a missing file.
 *
 * - missing, empty or blank-only: `{ kind: "empty" }`;
 * - non-empty without a usable header as its first record: `{ kind: "invalid_header" }`;
 * - otherwise `{ kind: "loaded" }` with the header version checked first, then the records
 *   migrated in memory, then the patches replayed (on-disk version >= 4), then every entry typed:
 *   a known type whose fields match its schema is a typed entry, anything else an
 *   {@link UnknownEntry} kept verbatim.
 *
 * @throws SessionFormatError `version_too_new` / `invalid_version` (see
 *   {@link checkHeaderVersion}); `invalid_input` for input that is neither text nor bytes
 */
export function loadSession(input: string | Uint8Array | null | undefined, options: LoadOptions = {}): SessionLoadResult {
  if (input === null || input === undefined) return { kind: "empty" };
  return new SessionLoader(options).loadAll(input);
}

/**
 * {@link loadSession} for a file read in chunks: `write` each chunk as it arrives, then `end`.
 * Only the records and one line are held at a time, never the whole file's bytes. Once the first
 * record has disqualified the file, later chunks are ignored and `end` returns `invalid_header`.
 * `write` throws the version errors of {@link checkHeaderVersion} as soon as the header is read.
 */
export class SessionLoader {
  readonly #options: LoadOptions;
  readonly #lines: SessionLine[] = [];
  readonly #invalidLines: InvalidLine[] = [];
  readonly #records: JsonRecord[] = [];
  readonly #scanner: JsonlScanner;
  #header: HeaderRecord | undefined;
  #headerLine = 0;
  #headerIndex = 0;
  #onDiskVersion = 1;
  #refused: InvalidHeaderSession | undefined;
  #result: SessionLoadResult | undefined;

  constructor(options: LoadOptions = {}) {
    this.#options = options;
    this.#scanner = new JsonlScanner(this.#visitor());
  }

  /** Scans the complete lines of `chunk`. */
  write(chunk: Uint8Array): void {
    if (this.#refused !== undefined) return;
    this.#guard(() => this.#scanner.write(chunk));
  }

  /** Scans the last line and returns the result (the same result on every call). */
  end(): SessionLoadResult {
    if (this.#result !== undefined) return this.#result;
    let stats: JsonlStats | undefined;
    if (this.#refused === undefined) this.#guard(() => (stats = this.#scanner.end()));
    this.#result = this.#refused ?? this.#finish(stats as JsonlStats);
    return this.#result;
  }

  /** Loads a whole file given at once, as text or bytes. */
  loadAll(input: string | Uint8Array): SessionLoadResult {
    let stats: JsonlStats | undefined;
    this.#guard(() => (stats = scanJsonl(input, this.#visitor())));
    return this.#refused ?? this.#finish(stats as JsonlStats);
  }

  #guard(scan: () => void): void {
    try {
      scan();
    } catch (error) {
      if (!(error instanceof StopScan)) throw error;
      this.#refused = error.result;
    }
  }

  #visitor(): JsonlVisitor {
    return {
      record: (value, line, raw) => {
        if (this.#header === undefined) {
          this.#onDiskVersion = acceptHeader(value, line);
          this.#header = value as HeaderRecord;
          this.#headerLine = line;
          this.#headerIndex = this.#lines.length;
          return;
        }
        this.#records.push(value);
        if (PATCH_TYPES.has(value.type)) this.#lines.push({ kind: "patch", line, value });
        else if (raw === undefined) this.#lines.push({ kind: "entry", line, value });
        else this.#lines.push({ kind: "entry", line, value, raw: { bytes: Buffer.from(raw), asRead: JSON.stringify(value) } });
      },
      invalid: (invalid) => {
        this.#invalidLines.push(invalid);
        this.#lines.push({ kind: "invalid", ...invalid });
      },
    };
  }

  #finish(stats: JsonlStats): SessionLoadResult {
    const header = this.#header;
    const lines = this.#lines;
    if (header === undefined) {
      if (this.#invalidLines.length === 0) return { kind: "empty" };
      return { kind: "invalid_header", reason: "no_record", line: null, issues: [] };
    }
    // zod is loaded only to say what is wrong with a header the check refused.
    const checked = schemaChecks().SessionHeaderSchema(header) ? undefined : SessionHeaderSchema.safeParse(header);
    if (checked !== undefined && !checked.success) {
      return {
        kind: "invalid_header",
        reason: "malformed_header",
        line: this.#headerLine,
        issues: checked.error.issues.map((issue) => ({ path: issue.path, message: issue.message })),
      };
    }

    // The records were parsed here and belong to no one else: migrate them in place.
    const migrated = migrateSession(header as SessionHeader, this.#records, { ...this.#options, inPlace: true });
    let next = 0;
    for (const item of lines) {
      if (item.kind === "entry" || item.kind === "patch") item.value = migrated.entries[next++] as JsonRecord;
    }
    // Back where it was read: invalid pieces before the header stay before it.
    lines.splice(this.#headerIndex, 0, { kind: "header", line: this.#headerLine, value: migrated.header });

    const replayed = replayPatches(migrated.header, replayItems(lines), this.#onDiskVersion);
    let unknownEntries = 0;
    for (const entry of replayed.entries) {
      if (markIfUnknown(entry)) unknownEntries += 1;
    }
    const loaded: LoadedSession = {
      kind: "loaded",
      header: replayed.header,
      entries: replayed.entries as FileEntry[],
      lines,
      invalidLines: this.#invalidLines,
      patchReport: replayed.report,
      onDiskVersion: this.#onDiskVersion,
      migratedFrom: migrated.migratedFrom,
      unknownEntries,
      stats,
    };
    if (this.#options.mode === "strict") loaded.violations = collectViolations(loaded);
    return loaded;
  }
}

/** Checks the first record; returns its version or stops the scan with `invalid_header`. */
function acceptHeader(value: JsonRecord, line: number): number {
  if (value.type !== "session") {
    throw new StopScan({ kind: "invalid_header", reason: "not_a_session_header", line, issues: [] });
  }
  if (typeof value.id !== "string") {
    throw new StopScan({ kind: "invalid_header", reason: "missing_id", line, issues: [] });
  }
  return checkHeaderVersion(value);
}

function* replayItems(lines: readonly SessionLine[]): Generator<ReplayItem> {
  for (const item of lines) {
    if (item.kind === "entry") yield { kind: "entry", value: item.value };
    else if (item.kind === "patch") yield { kind: "patch", value: item.value, line: item.line };
  }
}

/**
 * Marks `entry` as an {@link UnknownEntry} when its type is not known or its fields do not match
 * the schema of its type, and clears a mark a changed record no longer deserves. The schema
 * serves as a check only (compiled, see `schema-check.ts`): the record keeps its own object, so
 * fields the schema does not list, and their order, survive.
 *
 * @returns true when `entry` is (now) an unknown entry
 */
export function markIfUnknown(entry: JsonRecord): boolean {
  delete (entry as { [UNKNOWN_ENTRY]?: UnknownEntryReason })[UNKNOWN_ENTRY];
  const check = entryCheckFor(entry.type);
  let reason: UnknownEntryReason | undefined;
  if (check === undefined) reason = "unknown_type";
  else if (!check(entry)) reason = "invalid_fields";
  if (reason === undefined) return false;
  (entry as { [UNKNOWN_ENTRY]?: UnknownEntryReason })[UNKNOWN_ENTRY] = reason;
  return true;
}

/**
 * The bytes of a session file holding `lines`, in order: one `JSON.stringify` per record plus
 * `\n`, and every invalid piece written back as it was read (its original bytes when it was not
 * valid UTF-8).
 */
export function serializeSessionLines(lines: Iterable<SessionLine>): Buffer {
  const chunks: Buffer[] = [];
  let pending = "";
  const flush = (): void => {
    if (pending.length > 0) chunks.push(Buffer.from(pending, "utf8"));
    pending = "";
  };
  for (const item of lines) {
    const bytes = item.kind === "invalid" ? item.bytes : item.kind === "entry" ? unchangedRawBytes(item.value, item.raw) : undefined;
    if (bytes !== undefined) {
      flush();
      chunks.push(bytes, NEWLINE_BYTES);
      continue;
    }
    pending += item.kind === "invalid" ? `${item.text}\n` : serializeRecord(item.value);
    // Bound the string being built; large files are written in pieces.
    if (pending.length > 1 << 20) flush();
  }
  flush();
  return Buffer.concat(chunks);
}

const NEWLINE_BYTES = Buffer.from("\n");

/**
 * The bytes an entry line was read as, when they were not valid UTF-8 and the entry is still
 * the record read from them; `undefined` otherwise (the entry is written as JSON).
 */
export function unchangedRawBytes(entry: unknown, raw: RawEntryLine | undefined): Buffer | undefined {
  return raw !== undefined && JSON.stringify(entry) === raw.asRead ? raw.bytes : undefined;
}

/** The outcome of {@link validateSession}. */
export interface ValidationReport {
  /** true when there is not a single violation */
  ok: boolean;
  violations: Violation[];
}

/**
 * Strict validation for audit tooling: loads `input` in strict mode and reports every violation
 * with its line and path, including the ones that make a lenient load fail (a refused version,
 * a missing header). A missing or empty file has no violations.
 */
export function validateSession(input: string | Uint8Array | null | undefined): ValidationReport {
  let result: SessionLoadResult;
  try {
    result = loadSession(input, { mode: "strict" });
  } catch (error) {
    if (!(error instanceof SessionFormatError) || (error.code !== "invalid_version" && error.code !== "version_too_new" && error.code !== "line_too_long")) {
      throw error;
    }
    const path = error.code === "line_too_long" ? [] : ["version"];
    return { ok: false, violations: [{ line: null, code: error.code, path, message: error.message }] };
  }
  if (result.kind === "empty") return { ok: true, violations: [] };
  if (result.kind === "invalid_header") {
    const issues = result.issues.length > 0 ? result.issues : [{ path: [], message: result.reason }];
    const violations = issues.map(({ path, message }) => ({ line: result.line, code: "invalid_header" as const, path, message }));
    return { ok: false, violations };
  }
  const violations = result.violations ?? [];
  return { ok: violations.length === 0, violations };
}
