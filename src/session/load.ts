/**
 * Loading a session file into a typed model, strict validation, writing it back, and the peers' module-level format
 * functions (made of the same parts, so a file reads the same through either door). A load keeps `entries` (migrated,
 * patched: the effective state) and `lines` (the file in order, migrated but unpatched, patches and invalid pieces
 * verbatim), which {@link serializeSessionLines} writes back losslessly as v5.
 */
import { SessionFormatError } from "./errors.js";
import { joinLines, JsonlScanner, scanJsonl, type InvalidLine, type JsonlStats, type JsonlVisitor } from "./jsonl.js";
import { declaredVersion, migrateSession, type HeaderRecord, type MigrationOptions } from "./migrate.js";
import { replayPatches, type PatchReport, type PatchSkipCode, type ReplayItem } from "./patches.js";
import type { JsonRecord } from "./salvage.js";
import { entryCheckFor, schemaChecks } from "./schema-check.js";
import { deepJson, entryJson, nestsTooDeep } from "./value-bounds.js";
import {
  CURRENT_SESSION_VERSION,
  EntryPatchRecordSchema,
  HeaderPatchRecordSchema,
  isPatchRecordType,
  SessionEntrySchema,
  SessionHeaderSchema,
  UNKNOWN_ENTRY,
} from "./schemas.js";
import { isUnknownEntry, type CompactionEntry, type FileEntry, type SessionHeader, type UnknownEntryReason } from "./schemas.js";

/** A non-UTF-8 entry line: a rewrite writes `bytes` back while the entry still serializes to `asRead`, never U+FFFD. */
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

/** Why a non-empty file has no usable header: only invalid lines, a first record not `"session"`, no string `id`, a mistyped field. */
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
  /** the whole file in order, for a rewrite; patches of a file below v4 are not replayed (`version_below_4`), though a v5 rewrite would */
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
 * The header's version (1 when absent), checked before any migration or replay so a newer file is never reinterpreted.
 * @throws SessionFormatError `version_too_new` above 5, `invalid_version` for anything else not an integer in 1..5
 */
export function checkHeaderVersion(header: JsonRecord): number {
  const version = header.version;
  if (version === undefined) return 1;
  if (typeof version === "number" && Number.isInteger(version)) {
    if (version > CURRENT_SESSION_VERSION) {
      throw new SessionFormatError("version_too_new", `Unsupported session version: ${version} (this reader knows up to ${CURRENT_SESSION_VERSION})`);
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
 * Loads a session file's content (`null`/`undefined`: missing). Missing or blank-only gives `empty`, a first record that
 * is no usable header `invalid_header`; else the records are migrated, patched (on-disk v4+) and typed ({@link UnknownEntry}).
 * @throws SessionFormatError `version_too_new` / `invalid_version` ({@link checkHeaderVersion}), `invalid_input`
 */
export function loadSession(input: string | Uint8Array | null | undefined, options: LoadOptions = {}): SessionLoadResult {
  if (input === null || input === undefined) return { kind: "empty" };
  return new SessionLoader(options).loadAll(input);
}

/**
 * {@link loadSession} over chunks (`write` each, then `end`), holding the records and one line, never the whole file.
 * Chunks after a disqualifying first record are ignored; `write` throws {@link checkHeaderVersion}'s errors at the header.
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
        else
          this.#lines.push({
            kind: "entry",
            line,
            value,
            raw: { bytes: Buffer.from(raw), asRead: nestsTooDeep(value) ? deepJson(value) : JSON.stringify(value) },
          });
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

/** Marks (or unmarks) `entry` as an {@link UnknownEntry} by its schema's check, never parsing it; true when it is one. */
export function markIfUnknown(entry: JsonRecord): boolean {
  const marked = entry as { [UNKNOWN_ENTRY]?: UnknownEntryReason };
  delete marked[UNKNOWN_ENTRY];
  const check = entryCheckFor(entry.type);
  // Too deep to copy or re-serialise by recursion on some runtime: kept aside before any schema walks it.
  const reason = nestsTooDeep(entry) ? "nesting_too_deep" : check === undefined ? "unknown_type" : check(entry) ? undefined : "invalid_fields";
  if (reason !== undefined) marked[UNKNOWN_ENTRY] = reason;
  return reason !== undefined;
}

/** The bytes of a file holding `lines`: one JSON line per record, invalid pieces as read (their bytes when not UTF-8). */
export function serializeSessionLines(lines: Iterable<SessionLine>): Buffer {
  return joinLines(lines, (item) => {
    if (item.kind === "invalid") return item.bytes ?? `${item.text}\n`;
    return (item.kind === "entry" ? unchangedRawBytes(item.value, item.raw) : undefined) ?? `${entryJson(item.value)}\n`;
  });
}

/** The non-UTF-8 bytes an entry was read from, while it is still that record; `undefined`: write it as JSON. */
export function unchangedRawBytes(entry: unknown, raw: RawEntryLine | undefined): Buffer | undefined {
  return raw !== undefined && entryJson(entry as object) === raw.asRead ? raw.bytes : undefined;
}

/** One schema mismatch: where in the record, and what. */
export interface SchemaIssue {
  path: PropertyKey[];
  message: string;
}

/**
 * What a {@link Violation} is. Of a line: no JSON record (`unparseable_line`), JSON but no object with a string `type`
 * (`not_a_record`), torn, glued or padded (`salvaged_line`), `non_utf8_line`, `missing_final_newline`, past the longest
 * string (`line_too_long`). Of the header: none usable or no string `timestamp`/`cwd` (`invalid_header`),
 * `invalid_version`, `version_too_new`. Of an entry: `unknown_entry_type`, fields failing its schema (`invalid_entry`),
 * `duplicate_entry_id`. Of a patch: the {@link PatchSkipCode} replay gave.
 */
export type ViolationCode =
  | "unparseable_line"
  | "not_a_record"
  | "salvaged_line"
  | "non_utf8_line"
  | "missing_final_newline"
  | "line_too_long"
  | "invalid_header"
  | "invalid_version"
  | "version_too_new"
  | "unknown_entry_type"
  | "invalid_entry"
  | "duplicate_entry_id"
  | PatchSkipCode;

/** One violation. `line` is 1-based, or `null` when it concerns no single line. */
export interface Violation {
  line: number | null;
  code: ViolationCode;
  /** the path inside the record (empty for whole-line violations) */
  path: PropertyKey[];
  message: string;
}

/** Header fields lenient loading can do without but strict readers (resume) require. */
const STRICT_HEADER_FIELDS = ["timestamp", "cwd"] as const;

/** Every violation by line; entries are checked as migrated (a v1 entry's missing id is no fault), patches as written. */
function collectViolations(session: LoadedSession): Violation[] {
  const out: Violation[] = [];
  const add = (line: number | null, code: ViolationCode, path: PropertyKey[], message: string) => out.push({ line, code, path, message });

  for (const invalid of session.invalidLines) {
    add(invalid.line, invalid.reason === "not_a_record" ? "not_a_record" : "unparseable_line", [], "no usable record");
  }
  for (const line of session.stats.salvagedLines) add(line, "salvaged_line", [], "records recovered by salvage");
  for (const line of session.stats.nonUtf8Lines) add(line, "non_utf8_line", [], "bytes are not valid UTF-8");
  if (!session.stats.endsWithNewline) add(session.stats.lines, "missing_final_newline", [], "last line has no newline");

  const seen = new Set<string>();
  const skipped = new Map(session.patchReport.skipped.map((skip) => [skip.record, skip.code]));
  for (const item of session.lines) {
    if (item.kind === "header") {
      for (const field of STRICT_HEADER_FIELDS) {
        if (typeof item.value[field] !== "string") add(item.line, "invalid_header", [field], `header has no string ${field}`);
      }
    } else if (item.kind === "entry") {
      const { value } = item;
      const check = entryCheckFor(value.type);
      if (check === undefined) {
        add(item.line, "unknown_entry_type", ["type"], `unknown entry type ${JSON.stringify(value.type)}`);
      } else if (!check(value)) {
        // zod is loaded only to say what is wrong with an entry the check refused.
        for (const issue of SessionEntrySchema.safeParse(value).error?.issues ?? []) add(item.line, "invalid_entry", issue.path, issue.message);
      }
      if (typeof value.id === "string") {
        if (seen.has(value.id)) add(item.line, "duplicate_entry_id", ["id"], `entry id ${value.id} already used`);
        seen.add(value.id);
      }
    } else if (item.kind === "patch") {
      const code = skipped.get(item.value);
      if (code !== undefined && code !== "invalid_patch") add(item.line, code, [], "patch record not applied");
      if (code !== "invalid_patch") continue;
      const schema = item.value.type === "header_patch" ? HeaderPatchRecordSchema : EntryPatchRecordSchema;
      for (const issue of schema.safeParse(item.value).error?.issues ?? []) add(item.line, "invalid_patch", issue.path, issue.message);
    }
  }
  // Stable sort: within a line, the order above (whole-line facts first) is kept.
  return out.sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
}

/** The outcome of {@link validateSession}. */
export interface ValidationReport {
  /** true when there is not a single violation */
  ok: boolean;
  violations: Violation[];
}

/** Strict validation for audits: every violation by line and path, also those a lenient load throws on; none for an empty file. */
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

/** One record of a session file as the peers list them (GJC's `FileEntry`): the header or an entry. */
export type SessionFileEntry = SessionHeader | FileEntry;

/**
 * A file's records, header first, leniently (lines without a record skipped, torn ones salvaged). A first record that
 * is a header has its version checked and, from v4, its patches replayed; patches are never in the result. Nothing is
 * migrated ({@link migrateSessionEntries}). @throws SessionFormatError `version_too_new` / `invalid_version`
 */
export function parseSessionEntries(content: string): SessionFileEntry[] {
  const records: JsonRecord[] = [];
  scanJsonl(content, { record: (value) => records.push(value), invalid: () => {} });
  // A patch ahead of the header has no target yet: a forward patch, which replay never applies.
  let start = 0;
  while (start < records.length && isPatchRecordType(records[start]!.type)) start++;
  const first = records[start];
  if (first?.type !== "session") return typeEntries(records.filter((record) => !isPatchRecordType(record.type)));
  const version = checkHeaderVersion(first);
  const items: ReplayItem[] = [];
  for (let i = start + 1; i < records.length; i++) {
    const value = records[i]!;
    // Replay reports skipped patches by line; this parse keeps no report, so the index will do.
    items.push(isPatchRecordType(value.type) ? { kind: "patch", value, line: i + 1 } : { kind: "entry", value });
  }
  const replayed = replayPatches(first as SessionHeader, items, version);
  return [replayed.header, ...typeEntries(replayed.entries)];
}

function typeEntries(records: JsonRecord[]): FileEntry[] {
  for (const record of records) markIfUnknown(record);
  return records as FileEntry[];
}

/** Migrates parsed records in place as a load does, retyping what a step fixes; the version is the first header's (else 1). */
export function migrateSessionEntries(entries: SessionFileEntry[]): void {
  const at = entries.findIndex((entry) => entry.type === "session");
  const header = at === -1 ? undefined : (entries[at] as SessionHeader);
  const stand = (header ?? { type: "session", id: "" }) as HeaderRecord;
  if (declaredVersion(stand) >= CURRENT_SESSION_VERSION) return;
  // In place, so the records stay the objects `entries` holds.
  const records = entries.filter((_, index) => index !== at) as JsonRecord[];
  typeEntries(migrateSession(stand, records, { inPlace: true }).entries);
  if (header !== undefined) header.version = CURRENT_SESSION_VERSION;
}

/** The last typed `compaction` in `entries`, or `null` when there is none. */
export function getLatestCompactionEntry(entries: readonly SessionFileEntry[]): CompactionEntry | null {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!;
    if (entry.type === "compaction" && !isUnknownEntry(entry as FileEntry)) return entry as CompactionEntry;
  }
  return null;
}
