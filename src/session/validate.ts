/** Strict validation: every way a loaded session departs from the format, which lenient loading tolerates. */
import type { InvalidLine, JsonlStats } from "./jsonl.js";
import type { PatchReport, PatchSkipCode } from "./patches.js";
import type { JsonRecord } from "./salvage.js";
import { entryCheckFor } from "./schema-check.js";
import { EntryPatchRecordSchema, HeaderPatchRecordSchema, SessionEntrySchema } from "./schemas.js";

/** One schema mismatch: where in the record, and what. */
export interface SchemaIssue {
  path: PropertyKey[];
  message: string;
}

/**
 * What kind of departure a {@link Violation} is. Of a line: `unparseable_line` (not JSON, no
 * record), `not_a_record` (JSON, but no object with a string `type`), `salvaged_line` (torn,
 * glued or padded), `non_utf8_line`, `missing_final_newline`, `line_too_long` (past the longest
 * string the runtime holds: the file cannot be read). Of the header: `invalid_header` (none
 * usable, or a field strict readers need is missing), `invalid_version` (not an integer in 1..5),
 * `version_too_new`. Of an entry: `unknown_entry_type`, `invalid_entry` (fields fail its type's
 * schema), `duplicate_entry_id`. Of a patch record: the {@link PatchSkipCode} replay gave.
 */
export type ViolationCode =
  | "unparseable_line" | "not_a_record" | "salvaged_line" | "non_utf8_line" | "missing_final_newline" | "line_too_long"
  | "invalid_header" | "invalid_version" | "version_too_new"
  | "unknown_entry_type" | "invalid_entry" | "duplicate_entry_id"
  | PatchSkipCode;

/** One violation. `line` is 1-based, or `null` when it concerns no single line. */
export interface Violation {
  line: number | null;
  code: ViolationCode;
  /** the path inside the record (empty for whole-line violations) */
  path: PropertyKey[];
  message: string;
}

/** The parts of a `LoadedSession` that {@link collectViolations} checks (declared here: the loader calls this). */
interface ViolationInput {
  readonly invalidLines: readonly InvalidLine[];
  readonly stats: JsonlStats;
  readonly patchReport: PatchReport;
  readonly lines: readonly (
    | { readonly kind: "header"; readonly line: number; readonly value: Readonly<Record<string, unknown>> }
    | { readonly kind: "entry" | "patch"; readonly line: number; readonly value: JsonRecord }
    | { readonly kind: "invalid" }
  )[];
}

/** Header fields lenient loading can do without but strict readers (resume) require. */
const STRICT_HEADER_FIELDS = ["timestamp", "cwd"] as const;

/**
 * Every violation in `session`, by line. Entries are checked as migrated (a v1 entry's missing
 * id is the format of its time), patch records as written.
 */
export function collectViolations(session: ViolationInput): Violation[] {
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
