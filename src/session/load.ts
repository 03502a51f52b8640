/**
 * Loading a session file's content into a typed, migrated, patched model, and writing it back.
 * A load keeps two views: `entries`, the effective state (migrated to v5, patches applied), and
 * `lines`, the file itself in order (migrated but unpatched, patch records and invalid pieces
 * verbatim), which {@link serializeSessionLines} writes back as a v5 file that loads to the same
 * state and has lost nothing.
 */
import { SessionFormatError } from "./errors.js";
import { joinLines, JsonlScanner, scanJsonl, serializeRecord, type InvalidLine, type JsonlStats, type JsonlVisitor } from "./jsonl.js";
import { migrateSession, type MigrationOptions } from "./migrate.js";
import { replayPatches, type PatchReport } from "./patches.js";
import type { JsonRecord } from "./salvage.js";
import { entryCheckFor, schemaChecks } from "./schema-check.js";
import { CURRENT_SESSION_VERSION, isPatchRecordType, SessionHeaderSchema, UNKNOWN_ENTRY } from "./schemas.js";
import type { FileEntry, SessionHeader, UnknownEntryReason } from "./schemas.js";
import { collectViolations, type SchemaIssue, type Violation } from "./validate.js";

/**
 * An entry line that is not valid UTF-8: its bytes and the JSON of the record parsed from them.
 * A rewrite writes `bytes` back while the entry still serializes to `asRead`, so replacement
 * characters never take the place of the bytes.
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

/** Options of {@link loadSession}. */
export interface LoadOptions extends MigrationOptions {
  /** `lenient` (the default) loads whatever can be loaded; `strict` also lists every violation */
  mode?: "lenient" | "strict";
}

/** A missing file, or one that holds no record and no invalid line (only blank lines). */
export interface EmptySession {
  kind: "empty";
}

/**
 * Why a non-empty file has no usable header: it holds only invalid lines (`no_record`), its first
 * record's `type` is not `"session"` (`not_a_session_header`) or it has no string `id`
 * (`missing_id`), or another header field has the wrong type (`malformed_header`).
 */
export type InvalidHeaderReason = "no_record" | "not_a_session_header" | "missing_id" | "malformed_header";

/** A non-empty file without a usable header; never to be replaced: it may be a transcript with a damaged first line. */
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
   * The whole file in order, for a rewrite (migrated, unpatched; patches and invalid kept). Patch
   * records of a file below v4 are not replayed, but would be once rewritten under a v5 header;
   * no writer makes such files, and `patchReport` shows one (`version_below_4`).
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

/**
 * The header's version (1 when absent), checked before any migration or replay so a newer file
 * is never reinterpreted.
 *
 * @throws SessionFormatError `version_too_new` for an integer above 5, `invalid_version` for
 *   anything else that is not an integer in 1..5
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
 * Loads a session file's content (`null`/`undefined`: a missing file). Missing, empty or
 * blank-only gives `empty`; a first record that is no usable header gives `invalid_header`;
 * otherwise the version is checked, the records migrated, the patches replayed (on-disk v4+)
 * and every entry typed (a known type with matching fields, else an {@link UnknownEntry}).
 *
 * @throws SessionFormatError `version_too_new` / `invalid_version` (see {@link checkHeaderVersion});
 *   `invalid_input` for input that is neither text nor bytes
 */
export function loadSession(input: string | Uint8Array | null | undefined, options: LoadOptions = {}): SessionLoadResult {
  if (input === null || input === undefined) return { kind: "empty" };
  return new SessionLoader(options).loadAll(input);
}

/**
 * {@link loadSession} for a file read in chunks (`write` each, then `end`), holding the records
 * and one line, never the whole file. After a disqualifying first record, later chunks are
 * ignored; `write` throws {@link checkHeaderVersion}'s errors as soon as the header is read.
 */
export class SessionLoader {
  readonly #options: LoadOptions;
  readonly #lines: SessionLine[] = [];
  readonly #invalidLines: InvalidLine[] = [];
  readonly #records: JsonRecord[] = [];
  readonly #scanner: JsonlScanner;
  /** the header's line, in `#lines` where it was read (invalid pieces before it stay before it) */
  #header: Extract<SessionLine, { kind: "header" }> | undefined;
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
    this.#result ??= this.#complete(() => this.#scanner.end());
    return this.#result;
  }

  /** Loads a whole file given at once, as text or bytes (on a fresh loader). */
  loadAll(input: string | Uint8Array): SessionLoadResult {
    return this.#complete(() => scanJsonl(input, this.#visitor()));
  }

  /** Runs the last scan unless the file is refused already, then builds the result. */
  #complete(scan: () => JsonlStats): SessionLoadResult {
    let stats: JsonlStats | undefined;
    if (this.#refused === undefined) this.#guard(() => (stats = scan()));
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
          this.#header = { kind: "header", line, value: value as SessionHeader };
          this.#lines.push(this.#header);
          return;
        }
        this.#records.push(value);
        if (isPatchRecordType(value.type)) this.#lines.push({ kind: "patch", line, value });
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
    const lines = this.#lines;
    if (this.#header === undefined) {
      if (this.#invalidLines.length === 0) return { kind: "empty" };
      return { kind: "invalid_header", reason: "no_record", line: null, issues: [] };
    }
    const header = this.#header.value;
    // zod is loaded only to say what is wrong with a header the check refused.
    const checked = schemaChecks().SessionHeaderSchema(header) ? undefined : SessionHeaderSchema.safeParse(header);
    if (checked !== undefined && !checked.success) {
      const issues = checked.error.issues.map((issue) => ({ path: issue.path, message: issue.message }));
      return { kind: "invalid_header", reason: "malformed_header", line: this.#header.line, issues };
    }

    // The records were parsed here and belong to no one else: migrated in place, they stay the objects `lines` holds.
    const migrated = migrateSession(header, this.#records, { ...this.#options, inPlace: true });
    this.#header.value = migrated.header;

    const replayed = replayPatches(migrated.header, lines, this.#onDiskVersion);
    let unknownEntries = 0;
    for (const entry of replayed.entries) if (markIfUnknown(entry)) unknownEntries += 1;
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
  if (value.type !== "session") throw new StopScan({ kind: "invalid_header", reason: "not_a_session_header", line, issues: [] });
  if (typeof value.id !== "string") throw new StopScan({ kind: "invalid_header", reason: "missing_id", line, issues: [] });
  return checkHeaderVersion(value);
}

/**
 * Marks `entry` as an {@link UnknownEntry} when its type is unknown or its fields fail its
 * schema's check, and clears a mark a changed record no longer deserves. Only checked, never
 * parsed: the record keeps its own object, fields and key order.
 *
 * @returns true when `entry` is (now) an unknown entry
 */
export function markIfUnknown(entry: JsonRecord): boolean {
  const marked = entry as { [UNKNOWN_ENTRY]?: UnknownEntryReason };
  delete marked[UNKNOWN_ENTRY];
  const check = entryCheckFor(entry.type);
  const reason = check === undefined ? "unknown_type" : check(entry) ? undefined : "invalid_fields";
  if (reason !== undefined) marked[UNKNOWN_ENTRY] = reason;
  return reason !== undefined;
}

/** The bytes of a file holding `lines`: one JSON line per record, invalid pieces as read (their bytes when not UTF-8). */
export function serializeSessionLines(lines: Iterable<SessionLine>): Buffer {
  return joinLines(lines, (item) => {
    if (item.kind === "invalid") return item.bytes ?? `${item.text}\n`;
    return (item.kind === "entry" ? unchangedRawBytes(item.value, item.raw) : undefined) ?? serializeRecord(item.value);
  });
}

/** The non-UTF-8 bytes an entry was read from, while it is still that record; `undefined`: write it as JSON. */
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
 * Strict validation for audits: every violation with its line and path, including those that
 * make a lenient load fail (a refused version, no header). A missing or empty file has none.
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
  if (result.kind === "invalid_header") {
    const issues = result.issues.length > 0 ? result.issues : [{ path: [], message: result.reason }];
    const violations = issues.map(({ path, message }) => ({ line: result.line, code: "invalid_header" as const, path, message }));
    return { ok: false, violations };
  }
  const violations = result.kind === "empty" ? [] : (result.violations ?? []);
  return { ok: violations.length === 0, violations };
}
